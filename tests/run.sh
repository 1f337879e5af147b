#!/usr/bin/env bash
# The whole test suite, as CI runs it (README "Tests"):
#   1. release build (CUDA when the toolkit is present), -Werror, every unit and end-to-end test;
#   2. ASan + UBSan build without CUDA (also proves the emulated-only build), every test;
#   3. TSan build, the engine's unit tests (queue, pool, engine) and the end-to-end tests.
# Usage: tests/run.sh [release|asan|tsan]...   (default: all three)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(release asan tsan)

build() { # dir, cmake args...
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja -DPB_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
}

for stage in "${stages[@]}"; do
  echo "== $stage"
  case $stage in
    release)
      build build-release -DCMAKE_BUILD_TYPE=Release
      ctest --test-dir build-release --output-on-failure ;;
    asan)
      build build-asan -DCMAKE_BUILD_TYPE=Debug -DPB_WITH_CUDA=OFF -DPB_SANITIZE=address,undefined
      ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
        ctest --test-dir build-asan --output-on-failure ;;
    tsan)
      build build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPB_WITH_CUDA=OFF -DPB_SANITIZE=thread
      TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
        ctest --test-dir build-tsan --output-on-failure -R 'unit.test_(queue|pool|engine)|e2e[.]' ;;
    *) echo "tests/run.sh: unknown stage $stage (expected release, asan or tsan)" >&2; exit 2 ;;
  esac
done
echo "== all test stages passed: ${stages[*]}"
