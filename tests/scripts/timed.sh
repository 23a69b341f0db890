#!/usr/bin/env bash
# timed.sh NAME COMMAND [ARGS...]: run COMMAND, then print how long it took
# and whether it passed; exit with its status.
set -uo pipefail
name="$1"
shift
start=$SECONDS
echo "== ${name}: $*"
"$@"
rc=$?
if [[ $rc -eq 0 ]]; then
  echo "== ${name}: passed in $((SECONDS - start))s"
else
  echo "== ${name}: FAILED (exit ${rc}) after $((SECONDS - start))s" >&2
fi
exit "$rc"
