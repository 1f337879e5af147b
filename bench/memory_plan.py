#!/usr/bin/env python3
"""The memory plan against the peak RSS (issue 34): a user's own JPEG folder, configured by `pipebench init`,
run device-bound (1.5 s steps: every queue and the prefetch fill, so the plan with the queues full,
memory.planned_bytes, is the one to compare), input-bound (1 ms steps: the queues stay nearly empty, so
memory.planned_queues_empty_bytes is) and as init wrote it (the preset's step time; it says which it is),
each --rounds times, interleaved.  Prints both plans, the peak RSS and the matching plan / RSS per run, with
the medians.

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
           "-s", "run.au_target_pct=0"]
    if step_ms is not None:
        cmd += ["-s", f"device.step_ms={step_ms}"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "report.json")) as f:
        rep = json.load(f)
    mem = rep["memory"]
    return (mem["planned_queues_empty_bytes"] / 1e6, mem["planned_bytes"] / 1e6, mem["peak_rss_bytes"] / 1e6,
            rep["device_idle_pct"])


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
        cases = (("device-bound", 1500), ("input-bound", 1), ("as written", None))
        ratios = {name: [] for name, _ in cases}
        for i in range(args.rounds):
            for name, step_ms in cases:
                empty, full, rss, idle = run(args.bin, cfg, os.path.join(d, f"{name}-{i}"), args.steps, step_ms)
                # the device idle says which end applies: waiting on the input, the queues are empty
                plan = full if idle < 5 else empty
                ratios[name].append(plan / rss)
                print(f"  {name:13s} round {i + 1}: planned {empty:5.0f} MB empty, {full:5.0f} MB full; peak RSS "
                      f"{rss:5.0f} MB; device idle {idle:5.1f} %; {'full' if idle < 5 else 'empty'} plan / RSS "
                      f"{plan / rss:5.2f}")
        for name, _ in cases:
            r = ratios[name]
            print(f"  {name:13s} median plan/RSS {statistics.median(r):.2f} (min {min(r):.2f}, max {max(r):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
