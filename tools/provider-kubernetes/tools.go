//go:build tools

// Package tools pins provider-kubernetes v1.3.1, built by build.sh. Its
// controllers are internal, so only its APIs can be imported here, and
// `go mod tidy` would drop the requirements only cmd/provider needs (build.sh
// builds with -mod=mod, so it would still work). To refresh go.mod and
// go.sum, run `go get github.com/crossplane-contrib/provider-kubernetes/cmd/provider@v1.3.1`.
package tools

import (
	_ "github.com/crossplane-contrib/provider-kubernetes/apis/cluster"
)
