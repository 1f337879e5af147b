#!/usr/bin/env python3
"""The memory plan against the peak RSS (issue 34): a user's own JPEG folder, configured by `pipebench init`,
run device-bound (every queue and the prefetch fill: the plan's worst case is reached) and input-bound (the
queues stay nearly empty), each --rounds times.  Prints planned MB (the buffers' worst case, what
limits.max_memory_mb is checked against), peak RSS MB and plan / RSS per run, with the medians.

    bench/memory_plan.py --data DIR [--bin build/pipebench] [--rounds 3] [--steps 12]

DIR: a folder of JPEGs (e.g. 96 generated 500x375 images, or a mix with a few 2000x1500 photos).
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile


def run(binary, cfg, out, steps, step_ms):
    cmd = [binary, "run", cfg, "-q", "-o", out, "--device", "emulated", "--no-trace", "-s", f"run.steps={steps}",
           "-s", f"device.step_ms={step_ms}", "-s", "run.au_target_pct=0"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "report.json")) as f:
        rep = json.load(f)
    mem = rep["memory"]
    return mem["planned_bytes"] / 1e6, mem["peak_rss_bytes"] / 1e6, rep["bottleneck"]["stage"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--bin", default="build/pipebench")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=12)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        cfg = os.path.join(d, "data.json")
        subprocess.run([args.bin, "init", args.data, "-o", cfg, "-q"], check=True)
        print(f"{platform.node()}: {os.cpu_count()} CPUs; {args.data}; {args.rounds} rounds of {args.steps} steps")
        # device-bound: 1.5 s steps against a pipeline that makes a batch in well under that
        for name, step_ms in (("device-bound", 1500), ("input-bound", 1)):
            ratios = []
            for i in range(args.rounds):
                planned, rss, bn = run(args.bin, cfg, os.path.join(d, f"{name}-{i}"), args.steps, step_ms)
                ratios.append(planned / rss)
                print(f"  {name:13s} round {i + 1}: planned {planned:7.0f} MB  peak RSS {rss:7.0f} MB  "
                      f"plan/RSS {planned / rss:5.2f}  (bottleneck {bn})")
            print(f"  {name:13s} median plan/RSS {statistics.median(ratios):.2f} "
                  f"(min {min(ratios):.2f}, max {max(ratios):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
