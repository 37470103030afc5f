#!/usr/bin/env bash
# Builds KWOK v0.8.0 (sigs.k8s.io/kwok/cmd/kwok) from this wrapper module
# into ${KWOK_BIN:-~/.cache/armada-crossplane/bin/kwok-v0.8.0}, reusing the
# binary if it is already there. Cold: about 90 s on two idle cores.
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
version=v0.8.0
exec "${here}/../build-tool.sh" "${here}" "${KWOK_BIN:-$HOME/.cache/armada-crossplane/bin/kwok-${version}}" \
  sigs.k8s.io/kwok/cmd/kwok -ldflags "-s -w"
