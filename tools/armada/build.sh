#!/usr/bin/env bash
# Builds the Armada binaries the conformance tests run (test/conformance) from
# the wrapper module in this directory, whose go.mod pins the Armada release
# and repeats Armada's replace lines. Binaries that already exist are kept, so
# re-running is cheap; delete the directory to force a rebuild.
#
# Usage: tools/armada/build.sh
# Env:   ARMADA_BIN_DIR  where to put the binaries
#                        (default $HOME/.cache/armada-crossplane/bin/armada-v0.22.7)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"

bin_dir="${ARMADA_BIN_DIR:-$HOME/.cache/armada-crossplane/bin/armada-v0.22.7}"
binaries=(lookout server scheduler scheduleringester lookoutingester eventingester executor binoculars)

mkdir -p "${bin_dir}"
start=${SECONDS}
total=${#binaries[@]}
i=0
for name in "${binaries[@]}"; do
	i=$((i + 1))
	out="${bin_dir}/${name}"
	if [[ -x "${out}" ]]; then
		echo "armada ${name} (${i}/${total}) already built: ${out}"
		continue
	fi
	echo "building armada ${name} (${i}/${total})… [$((SECONDS - start))s elapsed]"
	# Build into a temporary name and rename, so an interrupted build never
	# leaves a truncated binary that a later run would mistake for complete.
	GOFLAGS=-mod=mod go build -ldflags "-s -w" -o "${out}.tmp" "github.com/armadaproject/armada/cmd/${name}"
	mv "${out}.tmp" "${out}"
done
echo "armada binaries ready in ${bin_dir} [$((SECONDS - start))s elapsed]"
