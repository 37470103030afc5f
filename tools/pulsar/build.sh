#!/usr/bin/env bash
# Assembles Apache Pulsar's standalone broker from Maven Central into the
# version-keyed tool cache, for the tests' testenv.StartPulsar:
#   ${PULSAR_BIN_ROOT:-~/.cache/armada-crossplane/bin}/pulsar-<version>/lib  the broker's jars
# Nothing is compiled: `mvn dependency:copy-dependencies` of this directory's
# pom (profile broker) copies the release's runtime jars. A
# directory that is already there, assembled from this pom (its SHA-256 is
# kept beside the jars, in pom.sha256), is kept, so re-running is cheap; a
# changed pom (a pin, an exclusion) assembles it again, and deleting it
# forces a new copy. It is assembled into a temporary directory and
# renamed, so an interrupted run never leaves a partial one that a later run
# would mistake for complete. Maven's local repository lives under the cache
# (~/.cache/armada-crossplane/maven) so it survives between runs.
#
# Usage: tools/pulsar/build.sh VERSION
# `make pulsar` passes it from the version table (internal/armada/versions.go,
# `go run ./internal/build/cmd/armadaversions -pulsar`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

if [[ $# -ne 1 ]]; then
	echo "usage: $0 VERSION (make pulsar passes it from internal/armada/versions.go)" >&2
	exit 2
fi
cache="${ARMADA_CROSSPLANE_CACHE:-$HOME/.cache/armada-crossplane}"
bin_root="${PULSAR_BIN_ROOT:-${cache}/bin}"
repo="${cache}/maven"
start=${SECONDS}
pom_hash=$(sha256sum <pom.xml | cut -d' ' -f1)

# assemble NAME PROFILE VERSION copies the profile's jars into
# ${bin_root}/NAME-VERSION/lib, printing progress every 15 s while Maven
# downloads (it is quiet with -q).
assemble() {
	local name=$1 profile=$2 version=$3
	local out="${bin_root}/${name}-${version}"
	if [[ -d "${out}/lib" && "$(cat "${out}/pom.sha256" 2>/dev/null || true)" == "${pom_hash}" ]]; then
		echo "${name} ${version} is assembled: ${out}"
		return 0
	fi
	mkdir -p "${bin_root}" "${repo}"
	local tmp
	tmp=$(mktemp -d "${bin_root}/.${name}-${version}-XXXXXX")
	chmod 755 "${tmp}"
	# shellcheck disable=SC2064 # Expand now: the trap must remove this run's directory.
	trap "rm -rf '${tmp}'" EXIT
	echo "assembling ${name} ${version} from Maven Central (profile ${profile})... [$((SECONDS - start))s elapsed]"
	mvn -B -q -s settings.xml -Dmaven.repo.local="${repo}" -P "${profile}" -Dpulsar.version="${version}" \
		dependency:copy-dependencies -DoutputDirectory="${tmp}/lib" -DincludeScope=runtime &
	local mvn_pid=$!
	while kill -0 "${mvn_pid}" 2>/dev/null; do
		for _ in $(seq 15); do
			sleep 1
			kill -0 "${mvn_pid}" 2>/dev/null || break
		done
		if kill -0 "${mvn_pid}" 2>/dev/null; then
			# du is bounded: on a disk busy with Maven's writes it can stall,
			# and progress must keep coming.
			echo "  still assembling ${name} ${version}: $(timeout 5 du -sm "${repo}" 2>/dev/null | cut -f1 || echo '?') MB in the Maven repository, $(find "${tmp}" -name '*.jar' 2>/dev/null | wc -l) jars copied [$((SECONDS - start))s elapsed]"
		fi
	done
	if ! wait "${mvn_pid}"; then
		echo "cannot assemble ${name} ${version}: mvn dependency:copy-dependencies failed (see above)" >&2
		exit 1
	fi
	echo "${pom_hash}" >"${tmp}/pom.sha256"
	# A copy assembled from another pom makes way.
	rm -rf "${out}"
	mv "${tmp}" "${out}"
	trap - EXIT
	echo "${name} ${version} ready: ${out} ($(find "${out}/lib" -name '*.jar' | wc -l) jars, $(du -sm "${out}" | cut -f1) MB) [$((SECONDS - start))s elapsed]"
}

assemble pulsar broker "$1"
