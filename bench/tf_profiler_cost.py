#!/usr/bin/env python3
"""What the TensorFlow Profiler costs the tf.data pipelines of bench/tf_import.py (issue 35): a twin is made
from a capture, so it runs at the profiled pipeline's pace, and this is the part of its distance from the
unprofiled pipeline that no reading of the capture can remove.

In one process per pipeline (the machine's drift over minutes cancels in pairs): a throwaway profile first
(the profiler's first start in a process sets it up), then --rounds pairs of --steps steps unprofiled and
--steps steps profiled (tf.profiler.experimental.start/stop, default options), each step next() and the
pipeline's step sleep; prints each pair's profiled/unprofiled samples/s and their median.

    /tmp/tf-venv/bin/python bench/tf_profiler_cost.py [--rounds 8] [--steps 40] [--only NAME ...]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def child(name, rounds, steps):
    import tensorflow as tf
    sys.path.insert(0, HERE)
    import tf_import  # the pipelines, TensorFlow's thread settings

    build, step_s, _ = tf_import.PIPELINES[name]
    it = iter(build({}))
    for _ in range(5):
        next(it)

    def rate(n):
        t = time.perf_counter()
        for _ in range(n):
            next(it)
            time.sleep(step_s)
        return n * tf_import.BATCH / (time.perf_counter() - t)

    with tempfile.TemporaryDirectory() as tmp:
        tf.profiler.experimental.start(os.path.join(tmp, "warm"))
        rate(10)
        tf.profiler.experimental.stop()
        ratios = []
        for r in range(rounds):
            off = rate(steps)
            tf.profiler.experimental.start(os.path.join(tmp, str(r)))
            on = rate(steps)
            tf.profiler.experimental.stop()
            ratios.append(on / off)
    print(f"{name}: profiled / unprofiled, {rounds} pairs: {' '.join(f'{x:.3f}' for x in ratios)}; median "
          f"{statistics.median(ratios):.3f} (the profiler costs {1 - statistics.median(ratios):.1%})", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--only", action="append")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if args.child:
        return child(args.child, args.rounds, args.steps)
    sys.path.insert(0, HERE)
    names = args.only or ["slow_map", "starved_parallel_map", "no_prefetch", "cacheable", "interleave_source",
                          "device_bound", "unordered_map"]
    for name in names:  # a process each: no earlier pipeline's threads beside it
        subprocess.run([sys.executable, os.path.abspath(__file__), "--child", name, "--rounds", str(args.rounds),
                        "--steps", str(args.steps)], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
