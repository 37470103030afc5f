# Sourced by tools/*/build.sh and .ci/run: progress for long steps, so that
# no step is silent for more than PROGRESS_INTERVAL seconds (default 30).
#
#   progress LABEL CMD...   runs CMD; every interval prints LABEL and the
#                           time elapsed; at the end, LABEL and its time.
#   pin MODULE [GOMOD]      prints the version GOMOD (default ./go.mod)
#                           requires of MODULE: each tool's version is
#                           written once, in its wrapper module.
#   built OUT DIR           succeeds if the binary OUT is there and was
#                           built from the wrapper module DIR as its go.sum
#                           is now (the hash in OUT.gosum): binaries are
#                           named by the tool's version, so a raised pin
#                           of a dependency would otherwise keep the old.
#                           A wrapper module's own main.go (tools/etcd,
#                           tools/oidc) counts with its go.sum.
#   stamp OUT DIR           records that OUT was built from DIR's go.sum
#                           (and main.go).
#   gobuild LABEL ARGS...   runs `go build -v ARGS` the same way; each
#                           report also counts the packages compiled and
#                           the modules downloaded so far and names the
#                           last package. On failure it prints go's
#                           output (the -v lines left out).
#
# If TIMINGS_FILE is set (.ci/run sets it), each finished LABEL appends
# "LABEL<TAB>seconds" to it, which .ci/run's summary and `make timings`
# print.
#
# Every Go tool build compiles with the configuration the project's own
# builds, tests and runtime images use: the Makefile's CGO_ENABLED=0 and
# GOFLAGS (GO_BUILD_FLAGS: -trimpath and -gcflags=all=-dwarf=false), which
# the scripts keep (they add to GOFLAGS, never replace it, and set no
# -gcflags). The build cache keys a compiled package by
# its source, its dependencies, the compiler flags and cgo, so a package two
# tools (or a tool and the project's tests) share at the same version
# compiles once only if both builds use the same. -ldflags only affect the
# link and -mod only module resolution, so they may differ. runc and
# ghostunnel need cgo, and their scripts turn it on.

progress_interval=${PROGRESS_INTERVAL:-30}

pin() {
  local v
  v=$(awk -v m="$1" '($1 == m && $2 ~ /^v/) { print $2; exit } ($1 == "require" && $2 == m) { print $3; exit }' "${2:-go.mod}")
  if [[ -z "${v}" ]]; then
    echo "pin: ${2:-go.mod} requires no $1" >&2
    return 1
  fi
  echo "${v}"
}

built() {
  [[ -x "$1" && -f "$1.gosum" ]] && [[ "$(<"$1.gosum")" == "$(_gosum_hash "$2")" ]]
}

stamp() {
  _gosum_hash "$2" >"$1.gosum"
}

_gosum_hash() {
  if [[ -f "$1/main.go" ]]; then
    cat "$1/go.sum" "$1/main.go" | sha256sum | cut -d' ' -f1
  else
    sha256sum <"$1/go.sum" | cut -d' ' -f1
  fi
}

# _progress_ticker PID LABEL START [LOG]: until PID exits, prints a report
# every interval. It polls each second, so it ends with the command.
_progress_ticker() {
  local pid=$1 label=$2 start=$3 log=${4:-} next=$(( $3 + progress_interval )) now pkgs dls last
  while kill -0 "${pid}" 2>/dev/null; do
    sleep 1
    now=$(date +%s)
    (( now >= next )) || continue
    next=$(( now + progress_interval ))
    if [[ -n "${log}" ]]; then
      pkgs=$(grep -cv -e '^go: ' -e '^#' "${log}" || true)
      dls=$(grep -c '^go: downloading' "${log}" || true)
      # || true: before the first package compiles (downloads only) grep
      # matches nothing, and pipefail would end the ticker.
      last=$(grep -v -e '^go: ' -e '^#' "${log}" | tail -n 1 || true)
      echo "${label}: ${pkgs} packages compiled, ${dls} modules downloaded${last:+, last ${last}} [$(( now - start ))s]"
    else
      echo "${label}: running [$(( now - start ))s]"
    fi
  done
}

_progress_done() { # LABEL START RC
  local secs=$(( $(date +%s) - $2 ))
  if [[ $3 -eq 0 ]]; then
    echo "${1}: done in ${secs}s"
    if [[ -n "${TIMINGS_FILE:-}" ]]; then
      printf '%s\t%s\n' "$1" "${secs}" >>"${TIMINGS_FILE}"
    fi
  else
    echo "${1}: FAILED after ${secs}s (exit ${3})" >&2
  fi
}

progress() {
  local label=$1 start rc=0
  shift
  start=$(date +%s)
  echo "${label}: starting"
  "$@" &
  local pid=$!
  _progress_ticker "${pid}" "${label}" "${start}" &
  local ticker=$!
  wait "${pid}" || rc=$?
  wait "${ticker}" 2>/dev/null || true
  _progress_done "${label}" "${start}" "${rc}"
  return "${rc}"
}

gobuild() {
  local label=$1 start rc=0 log
  shift
  start=$(date +%s)
  log=$(mktemp)
  echo "${label}: go build $*"
  go build -v "$@" 2>"${log}" &
  local pid=$!
  _progress_ticker "${pid}" "${label}" "${start}" "${log}" &
  local ticker=$!
  wait "${pid}" || rc=$?
  wait "${ticker}" 2>/dev/null || true
  if [[ ${rc} -ne 0 ]]; then
    # go's errors without the package names -v printed.
    grep -E -e '^go: [^d]' -e '^#' -e ':[0-9]+:' -e 'cannot|error|missing' "${log}" | tail -n 60 >&2 || tail -n 60 "${log}" >&2
  fi
  rm -f "${log}"
  _progress_done "${label}" "${start}" "${rc}"
  return "${rc}"
}

# Run as a command (tools/progress.sh gobuild|progress LABEL ...), as the
# Makefile does.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  set -euo pipefail
  case "${1:-}" in
    progress | gobuild) "$@" ;;
    *) echo "usage: $0 progress|gobuild LABEL ARGS..." >&2; exit 2 ;;
  esac
fi
