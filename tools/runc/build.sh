#!/usr/bin/env bash
# Builds runc (github.com/opencontainers/runc, the version go.mod pins) from
# this wrapper module into ${RUNC_BIN:-~/.cache/armada-crossplane/bin/runc-VERSION},
# reusing the binary if it is already there: the OCI runtime the real node's
# containerd starts containers with (internal/harness/node). Built with cgo
# and the seccomp tag, as runc's Makefile builds it (without libpathrs, a
# Rust library Debian does not ship): Pod Security "restricted" requires the
# RuntimeDefault seccomp profile, which runc applies through libseccomp, so
# Debian's libseccomp-dev must be installed (make system-deps).
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
source "${here}/../progress.sh"
version=$(pin github.com/opencontainers/runc "${here}/go.mod")
# cgo whatever the caller set: the Makefile builds everything else without.
CGO_ENABLED=1 exec "${here}/../build-tool.sh" "${here}" "${RUNC_BIN:-$HOME/.cache/armada-crossplane/bin/runc-${version}}" \
  github.com/opencontainers/runc -tags "seccomp urfave_cli_no_docs" -ldflags "-s -w -X main.version=${version#v}"
