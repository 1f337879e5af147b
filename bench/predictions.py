#!/usr/bin/env python3
"""Prediction error of the analysis' recommendations (issue 6): each recommendation's predicted samples/s
against the samples/s measured when it is applied.

For each case of bench/tune_vs_sweep.py (the presets shortened, and planted bottlenecks), at the case's
base config and at a few deliberately starved points: run it, take every recommendation whose action is
a --set expression, apply it, and measure --runs times (median).  Error = (predicted - measured) /
measured x 100; the target is within 15 %.

    bench/predictions.py [--bin build-release/pipebench] [--runs 3] [--cases a,b] [--json out.json]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tune_vs_sweep import ROOT, cases, sets_args  # noqa: E402

# Starting points besides the base config: one thread for every stage the space lists, the worst start.
def starts(space):
    ones = [s.split("=")[0] + "=1" for s in space if ".threads=" in s]
    return [[], ones]


def run_json(binary, cfg, sets, out):
    res = subprocess.run([binary, "run", "--config", cfg, *sets_args(sets), "--out", out, "--json", "--no-progress"],
                         capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"predictions: run failed: {res.stderr.strip()[-500:]}")
    return json.loads(res.stdout)


def action_sets(action):
    toks = action.split()
    if not toks or any(t != "--set" and "=" not in t for t in toks):
        return None
    return [t for t in toks if t != "--set"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build-release", "pipebench"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cases", default=",".join(cases()))
    ap.add_argument("--json")
    args = ap.parse_args()
    os.chdir(ROOT)
    all_cases = cases()
    rows = []
    with tempfile.TemporaryDirectory(prefix="pb-pred-bench-") as tmp:
        for name in args.cases.split(","):
            cfg, fixed, space = all_cases[name]
            if isinstance(cfg, dict):
                path = os.path.join(tmp, f"{name}.json")
                with open(path, "w") as f:
                    json.dump(cfg, f)
                cfg = path
            for si, start in enumerate(starts(space)):
                base = run_json(args.bin, cfg, fixed + start, f"{tmp}/{name}-{si}-base")
                for ri, rec in enumerate(base["recommendations"]):
                    sets = action_sets(rec["action"])
                    pred = rec["predicted_samples_per_s"]
                    if sets is None or pred is None:
                        continue
                    got = statistics.median(
                        run_json(args.bin, cfg, fixed + start + sets, f"{tmp}/{name}-{si}-{ri}-{k}")["throughput"]["samples_per_s"]
                        for k in range(args.runs))
                    err = (pred - got) / got * 100
                    rows.append({"case": name, "start": " ".join(start) or "base config", "action": rec["action"],
                                 "base": base["throughput"]["samples_per_s"], "predicted": pred, "measured": got,
                                 "error_pct": err})
                    print(f"{name} [{rows[-1]['start']}]: {rec['action']}: predicted {pred:.1f}, measured {got:.1f} "
                          f"({err:+.1f} %)", file=sys.stderr, flush=True)
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} CPUs; runs per point: {args.runs}\n")
    print("| case | from | recommendation | base samples/s | predicted | measured (median) | error |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['case']} | {r['start']} | `{r['action']}` | {r['base']:.1f} | {r['predicted']:.1f} | "
              f"{r['measured']:.1f} | {r['error_pct']:+.1f} % |")
    errs = [abs(r["error_pct"]) for r in rows]
    if errs:
        print(f"\n{len(errs)} recommendations: median |error| {statistics.median(errs):.1f} %, max {max(errs):.1f} %, "
              f"within 15 %: {sum(e <= 15 for e in errs)}/{len(errs)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
