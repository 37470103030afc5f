//go:build tools

// Package tools pins the CNI reference plugins v1.10.0 (Apache-2.0), built by
// build.sh: bridge, host-local, loopback and portmap, the pod network of the
// real node. To refresh go.mod and go.sum, run
// `go get github.com/containernetworking/plugins@v1.10.0 && go mod tidy`.
package tools

import (
	_ "github.com/containernetworking/plugins/plugins/ipam/host-local"
	_ "github.com/containernetworking/plugins/plugins/main/bridge"
	_ "github.com/containernetworking/plugins/plugins/main/loopback"
	_ "github.com/containernetworking/plugins/plugins/meta/portmap"
)
