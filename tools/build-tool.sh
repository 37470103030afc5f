#!/usr/bin/env bash
# Builds PACKAGE from the pinned tool module MODULE_DIR (tools/gen,
# tools/lint, tools/etcd, tools/kwok, ...) into OUT, with any further go
# build flags, through a temporary name so that an interrupted build never
# leaves a truncated binary a later run would take as built. An OUT that is
# already there and was built from MODULE_DIR's go.sum as it is now is
# reused: OUT is named by the tool's version, so a warm run builds nothing,
# and a raised dependency pin builds it again.
#
# Usage: tools/build-tool.sh MODULE_DIR OUT PACKAGE [GO BUILD FLAGS...]
set -euo pipefail
if [[ $# -lt 3 ]]; then
  echo "usage: $0 MODULE_DIR OUT PACKAGE [GO BUILD FLAGS...]" >&2
  exit 2
fi
source "$(dirname "${BASH_SOURCE[0]}")/progress.sh"
dir=$1 out=$(realpath -m "$2") pkg=$3
shift 3
name=$(basename "${out}")
if built "${out}" "${dir}"; then
  echo "${name} is built: ${out}"
  exit 0
fi
mkdir -p "$(dirname "${out}")"
# A temporary name of this build's own: two builds of one tool at once
# (two worktrees sharing the tool cache) must not move each other's file.
tmp="${out}.tmp.$$"
trap 'rm -f "${tmp}"' EXIT
(cd "${dir}" && GOFLAGS="${GOFLAGS:-} -mod=mod" gobuild "${name}" "$@" -o "${tmp}" "${pkg}")
mv "${tmp}" "${out}"
stamp "${out}" "${dir}"
echo "${name} ready: ${out}"
