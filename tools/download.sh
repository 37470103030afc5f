#!/usr/bin/env bash
# Downloads every module the project and its tool modules build with, in
# the order a cold .ci/run needs them, so that .ci/run can fetch them in the
# background (network) while the first steps compile (CPU). Whatever a
# build needs before it is here, the build fetches itself; the module
# cache's locks make the two safe side by side.
#
# Usage: tools/download.sh [DIR...] downloads the modules of those module
# directories (relative to the repository), in that order (make run names
# the few it builds); default: every one.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source tools/progress.sh
if [[ $# -gt 0 ]]; then
  order=("$@")
else
  # Order: what check-diff and lint need first, then the tool builds; any
  # tool module not named here (a new one) comes last.
  order=(tools/gen tools/promcrds . tools/lint tools/crossplane tools/etcd tools/kubernetes tools/provider-kubernetes tools/provider-sql)
  for d in tools/*/; do
    d=${d%/}
    [[ -f "${d}/go.mod" && ! " ${order[*]} " =~ " ${d} " ]] && order+=("${d}")
  done
fi
for d in "${order[@]}"; do
  (cd "${d}" && GOFLAGS=-mod=mod progress "download ${d}" go mod download)
done
