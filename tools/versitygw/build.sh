#!/usr/bin/env bash
# Builds versitygw (github.com/versity/versitygw/cmd/versitygw) (the version go.mod pins) from
# this wrapper module into
# ${VERSITYGW_BIN:-~/.cache/armada-crossplane/bin/versitygw-VERSION}, reusing
# the binary if it is already there.
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
source "${here}/../progress.sh"
version=$(pin github.com/versity/versitygw "${here}/go.mod")
exec "${here}/../build-tool.sh" "${here}" "${VERSITYGW_BIN:-$HOME/.cache/armada-crossplane/bin/versitygw-${version}}" \
  github.com/versity/versitygw/cmd/versitygw -ldflags "-s -w"
