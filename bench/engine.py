#!/usr/bin/env python3
"""The engine's own cost (issue 2's performance target), measured side by side in one run.

Pipeline: in-memory source -> K no-op map stages -> batch(256) -> prefetch(4) -> emulated device, step 0,
tracing off.  For each K in --hops it runs pipebench --runs times and reports the median samples/s and the
median CPU nanoseconds per sample (the whole process).  The per-hop cost is the least-squares slope of
CPU ns/sample over K: what one more stage hop costs one element.

    bench/engine.py [--bin build-release/pipebench] [--runs 5] [--hops 0,1,2,4,8] [--sample-bytes 64]
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


def config(hops, sample_floats, steps):
    stages = [{"name": f"noop{i}", "type": "map", "ops": []} for i in range(hops)]
    stages += [{"name": "batch", "type": "batch", "size": 256},
               {"name": "prefetch", "type": "prefetch", "depth": 4}]
    return {"name": f"engine-bench-{hops}",
            "dataset": {"format": "synthetic", "shape": [sample_floats], "dtype": "float32"},
            "stages": stages,
            "device": {"kind": "emulated", "step_ms": 0},
            "run": {"steps": steps, "warmup_steps": 50}}


def run_once(binary, cfg_path, out_dir):
    cmd = [binary, "--config", cfg_path, "--json", "--no-trace", "--no-progress", "--out", out_dir]
    res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    rep = json.loads(res.stdout)
    assert rep["accounting"]["balanced"], "accounting does not balance"
    return rep["throughput"]["samples_per_s"], rep["engine"]["cpu_ns_per_sample"]


def slope(xs, ys):
    mx, my = statistics.mean(xs), statistics.mean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build-release", "pipebench"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--hops", default="0,1,2,4,8")
    ap.add_argument("--sample-bytes", type=int, default=64)
    ap.add_argument("--steps", type=int, default=20000)
    args = ap.parse_args()
    hops = [int(h) for h in args.hops.split(",")]
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores; "
          f"sample {args.sample_bytes} B, batch 256, {args.steps} steps x {args.runs} runs, medians")
    print(f"{'map hops':>8} {'samples/s':>12} {'cpu ns/sample':>14}  runs (samples/s)")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in hops:
            path = os.path.join(tmp, f"k{k}.json")
            with open(path, "w") as f:
                json.dump(config(k, args.sample_bytes // 4, args.steps), f)
            results = [run_once(args.bin, path, os.path.join(tmp, f"out{k}-{r}")) for r in range(args.runs)]
            rate = statistics.median(r[0] for r in results)
            cpu = statistics.median(r[1] for r in results)
            rows.append((k, rate, cpu))
            runs = " ".join(f"{r[0]:.0f}" for r in results)
            print(f"{k:>8} {rate:>12.0f} {cpu:>14.1f}  {runs}", flush=True)
    if len(rows) > 1:
        per_hop = slope([r[0] for r in rows], [r[2] for r in rows])
        print(f"per-hop cost: {per_hop:.1f} CPU ns per element per stage hop (least-squares slope)")


if __name__ == "__main__":
    sys.exit(main())
