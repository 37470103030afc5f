// Command coredns is CoreDNS (github.com/coredns/coredns, the version
// go.mod pins) with only the plugins the real node's cluster DNS uses, as
// CoreDNS documents for a custom build: its own main package naming the
// plugins and their order (a subsequence of the release's
// core/dnsserver/zdirectives.go), then coremain.Run. Built by build.sh
// into the tool cache and served to the node as an image
// (internal/harness/node). No forward plugin: the node's pods resolve
// only the cluster's names, and the names the node is told resolve to the
// host (hosts), nothing beyond the machine.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/hosts"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/root"
)

// directives are the plugins in the order the release runs them.
var directives = []string{"root", "ready", "health", "errors", "log", "cache", "hosts", "kubernetes"}

func main() {
	dnsserver.Directives = directives
	coremain.Run()
}
