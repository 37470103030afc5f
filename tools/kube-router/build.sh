#!/usr/bin/env bash
# Builds kube-router (github.com/cloudnativelabs/kube-router, the version
# go.mod pins) from this wrapper module into
# ${KUBE_ROUTER_BIN:-~/.cache/armada-crossplane/bin/kube-router-VERSION},
# reusing the binary if it is already there: the real node runs its
# firewall controller alone to enforce NetworkPolicies (internal/harness/node).
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
source "${here}/../progress.sh"
version=$(pin github.com/cloudnativelabs/kube-router/v2 "${here}/go.mod")
# No -tags (netgo is implied: the Makefile builds without cgo): with the build
# tags and the library versions (go.mod) of the Kubernetes build, Go's
# build cache holds most of what it compiles already.
exec "${here}/../build-tool.sh" "${here}" "${KUBE_ROUTER_BIN:-$HOME/.cache/armada-crossplane/bin/kube-router-${version}}" \
  github.com/cloudnativelabs/kube-router/v2/cmd/kube-router -ldflags "-s -w"
