#!/usr/bin/env bash
# Runs every test (make test-lanes) in lanes side by side, to measure
# them: each long suite, or a part of one, in a lane of its own (its own
# process, and so its own control plane, Pulsar or servers), and every
# other package in one more lane beside them, one package at a time. It
# prints each lane's wall time and CPU seconds including its children.
# All lanes at once overload two cores (a load of 30 to 50 measured, and
# an e2e wait timed out), so make test does not run this: LANES picks
# lanes to run, e.g. one suite part alone for its CPU figure. Figures:
# docs/dev/first-run.md ("Where the CPU goes").
#
# Each lane's output goes to _output/test/LANE.log and is printed when the
# lane ends (so lanes do not interleave); each lane's wall time, and its
# CPU seconds including its children (when /usr/bin/time is installed),
# are printed then too and appended to TIMINGS_FILE if set. The run fails
# if any lane fails, naming it.
#
# The long suites' test binaries are built first, in one `go test -c`
# (their shared dependencies compile once, in parallel); their lanes run
# those binaries in the package's directory, as go test would.
#
# Environment: TESTFLAGS, in go test's spelling (-v, -count=3), go to
# every lane after -count=1 -timeout=50m (-v for each test's duration in
# the logs); LANES, a space-separated list of lane names, runs only those.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/progress.sh

# A part of a suite is chosen by -run or -skip of the same expression, so
# that the two parts together run every test of the package, including a
# test added later (it lands in the -skip part). Every part starts its own
# control plane (e2e), Pulsar and servers (conformance, jobflow).
e2e_a='^(TestManyTeams|TestTenancyPolicy|TestSQLDataProtection|TestExecutorIdentityRotation|TestMultiCluster|TestUpgradeWaitsForBackup|TestNamespaced|TestDeleteWithQueues)$'
conformance_upgrade='^(TestArmadaUpgrade|TestConfigKeysMatchArmada)$'
jobflow_makerun='^TestMakeRun$'

# One row per lane: name, package, the flag choosing its tests (or -).
# The longest first: a lane starts when its row is read.
lane_table=(
  "e2e-a ./test/e2e -run=${e2e_a}"
  "e2e-b ./test/e2e -skip=${e2e_a}"
  "conformance ./test/conformance -skip=${conformance_upgrade}"
  "jobflow ./test/jobflow -skip=${jobflow_makerun}"
  "conformance-upgrade ./test/conformance -run=${conformance_upgrade}"
  "jobflow-makerun ./test/jobflow -run=${jobflow_makerun}"
)

read -r -a flags <<<"-count=1 -timeout=50m ${TESTFLAGS:-}"
logdir=_output/test
bindir=${logdir}/bin
mkdir -p "${logdir}" "${bindir}"

wanted() { [[ -z "${LANES:-}" || " ${LANES} " == *" $1 "* ]]; }

# The packages no lane above runs, by import path, for the last lane.
# suites are the packages of the lanes to run, each once, to build.
declare -A laned=() built=()
suites=()
for row in "${lane_table[@]}"; do
  read -r name pkg _ <<<"${row}"
  laned[$(go list "${pkg}")]=1
  if wanted "${name}" && [[ -z "${built[${pkg}]:-}" ]]; then
    suites+=("${pkg}")
    built[${pkg}]=1
  fi
done
rest=()
while read -r p; do
  [[ -n "${laned[${p}]:-}" ]] || rest+=("${p}")
done < <(go list ./...)
lane_table+=("rest ${rest[*]}")

if (( ${#suites[@]} > 0 )); then
  progress "test: build the long suites' test binaries" go test -c -o "${bindir}/" "${suites[@]}"
fi

declare -A pid_of=() start_of=()
start=$(date +%s)
for row in "${lane_table[@]}"; do
  read -r name pkg sel <<<"${row}"
  wanted "${name}" || continue
  timer=()
  if [[ -x /usr/bin/time ]]; then
    timer=(/usr/bin/time -o "${PWD}/${logdir}/${name}.time" -f '%e %U %S %M')
  fi
  if [[ "${name}" == rest ]]; then
    # shellcheck disable=SC2086 # pkg and sel are the package list.
    cmd=(go test "${flags[@]}" -p 1 ${pkg} ${sel})
    dir=.
  else
    cmd=("${PWD}/${bindir}/${pkg##*/}.test" "${flags[@]/#-/-test.}")
    [[ "${sel}" == - ]] || cmd+=("${sel/#-/-test.}")
    dir=${pkg}
  fi
  if [[ "${name}" == rest ]]; then
    echo "test lane ${name}: go test ${flags[*]} -p 1, ${#rest[@]} packages"
  else
    echo "test lane ${name}: (cd ${dir} && ${cmd[*]})"
  fi
  (cd "${dir}" && exec "${timer[@]}" "${cmd[@]}") >"${logdir}/${name}.log" 2>&1 &
  pid_of[${name}]=$!
  start_of[${name}]=$(date +%s)
done

failed=()
report() { # NAME RC
  local name=$1 rc=$2 secs cpu=""
  secs=$(( $(date +%s) - start_of[${name}] ))
  if [[ -s "${logdir}/${name}.time" ]]; then
    # Wall, user and system seconds, max RSS (KB): the last line (a
    # failing command's line comes first).
    read -r _ u s _ < <(tail -n 1 "${logdir}/${name}.time")
    cpu=", $(awk -v u="${u}" -v s="${s}" 'BEGIN { printf "%.0f", u + s }') CPU-s"
  fi
  echo
  echo "=== test lane ${name} (${logdir}/${name}.log)"
  cat "${logdir}/${name}.log"
  _progress_done "test: ${name}" "${start_of[${name}]}" "${rc}"
  echo "test lane ${name}: ${secs}s wall${cpu}"
  if [[ ${rc} -ne 0 ]]; then
    failed+=("${name}")
  fi
}

# Report each lane as it ends; say which are still running every 30 s.
next=$(( start + 30 ))
while (( ${#pid_of[@]} > 0 )); do
  for name in "${!pid_of[@]}"; do
    if ! kill -0 "${pid_of[${name}]}" 2>/dev/null; then
      rc=0
      wait "${pid_of[${name}]}" || rc=$?
      unset "pid_of[${name}]"
      report "${name}" "${rc}"
    fi
  done
  if (( $(date +%s) >= next && ${#pid_of[@]} > 0 )); then
    echo "test lanes running: ${!pid_of[*]} [$(( $(date +%s) - start ))s]"
    next=$(( $(date +%s) + 30 ))
  fi
  sleep 1
done

echo
if (( ${#failed[@]} > 0 )); then
  echo "test lanes FAILED: ${failed[*]} (logs in ${logdir}) [$(( $(date +%s) - start ))s]" >&2
  exit 1
fi
echo "test lanes: all passed in $(( $(date +%s) - start ))s"
