#!/usr/bin/env bash
# Builds provider-sql (the version go.mod pins) from this wrapper module into
# ${PROVIDER_SQL_BIN:-~/.cache/armada-crossplane/bin/provider-sql-VERSION},
# reusing the binary if it is already there. Its dependencies are pinned at
# tools/crossplane's versions, so after the Crossplane builds it compiles
# little more than provider-sql itself (under a minute of CPU; about 4.5
# CPU-minutes alone). Its CRDs come from the same module (package/crds),
# which the local control plane reads from the module cache.
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
source "${here}/../progress.sh"
version=$(pin github.com/crossplane-contrib/provider-sql "${here}/go.mod")
exec "${here}/../build-tool.sh" "${here}" "${PROVIDER_SQL_BIN:-$HOME/.cache/armada-crossplane/bin/provider-sql-${version}}" \
  github.com/crossplane-contrib/provider-sql/cmd/provider -ldflags "-s -w"
