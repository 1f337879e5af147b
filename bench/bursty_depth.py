#!/usr/bin/env python3
"""The bursty-device case (issue 31): the device's idle % at each prefetch depth, measured against what the
model predicts from a trace.

The config is bench/diagnosis.py's bursty-device case: a map of 12 threads x sleep 250 us, batch 512, prefetch
depth 1, emulated device steps N(5, 30) ms clamped at 0, 600 steps.  For each depth (1, 2, 4, 8, 16, 64 by
default) it records --reps runs, interleaved (depth 1, 2, ..., 64, then again: a machine shared with other
work drifts, and interleaving spreads that over every depth alike), and keeps their traces.  Then it analyzes
each trace of the --from depths with PB_DEBUG_MODEL=1, which prints the model's samples/s and idle at every
depth (model_fit.c), and reads the top recommendation.  It prints, per depth, the measured idle (median and
range over the reps) beside the predicted idle (median and range over the traces it was predicted from), and
the advice from the depth-1 traces against what was measured at the advised depth.

    bench/bursty_depth.py [--bin build-release/pipebench] [--reps 3] [--depths 1,2,4,8,16,64]
                          [--from 1] [--dir DIR] [--reuse] [--json out.json]

--dir keeps the traces (about 120 MB each); --reuse analyzes the traces already in --dir (say, with a new
binary) without recording again.
"""
import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CONFIG = {
    "name": "bursty", "seed": 1,
    "dataset": {"format": "synthetic", "shape": [64], "dtype": "uint8"},
    "stages": [{"name": "augment", "type": "map", "threads": 12, "ops": [{"op": "sleep", "us": 250}]},
               {"name": "batch", "type": "batch", "size": 512},
               {"name": "prefetch", "type": "prefetch", "depth": 1},
               {"name": "h2d", "type": "h2d"}],
    "device": {"kind": "emulated", "step_ms": {"dist": "normal", "mean": 5, "stdev": 30}},
    "run": {"steps": 600, "warmup_steps": 3},
}

DEPTH_LINE = re.compile(r"^model: depth (\d+): ([0-9.]+)/s idle ([0-9.]+) %$")
COST_LINE = re.compile(r"^model: \d+ predictions in ([0-9.]+) s$")


def record(binary, cfg, depth, out):
    res = subprocess.run([binary, "run", "--config", cfg, "--set", f"stages.prefetch.depth={depth}", "--out", out,
                          "--json", "--no-progress"], capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"bursty_depth: run at depth {depth} failed: {res.stderr.strip()[-500:]}")
    rep = json.loads(res.stdout)
    return {"idle": rep["device_idle_pct"], "samples_per_s": rep["throughput"]["samples_per_s"]}


def analyze(binary, trace_dir, tmp):
    """The model's idle per depth from one trace, its top recommendation, and how long analyze took."""
    out = os.path.join(tmp, "analysis")
    t0 = time.monotonic()
    res = subprocess.run([binary, "analyze", trace_dir, "--out", out, "--json", "--quiet"], capture_output=True,
                         text=True, env=dict(os.environ, PB_DEBUG_MODEL="1"))
    wall_s = time.monotonic() - t0
    if res.returncode != 0:
        sys.exit(f"bursty_depth: analyze {trace_dir} failed: {res.stderr.strip()[-500:]}")
    rep = json.loads(res.stdout)
    pred, model_s = {}, None
    for line in res.stderr.splitlines():
        m = DEPTH_LINE.match(line.strip())
        if m:
            pred[int(m.group(1))] = float(m.group(3))
        m = COST_LINE.match(line.strip())
        if m:
            model_s = float(m.group(1))
    recs = rep.get("recommendations") or []
    top = recs[0] if recs else None
    return {"predicted_idle": pred, "measured_idle": rep["device_idle_pct"], "wall_s": wall_s, "model_s": model_s,
            "top_kind": top and top.get("kind"), "top_action": top and top.get("action"),
            "top_predicted_idle": top and top.get("predicted_idle_pct")}


def med_range(v):
    if not v:
        return "-"
    return f"{statistics.median(v):.2f} [{min(v):.2f}-{max(v):.2f}]"


def advised_depth(action):
    m = re.fullmatch(r"--set stages\.prefetch\.depth=(\d+)", action or "")
    return int(m.group(1)) if m else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build-release", "pipebench"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--depths", default="1,2,4,8,16,64")
    ap.add_argument("--from", dest="from_depths", default="1", help="depths whose traces are analyzed")
    ap.add_argument("--dir", help="where the traces are kept (default: a temporary directory)")
    ap.add_argument("--reuse", action="store_true", help="analyze the traces already in --dir")
    ap.add_argument("--json")
    args = ap.parse_args()
    depths = [int(d) for d in args.depths.split(",")]
    from_depths = [int(d) for d in args.from_depths.split(",")]
    with tempfile.TemporaryDirectory(prefix="pb-bursty-") as tmp:
        top = args.dir or tmp
        os.makedirs(top, exist_ok=True)
        cfg = os.path.join(top, "bursty.json")
        measured = {d: [] for d in depths}
        runs_path = os.path.join(top, "runs.json")
        if args.reuse:
            with open(runs_path) as f:
                measured = {int(k): v for k, v in json.load(f).items()}
        else:
            with open(cfg, "w") as f:
                json.dump(CONFIG, f)
            for rep in range(args.reps):
                for d in depths:
                    measured[d].append(record(args.bin, cfg, d, os.path.join(top, f"d{d}-r{rep}")))
                    print(f"depth {d} rep {rep}: idle {measured[d][-1]['idle']:.2f} %", file=sys.stderr, flush=True)
            with open(runs_path, "w") as f:
                json.dump(measured, f)
        analyses = []
        for d in from_depths:
            for rep in range(len(measured.get(d, []))):
                a = analyze(args.bin, os.path.join(top, f"d{d}-r{rep}"), tmp)
                a["from_depth"] = d
                analyses.append(a)
                print(f"analyzed depth {d} rep {rep} ({a['wall_s']:.1f} s): top {a['top_action']} "
                      f"(idle {a['top_predicted_idle']}); by depth {a['predicted_idle']}", file=sys.stderr, flush=True)
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; "
          f"reps per depth: {max(len(v) for v in measured.values())}\n")
    head = " | ".join(f"predicted from depth {d}" for d in from_depths)
    print(f"| depth | measured idle % (median [range]) | {head} |")
    print("|---|---|" + "---|" * len(from_depths))
    for d in sorted(measured):
        meas = [r["idle"] for r in measured[d]]
        preds = [med_range([a["predicted_idle"][d] for a in analyses
                            if a["from_depth"] == f and d in a["predicted_idle"]]) for f in from_depths]
        print(f"| {d} | {med_range(meas)} | " + " | ".join(preds) + " |")
    print()
    for a in analyses:
        d = advised_depth(a["top_action"])
        meas = [r["idle"] for r in measured.get(d, [])] if d else []
        verdict = ""
        if meas and a["top_predicted_idle"] is not None:
            gap = statistics.median(meas) - a["top_predicted_idle"]
            within = "within" if abs(gap) <= 2 else "NOT within"
            verdict = f"; measured there {med_range(meas)}: {gap:+.2f} points ({within} 2)"
        print(f"from depth {a['from_depth']} (measured idle {a['measured_idle']:.2f} %): top {a['top_kind']} "
              f"`{a['top_action']}`, predicted idle {a['top_predicted_idle']}{verdict}; analyze {a['wall_s']:.1f} s, "
              f"7 predictions {a['model_s']} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"measured": measured, "analyses": analyses}, f, indent=1)


if __name__ == "__main__":
    main()
