#!/usr/bin/env bash
# Builds CoreDNS (github.com/coredns/coredns, the version go.mod pins)
# with only the plugins main.go names, from this wrapper module into
# ${COREDNS_BIN:-~/.cache/armada-crossplane/bin/coredns-VERSION}, reusing
# the binary if it is already there: the real node's cluster DNS
# (internal/harness/node), statically linked for its image.
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
source "${here}/../progress.sh"
version=$(pin github.com/coredns/coredns "${here}/go.mod")
CGO_ENABLED=0 exec "${here}/../build-tool.sh" "${here}" "${COREDNS_BIN:-$HOME/.cache/armada-crossplane/bin/coredns-${version}}" \
  . -ldflags "-s -w -X github.com/coredns/coredns/coremain.GitCommit=${version}"
