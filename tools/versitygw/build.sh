#!/usr/bin/env bash
# Builds versitygw v1.8.0 (github.com/versity/versitygw/cmd/versitygw) from
# this wrapper module into
# ${VERSITYGW_BIN:-~/.cache/armada-crossplane/bin/versitygw-v1.8.0}, reusing
# the binary if it is already there.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
version=v1.8.0
out="${VERSITYGW_BIN:-$HOME/.cache/armada-crossplane/bin/versitygw-${version}}"
start=${SECONDS}
if [[ -x "${out}" ]]; then
  echo "versitygw ${version} is built: ${out}"
  exit 0
fi
mkdir -p "$(dirname "${out}")"
echo "building versitygw ${version}... [$((SECONDS - start))s elapsed]"
# Build into a temporary name and rename, so an interrupted build never
# leaves a truncated binary that a later run would mistake for complete.
GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "${out}.tmp" github.com/versity/versitygw/cmd/versitygw
mv "${out}.tmp" "${out}"
echo "versitygw ${version} ready: ${out} [$((SECONDS - start))s elapsed]"
