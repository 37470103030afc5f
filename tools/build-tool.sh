#!/usr/bin/env bash
# Builds PACKAGE from the pinned tool module MODULE_DIR (tools/gen,
# tools/lint) into OUT, through a temporary name so that an interrupted
# build never leaves a truncated binary a later make would take as built.
# The Makefile names OUT by the tool's version, so a warm run builds
# nothing.
#
# Usage: tools/build-tool.sh MODULE_DIR OUT PACKAGE
set -euo pipefail
if [[ $# -ne 3 ]]; then
  echo "usage: $0 MODULE_DIR OUT PACKAGE" >&2
  exit 2
fi
source "$(dirname "${BASH_SOURCE[0]}")/progress.sh"
dir=$1 out=$2 pkg=$3
mkdir -p "$(dirname "${out}")"
(cd "${dir}" && GOFLAGS=-mod=mod gobuild "$(basename "${out}")" -o "${out}.tmp" "${pkg}")
mv "${out}.tmp" "${out}"
