#!/usr/bin/env bash
# Builds provider-sql v0.16.0 from this wrapper module into
# ${PROVIDER_SQL_BIN:-~/.cache/armada-crossplane/bin/provider-sql-v0.16.0},
# reusing the binary if it is already there. Its dependencies are pinned at
# tools/crossplane's versions, so after the Crossplane builds it compiles
# little more than provider-sql itself (under a minute of CPU; about 4.5
# CPU-minutes alone). Its CRDs come from the same module (package/crds),
# which the local control plane reads from the module cache.
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
version=v0.16.0
exec "${here}/../build-tool.sh" "${here}" "${PROVIDER_SQL_BIN:-$HOME/.cache/armada-crossplane/bin/provider-sql-${version}}" \
  github.com/crossplane-contrib/provider-sql/cmd/provider -ldflags "-s -w"
