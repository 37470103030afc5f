#!/usr/bin/env bash
# Builds etcd (the version go.mod pins) from this wrapper module into
# ${ETCD_BIN:-~/.cache/armada-crossplane/bin/etcd-VERSION}, reusing the binary
# if it is already there. Cold: about a minute on two cores.
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
source "${here}/../progress.sh"
version=$(pin go.etcd.io/etcd/server/v3 "${here}/go.mod")
exec "${here}/../build-tool.sh" "${here}" "${ETCD_BIN:-$HOME/.cache/armada-crossplane/bin/etcd-${version}}" \
  . -ldflags "-s -w"
