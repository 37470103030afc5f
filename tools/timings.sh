#!/usr/bin/env bash
# Prints a timings file (tools/progress.sh appends "LABEL<TAB>seconds" as
# each timed step ends, so the builds inside a step come before it): each
# .ci/run step ("step: ..." labels) with its wall time, the builds and
# runs inside it indented above it, the total of the steps, and what ran
# in the background beside them ("background: ..." labels).
#
# Usage: tools/timings.sh [FILE] (default _output/timings.tsv)
set -euo pipefail
file=${1:-_output/timings.tsv}
if [[ ! -s "${file}" ]]; then
  echo "no timings in ${file}: run .ci/run (or a build with TIMINGS_FILE set) first" >&2
  exit 1
fi
awk -F '\t' '
  function fmt(s) { return sprintf("%4dm%02ds", int(s / 60), s % 60) }
  $1 ~ /^step: / { printf "%-52s %s\n", substr($1, 7), fmt($2); total += $2; next }
  $1 ~ /^background: / { bg = bg sprintf("%-52s %s\n", "(" substr($1, 13) ", beside the steps)", fmt($2)); next }
  { printf "    %-48s %s\n", $1, fmt($2) }
  END { if (total) printf "%-52s %s\n", "total of the steps", fmt(total); printf "%s", bg }
' "${file}"
