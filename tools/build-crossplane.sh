#!/usr/bin/env bash
# Builds the pinned Crossplane core and CLI from tools/crossplane into
# BIN_DIR (default ~/.cache/armada-crossplane/bin), named by version, and
# reuses binaries already there that were built from tools/crossplane's
# go.sum as it is now. WHICH (core, cli or all, the default)
# selects what to build: `make run` needs only the core. A cold build takes
# about 6 minutes on two cores for both; a warm one nothing.
set -euo pipefail

BIN_DIR=${1:-${HOME}/.cache/armada-crossplane/bin}
WHICH=${2:-all}
here=$(cd "$(dirname "$0")" && pwd)
source "${here}/progress.sh"
CLI_VERSION=$(pin github.com/crossplane/cli/v2 "${here}/crossplane/go.mod")
CORE_VERSION=$(pin github.com/crossplane/crossplane/v2 "${here}/crossplane/go.mod")
mkdir -p "${BIN_DIR}"

build() { # name version package
  local out="${BIN_DIR}/$1-$2"
  if built "${out}" "${here}/crossplane"; then
    echo "crossplane: $1 $2 is built (${out})"
    return
  fi
  # Both come from one module, so the second build reuses what the first
  # compiled. They cannot share one `go build -o DIR/`: both are named
  # crossplane.
  # A temporary name of this build's own, as in build-tool.sh.
  local tmp="${out}.tmp.$$"
  (cd "${here}/crossplane" && GOFLAGS="${GOFLAGS:-} -mod=mod" gobuild "$1 $2" \
    -ldflags "-s -w -X github.com/crossplane/crossplane-runtime/v2/pkg/version.version=$2" \
    -o "${tmp}" "$3") || { rm -f "${tmp}"; return 1; }
  mv "${tmp}" "${out}"
  stamp "${out}" "${here}/crossplane"
}

case "${WHICH}" in
  core | cli | all) ;;
  *) echo "usage: $0 [BIN_DIR] [core|cli|all]" >&2; exit 2 ;;
esac
if [[ "${WHICH}" != cli ]]; then
  build crossplane-core "${CORE_VERSION}" github.com/crossplane/crossplane/v2/cmd/crossplane
fi
if [[ "${WHICH}" != core ]]; then
  build crossplane-cli "${CLI_VERSION}" github.com/crossplane/cli/v2/cmd/crossplane
fi
