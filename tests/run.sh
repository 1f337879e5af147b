#!/usr/bin/env bash
# The whole test suite, as CI runs it (README "Tests"):
#   1. release build (CUDA when the toolkit is present), -Werror, every unit and end-to-end test;
#   2. ASan + UBSan build without CUDA (also proves the emulated-only build), every test;
#   3. TSan build, the engine's unit tests (queue, pool, engine) and the end-to-end tests;
#   4. valgrind: RelWithDebInfo build without sanitizers, one real-data run under memcheck;
#   5. fuzz: clang + libFuzzer build (tests/fuzz), every target over its seed corpus for 30 s.
# Usage: tests/run.sh [release|asan|tsan|valgrind|fuzz]...   (default: all five)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(release asan tsan valgrind fuzz)
# Runs look up this machine's calibration (docs/CALIBRATE.md): the suite uses an empty cache of its own,
# never the user's ~/.cache/pipebench (ctest sets one per build for the end-to-end tests too).
PIPEBENCH_CACHE_DIR=$(mktemp -d)
export PIPEBENCH_CACHE_DIR
trap 'rm -rf "$PIPEBENCH_CACHE_DIR"' EXIT

build() { # dir, cmake args...
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja -DPB_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
}

# One real-data run under valgrind's memcheck: a small JPEG dataset made with `pipebench gen` (natively), then
# read -> decode -> map(random_resized_crop, flip, normalize) -> shuffle -> batch -> prefetch -> h2d on the
# emulated device, several threads per stage, every output format.  A memcheck error or a definite/indirect
# leak fails (tests/valgrind.supp, when present, holds justified third-party suppressions), and so does a
# missing output or a report.json that says the run was interrupted.
valgrind_stage() {
  build build-valgrind -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPB_WITH_CUDA=OFF -DBUILD_TESTING=OFF
  local tmp rc=0 f
  tmp=$(mktemp -d)
  cat >"$tmp/valgrind.json" <<EOF
{
  "name": "valgrind",
  "seed": 11,
  "dataset": { "path": "$tmp/data", "format": "jpeg",
               "generate": { "num_files": 48, "image": { "width": 96, "height": 72, "quality": 85 } } },
  "stages": [
    { "name": "read",     "type": "read",     "threads": 2 },
    { "name": "decode",   "type": "decode",   "threads": 2 },
    { "name": "augment",  "type": "map",      "threads": 2,
      "ops": [ { "op": "random_resized_crop", "size": 48 }, { "op": "flip", "p": 0.5 },
               { "op": "normalize", "dtype": "float32" } ] },
    { "name": "shuffle",  "type": "shuffle",  "buffer": 16 },
    { "name": "batch",    "type": "batch",    "size": 8 },
    { "name": "prefetch", "type": "prefetch", "depth": 2 },
    { "name": "h2d",      "type": "h2d" }
  ],
  "device": { "kind": "emulated", "step_ms": 2 },
  "run": { "steps": 20, "warmup_steps": 2 }
}
EOF
  build-valgrind/pipebench gen --config "$tmp/valgrind.json" --quiet
  local supp=()
  [ ! -f tests/valgrind.supp ] || supp=(--suppressions=tests/valgrind.supp)
  valgrind --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \
    --error-exitcode=99 --track-fds=no ${supp[@]+"${supp[@]}"} \
    build-valgrind/pipebench run --config "$tmp/valgrind.json" --out "$tmp/out" \
    --format text,json,csv,html,trace --no-progress >"$tmp/stdout" 2>"$tmp/valgrind.log" || rc=$?
  grep -E 'in use at exit|All heap blocks|definitely lost|indirectly lost|ERROR SUMMARY' "$tmp/valgrind.log" || true
  if [ $rc -ne 0 ]; then
    cat "$tmp/valgrind.log" "$tmp/stdout" >&2
    echo "valgrind: pipebench exited $rc (99: memcheck found errors or leaks); files in $tmp" >&2
    return 1
  fi
  for f in report.json report.html trace.json steps.csv stages.csv; do
    [ -s "$tmp/out/$f" ] || { echo "valgrind: the run wrote no $f (files in $tmp)" >&2; return 1; }
  done
  grep -Eq '"interrupted":[[:space:]]*false' "$tmp/out/report.json" ||
    { echo "valgrind: $tmp/out/report.json does not say \"interrupted\": false" >&2; return 1; }
  rm -rf "$tmp"
}

# Every libFuzzer target (tests/fuzz) over a temp copy of its seed corpus, so new inputs stay out of the
# checkout, for a short fixed time (PB_FUZZ_SECONDS, default 30).  A crash, leak, UBSan report, timeout or OOM
# fails; its reproducer is kept in build-fuzz/findings/.  Longer runs: tests/fuzz/README.md.
fuzz_stage() {
  # No -Werror: warnings are the release stage's job, and this build differs from it (clang, no MPI).
  CC=clang build build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPB_FUZZ=ON -DPB_WITH_CUDA=OFF -DPB_WITH_MPI=OFF \
    -DBUILD_TESTING=OFF -DPB_WERROR=OFF
  local tmp t failed=()
  tmp=$(mktemp -d)
  for t in config jpeg tfrecord npy xspace; do
    cp -r "tests/fuzz/corpus/$t" "$tmp/$t"
    local opts=(-max_total_time="${PB_FUZZ_SECONDS:-30}" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1
                -artifact_prefix="$tmp/$t-")
    case $t in
      config) opts+=(-max_len=8192 -dict=tests/fuzz/config.dict) ;;
      npy) opts+=(-max_len=8192) ;;
      *) opts+=(-max_len=16384) ;;
    esac
    if ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "build-fuzz/fuzz_$t" "${opts[@]}" "$tmp/$t" >"$tmp/$t.log" 2>&1; then
      local execs rate cov
      execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$tmp/$t.log")
      rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$tmp/$t.log")
      cov=$(sed -En 's/^#[0-9]+[[:space:]]+DONE[[:space:]]+(cov: [0-9]+ ft: [0-9]+ corp: [^ ]+).*/\1/p' "$tmp/$t.log")
      echo "fuzz_$t: ${execs:-?} execs (${rate:-?}/s), ${cov:-no coverage line}"
    else
      tail -n 80 "$tmp/$t.log" >&2
      mkdir -p build-fuzz/findings
      cp "$tmp/$t"-* build-fuzz/findings/ 2>/dev/null || true
      echo "fuzz_$t: FOUND A BUG (log above; reproducer in build-fuzz/findings/: build-fuzz/fuzz_$t FILE)" >&2
      failed+=("$t")
    fi
  done
  rm -rf "$tmp"
  [ ${#failed[@]} -eq 0 ] || { echo "fuzz: findings in: ${failed[*]}" >&2; return 1; }
}

for stage in "${stages[@]}"; do
  echo "== $stage"
  case $stage in
    release)
      build build-release -DCMAKE_BUILD_TYPE=Release
      ctest --test-dir build-release --output-on-failure ;;
    asan)
      # float-cast-overflow: gcc leaves it out of undefined (a double too big for its integer type is UB)
      build build-asan -DCMAKE_BUILD_TYPE=Debug -DPB_WITH_CUDA=OFF -DPB_SANITIZE=address,undefined,float-cast-overflow
      # PB_E2E_SIGNAL_BUDGET_S: sanitizers slow the process several times; "within a second" becomes 3 s
      ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 PB_E2E_SIGNAL_BUDGET_S=3 \
        ctest --test-dir build-asan --output-on-failure ;;
    tsan)
      build build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPB_WITH_CUDA=OFF -DPB_SANITIZE=thread
      TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 PB_E2E_SIGNAL_BUDGET_S=3 \
        ctest --test-dir build-tsan --output-on-failure -R 'unit.test_(queue|pool|engine)|e2e[.]' ;;
    valgrind) valgrind_stage ;;
    fuzz) fuzz_stage ;;
    *) echo "tests/run.sh: unknown stage $stage (expected release, asan, tsan, valgrind or fuzz)" >&2; exit 2 ;;
  esac
done
echo "== all test stages passed: ${stages[*]}"
