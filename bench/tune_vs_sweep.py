#!/usr/bin/env python3
"""Tuner quality (issue 6): `pipebench tune` against an exhaustive `pipebench sweep` of the same space.

For each case (the presets, shortened, and planted-bottleneck configs), in one run on one machine:
  1. `pipebench sweep` over the space's --set lists: every combination, one measured run each;
  2. `pipebench tune` with the same lists, --tunes times (it searches inside exactly that space; at most a
     quarter of the combinations as trials); its answer varies with the noise it measures;
  3. the sweep's best point and each tuned point re-measured side by side, alternating, --runs times
     each; the medians give the ratio tuned / best (target >= 0.95), so no side keeps a lucky run.
It also collects every tuner trial's prediction error (predicted vs measured samples/s; target 15 %).

    bench/tune_vs_sweep.py [--bin build-release/pipebench] [--runs 5] [--tunes 3] [--cases a,b] [--json out.json]
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


def planted(name, stages, step_ms, steps=150, batch=32, files=2048, record_bytes=4096):
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
    """name -> (config path or dict, fixed --set list, space --set lists).

    The presets twice: as shipped (shortened; most of them are device-bound, so the right answer is to stop
    at once), and made input-bound with a starved start (every knob at 1) and, for the read-bound ones,
    network-like storage (latency per read call), where the right thread count exceeds the cores."""
    spin = planted("spin", [{"name": "read", "type": "read"},
                            {"name": "augment", "type": "map", "ops": [{"op": "spin", "us": 400}]},
                            {"name": "normalize", "type": "map", "ops": [{"op": "spin", "us": 150}]}], step_ms=4)
    latency = planted("latency", [{"name": "read", "type": "read", "latency_us": 3000},
                                  {"name": "augment", "type": "map", "ops": [{"op": "spin", "us": 60}]}], step_ms=4)
    emu = "device.kind=emulated"
    resnet_fixed = ["stages.batch.size=32", "run.steps=80", "device.step_ms=10", "stages.shuffle.buffer=128", emu]
    resnet_space = ["stages.read.threads=1,2", "stages.decode.threads=1,2,3,4", "stages.augment.threads=1,2,3",
                    "stages.prefetch.depth=1,2,4"]
    starved = ["stages.read.threads=1", "stages.batch.threads=1", "stages.prefetch.depth=1"]
    return {
        "resnet": ("configs/resnet.json", resnet_fixed, resnet_space),
        "resnet-starved": ("configs/resnet.json",
                           resnet_fixed + ["stages.read.threads=1", "stages.decode.threads=1",
                                           "stages.augment.threads=1", "stages.prefetch.depth=1"], resnet_space),
        "unet3d": ("configs/unet3d.json", ["run.steps=8", "device.step_ms=20", emu],
                   ["stages.read.threads=1,2,4,8", "stages.batch.threads=1,2", "stages.prefetch.depth=1,2,4"]),
        "unet3d-net": ("configs/unet3d.json",
                       ["run.steps=60", "device.step_ms=20", emu, "stages.read.bandwidth_mb_per_s=0",
                        "stages.read.latency_us=5000"] + starved,
                       ["stages.read.threads=1,2,4,8,16", "stages.batch.threads=1,2", "stages.prefetch.depth=1,2,4"]),
        "cosmoflow": ("configs/cosmoflow.json", ["run.steps=150", emu],
                      ["stages.read.threads=1,2,4,8", "stages.batch.threads=1,2", "stages.prefetch.depth=1,2,4,8"]),
        "cosmoflow-net": ("configs/cosmoflow.json",
                          ["run.steps=300", "device.step_ms=1", emu, "stages.read.latency_us=2000"] + starved,
                          ["stages.read.threads=1,2,4,8,16", "stages.batch.threads=1,2",
                           "stages.prefetch.depth=1,2,4,8"]),
        "bert": ("configs/bert.json", ["run.steps=20", "device.step_ms=5", emu],
                 ["stages.read.threads=1,2,4", "stages.batch.threads=1,2", "stages.prefetch.depth=1,2,4"]),
        "bert-net": ("configs/bert.json",
                     ["run.steps=300", "device.step_ms=0.5", emu, "stages.read.latency_us=2000"] + starved,
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


def one_case(binary, name, spec, runs, tunes, tmp):
    cfg, fixed, space = spec
    if isinstance(cfg, dict):
        path = os.path.join(tmp, f"{name}.json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        cfg = path
    d = os.path.join(tmp, name)
    run(binary, "sweep", cfg, fixed + space, d + "-sweep")
    sweep = json.load(open(os.path.join(d + "-sweep", "sweep.json")))
    best_sets = point_sets(sweep["best"]["sets"])
    tuned = []
    for j in range(tunes):  # the tuner itself runs --tunes times: its answer varies with the noise it measures
        run(binary, "tune", cfg, fixed + space, f"{d}-tune{j}")
        tuned.append(json.load(open(os.path.join(f"{d}-tune{j}", "tune.json"))))
    # Re-measure the sweep's best and every tuned point side by side, alternating, so drift hits all alike.
    points = [best_sets] + [point_sets(t["best"]["sets"]) for t in tuned]
    rates = [[] for _ in points]
    for i in range(runs):
        for p, pts in enumerate(points):
            rates[p].append(measure(binary, cfg, fixed + pts, f"{d}-m/{p}-{i}"))
    best_median = statistics.median(rates[0])
    ratios = [statistics.median(r) / best_median for r in rates[1:]]
    errors = [t["prediction_error_pct"] for tj in tuned for t in tj["trials"] if t["prediction_error_pct"] is not None]
    by_kind = [(kind(t["change"]), t["prediction_error_pct"]) for tj in tuned for t in tj["trials"]
               if t["prediction_error_pct"] is not None]
    return {
        "case": name, "space": sweep["combinations"], "sweep_trials": len(sweep["trials"]),
        "max_trials": tuned[0]["max_trials"], "tune_trials": [len(t["trials"]) for t in tuned],
        "sweep_best": sweep["best"]["sets"], "tuned": [t["best"]["sets"] for t in tuned],
        "sweep_best_in_sweep": sweep["best"]["samples_per_s"],
        "tuned_in_tune": [t["best"]["samples_per_s"] for t in tuned],
        "stop_reasons": [t["stop_reason"] for t in tuned],
        "best_median": best_median, "tuned_medians": [statistics.median(r) for r in rates[1:]],
        "ratios": ratios, "prediction_errors_pct": errors, "errors_by_kind": by_kind,
        "rates": rates,  # every re-measurement: [sweep best, tuned 1, tuned 2, ...]
    }


def kind(change):
    """A tuner trial's candidate kind, from its `change` text (docs/TUNING.md, the search)."""
    for key, name in (("explore", "explore"), ("allocation", "allocation"), ("recommendation", "recommendation"),
                      ("cores saturated)", "oversubscribe" if change.startswith("more threads") else "move"),
                      ("bottleneck", "bottleneck"), ("deeper", "prefetch")):
        if key in change:
            return name
    return "other"


def short(sets):
    return " ".join(f"{k.split('.')[1]}.{k.split('.')[2][0]}={v}" for k, v in sets.items())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build-release", "pipebench"))
    ap.add_argument("--runs", type=int, default=5, help="re-measurements of each point (median)")
    ap.add_argument("--tunes", type=int, default=3, help="tuner runs per case")
    ap.add_argument("--cases", default=",".join(cases()))
    ap.add_argument("--json")
    args = ap.parse_args()
    os.chdir(ROOT)
    all_cases = cases()
    results = []
    with tempfile.TemporaryDirectory(prefix="pb-tune-bench-") as tmp:
        for name in args.cases.split(","):
            r = one_case(args.bin, name, all_cases[name], args.runs, args.tunes, tmp)
            results.append(r)
            print(f"{name}: space {r['space']}, tuner trials {r['tune_trials']}; tuned/best "
                  f"{[round(x, 3) for x in r['ratios']]} (best {r['best_median']:.1f} samples/s); errors "
                  f"{[round(e, 1) for e in r['prediction_errors_pct']]}", file=sys.stderr, flush=True)
    errs = [abs(e) for r in results for e in r["prediction_errors_pct"]]
    ratios = [x for r in results for x in r["ratios"]]
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} CPUs; tuner runs per case: "
          f"{args.tunes}; re-measurements per point: {args.runs} (medians)\n")
    print("| case | space | sweep trials | tuner trials (limit) | sweep best, samples/s | tuned / best (each tuner run) |"
          " worst | tuner's points | sweep's best point |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        pts = "; ".join(sorted(set(short(t) for t in r["tuned"])))
        print(f"| {r['case']} | {r['space']} | {r['sweep_trials']} | {', '.join(map(str, r['tune_trials']))} "
              f"({r['max_trials']}) | {r['best_median']:.1f} | {', '.join(f'{x:.3f}' for x in r['ratios'])} | "
              f"{min(r['ratios']):.3f} | {pts} | {short(r['sweep_best'])} |")
    if ratios:
        print(f"\ntuned / best over {len(ratios)} tuner runs: median {statistics.median(ratios):.3f}, worst "
              f"{min(ratios):.3f}, at least 0.95: {sum(x >= 0.95 for x in ratios)}/{len(ratios)}")
    if errs:
        print(f"prediction error over {len(errs)} tuner trials: median |error| {statistics.median(errs):.1f} %, "
              f"max {max(errs):.1f} %, within 15 %: {sum(e <= 15 for e in errs)}/{len(errs)}")
        kinds = {}
        for r in results:
            for k, e in r["errors_by_kind"]:
                kinds.setdefault(k, []).append(e)
        print("\n| candidate kind | trials | median error | median abs error | max abs error | within 15 % |")
        print("|---|---|---|---|---|---|")
        for k, v in sorted(kinds.items()):
            a = [abs(e) for e in v]
            print(f"| {k} | {len(v)} | {statistics.median(v):+.1f} % | {statistics.median(a):.1f} % | {max(a):.1f} % | "
                  f"{sum(e <= 15 for e in a)}/{len(a)} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
