#!/usr/bin/env bash
# Builds ghostunnel (github.com/ghostunnel/ghostunnel) (the version go.mod pins) from this
# wrapper module into ${GHOSTUNNEL_BIN:-~/.cache/armada-crossplane/bin/ghostunnel-VERSION},
# reusing the binary if it is already there: the TLS-terminating sidecar of the binoculars pod,
# which the conformance suite runs as rendered. Built with cgo (a C compiler is needed):
# v1.8.4's no-PKCS#11 build (-tags nopkcs11 or CGO_ENABLED=0) does not compile
# (tls.go:83: too many arguments in call to certloader.CertificateFromPKCS11Module).
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
source "${here}/../progress.sh"
version=$(pin github.com/ghostunnel/ghostunnel "${here}/go.mod")
# cgo whatever the caller set: the Makefile builds everything else without.
CGO_ENABLED=1 exec "${here}/../build-tool.sh" "${here}" "${GHOSTUNNEL_BIN:-$HOME/.cache/armada-crossplane/bin/ghostunnel-${version}}" \
  github.com/ghostunnel/ghostunnel -ldflags "-s -w"
