//go:build tools

// Package tools pins ghostunnel v1.8.4 (Apache-2.0), built by build.sh: the
// TLS-terminating proxy the binoculars pod runs as a sidecar when the claim
// turns TLS on (Armada's binoculars serves neither port over TLS usably; see
// docs/guides/tls.md). To refresh go.mod and go.sum, run
// `go get github.com/ghostunnel/ghostunnel@v1.8.4`.
package tools

import (
	_ "github.com/ghostunnel/ghostunnel"
)
