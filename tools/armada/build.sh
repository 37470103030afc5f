#!/usr/bin/env bash
# Builds the Armada binaries the conformance, upgrade and job-flow tests run
# (test/conformance), one directory per Armada release:
# $ARMADA_BIN_ROOT/armada-vX.Y.Z/{server,scheduler,...}.
#
# Each release is built from its own module in the Go module cache, as the
# main module: `go mod download` fetches and verifies it (go.sum database),
# and building inside it keeps Armada's own go.mod, go.sum and replace lines
# in effect, exactly as Armada's release builds them. That is why there is
# no wrapper module per version to keep in step: adding a release to the
# function's version table (internal/armada/versions.go) is all it takes,
# and `make armada-bins` asks the table which releases to build.
#
# Binaries that already exist are kept, so re-running is cheap; delete a
# version's directory to force its rebuild. The Go build cache is shared, so
# a second release costs mostly Armada's own packages, not its dependencies.
#
# Usage: tools/armada/build.sh v0.22.8 [v0.22.7 ...]
# Env:   ARMADA_BIN_ROOT  where the per-version directories go
#                         (default $HOME/.cache/armada-crossplane/bin)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../progress.sh"

if [[ $# -eq 0 ]]; then
	echo "usage: $0 VERSION... (e.g. v0.22.8); make armada-bins passes every supported version" >&2
	exit 2
fi

bin_root="${ARMADA_BIN_ROOT:-$HOME/.cache/armada-crossplane/bin}"
# armadactl is the job flow's client (test/e2e jobflow, make run): built from the same
# release as the components it talks to.
binaries=(lookout server scheduler scheduleringester lookoutingester eventingester executor binoculars armadactl)
module=github.com/armadaproject/armada

# Armada's go.mod is complete, so the build must not edit it (the module
# cache is read-only anyway); the local toolchain builds every release.
export GOFLAGS="${GOFLAGS:-} -mod=readonly -buildvcs=false" GOWORK=off GOTOOLCHAIN=local

for version in "$@"; do
	[[ "${version}" == v* ]] || version="v${version}"
	bin_dir="${bin_root}/armada-${version}"
	missing=()
	for name in "${binaries[@]}"; do
		if [[ -x "${bin_dir}/${name}" ]]; then
			echo "armada ${version} ${name} already built: ${bin_dir}/${name}"
		else
			missing+=("${name}")
		fi
	done
	if [[ ${#missing[@]} -eq 0 ]]; then
		continue
	fi
	src=$(go mod download -json "${module}@${version}" | jq -r '.Dir // empty')
	if [[ -z "${src}" || ! -f "${src}/go.mod" ]]; then
		echo "cannot download ${module}@${version}" >&2
		exit 1
	fi
	# Build into a temporary directory and move each binary in, so an
	# interrupted build never leaves a truncated binary that a later run
	# would mistake for complete.
	mkdir -p "${bin_dir}"
	tmp=$(mktemp -d "${bin_dir}/.build-XXXXXX")
	trap 'rm -rf "${tmp}"' EXIT
	pkgs=()
	for name in "${missing[@]}"; do
		pkgs+=("./cmd/${name}")
	done
	# One go build, so packages compile once and links overlap.
	(cd "${src}" && gobuild "armada ${version} (${missing[*]})" -ldflags "-s -w" -o "${tmp}/" "${pkgs[@]}")
	for name in "${missing[@]}"; do
		mv "${tmp}/${name}" "${bin_dir}/${name}"
	done
	rm -rf "${tmp}"
	trap - EXIT
	echo "armada ${version} binaries ready in ${bin_dir}"
done
