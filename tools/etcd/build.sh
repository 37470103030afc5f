#!/usr/bin/env bash
# Builds etcd v3.6.16 from this wrapper module into
# ${ETCD_BIN:-~/.cache/armada-crossplane/bin/etcd-v3.6.16}, reusing the binary
# if it is already there. Cold: about a minute on two cores.
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
version=v3.6.16
exec "${here}/../build-tool.sh" "${here}" "${ETCD_BIN:-$HOME/.cache/armada-crossplane/bin/etcd-${version}}" \
  . -ldflags "-s -w"
