//go:build tools

// Package tools pins runc v1.5.3 (Apache-2.0), built by build.sh: the OCI
// runtime containerd's runc shim starts the real node's containers with.
// To refresh go.mod and go.sum, run
// `go get github.com/opencontainers/runc@v1.5.3 && go mod tidy`.
package tools

import (
	_ "github.com/opencontainers/runc"
)
