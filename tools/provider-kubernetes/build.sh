#!/usr/bin/env bash
# Builds provider-kubernetes (the version go.mod pins) from this wrapper module into
# ${PROVIDER_KUBERNETES_BIN:-~/.cache/armada-crossplane/bin/provider-kubernetes-VERSION},
# reusing the binary if it is already there. Cold: about 4-5 minutes on two
# cores. Its CRDs come from the same module (package/crds), which the local
# control plane reads from the module cache.
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
source "${here}/../progress.sh"
version=$(pin github.com/crossplane-contrib/provider-kubernetes "${here}/go.mod")
exec "${here}/../build-tool.sh" "${here}" "${PROVIDER_KUBERNETES_BIN:-$HOME/.cache/armada-crossplane/bin/provider-kubernetes-${version}}" \
  github.com/crossplane-contrib/provider-kubernetes/cmd/provider -ldflags "-s -w"
