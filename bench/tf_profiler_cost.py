#!/usr/bin/env python3
"""What the TensorFlow Profiler costs the tf.data pipelines of bench/tf_import.py (issue 35): a twin is made
from a capture, so it runs at the profiled pipeline's pace, and this is the part of its distance from the
unprofiled pipeline that no reading of the capture can remove.

In one process per pipeline (the machine's drift over minutes cancels in pairs): a throwaway profile of --steps
steps first (a process's first profiling sessions run slowest), then --rounds pairs of --steps steps unprofiled and
--steps steps profiled (tf.profiler.experimental.start/stop, default options), each step next() and the
pipeline's step sleep; prints each pair's profiled/unprofiled samples/s and their median.

    /tmp/tf-venv/bin/python bench/tf_profiler_cost.py [--rounds 8] [--steps 40] [--only NAME ...]

--compute N: whether the profiler slows the functions' compute itself, apart from any pipeline: in each of N
fresh processes, a tf.function of 200 of the pipelines' 128x128 matmuls (tf_import.work) timed 7 times (the
median, in us a matmul) unprofiled, then after a throwaway start and stop with the profiler on, then
unprofiled again after stopping it; and the MatMul events' own durations in that capture (p10 and median), which
is what a twin reads.

    /tmp/tf-venv/bin/python bench/tf_profiler_cost.py --compute 6
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
        rate(steps)  # as long as a profiled window: a process's first sessions run slowest (docs/IMPORT.md)
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


def compute_child():
    import glob
    import tensorflow as tf
    sys.path.insert(0, HERE)
    import tf_import
    try:
        from tsl.profiler.protobuf import xplane_pb2
    except ImportError:
        from tensorflow.tsl.profiler.protobuf import xplane_pb2

    loop = tf.function(tf_import.work(200))
    loop(tf.constant(1, tf.int64))

    def us_per_matmul():
        times = []
        for i in range(7):
            t = time.perf_counter()
            loop(tf.constant(i, tf.int64)).numpy()
            times.append((time.perf_counter() - t) / 200 * 1e6)
        return statistics.median(times)

    us_per_matmul()  # the first timings of a process run slower (its threads, caches): not the profiler's
    with tempfile.TemporaryDirectory() as tmp:
        off = us_per_matmul()
        tf.profiler.experimental.start(os.path.join(tmp, "warm"))
        loop(tf.constant(1, tf.int64))
        tf.profiler.experimental.stop()
        tf.profiler.experimental.start(os.path.join(tmp, "on"))
        on = us_per_matmul()
        tf.profiler.experimental.stop()
        after = us_per_matmul()
        (pb,) = glob.glob(os.path.join(tmp, "on", "plugins", "profile", "*", "*.xplane.pb"))
        space = xplane_pb2.XSpace()
        with open(pb, "rb") as f:
            space.ParseFromString(f.read())
    host = next(p for p in space.planes if p.name == "/host:CPU")
    mm = sorted(e.duration_ps / 1e6 for line in host.lines for e in line.events
                if host.event_metadata[e.metadata_id].name.endswith(":MatMul"))
    print(f"us a matmul: unprofiled {off:.1f}, profiled {on:.1f} ({on / off - 1:+.0%}), after stop {after:.1f}; "
          f"the capture's {len(mm)} MatMul events: p10 {mm[len(mm) // 10]:.1f}, median {mm[len(mm) // 2]:.1f}",
          flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--only", action="append")
    ap.add_argument("--compute", type=int, default=0)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if args.child == "compute":
        return compute_child()
    if args.compute:
        for _ in range(args.compute):  # a fresh process each: the profiler's start is what varies
            subprocess.run([sys.executable, os.path.abspath(__file__), "--child", "compute"], check=True)
        return 0
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
