//go:build tools

// Package tools pins provider-sql v0.16.0, built by build.sh. Its
// controllers are importable, but `go mod tidy` would still drop the
// requirements only cmd/provider needs (build.sh builds with -mod=mod, so
// it would still work). To refresh go.mod and go.sum, run
// `go get github.com/crossplane-contrib/provider-sql/cmd/provider@v0.16.0`.
package tools

import (
	_ "github.com/crossplane-contrib/provider-sql/apis"
)
