#!/usr/bin/env bash
# Builds etcd (the version go.mod pins) from this wrapper module into
# ${ETCD_BIN:-~/.cache/armada-crossplane/bin/etcd-VERSION}, reusing the binary
# if it is already there. Cold: about a minute on two cores.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
source ../progress.sh
version=$(pin go.etcd.io/etcd/server/v3)
out="${ETCD_BIN:-$HOME/.cache/armada-crossplane/bin/etcd-${version}}"
if [[ -x "${out}" ]]; then
  echo "etcd ${version} is built: ${out}"
  exit 0
fi
mkdir -p "$(dirname "${out}")"
# Build into a temporary name and rename, so an interrupted build never
# leaves a truncated binary that a later run would mistake for complete.
GOFLAGS=-mod=mod gobuild "etcd ${version}" -ldflags "-s -w" -o "${out}.tmp" .
mv "${out}.tmp" "${out}"
echo "etcd ${version} ready: ${out}"
