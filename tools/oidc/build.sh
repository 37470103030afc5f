#!/usr/bin/env bash
# Builds the OpenID Provider (main.go: zitadel/oidc's example provider,
# github.com/zitadel/oidc/v3 at the version go.mod pins) from this wrapper
# module into ${OIDC_BIN:-~/.cache/armada-crossplane/bin/oidc-VERSION},
# reusing the binary if it is already there: the provider the browser test
# of Lookout's OIDC login signs in through.
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
source "${here}/../progress.sh"
version=$(pin github.com/zitadel/oidc/v3 "${here}/go.mod")
exec "${here}/../build-tool.sh" "${here}" "${OIDC_BIN:-$HOME/.cache/armada-crossplane/bin/oidc-${version}}" \
  . -ldflags "-s -w"
