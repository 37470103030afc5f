//go:build tools

// Package tools pins containerd v2.4.2 (Apache-2.0), built by build.sh: the
// container runtime (with its CRI plugin) the real node's kubelet talks to,
// and its runc shim. To refresh go.mod and go.sum, run
// `go get github.com/containerd/containerd/v2@v2.4.2 && go mod tidy`.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
)
