#!/usr/bin/env bash
# Builds KWOK (sigs.k8s.io/kwok/cmd/kwok) (the version go.mod pins) from this wrapper module
# into ${KWOK_BIN:-~/.cache/armada-crossplane/bin/kwok-VERSION}, reusing the
# binary if it is already there. Cold: about 90 s on two idle cores.
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
source "${here}/../progress.sh"
version=$(pin sigs.k8s.io/kwok "${here}/go.mod")
exec "${here}/../build-tool.sh" "${here}" "${KWOK_BIN:-$HOME/.cache/armada-crossplane/bin/kwok-${version}}" \
  sigs.k8s.io/kwok/cmd/kwok -ldflags "-s -w"
