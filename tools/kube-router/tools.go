//go:build tools

// Package tools pins kube-router v2.10.0 (Apache-2.0), built by build.sh:
// the real node's NetworkPolicy enforcer, run with only its firewall
// controller on (iptables and ipset from Debian's packages), as it runs
// beside another CNI in a cluster. kube-network-policies, which kind
// ships, needs the kernel's NFQUEUE (CONFIG_NFT_QUEUE), which these
// machines lack. To refresh go.mod and go.sum, run
// `go get github.com/cloudnativelabs/kube-router/v2@v2.10.0`.
package tools

import (
	_ "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router"
)
