#!/usr/bin/env bash
# Builds KWOK v0.8.0 (sigs.k8s.io/kwok/cmd/kwok) from this wrapper module
# into ${KWOK_BIN:-~/.cache/armada-crossplane/bin/kwok-v0.8.0}, reusing the
# binary if it is already there. Cold: about 90 s on two idle cores.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
version=v0.8.0
out="${KWOK_BIN:-$HOME/.cache/armada-crossplane/bin/kwok-${version}}"
start=${SECONDS}
if [[ -x "${out}" ]]; then
  echo "kwok ${version} is built: ${out}"
  exit 0
fi
mkdir -p "$(dirname "${out}")"
echo "building kwok ${version}... [$((SECONDS - start))s elapsed]"
# Build into a temporary name and rename, so an interrupted build never
# leaves a truncated binary that a later run would mistake for complete.
GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "${out}.tmp" sigs.k8s.io/kwok/cmd/kwok
mv "${out}.tmp" "${out}"
echo "kwok ${version} ready: ${out} [$((SECONDS - start))s elapsed]"
