#!/usr/bin/env bash
# pipebench's GPU validation suite: one run does every check (tests/gpu/README.md).
#
#   tests/gpu/run.sh [--emulated] [--keep-runs] [OUTDIR]        (OUTDIR defaults to "${OUT:-gpu-results}")
#
# On the GPU machine:  source .gpu/env.sh && tests/gpu/run.sh "$OUT"
# Here, without a GPU: tests/gpu/run.sh --emulated --keep-runs /tmp/gpu-emulated
#
# It runs the reference copy loop (pb_h2d_copy_loop) and every pipebench config of the suite with
# --device gpu (--emulated: --device emulated, and no copy loop), never stops at a failed run (each run's
# exit status, stdout and stderr are kept), then tests/gpu/check.py writes OUTDIR/summary.md and
# OUTDIR/checks.json and decides the exit status: 0 when no check failed, 1 otherwise, 2 on a usage error.
#
# What OUTDIR holds at the end (at most 8 files, since the GPU machine's $OUT brings back only 8):
#   summary.md      the checks table (check, target, measured, result), the GPU and driver, every run
#   checks.json     the same, for scripts
#   run.log         everything this script printed
#   env.txt         machine, GPU (nvidia-smi), tool versions
#   runs.tar.gz     runs/<name>/{report.json,trace.json,stdout.txt,stderr.txt,exit_code,cmd.txt} and
#                   runs/copy_loop/*.jsonl; unpacked as OUTDIR/runs as well with --keep-runs
#
# Settings (environment): PB_GPU_BUDGET_S (default 480: runs stop being started once it is spent, so
# the whole run stays inside the GPU machine's 10-minute limit), PB_GPU_RESNET_FILES (default 512:
# files `pipebench gen` writes for the resnet preset), PB_GPU_DATA (default: a fresh temporary folder,
# removed at the end; where the resnet dataset goes).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
start_s=$SECONDS

mode=gpu
keep_runs=0
outdir=""
for a in "$@"; do
  case "$a" in
    --emulated) mode=emulated ;;
    --keep-runs) keep_runs=1 ;;
    -h|--help) sed -n '2,27p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "run.sh: unknown option $a (expected --emulated, --keep-runs or OUTDIR)" >&2; exit 2 ;;
    *) [ -z "$outdir" ] || { echo "run.sh: more than one OUTDIR ($outdir, $a)" >&2; exit 2; }; outdir=$a ;;
  esac
done
outdir=${outdir:-${OUT:-gpu-results}}
budget_s=${PB_GPU_BUDGET_S:-480}
resnet_files=${PB_GPU_RESNET_FILES:-512}

mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
runs="$outdir/runs"
rm -rf "$runs" "$outdir/runs.tar.gz" "$outdir/summary.md" "$outdir/checks.json" "$outdir/env.txt"
mkdir -p "$runs"
exec > >(tee "$outdir/run.log") 2>&1
tee_pid=$!
# Exit only once tee has written the last line to run.log.
finish() { local rc=$1; exec >&- 2>&-; wait "$tee_pid" 2>/dev/null || true; exit "$rc"; }

say() { printf '[run.sh %4ds] %s\n' "$((SECONDS - start_s))" "$*"; }

# A packed build (../shared/gpu/pack.sh) puts pipebench and pb_h2d_copy_loop in .gpu/bin.
if ! command -v pipebench >/dev/null 2>&1 && [ -f "$root/.gpu/env.sh" ]; then
  say "pipebench is not on PATH; sourcing $root/.gpu/env.sh"
  # shellcheck disable=SC1091
  source "$root/.gpu/env.sh"
fi
if ! command -v pipebench >/dev/null 2>&1; then
  say "pipebench is not on PATH (source .gpu/env.sh, or put a build directory on PATH)"
  finish 2
fi
command -v python3 >/dev/null 2>&1 || say "WARNING: no python3: the runs will be made but not checked"

if [ -n "${PB_GPU_DATA:-}" ]; then
  data=$PB_GPU_DATA
  mkdir -p "$data"
else
  data=$(mktemp -d "${TMPDIR:-/tmp}/pipebench-gpu-data.XXXXXX")
  trap 'rm -rf "$data"' EXIT
fi

dev_flag=$mode
[ "$mode" = emulated ] || dev_flag=gpu

# ---------------------------------------------------------------- the machine
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "mode: $mode"
  echo "host: $(uname -a)"
  echo "cpus: $(nproc 2>/dev/null || echo '?')"
  echo "pipebench: $(command -v pipebench) ($(pipebench --version 2>&1 || true))"
  echo "pb_h2d_copy_loop: $(command -v pb_h2d_copy_loop 2>/dev/null || echo 'not on PATH')"
  echo "python3: $(python3 --version 2>&1 || echo none)"
  if command -v nvidia-smi >/dev/null 2>&1; then
    echo "--- nvidia-smi -L"
    nvidia-smi -L 2>&1 || true
    echo "--- nvidia-smi --query-gpu"
    nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id,memory.total,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,clocks.max.sm --format=csv 2>&1 || true
    echo "--- nvidia-smi"
    nvidia-smi 2>&1 || true
  else
    echo "nvidia-smi: not found"
  fi
} > "$outdir/env.txt" 2>&1
awk '/^--- nvidia-smi$/ { exit } { print }' "$outdir/env.txt"

gpu_count=0
if [ "$mode" = gpu ] && command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id --format=csv,noheader > "$runs/nvidia_smi.csv" 2>/dev/null || true
  gpu_count=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
fi

# ---------------------------------------------------------------- helpers
# Seconds a run may take: its own limit, cut to what is left of the budget (20 s kept for the checks
# and the packing).  0: nothing left, do not start it.
run_limit() {
  local want=$1 left=$((budget_s - (SECONDS - start_s) - 20))
  if [ "$left" -lt 10 ]; then echo 0; elif [ "$left" -lt "$want" ]; then echo "$left"; else echo "$want"; fi
}

# record NAME LIMIT_S CMD...: runs CMD with its stdout/stderr in runs/NAME, its exit status in
# runs/NAME/exit_code (124: stopped at its time limit).  Never fails.
record() {
  local name=$1 want=$2; shift 2
  local dir="$runs/$name" limit rc=0 t0=$SECONDS
  mkdir -p "$dir"
  printf '%q ' "$@" > "$dir/cmd.txt"; echo >> "$dir/cmd.txt"
  limit=$(run_limit "$want")
  if [ "$limit" -eq 0 ]; then
    echo "out of time: the suite's budget of ${budget_s}s was spent before this run" > "$dir/skipped.txt"
    say "$name: SKIPPED (out of time)"
    return 0
  fi
  # SIGINT first: pipebench stops cleanly and still writes its (interrupted) report.
  timeout --signal=INT --kill-after=15 "$limit" "$@" > "$dir/stdout.txt" 2> "$dir/stderr.txt" || rc=$?
  echo "$rc" > "$dir/exit_code"
  echo "$((SECONDS - t0))" > "$dir/wall_s"
  if [ "$rc" -eq 0 ]; then
    say "$name: ok ($((SECONDS - t0)) s)"
  else
    local why=""
    [ "$rc" -eq 124 ] && why=" (stopped at its ${limit}s limit)"
    say "$name: EXIT $rc$why ($((SECONDS - t0)) s); last lines of $dir/stderr.txt:"
    tail -n 5 "$dir/stderr.txt" | sed 's/^/    /'
  fi
}

# pb NAME LIMIT_S CONFIG [ARGS...]: one pipebench run into runs/NAME.
pb() {
  local name=$1 want=$2 config=$3; shift 3
  record "$name" "$want" pipebench run --config "$config" --device "$dev_flag" --out "$runs/$name" \
    --format json,text,trace --no-progress "$@"
}

skip() { # skip NAME REASON
  mkdir -p "$runs/$1"
  echo "$2" > "$runs/$1/skipped.txt"
  say "$1: skipped ($2)"
}

cfg="$here/configs"

# ---------------------------------------------------------------- pipebench calibrate (issue 10)
# The machine's ceilings: runs/calibrate/stdout.txt is its calibration.json (H2D pinned and pageable from
# a cudaMemcpyAsync loop, the step kernel's accuracy), beside the copy loop's figures below.
mkdir -p "$runs/calibrate"
record calibrate 60 env PIPEBENCH_CACHE_DIR="$runs/calibrate" pipebench calibrate --force --json

# ---------------------------------------------------------------- the reference copy loop
# The exact bytes of one batch of the H2D configs, so the loop copies what pipebench copies.
batch_bytes=""
if command -v python3 >/dev/null 2>&1; then
  batch_bytes=$(python3 "$here/check.py" --batch-bytes "$cfg/h2d_pinned.json") || batch_bytes=""
fi
{
  echo "mode=$mode"
  echo "batch_bytes=$batch_bytes"
  echo "gpu_count=$gpu_count"
  echo "budget_s=$budget_s"
  echo "resnet_files=$resnet_files"
} > "$runs/meta.txt"

if [ "$mode" = emulated ]; then
  skip copy_loop "emulated mode: no GPU, no copy loop"
else
  loop=$(command -v pb_h2d_copy_loop 2>/dev/null || true)
  if [ -z "$loop" ] && command -v nvcc >/dev/null 2>&1; then
    say "pb_h2d_copy_loop is not on PATH; building it with $(command -v nvcc)"
    mkdir -p "$runs/copy_loop"
    if nvcc -O2 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
        -o "$data/pb_h2d_copy_loop" "$here/h2d_copy_loop.cu" > "$runs/copy_loop/nvcc.txt" 2>&1; then
      loop="$data/pb_h2d_copy_loop"
    fi
  fi
  if [ -z "$loop" ]; then
    mkdir -p "$runs/copy_loop"
    echo "pb_h2d_copy_loop is not on PATH (pack it: EXTRA_BINS=build-release/tests/gpu/pb_h2d_copy_loop)" > "$runs/copy_loop/stderr.txt"
    echo 127 > "$runs/copy_loop/exit_code"
    say "copy_loop: pb_h2d_copy_loop not found"
  elif [ -z "$batch_bytes" ]; then
    mkdir -p "$runs/copy_loop"
    echo "could not compute the batch size of $cfg/h2d_pinned.json (python3 missing?)" > "$runs/copy_loop/stderr.txt"
    echo 1 > "$runs/copy_loop/exit_code"
    say "copy_loop: no batch size"
  else
    # The batch's size first (the check's reference), then a few sizes around it for the record.
    sizes="$batch_bytes,4194304,16777216,67108864,268435456"
    record copy_loop 90 "$loop" --bytes "$sizes" --iters 100 --warmup 10 --device 0
    mv "$runs/copy_loop/stdout.txt" "$runs/copy_loop/pinned.jsonl" 2>/dev/null || true
    record copy_loop_pageable 90 "$loop" --bytes "$sizes" --iters 50 --warmup 5 --device 0 --pageable
    mv "$runs/copy_loop_pageable/stdout.txt" "$runs/copy_loop_pageable/pageable.jsonl" 2>/dev/null || true
    cat "$runs/copy_loop/pinned.jsonl" "$runs/copy_loop_pageable/pageable.jsonl" 2>/dev/null || true
  fi
  # Without nvidia-smi, the CUDA runtime's count (from the copy loop) decides the two-device run.
  if [ "$gpu_count" -eq 0 ] && [ -s "$runs/copy_loop/pinned.jsonl" ]; then
    n=$(grep -o '"device_count":[0-9]*' "$runs/copy_loop/pinned.jsonl" | head -n 1 | cut -d: -f2 || true)
    gpu_count=${n:-0}
    echo "gpu_count=$gpu_count (from the copy loop)" >> "$runs/meta.txt"
  fi
fi

# ---------------------------------------------------------------- pipebench runs
# H2D-bound: 64 x [3,224,224] float32 (38.5 MB) batches from memory, a 0.2 ms step.
pb h2d_pinned 90 "$cfg/h2d_pinned.json" --data synthetic
pb h2d_pageable 90 "$cfg/h2d_pageable.json" --data synthetic

# Step kernel accuracy: a tiny pipeline, a device-bound run per step length.
pb step_5ms 60 "$cfg/step_kernel.json" --set device.step_ms=5 --set run.steps=100
pb step_20ms 60 "$cfg/step_kernel.json" --set device.step_ms=20 --set run.steps=50
pb step_100ms 60 "$cfg/step_kernel.json" --set device.step_ms=100 --set run.steps=20

# CUPTI vs CUDA events: a map stage that sleeps 1 ms per sample on 2 threads (2,000 samples/s) feeds a
# device that wants 32 samples per 8 ms (4,000 samples/s): the device idles about half the time.
pb idle_crosscheck 60 "$cfg/idle_crosscheck.json"

# normalize on the host (float32 crosses the bus) vs on the device (uint8 crosses, 1/4 of the bytes).
pb normalize_host 60 "$cfg/normalize_host.json"
pb normalize_device 60 "$cfg/normalize_device.json"

# The resnet preset: from memory, then real JPEGs (a small dataset generated first).
resnet_sets=(--set "dataset.path=$data/resnet50" --set "dataset.generate.num_files=$resnet_files")
pb resnet_synthetic 90 "$root/configs/resnet.json" "${resnet_sets[@]}" --data synthetic
record resnet_gen 120 pipebench gen --config "$root/configs/resnet.json" "${resnet_sets[@]}" --quiet
pb resnet_real 150 "$root/configs/resnet.json" "${resnet_sets[@]}"

# Two devices, where there are two.
if [ "$mode" = emulated ]; then
  pb multi_gpu 60 "$cfg/multi_gpu.json"
elif [ "$gpu_count" -ge 2 ]; then
  pb multi_gpu 60 "$cfg/multi_gpu.json"
else
  skip multi_gpu "this machine has $gpu_count GPU(s); device.count 2 needs 2"
fi

# ---------------------------------------------------------------- checks, packing
check_rc=0
if command -v python3 >/dev/null 2>&1; then
  check_args=("$outdir")
  [ "$mode" = emulated ] && check_args+=(--emulated)
  python3 "$here/check.py" "${check_args[@]}" || check_rc=$?
else
  say "no python3: runs made, not checked (run tests/gpu/check.py $outdir where python3 exists)"
  check_rc=1
fi

tar -czf "$outdir/runs.tar.gz" -C "$outdir" runs
# The GPU machine's $OUT brings back files of at most 16 MiB: without the traces if it is bigger.
if [ "$(stat -c %s "$outdir/runs.tar.gz")" -gt $((15 * 1024 * 1024)) ]; then
  say "runs.tar.gz is over 15 MiB: packing it again without the trace.json files"
  tar -czf "$outdir/runs.tar.gz" -C "$outdir" --exclude=trace.json runs
fi
[ "$keep_runs" -eq 1 ] || rm -rf "$runs"
say "done in $((SECONDS - start_s)) s: $outdir/summary.md, checks.json, run.log, env.txt, runs.tar.gz ($(du -h "$outdir/runs.tar.gz" | cut -f1)); exit $check_rc"
finish "$check_rc"
