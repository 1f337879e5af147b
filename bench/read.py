#!/usr/bin/env python3
"""The read stage against fio (issue 3's read performance target), side by side in one run.

Writes --files raw files of --file-mib MiB with `pipebench gen` (one record per file, so the read stage
reads each file straight into its sample buffer), then alternates, --runs times:
  fio        THREADS jobs, each reading its share of the files in turn (rw=read, bs=BLOCK, direct=1,
             ioengine=psync, time_based, runtime=SECONDS, group_reporting): aggregate read bandwidth
  pipebench  read (THREADS threads, block_bytes BLOCK, direct) -> batch(1) -> prefetch(2) -> emulated device,
             step 0, for SECONDS; throughput.bytes_per_s of the report
and prints the medians.  Target: pipebench >= 90 % of fio at the same block size and thread count.

    bench/read.py [--bin build-release/pipebench] [--dir DIR] [--files 48] [--file-mib 16]
                  [--threads 2] [--block 1048576] [--seconds 5] [--runs 3] [--buffered]
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


def config(args, data_dir):
    return {"name": "read-bench", "dataset": {"path": data_dir, "format": "raw",
            "record_bytes": args.file_mib << 20,
            "generate": {"num_files": args.files, "samples_per_file": 1, "record_bytes": args.file_mib << 20}},
            "stages": [{"name": "read", "type": "read", "threads": args.threads, "block_bytes": args.block,
                        "direct": not args.buffered},
                       {"name": "batch", "type": "batch", "size": 1},
                       {"name": "prefetch", "type": "prefetch", "depth": 2}],
            "device": {"kind": "emulated", "step_ms": 0, "h2d_gb_per_s": 10000},
            "run": {"duration_s": args.seconds, "warmup_steps": 4}}


def pipebench(args, cfg_path, out):
    res = subprocess.run([args.bin, "--config", cfg_path, "--json", "--quiet", "--no-progress", "--out", out],
                         capture_output=True, text=True, check=True)
    rep = json.loads(res.stdout)
    acc = rep["accounting"]
    assert acc["balanced"] and acc["errors"] == 0, f"accounting: {acc}"
    return rep["throughput"]["bytes_per_s"]


def fio(args, data_dir, tmp):
    """fio with one job per thread, each reading its own share of the files (file k goes to job
    k mod THREADS), as pipebench's read threads share them."""
    files = sorted(os.path.join(data_dir, f) for f in os.listdir(data_dir) if not f.startswith("."))
    job = [f"[global]\nrw=read\nbs={args.block}\ndirect={0 if args.buffered else 1}\nioengine=psync\n"
           f"time_based=1\nruntime={args.seconds}\nfile_service_type=sequential\ngroup_reporting=1\n"]
    for t in range(args.threads):
        job.append(f"[read{t}]\nfilename=" + ":".join(files[t::args.threads]) + "\n")
    path = os.path.join(tmp, "read.fio")
    with open(path, "w") as f:
        f.write("".join(job))
    text = subprocess.run(["fio", "--output-format=json", path], capture_output=True, text=True, check=True).stdout
    out = json.loads(text[text.index("{"):])  # fio may print notes before its JSON
    return out["jobs"][0]["read"]["bw_bytes"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build-release", "pipebench"))
    ap.add_argument("--dir", help="dataset directory (default: a temporary one)")
    ap.add_argument("--files", type=int, default=48)
    ap.add_argument("--file-mib", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--block", type=int, default=1 << 20)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--buffered", action="store_true", help="page-cache reads instead of O_DIRECT")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=os.path.dirname(args.dir) if args.dir else None) as tmp:
        data_dir = args.dir or os.path.join(tmp, "data")
        cfg_path = os.path.join(tmp, "read.json")
        with open(cfg_path, "w") as f:
            json.dump(config(args, data_dir), f)
        subprocess.run([args.bin, "gen", "--config", cfg_path, "--quiet"], check=True)
        fio_runs, pb_runs = [], []
        for r in range(args.runs):
            fio_runs.append(fio(args, data_dir, tmp))
            pb_runs.append(pipebench(args, cfg_path, os.path.join(tmp, f"out{r}")))
    f, p = statistics.median(fio_runs), statistics.median(pb_runs)
    mode = "buffered" if args.buffered else "O_DIRECT"
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores; {args.files} files x "
          f"{args.file_mib} MiB, {mode}, block {args.block} B, {args.threads} threads, "
          f"{args.runs} alternating runs of {args.seconds:g} s, medians")
    print(f"  fio        {f / 1e6:9.1f} MB/s   runs: " + " ".join(f"{x / 1e6:.1f}" for x in fio_runs))
    print(f"  pipebench  {p / 1e6:9.1f} MB/s   runs: " + " ".join(f"{x / 1e6:.1f}" for x in pb_runs)
          + f"   {100 * p / f:.1f}% of fio (target >= 90%)")


if __name__ == "__main__":
    sys.exit(main())
