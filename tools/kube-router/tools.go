//go:build tools

// Package tools pins kube-router v2.10.0 (Apache-2.0), built by build.sh:
// the real node's NetworkPolicy enforcer, run with only its firewall
// controller on (iptables and ipset from Debian's packages), as it runs
// beside another CNI in a cluster. kube-network-policies, which kind
// ships, needs the kernel's NFQUEUE (CONFIG_NFT_QUEUE), which these
// machines lack. Its Kubernetes libraries, gRPC, protobuf,
// OpenTelemetry, Prometheus and golang.org/x modules are raised to the
// versions tools/kubernetes builds with (none lowered), so that Go's build
// cache already holds them compiled. To refresh go.mod and go.sum, run
// `go get github.com/cloudnativelabs/kube-router/v2@v2.10.0`, then
// `go get` each module tools/kubernetes selects at a newer version.
package tools

import (
	_ "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router"
)
