#!/usr/bin/env bash
# Builds Armada's Lookout UI from Armada's own source at a release, as its
# build/lookout/Dockerfile builds the UI the armada-lookout image holds at
# /app/internal/lookoutui/build, into the version-keyed tool cache:
#   ${ARMADA_BIN_ROOT:-~/.cache/armada-crossplane/bin}/lookoutui-vX.Y.Z/build
#
# The steps are the Dockerfile's, with the machine's Java and Node for its
# two build images:
#   1. internal/lookoutui/openapi.sh: openapi-generator-cli 5.4.0 (the jar
#      from Maven Central, this directory's pom) generates the
#      typescript-fetch clients from the module's swagger files;
#   2. `yarn install` of the locked dependencies from the npm registry
#      (yarn itself pinned by this directory's package-lock.json; the UI's
#      yarn.lock is honoured: --frozen-lockfile fails if it would change);
#   3. `yarn build` (tsc -b && vite build), with VITE_APP_VERSION the
#      release.
# Armada's source comes from the Go module cache (`go mod download`, the
# go.sum database verifies it), as tools/armada/build.sh builds the
# release's binaries. Nothing is fetched once a release is built: Lookout
# serves the files as they are.
#
# A release already built from this directory as it is now (the SHA-256 of
# build.sh, pom.xml and package-lock.json, kept in tools.sha256 beside the
# build) is kept; each is built in a temporary directory and renamed, so an
# interrupted run never leaves a partial build. The jar, yarn and yarn's
# package cache live under the cache too, so a second release downloads
# only the packages its lockfile adds.
#
# Usage: tools/lookoutui/build.sh v0.22.8 [v0.22.7 ...]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "${here}/../progress.sh"

if [[ $# -eq 0 ]]; then
	echo "usage: $0 VERSION... (e.g. v0.22.8); make lookoutui passes the default release" >&2
	exit 2
fi
cache="${ARMADA_CROSSPLANE_CACHE:-$HOME/.cache/armada-crossplane}"
root="${ARMADA_BIN_ROOT:-${cache}/bin}"
module=github.com/armadaproject/armada
tools_hash=$(cat "${here}/build.sh" "${here}/pom.xml" "${here}/package-lock.json" | sha256sum | cut -d' ' -f1)
start=${SECONDS}

# The generator's version is the pom's.
openapi_version=$(sed -n '/<artifactId>openapi-generator-cli</{n;s/.*<version>\(.*\)<\/version>.*/\1/p}' "${here}/pom.xml")
jar="${cache}/bin/openapi-generator-cli-${openapi_version}.jar"
yarn_dir="${cache}/node/yarn-$(sha256sum <"${here}/package-lock.json" | cut -c1-12)"
yarn="${yarn_dir}/node_modules/.bin/yarn"

need() {
	command -v "$1" >/dev/null || { echo "cannot build Lookout's UI: $1 is not installed ($2)" >&2; exit 1; }
}
need java "Debian's default-jre-headless"
need mvn "Debian's maven"
need node "Debian's nodejs, 20 or newer"
need npm "Debian's npm"

# logged LOG CMD... runs CMD with its output in LOG (progress prints the
# reports), printing LOG's tail if CMD fails.
logged() {
	local log=$1 rc=0
	shift
	"$@" >"${log}" 2>&1 || rc=$?
	if [[ ${rc} -ne 0 ]]; then
		tail -n 60 "${log}" >&2
	fi
	return "${rc}"
}

# tools fetches the jar and yarn, once.
tools() {
	if [[ ! -f "${jar}" ]]; then
		local tmp
		tmp=$(mktemp -d)
		progress "openapi-generator-cli ${openapi_version} from Maven Central" \
			mvn -B -q -Dstyle.color=never -f "${here}/pom.xml" -s "${here}/settings.xml" -Dmaven.repo.local="${cache}/maven" \
			dependency:copy-dependencies -DexcludeTransitive=true -DoutputDirectory="${tmp}"
		mkdir -p "$(dirname "${jar}")"
		mv "${tmp}/openapi-generator-cli-${openapi_version}.jar" "${jar}"
		rm -rf "${tmp}"
	fi
	if [[ ! -x "${yarn}" ]]; then
		local tmp
		mkdir -p "${cache}/node"
		tmp=$(mktemp -d "${cache}/node/.yarn-XXXXXX")
		cp "${here}/package.json" "${here}/package-lock.json" "${tmp}/"
		(cd "${tmp}" && progress "yarn from the npm registry" npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
		rm -rf "${yarn_dir}"
		mv "${tmp}" "${yarn_dir}"
	fi
}

for version in "$@"; do
	[[ "${version}" == v* ]] || version="v${version}"
	out="${root}/lookoutui-${version}"
	if [[ -f "${out}/build/index.html" && "$(cat "${out}/tools.sha256" 2>/dev/null || true)" == "${tools_hash}" ]]; then
		echo "Lookout UI ${version} is built: ${out}/build"
		continue
	fi
	tools
	src=$(go mod download -json "${module}@${version}" | jq -r '.Dir // empty')
	if [[ -z "${src}" || ! -f "${src}/internal/lookoutui/yarn.lock" ]]; then
		echo "cannot download ${module}@${version} with its internal/lookoutui" >&2
		exit 1
	fi
	mkdir -p "${root}"
	tmp=$(mktemp -d "${root}/.lookoutui-${version}-XXXXXX")
	# shellcheck disable=SC2064 # Expand now: the trap must remove this run's directory.
	trap "rm -rf '${tmp}'" EXIT
	# The module cache is read-only: the build works on a copy, laid out as
	# the Dockerfile's /project.
	mkdir -p "${tmp}/project/internal"
	cp -r "${src}/internal/lookoutui" "${tmp}/project/internal/lookoutui"
	chmod -R u+w "${tmp}/project"
	ui="${tmp}/project/internal/lookoutui"
	echo "building Lookout UI ${version} from ${src}/internal/lookoutui [$((SECONDS - start))s elapsed]"

	# openapi.sh's three generations, on the module's swagger files.
	for api in "api.swagger.json armada" "binoculars/api.swagger.json binoculars" "schedulerobjects/api.swagger.json schedulerobjects"; do
		read -r spec dir <<<"${api}"
		progress "openapi-generator ${dir} client" logged "${tmp}/openapi-${dir}.log" \
			java -jar "${jar}" generate -g typescript-fetch -i "${src}/pkg/api/${spec}" -o "${ui}/src/openapi/${dir}"
	done

	# yarn's cache is shared by releases; the lockfile is never written.
	(cd "${ui}" && progress "yarn install (Lookout UI ${version}, locked)" logged "${tmp}/yarn-install.log" \
		"${yarn}" install --frozen-lockfile --non-interactive --network-timeout 300000 \
		--cache-folder "${cache}/yarn-cache")
	(cd "${ui}" && VITE_APP_VERSION="${version#v}" VITE_APP_COMMIT=unknown VITE_APP_BUILD_TIME=unknown \
		progress "yarn build (Lookout UI ${version}: tsc -b, vite build)" logged "${tmp}/yarn-build.log" \
		"${yarn}" build)
	if [[ ! -f "${ui}/build/index.html" ]]; then
		echo "cannot build Lookout UI ${version}: vite wrote no build/index.html" >&2
		exit 1
	fi

	rm -rf "${out}"
	mkdir -p "${out}"
	mv "${ui}/build" "${out}/build"
	echo "${tools_hash}" >"${out}/tools.sha256"
	rm -rf "${tmp}"
	trap - EXIT
	echo "Lookout UI ${version} ready: ${out}/build ($(du -sm "${out}/build" | cut -f1) MB) [$((SECONDS - start))s elapsed]"
done
