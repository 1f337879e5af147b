#!/usr/bin/env python3
"""Tuner quality (issue 6): `pipebench tune` against an exhaustive `pipebench sweep` of the same space.

For each case (the presets, shortened, and planted-bottleneck configs), in one run on one machine:
  1. `pipebench sweep` over the space's --set lists: every combination, one measured run each;
  2. `pipebench tune` with the same lists (it searches inside exactly that space; at most a quarter of the
     combinations as trials);
  3. the sweep's best point and the tuner's point re-measured side by side, alternating, --runs times
     each; the medians give the ratio tuned / best (target >= 0.95), so neither side keeps a lucky run.
It also collects every tuner trial's prediction error (predicted vs measured samples/s; target 15 %).

    bench/tune_vs_sweep.py [--bin build-release/pipebench] [--runs 3] [--cases a,b] [--json out.json]
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


def planted(name, stages, step_ms, steps=30, batch=32, files=2048, record_bytes=4096):
    """A raw-data pipeline: read -> stages -> batch -> prefetch -> h2d on the emulated device."""
    return {"name": name, "seed": 1,
            "dataset": {"path": f"data/bench-{name}", "format": "raw", "record_bytes": record_bytes,
                        "generate": {"num_files": files, "samples_per_file": 1, "record_bytes": record_bytes}},
            "stages": stages + [{"name": "batch", "type": "batch", "size": batch},
                                {"name": "prefetch", "type": "prefetch", "depth": 2},
                                {"name": "h2d", "type": "h2d"}],
            "device": {"kind": "emulated", "step_ms": step_ms},
            "run": {"steps": steps, "warmup_steps": 3}}


def cases():
    """name -> (config path or dict, fixed --set list, space --set lists)."""
    spin = planted("spin", [{"name": "read", "type": "read"},
                            {"name": "augment", "type": "map", "ops": [{"op": "spin", "us": 400}]},
                            {"name": "normalize", "type": "map", "ops": [{"op": "spin", "us": 150}]}], step_ms=4)
    latency = planted("latency", [{"name": "read", "type": "read", "latency_us": 3000},
                                  {"name": "augment", "type": "map", "ops": [{"op": "spin", "us": 60}]}], step_ms=4)
    return {
        "resnet": ("configs/resnet.json",
                   ["stages.batch.size=32", "run.steps=30", "device.step_ms=10", "stages.shuffle.buffer=128",
                    "device.kind=emulated"],
                   ["stages.read.threads=1,2", "stages.decode.threads=1,2,3,4", "stages.augment.threads=1,2,3",
                    "stages.prefetch.depth=1,2,4"]),
        "unet3d": ("configs/unet3d.json", ["run.steps=8", "device.step_ms=20", "device.kind=emulated"],
                   ["stages.read.threads=1,2,4,8", "stages.batch.threads=1,2", "stages.prefetch.depth=1,2,4"]),
        "cosmoflow": ("configs/cosmoflow.json", ["run.steps=150", "device.kind=emulated"],
                      ["stages.read.threads=1,2,4,8", "stages.batch.threads=1,2", "stages.prefetch.depth=1,2,4,8"]),
        "bert": ("configs/bert.json", ["run.steps=20", "device.step_ms=5", "device.kind=emulated"],
                 ["stages.read.threads=1,2,4", "stages.batch.threads=1,2", "stages.prefetch.depth=1,2,4"]),
        "planted-spin": (spin, [],
                         ["stages.read.threads=1,2", "stages.augment.threads=1,2,3,4",
                          "stages.normalize.threads=1,2,3", "stages.prefetch.depth=1,2,4"]),
        "planted-latency": (latency, [],
                            ["stages.read.threads=1,2,4,8,16,32", "stages.augment.threads=1,2",
                             "stages.prefetch.depth=1,2,4"]),
    }


def sets_args(sets):
    out = []
    for s in sets:
        out += ["--set", s]
    return out


def run(binary, sub, cfg, sets, out, extra=()):
    cmd = [binary, sub, "--config", cfg, *sets_args(sets), "--out", out, "--quiet", *extra]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"tune_vs_sweep: {' '.join(cmd)} failed ({res.returncode}): {res.stderr.strip()[-500:]}")
    return res


def measure(binary, cfg, sets, out):
    res = subprocess.run([binary, "run", "--config", cfg, *sets_args(sets), "--out", out, "--json", "--no-progress"],
                         capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"tune_vs_sweep: run failed: {res.stderr.strip()[-500:]}")
    rep = json.loads(res.stdout)
    assert rep["accounting"]["balanced"], "accounting does not balance"
    return rep["throughput"]["samples_per_s"]


def point_sets(sets_obj):
    return [f"{k}={v}" for k, v in sets_obj.items()]


def one_case(binary, name, spec, runs, tmp):
    cfg, fixed, space = spec
    if isinstance(cfg, dict):
        path = os.path.join(tmp, f"{name}.json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        cfg = path
    d = os.path.join(tmp, name)
    run(binary, "sweep", cfg, fixed + space, d + "-sweep")
    sweep = json.load(open(os.path.join(d + "-sweep", "sweep.json")))
    run(binary, "tune", cfg, fixed + space, d + "-tune")
    tune = json.load(open(os.path.join(d + "-tune", "tune.json")))
    best_sets = point_sets(sweep["best"]["sets"])
    tuned_sets = point_sets(tune["best"]["sets"])
    a, b = [], []
    for i in range(runs):  # alternating, so drift hits both
        a.append(measure(binary, cfg, fixed + best_sets, f"{d}-m/best-{i}"))
        b.append(measure(binary, cfg, fixed + tuned_sets, f"{d}-m/tuned-{i}"))
    errors = [t["prediction_error_pct"] for t in tune["trials"] if t["prediction_error_pct"] is not None]
    return {
        "case": name, "space": sweep["combinations"], "sweep_trials": len(sweep["trials"]),
        "tune_trials": len(tune["trials"]), "sweep_best": sweep["best"]["sets"], "tuned": tune["best"]["sets"],
        "sweep_best_in_sweep": sweep["best"]["samples_per_s"], "tuned_in_tune": tune["best"]["samples_per_s"],
        "best_median": statistics.median(a), "tuned_median": statistics.median(b),
        "ratio": statistics.median(b) / statistics.median(a),
        "prediction_errors_pct": errors, "stop_reason": tune["stop_reason"],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build-release", "pipebench"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cases", default=",".join(cases()))
    ap.add_argument("--json")
    args = ap.parse_args()
    os.chdir(ROOT)
    all_cases = cases()
    results = []
    with tempfile.TemporaryDirectory(prefix="pb-tune-bench-") as tmp:
        for name in args.cases.split(","):
            r = one_case(args.bin, name, all_cases[name], args.runs, tmp)
            results.append(r)
            print(f"{name}: space {r['space']}, tuner {r['tune_trials']} trials; tuned/best {r['ratio']:.3f} "
                  f"({r['tuned_median']:.1f} vs {r['best_median']:.1f} samples/s); errors "
                  f"{[round(e, 1) for e in r['prediction_errors_pct']]}", file=sys.stderr, flush=True)
    errs = [abs(e) for r in results for e in r["prediction_errors_pct"]]
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} CPUs; runs per point: {args.runs}\n")
    print("| case | space | sweep trials | tuner trials | sweep best (re-measured) | tuned (re-measured) | tuned / best |"
          " tuner's point | sweep's best point |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        short = lambda s: " ".join(f"{k.split('.')[1]}.{k.split('.')[2][0]}={v}" for k, v in s.items())
        print(f"| {r['case']} | {r['space']} | {r['sweep_trials']} | {r['tune_trials']} | {r['best_median']:.1f} | "
              f"{r['tuned_median']:.1f} | {r['ratio']:.3f} | {short(r['tuned'])} | {short(r['sweep_best'])} |")
    if errs:
        print(f"\nprediction error over {len(errs)} tuner trials: median |error| {statistics.median(errs):.1f} %, "
              f"max {max(errs):.1f} %, within 15 %: {sum(e <= 15 for e in errs)}/{len(errs)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
