#!/usr/bin/env bash
# Builds provider-kubernetes (the version go.mod pins) from this wrapper module into
# ${PROVIDER_KUBERNETES_BIN:-~/.cache/armada-crossplane/bin/provider-kubernetes-VERSION},
# reusing the binary if it is already there. Cold: about 4-5 minutes on two
# cores. Its CRDs come from the same module (package/crds), which the local
# control plane reads from the module cache.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
source ../progress.sh
version=$(pin github.com/crossplane-contrib/provider-kubernetes)
out="${PROVIDER_KUBERNETES_BIN:-$HOME/.cache/armada-crossplane/bin/provider-kubernetes-${version}}"
if [[ -x "${out}" ]]; then
  echo "provider-kubernetes ${version} is built: ${out}"
  exit 0
fi
mkdir -p "$(dirname "${out}")"
# Build into a temporary name and rename, so an interrupted build never
# leaves a truncated binary that a later run would mistake for complete.
GOFLAGS=-mod=mod gobuild "provider-kubernetes ${version}" -ldflags "-s -w" -o "${out}.tmp" \
  github.com/crossplane-contrib/provider-kubernetes/cmd/provider
mv "${out}.tmp" "${out}"
echo "provider-kubernetes ${version} ready: ${out}"
