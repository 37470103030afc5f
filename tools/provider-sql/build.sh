#!/usr/bin/env bash
# Builds provider-sql (the version go.mod pins) from this wrapper module into
# ${PROVIDER_SQL_BIN:-~/.cache/armada-crossplane/bin/provider-sql-VERSION},
# reusing the binary if it is already there. Its dependencies are pinned at
# tools/crossplane's versions, so after the Crossplane builds it compiles
# little more than provider-sql itself (under a minute of CPU; about 4.5
# CPU-minutes alone). Its CRDs come from the same
# module (package/crds), which the local control plane reads from the module
# cache.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
source ../progress.sh
version=$(pin github.com/crossplane-contrib/provider-sql)
out="${PROVIDER_SQL_BIN:-$HOME/.cache/armada-crossplane/bin/provider-sql-${version}}"
if [[ -x "${out}" ]]; then
  echo "provider-sql ${version} is built: ${out}"
  exit 0
fi
mkdir -p "$(dirname "${out}")"
# Build into a temporary name and rename, so an interrupted build never
# leaves a truncated binary that a later run would mistake for complete.
GOFLAGS=-mod=mod gobuild "provider-sql ${version}" -ldflags "-s -w" -o "${out}.tmp" \
  github.com/crossplane-contrib/provider-sql/cmd/provider
mv "${out}.tmp" "${out}"
echo "provider-sql ${version} ready: ${out}"
