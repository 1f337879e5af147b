#!/usr/bin/env bash
# Does a restructuring change what pipebench reports?  Records the presets' traces once (with OLD), then
# analyzes every trace with OLD and with NEW into the same output path, and compares every file byte for
# byte (report.json, report.html, stages.csv, steps.csv, trace.json and the text summary on stdout).
#
#     bench/same_reports.sh OLD_PIPEBENCH NEW_PIPEBENCH SCRATCH_DIR
#
# Prints "identical" and exits 0 when every file compares equal; else lists what differs and exits 1.
# The presets run short (a few steps, a small generated dataset) so that the whole check takes about a
# minute; what matters is that both binaries read the same record, not how long it is.
set -euo pipefail
if [ $# -ne 3 ]; then
  echo "usage: $0 OLD_PIPEBENCH NEW_PIPEBENCH SCRATCH_DIR" >&2
  exit 2
fi
old=$(realpath "$1")
new=$(realpath "$2")
work=$3
repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$work"
work=$(realpath "$work")

# name, config, extra --set arguments (run length kept short; JPEG presets get a small dataset of their own)
presets=(
  "resnet|configs/resnet.json|dataset.generate.num_files=96 run.steps=12 run.warmup_steps=2"
  "bert|configs/bert.json|run.steps=10 run.warmup_steps=2"
  "unet3d|configs/unet3d.json|dataset.generate.num_files=8 run.steps=6 run.warmup_steps=1"
  "cosmoflow|configs/cosmoflow.json|dataset.generate.num_files=16 run.steps=30 run.warmup_steps=2"
  "planted_map|configs/examples/planted_map.json|run.steps=30"
  "engine_bench|configs/examples/engine_bench.json|run.steps=400 run.warmup_steps=10"
)

record() { # name config sets...: one traced run of the OLD binary
  local name=$1 cfg=$2
  shift 2
  local sets=(--set "dataset.path=$work/data/$name")
  for s in "$@"; do sets+=(--set "$s"); done
  if grep -q '"generate"' "$repo/$cfg" && [ ! -e "$work/data/$name" ]; then
    "$old" gen --config "$repo/$cfg" "${sets[@]}" >/dev/null 2>&1
  fi
  if grep -q '"path"' "$repo/$cfg"; then :; else sets=("${sets[@]:2}"); fi
  "$old" run --config "$repo/$cfg" "${sets[@]}" --device emulated --quiet --no-progress \
    --format json,trace --out "$work/rec/$name" >/dev/null
}

analyze() { # bin name side: analyze the recorded trace into one fixed path, then move it aside
  local bin=$1 name=$2 side=$3
  rm -rf "$work/an"
  "$bin" analyze "$work/rec/$name" --out "$work/an" --format text,json,csv,html,trace >"$work/an.stdout" 2>&1 ||
    echo "exit $?" >>"$work/an.stdout"
  mv "$work/an.stdout" "$work/an/stdout.txt" 2>/dev/null || { mkdir -p "$work/an" && mv "$work/an.stdout" "$work/an/stdout.txt"; }
  rm -rf "${work:?}/$side/$name"
  mkdir -p "$work/$side"
  mv "$work/an" "$work/$side/$name"
}

rm -rf "${work:?}/rec" "${work:?}/old" "${work:?}/new"
differ=0
for p in "${presets[@]}"; do
  IFS='|' read -r name cfg sets <<<"$p"
  # shellcheck disable=SC2086  # the sets are words on purpose
  record "$name" "$cfg" $sets
  analyze "$old" "$name" old
  analyze "$new" "$name" new
  for f in $(cd "$work/old/$name" && find . -type f ! -name '.pipebench*' | sort); do
    if ! cmp -s "$work/old/$name/$f" "$work/new/$name/$f"; then
      echo "DIFFERS: $name/${f#./}"
      differ=1
    fi
  done
  for f in $(cd "$work/new/$name" && find . -type f ! -name '.pipebench*' | sort); do
    [ -e "$work/old/$name/$f" ] || { echo "ONLY IN NEW: $name/${f#./}"; differ=1; }
  done
  echo "$name: $(cd "$work/old/$name" && find . -type f ! -name '.pipebench*' | wc -l) files compared" >&2
done
if [ $differ -eq 0 ]; then
  echo identical
else
  echo "not identical (outputs under $work/old and $work/new)"
  exit 1
fi
