#!/usr/bin/env bash
# Builds provider-kubernetes v1.3.1 from this wrapper module into
# ${PROVIDER_KUBERNETES_BIN:-~/.cache/armada-crossplane/bin/provider-kubernetes-v1.3.1},
# reusing the binary if it is already there. Cold: about 4-5 minutes on two
# cores. Its CRDs come from the same module (package/crds), which the local
# control plane reads from the module cache.
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
version=v1.3.1
exec "${here}/../build-tool.sh" "${here}" "${PROVIDER_KUBERNETES_BIN:-$HOME/.cache/armada-crossplane/bin/provider-kubernetes-${version}}" \
  github.com/crossplane-contrib/provider-kubernetes/cmd/provider -ldflags "-s -w"
