#!/usr/bin/env bash
# Measures a cold .ci/run (or, with COLD_TARGET=run, a cold `make run`
# through its demo job: `make run RUN_ARGS=-exit-after-demo`, each output
# line prefixed with the seconds since the start): clones REF (default
# HEAD) of this repository into a fresh directory and runs it there with a
# fresh HOME, so the Go
# module and build caches (~/go, ~/.cache/go-build), the tool cache
# (~/.cache/armada-crossplane, Pulsar's Maven repository in it) and Go's
# env file all start empty, as on a new machine. Debian's packages are the
# machine's (.ci/run installs them only if missing).
#
# It samples the load average every 30 seconds beside the run, so the
# figures can be read against what else ran, and prints the run's own
# step timings (tools/timings.sh), its wall time, and the load range.
# Everything stays in DIR (default a new temporary directory): log.txt,
# load.tsv, timings.tsv. The clone and caches take several GB; delete DIR
# after.
#
# Usage: [COLD_TARGET=run] tools/cold-run.sh [REF] [DIR]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
ref=${1:-HEAD}
dir=${2:-$(mktemp -d /tmp/cold-run.XXXXXX)}
mkdir -p "${dir}/home"
commit=$(git -C "${repo}" rev-parse "${ref}")
git clone -q --no-hardlinks "${repo}" "${dir}/src"
git -C "${dir}/src" checkout -q "${commit}"
echo "cold run of ${commit} in ${dir} (log: ${dir}/log.txt)"

(while sleep 30; do
  printf '%s\t%s\n' "$(date +%s)" "$(cut -d' ' -f1 /proc/loadavg)"
done) >"${dir}/load.tsv" &
sampler=$!
trap 'kill "${sampler}" 2>/dev/null || true' EXIT

start=$(date +%s)
rc=0
# A fresh HOME empties every cache; GOFLAGS and GOTOOLCHAIN are kept
# because on a new machine they come from its environment, not from HOME.
fresh=(env -i PATH="${PATH}" HOME="${dir}/home" TERM="${TERM:-dumb}" LANG="${LANG:-C.UTF-8}"
  GOFLAGS="${GOFLAGS:-}" GOTOOLCHAIN="${GOTOOLCHAIN:-local}")
if [[ "${COLD_TARGET:-ci}" == run ]]; then
  (cd "${dir}/src" && "${fresh[@]}" make run RUN_ARGS=-exit-after-demo 2>&1) |
    while IFS= read -r line; do printf '[%4ds] %s\n' "$(( $(date +%s) - start ))" "${line}"; done >"${dir}/log.txt" ||
    rc=$?
  grep -E 'ready in|done in|is Synced|is Ready|demo job succeeded' "${dir}/log.txt" || true
else
  "${fresh[@]}" "${dir}/src/.ci/run" >"${dir}/log.txt" 2>&1 || rc=$?
fi
end=$(date +%s)
cp "${dir}/src/_output/timings.tsv" "${dir}/timings.tsv" 2>/dev/null || true

echo "exit ${rc}; wall $(( (end - start) / 60 ))m$(( (end - start) % 60 ))s"
if [[ -s "${dir}/timings.tsv" ]]; then
  "${repo}/tools/timings.sh" "${dir}/timings.tsv"
fi
sort -n -k2 "${dir}/load.tsv" | awk -F '\t' 'NR == 1 { lo = $2 } { hi = $2; sum += $2; n++ }
  END { if (n) printf "load average (1 min, every 30 s): %s to %s, mean %.1f\n", lo, hi, sum / n }'
exit "${rc}"
