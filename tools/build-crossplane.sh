#!/usr/bin/env bash
# Builds the pinned Crossplane CLI and core from tools/crossplane into
# BIN_DIR (default ~/.cache/armada-crossplane/bin), named by version, and
# reuses binaries already there. A cold build takes 10-20 minutes on two
# cores; a warm one nothing.
set -euo pipefail

BIN_DIR=${1:-${HOME}/.cache/armada-crossplane/bin}
CLI_VERSION=v2.5.0
CORE_VERSION=v2.4.0
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "${BIN_DIR}"
start=$(date +%s)

build() { # name version package
  local out="${BIN_DIR}/$1-$2"
  if [[ -x "${out}" ]]; then
    echo "crossplane: $1 $2 is built (${out})"
    return
  fi
  echo "crossplane: building $1 $2 from $3 (cold: several minutes)..."
  (cd "${here}/crossplane" && GOFLAGS=-mod=mod go build -trimpath \
    -ldflags "-s -w -X github.com/crossplane/crossplane-runtime/v2/pkg/version.version=$2" \
    -o "${out}.tmp" "$3")
  mv "${out}.tmp" "${out}"
  echo "crossplane: built $1 $2 in $(( $(date +%s) - start ))s"
}

build crossplane-core "${CORE_VERSION}" github.com/crossplane/crossplane/v2/cmd/crossplane
build crossplane-cli "${CLI_VERSION}" github.com/crossplane/cli/v2/cmd/crossplane
