#!/usr/bin/env python3
"""What per-event tracing costs (issue 4's target: under 2 % of throughput on the resnet preset).

Runs the same config with tracing on (the default) and with --no-trace, alternating the two so that
drifts of the machine hit both alike, --runs times each, and reports the median samples/s of each and
the cost = 1 - traced / untraced.  Two variants of the resnet preset:

  resnet          as shipped (the device step dominates: what a user sees)
  resnet-input    device.step_ms=0, so the input pipeline (JPEG decode) sets the pace and any tracing
                  cost shows in full

and optionally the engine benchmark (configs/examples/engine_bench.json: no-op stages at millions of
samples/s, the worst case: tracing's cost per event with no work to hide it).

    bench/trace_cost.py [--bin build-release/pipebench] [--runs 5] [--variants resnet,resnet-input,engine]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

VARIANTS = {
    "resnet": ("configs/resnet.json", []),
    "resnet-input": ("configs/resnet.json", ["--set", "device.step_ms=0", "--set", "run.steps=40"]),
    "engine": ("configs/examples/engine_bench.json", []),
}


def run_once(binary, cfg, extra, traced, out_dir):
    cmd = [binary, "--config", os.path.join(ROOT, cfg), "--json", "--no-progress", "--out", out_dir,
           "--format", "json,trace" if traced else "json"] + extra
    if not traced:
        cmd.append("--no-trace")
    res = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT)
    rep = json.loads(res.stdout)
    assert rep["accounting"]["balanced"], "accounting does not balance"
    return rep


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build-release", "pipebench"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--variants", default="resnet,resnet-input,engine")
    args = ap.parse_args()
    print(f"machine: {cpu_model()}, {os.cpu_count()} CPUs; binary {args.bin}; {args.runs} runs per mode")
    print(f"{'variant':14} {'untraced/s':>12} {'traced/s':>12} {'cost':>7}  {'events':>9} {'dropped':>9}  "
          f"runs untraced | traced")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.variants.split(","):
            cfg, extra = VARIANTS[name]
            plain, traced, events, dropped = [], [], [], []
            for i in range(args.runs):
                for on in (False, True):
                    rep = run_once(args.bin, cfg, extra, on, os.path.join(tmp, f"{name}-{i}-{on}"))
                    (traced if on else plain).append(rep["throughput"]["samples_per_s"])
                    if on:
                        events.append(rep["trace"]["events"])
                        dropped.append(rep["trace"]["events_dropped"])
            p, t = statistics.median(plain), statistics.median(traced)
            print(f"{name:14} {p:12.1f} {t:12.1f} {100 * (1 - t / p):6.2f}%  {int(statistics.median(events)):9d} "
                  f"{int(statistics.median(dropped)):9d}  "
                  f"{' '.join(f'{x:.0f}' for x in plain)} | {' '.join(f'{x:.0f}' for x in traced)}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
