#!/usr/bin/env python3
"""Soak (issue 9): one long run of a real-data JPEG pipeline (read -> decode -> RandomResizedCrop ->
flip -> normalize -> shuffle -> batch -> prefetch -> h2d, emulated device), its resident set sampled
from /proc/PID/status every few seconds.  Flat RSS means nothing leaks and nothing grows with the run's
length.  The step record (sizeof(pb_step), 88 bytes per device step) is held in memory only up to
PB_STEPS_IN_MEMORY (8192) records; later ones go to an unlinked file in the output directory
(src/engine/steps_spill.c), so past ~8192 steps it adds nothing.  The script reports the growth raw, net of
the step records still held in memory, and split into anonymous memory (heap, stacks) and file pages.

    bench/soak.py [--bin build-release/pipebench] [--seconds 600] [--every 5] [--step-ms 20]
                  [--trace] [--no-augment] [--load N] [--csv FILE]

--load N runs N busy-looping processes beside it for the whole soak (a shared, oversubscribed machine:
issue 32 asks for the soak "under load").  The slope is a least-squares line through the RSS samples
after the first minute, in KiB per minute (with the step records' share taken out).

Prints the RSS at the end of the first minute, at the end, the maximum, the growth after the first
minute (raw, net of the step records, anonymous and file-backed), the number of memory mappings, the
steps, and the report's memory section (planned bytes and peak RSS).  Without --trace the run is untraced (--no-trace): the event rings are fixed-size anyway
(see METRICS.md "memory"), and untraced runs are what a long soak in practice is.
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

STEP_RECORD_BYTES = 88  # sizeof(pb_step), src/engine/steps.h
STEPS_IN_MEMORY = 8192  # PB_STEPS_IN_MEMORY, src/engine/steps.h


def memory_kb(pid):
    """(VmRSS, RssAnon, RssFile, mappings) in KB (mappings: a count), or None once the process is gone."""
    try:
        got = {}
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key = line.split(":")[0]
                if key in ("VmRSS", "RssAnon", "RssFile"):
                    got[key] = int(line.split()[1])
        with open(f"/proc/{pid}/maps") as f:
            maps = sum(1 for _ in f)
        return got["VmRSS"], got["RssAnon"], got["RssFile"], maps
    except (OSError, KeyError):
        return None


def fit_slope(points):
    """Least-squares slope of (seconds, KiB) points, in KiB per minute."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    sxy = sum((x - mx) * (y - my) for x, y in points)
    return 60.0 * sxy / sxx if sxx > 0 else float("nan")


def config(data, step_ms, augment=True):
    return {
        "name": "soak", "seed": 1,
        "dataset": {"path": data, "format": "jpeg",
                    "generate": {"num_files": 512, "samples_per_file": 1,
                                 "image": {"width": 500, "height": 375, "quality": 90}}},
        "stages": [
            {"name": "read", "type": "read", "threads": 1},
            {"name": "decode", "type": "decode", "threads": 1}] + ([
            {"name": "augment", "type": "map", "threads": 1,
             "ops": [{"op": "random_resized_crop", "size": 224}, {"op": "flip", "p": 0.5},
                     {"op": "normalize", "dtype": "uint8"}]}] if augment else []) + [
            {"name": "shuffle", "type": "shuffle", "buffer": 256},
            {"name": "batch", "type": "batch", "size": 8, "drop_remainder": True},
            {"name": "prefetch", "type": "prefetch", "depth": 4},
            {"name": "h2d", "type": "h2d", "pinned": True}],
        "device": {"kind": "emulated", "step_ms": step_ms},
        "run": {"epochs": 1000000, "warmup_steps": 5, "on_error": "skip"},
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default="build-release/pipebench")
    ap.add_argument("--seconds", type=int, default=600)
    ap.add_argument("--every", type=float, default=5.0)
    ap.add_argument("--step-ms", type=float, default=20.0)
    ap.add_argument("--trace", action="store_true")
    ap.add_argument("--no-augment", action="store_true", help="leave out the map stage (a control)")
    ap.add_argument("--load", type=int, default=0, help="busy-looping processes beside the run")
    ap.add_argument("--slope-from", type=float, default=60.0,
                    help="fit the slope from this many seconds on (a traced run's rings fill for minutes)")
    ap.add_argument("--csv")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="pipebench-soak-")
    cfg_path = os.path.join(tmp, "soak.json")
    with open(cfg_path, "w") as f:
        json.dump(config(os.path.join(tmp, "data"), a.step_ms, not a.no_augment), f)
    subprocess.run([a.bin, "gen", "--config", cfg_path, "--quiet"], check=True)
    out = os.path.join(tmp, "out")
    cmd = [a.bin, "run", "--config", cfg_path, "--quiet", "--out", out, "--format", "json",
           "--set", f"run.duration_s={a.seconds}"] + ([] if a.trace else ["--no-trace"])
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(a.load)]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd)
    samples = []  # (seconds, (rss_kb, anon_kb, file_kb, mappings))
    while p.poll() is None:
        m = memory_kb(p.pid)
        if m is not None:
            samples.append((time.monotonic() - t0, m))
        time.sleep(a.every)
    for h in hogs:
        h.kill()
    if p.returncode != 0:
        sys.exit(f"soak: pipebench exited {p.returncode}")
    with open(os.path.join(out, "report.json")) as f:
        rep = json.load(f)
    steps = rep["steps"]["count"] + rep["config"]["run"]["warmup_steps"]
    if a.csv:
        with open(a.csv, "w") as f:
            f.write("seconds,rss_kb,anon_kb,file_kb,mappings\n")
            for s, m in samples:
                f.write(f"{s:.1f},{m[0]},{m[1]},{m[2]},{m[3]}\n")
    after_min = [m for s, m in samples if s >= 60] or [m for _, m in samples]
    first, last = after_min[0], samples[-1][1]
    peak = max(m[0] for _, m in samples)
    steps_per_s = steps / max(a.seconds, 1)
    held = lambda t: min(steps_per_s * t, STEPS_IN_MEMORY)  # step records in memory at time t
    record_kb = (held(a.seconds) - held(60)) * STEP_RECORD_BYTES / 1024
    late = [(s, m[0]) for s, m in samples if s >= a.slope_from]
    slope = fit_slope(late) if len(late) >= 3 else float("nan")
    record_slope = ((held(a.seconds) - held(a.slope_from)) * STEP_RECORD_BYTES / 1024 /
                    max((a.seconds - a.slope_from) / 60, 1e-9))
    print(f"machine: {platform.node()} ({os.cpu_count()} CPUs), {platform.platform()}")
    print(f"run: {a.seconds} s, step_ms {a.step_ms}, {'traced' if a.trace else 'untraced'}, "
          f"{steps} steps, {rep['throughput']['samples_per_s']:.1f} samples/s, {len(samples)} RSS samples")
    # /proc gives KiB: these are MiB (the report's figures below are bytes / 1e6: MB)
    print(f"RSS: at 60 s {first[0] / 1024:.1f} MiB, at the end {last[0] / 1024:.1f} MiB, max {peak / 1024:.1f} MiB "
          f"({peak * 1024 / 1e6:.1f} MB)")
    print(f"growth after the first minute: {(last[0] - first[0]) / 1024:+.2f} MiB raw; step records "
          f"{record_kb / 1024:.2f} MiB; net {(last[0] - first[0] - record_kb) / 1024:+.2f} MiB "
          f"(anonymous {(last[1] - first[1]) / 1024:+.2f} MiB, file {(last[2] - first[2]) / 1024:+.2f} MiB; "
          f"mappings {first[3]} -> {last[3]})")
    print(f"RSS slope from {a.slope_from:.0f} s: {slope:+.1f} KiB/min raw, {slope - record_slope:+.1f} KiB/min net of "
          f"the step records ({len(late)} samples, least squares); load: {a.load} busy processes")
    t = rep.get("trace") or {}
    if t.get("enabled"):
        print(f"trace rings: {t['events']} events kept, {t['events_dropped']} dropped (rings that dropped are full: "
              f"their memory no longer grows; memory.trace_bytes {rep['memory']['trace_bytes'] / 1e6:.0f} MB is their whole size)")
    m = rep["memory"]
    print(f"report memory: planned {m['planned_bytes'] / 1e6:.0f} MB, trace {m['trace_bytes'] / 1e6:.0f} MB, "
          f"peak RSS {m['peak_rss_bytes'] / 1e6:.0f} MB; accounting balanced: {rep['accounting']['balanced']}")


if __name__ == "__main__":
    main()
