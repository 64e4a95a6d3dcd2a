#!/usr/bin/env bash
# The unit tests under load (issue 41 item 8: no test races the clock). ROUNDS rounds (default 5),
# each running tests/unit twice at once, each run on WORKERS pytest-xdist workers (default 4): 8
# workers on the machine's cores. Prints each run's last line (its counts and wall time); exits 1
# when any run failed, after naming its failed tests. PY: the interpreter (default .venv/bin/python).
# Run it through `make unit-under-load`. Each run's whole output stays in the directory it names.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
ROUNDS=${ROUNDS:-5}
WORKERS=${WORKERS:-4}
LOGS=$(mktemp -d "${TMPDIR:-/tmp}/unit-under-load.XXXXXX")
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; exit 130' INT TERM
echo "unit-under-load: $ROUNDS rounds of 2 runs at once, -n $WORKERS each; logs in $LOGS ($(date -u '+%Y-%m-%d %H:%M UTC'))"
failed=0
for round in $(seq 1 "$ROUNDS"); do
  pids=()
  for run in a b; do
    "$PY" -m pytest -q -n "$WORKERS" -p no:cacheprovider tests/unit >"$LOGS/$round$run.log" 2>&1 &
    pids+=($!)
  done
  for i in 0 1; do
    run=$([ "$i" = 0 ] && echo a || echo b)
    if wait "${pids[$i]}"; then status=ok; else status=FAILED; failed=1; fi
    echo "round $round run $run: $status: $(tail -n 1 "$LOGS/$round$run.log")"
  done
done
pids=()
if [ "$failed" != 0 ]; then
  echo "unit-under-load: failed tests:"
  grep -h '^FAILED\|^ERROR' "$LOGS"/*.log | sort | uniq -c
  exit 1
fi
echo "unit-under-load: every run passed"
