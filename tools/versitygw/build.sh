#!/usr/bin/env bash
# Builds versitygw v1.8.0 (github.com/versity/versitygw/cmd/versitygw) from
# this wrapper module into
# ${VERSITYGW_BIN:-~/.cache/armada-crossplane/bin/versitygw-v1.8.0}, reusing
# the binary if it is already there.
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
version=v1.8.0
exec "${here}/../build-tool.sh" "${here}" "${VERSITYGW_BIN:-$HOME/.cache/armada-crossplane/bin/versitygw-${version}}" \
  github.com/versity/versitygw/cmd/versitygw -ldflags "-s -w"
