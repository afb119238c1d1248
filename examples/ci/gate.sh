#!/bin/sh
# Fail-closed CI gate: score one trace against the committed gates and exit with the
# scorer's own status.  No pipe hides it, and a missing, empty or unmatched trace fails.
#
#   sh examples/ci/gate.sh [TRACE] [GOLD] [DATASET]
#
# Defaults are what `make eval` writes and reads: runs/trace.baseline.jsonl, gold/gold.jsonl,
# dataset baseline (use runs/trace.perturb.jsonl gold/gold_perturb.jsonl perturb for the
# other set).  Environment: PYTHON (python3); REPO (the repository root: default the checkout
# holding this script); GATES (default REPO/gates.toml, so the script works from any folder);
# SCORER (default REPO/score_eval.py); REPORT (runs/gate.DATASET.json; the HTML and JUnit
# reports are written next to it, same name, .html and .xml).
#
# Exit status: 0 every gate passed; 1 a gate failed; 2 missing, empty or invalid input, or
# any other error.  The JSON report is in $REPORT either way (when the scorer got that far).
set -eu

PYTHON=${PYTHON:-python3}
trace=${1:-runs/trace.baseline.jsonl}
gold=${2:-gold/gold.jsonl}
dataset=${3:-baseline}
report=${REPORT:-runs/gate.$dataset.json}
root=$(cd "$(dirname "$0")/../.." && pwd)
repo=${REPO:-$root}
gates=${GATES:-$repo/gates.toml}
scorer=${SCORER:-$repo/score_eval.py}
base=${report%.json}

if [ ! -f "$gates" ]; then
  echo "gate: $gates: no such gates file (GATES=FILE, or REPO=the repository root that has one)" >&2
  exit 2
fi
if [ ! -f "$trace" ]; then
  echo "gate: $trace: no such trace file (run the system first: make eval, or python3 -m mini_rag run)" >&2
  exit 2
fi
if [ ! -s "$trace" ]; then
  echo "gate: $trace: the trace file is empty" >&2
  exit 2
fi
mkdir -p "$(dirname "$report")"
rm -f "$report" "$base.html" "$base.xml"

status=0
"$PYTHON" "$scorer" --gold "$gold" --trace "$trace" --dataset "$dataset" --gates-file "$gates" \
  --out "$report" --html "$base.html" --junit "$base.xml" --quiet >/dev/null || status=$?

if [ "$status" -eq 0 ]; then
  # Belt and braces: the report must exist, say pass: true, and have scored real trace rows.
  "$PYTHON" - "$report" <<'PY' || status=2
import json, sys
try:
    with open(sys.argv[1], encoding="utf-8") as fh:
        report = json.load(fh)
except (OSError, ValueError) as exc:
    sys.exit("gate: %s: no readable report (%s)" % (sys.argv[1], exc))
counts = report.get("counts") or {}
if report.get("pass") is not True:
    sys.exit("gate: %s: the report does not say pass: true" % sys.argv[1])
if not counts.get("matched_items"):
    sys.exit("gate: %s: no trace row matched a gold item" % sys.argv[1])
PY
fi

case $status in
  0) echo "gate: $dataset passes every gate ($report)" ;;
  1) echo "gate: $dataset FAILED a gate; see $report and the lines above" >&2 ;;
  *) echo "gate: input or internal error (exit $status); nothing was gated" >&2 ;;
esac
exit "$status"
