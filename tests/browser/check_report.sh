#!/usr/bin/env bash
# The HTML reports in a real browser (issue 7): headless Chromium loads report.html of a run, an A/B, a
# sweep and a tune from disk, and each must draw without one console message (an error, a blocked fetch:
# the page's Content-Security-Policy forbids every network request, so any attempt shows up here) and mark
# itself rendered.  The run's page must also print to PDF and screenshot at 1280x800.
#
# Usage: tests/browser/check_report.sh PIPEBENCH [CHROMIUM] [--shots DIR]
#   --shots DIR   keep the 1280x800 screenshots there (docs/report.png comes from this; see docs/REPORTS.md)
set -euo pipefail
bin=$1; shift
browser=chromium
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then browser=$1; shift; fi
shots=""
if [ "${1:-}" = "--shots" ]; then shots=$2; fi
command -v "$browser" >/dev/null || { echo "check_report: $browser not found" >&2; exit 1; }

tmp=$(mktemp -d /tmp/pb-browser-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
profile="$tmp/profile"

cat > "$tmp/small.json" <<JSON
{ "name": "browser-check", "seed": 7,
  "dataset": { "path": "$tmp/data", "format": "jpeg",
               "generate": { "num_files": 96, "samples_per_file": 1,
                             "image": { "width": 160, "height": 120, "quality": 90 } } },
  "stages": [
    { "name": "read", "type": "read", "threads": 1 },
    { "name": "decode", "type": "decode", "threads": 1 },
    { "name": "augment", "type": "map", "threads": 1,
      "ops": [ { "op": "random_resized_crop", "size": 64 }, { "op": "flip", "p": 0.5 },
               { "op": "normalize", "dtype": "float32" } ] },
    { "name": "shuffle", "type": "shuffle", "buffer": 32 },
    { "name": "batch", "type": "batch", "size": 16 },
    { "name": "prefetch", "type": "prefetch", "depth": 2 },
    { "name": "h2d", "type": "h2d" } ],
  "device": { "kind": "emulated", "step_ms": 8 },
  "run": { "steps": 40, "warmup_steps": 3 } }
JSON

pb() { "$bin" "$@" --config "$tmp/small.json" --quiet --device emulated; }
"$bin" gen --config "$tmp/small.json" --quiet # gen takes no --device: it writes files only
pb run --out "$tmp/run"
pb ab --out "$tmp/ab" --set run.steps=10
pb sweep --out "$tmp/sweep" --data synthetic --set run.steps=10 --set stages.batch.size=8,16
pb tune --out "$tmp/tune" --set run.steps=10 --budget-s 10
# the pages of runs with less to show: no trace (no critical path, no lineage), and no measured step at
# all (one epoch of 6 batches, all warm-up: every figure n/a)
pb run --out "$tmp/notrace" --no-trace --set run.steps=10
sed 's/"steps": 40/"epochs": 1/' "$tmp/small.json" > "$tmp/epoch.json"
# (a run that measured nothing exits 1, its report still written)
"$bin" run --config "$tmp/epoch.json" --quiet --device emulated --out "$tmp/nosteps" --set run.warmup_steps=10 ||
  [ $? -eq 1 ]
# a step with a gradient exchange (device.allreduce model): a fifth part in the step bars
pb run --out "$tmp/allreduce" --set run.steps=10 --set device.allreduce.mode=model \
  --set device.allreduce.bytes=4000000 --set device.allreduce.gb_per_s=2

chrome() { # chromium's own chatter (dbus, GPU probing) goes to the log; only CONSOLE lines are the page's
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$profile" \
    --enable-logging=stderr --v=0 "$@"
}

fail=0
pages="run ab sweep tune notrace nosteps allreduce"
# an mpirun job's page (ranks side by side), when this pipebench has MPI and mpirun is here
if command -v mpirun >/dev/null; then
  root=(); [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
  if ASAN_OPTIONS=detect_leaks=0 timeout 120 mpirun "${root[@]}" --oversubscribe --mca btl self,vader -np 2 "$bin" run --config "$tmp/small.json" --quiet \
       --device emulated --out "$tmp/job" --set run.steps=10 --set device.allreduce.mode=barrier > "$tmp/job.log" 2>&1; then
    pages="$pages job"
  else
    echo "check_report: no job page: mpirun -np 2 failed:" >&2
    tail -3 "$tmp/job.log" >&2
    # a pipebench linked with MPI must make the page; one without refuses mpirun (expected)
    if ldd "$bin" 2>/dev/null | grep -q libmpi; then fail=1; fi
  fi
fi

for page in $pages; do
  html="$tmp/$page/report.html"
  [ -s "$html" ] || { echo "check_report: $html missing" >&2; fail=1; continue; }
  chrome --window-size=1280,800 --dump-dom "file://$html" > "$tmp/$page.dom" 2> "$tmp/$page.log" || true
  if grep -q "CONSOLE" "$tmp/$page.log"; then
    echo "check_report: $page: console messages:" >&2
    grep "CONSOLE" "$tmp/$page.log" >&2
    fail=1
  fi
  if ! grep -q 'data-rendered="ok"' "$tmp/$page.dom" || grep -q 'data-errors=' "$tmp/$page.dom"; then
    echo "check_report: $page: the page did not draw (no data-rendered=\"ok\", or data-errors set)" >&2
    grep -o 'data-errors="[^"]*"' "$tmp/$page.dom" >&2 || true
    fail=1
  fi
  n_svg=$(grep -o '<svg' "$tmp/$page.dom" | wc -l)
  echo "check_report: $page: drawn, $n_svg charts, no console messages"
  if [ -n "$shots" ]; then
    mkdir -p "$shots"
    chrome --window-size=1280,800 --hide-scrollbars --screenshot="$shots/$page.png" "file://$html" 2>/dev/null
  fi
done

# the run's page: all its charts are there, it prints, it screenshots at 1280x800
for want in 'id="summary"' 'id="steps"' 'id="graph"' 'id="stages"' 'id="time"' 'id="recs"' 'id="details"'; do
  grep -q "$want" "$tmp/run.dom" || { echo "check_report: run: no $want section" >&2; fail=1; }
done
chrome --print-to-pdf="$tmp/run.pdf" --no-pdf-header-footer "file://$tmp/run/report.html" 2>/dev/null || true
if [ "$(head -c 4 "$tmp/run.pdf" 2>/dev/null)" != "%PDF" ]; then echo "check_report: run: no PDF" >&2; fail=1; fi
chrome --window-size=1280,800 --screenshot="$tmp/run.png" "file://$tmp/run/report.html" 2>/dev/null || true
[ -s "$tmp/run.png" ] || { echo "check_report: run: no screenshot" >&2; fail=1; }
[ $fail -eq 0 ] && echo "check_report: all report pages passed in $("$browser" --version 2>/dev/null | head -1)"
exit $fail
