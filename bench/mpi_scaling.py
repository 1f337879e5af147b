#!/usr/bin/env python3
"""Multi-process runs (issue 8), two measurements in one script run:

1. Scaling: job samples/s of a CPU-bound JPEG pipeline (decode + RandomResizedCrop 224 + flip +
   normalize, one thread per stage, a fast device) with 1 rank and with N ranks (mpirun), alternating
   round by round; medians.  Each rank runs the same per-rank config on its shard of the files, so on
   a machine with N free cores N ranks should give close to N times one rank.

2. The gradient exchange: `mpirun -np N` with device.allreduce mpi at several sizes (and barrier), the
   measured time per step (report.json allreduce.measured_ms) beside the model bytes / gb_per_s, with
   gb_per_s the algorithm bandwidth measured at one size, 4 MB and then the largest (the model's one
   parameter, as a user would take it from nccl-tests' algbw there).  Where the linear model holds, the error is small; at
   small sizes the exchange's latency, which the model leaves out, dominates.

    bench/mpi_scaling.py [--bin build-release/pipebench] [--ranks 2] [--rounds 5]
                         [--sizes 65536,1048576,4194304,16777216,67108864]

Needs a pipebench built with MPI and mpirun on PATH.  Run it on an idle machine.
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile

MPIRUN = ["mpirun", "--oversubscribe", "--mca", "btl", "self,vader"]
if os.geteuid() == 0:
    MPIRUN.insert(1, "--allow-run-as-root")


def scaling_config(data, files, steps, full):
    """full: decode + augment (about 1.5 cores per rank here); else decode only (about 1 core per rank)."""
    augment = [{"name": "augment", "type": "map", "threads": 1,
                "ops": [{"op": "random_resized_crop", "size": 224}, {"op": "flip", "p": 0.5},
                        {"op": "normalize", "dtype": "uint8"}]}] if full else []
    return {
        "name": "mpi-scaling", "seed": 7,
        "dataset": {"path": data, "format": "jpeg",
                    "generate": {"num_files": files, "samples_per_file": 1,
                                 "image": {"width": 500, "height": 375, "quality": 90}}},
        "stages": [
            {"name": "read", "type": "read", "threads": 1},
            {"name": "decode", "type": "decode", "threads": 1},
        ] + augment + [
            {"name": "batch", "type": "batch", "size": 32, "drop_remainder": True},
            {"name": "prefetch", "type": "prefetch", "depth": 2},
        ],
        "device": {"kind": "emulated", "step_ms": 1},
        "run": {"steps": steps, "warmup_steps": 3},
    }


def exchange_config(step_ms, steps):
    return {
        "name": "mpi-allreduce", "seed": 7,
        "dataset": {"format": "synthetic", "shape": [64], "num_samples": 0},
        "stages": [{"name": "batch", "type": "batch", "size": 8}, {"name": "prefetch", "type": "prefetch", "depth": 2}],
        "device": {"kind": "emulated", "step_ms": step_ms},
        "run": {"steps": steps, "warmup_steps": 5},
    }


def run(cmd, out):
    shutil.rmtree(out, ignore_errors=True)
    p = subprocess.run(cmd + ["--out", out, "--quiet", "--no-progress"], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr}")
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f)


def cores(report):
    """CPU cores the rank's stages kept busy in the measured window (capacity_model.cores_used: utilization x
    threads x CPU fraction, summed over the stages; docs/METRICS.md)."""
    return report["capacity_model"]["cores_used"]


def scaling(args, d):
    data = os.path.join(d, "jpegs")
    cfgs = {}
    for name, full in (("decode only", False), ("decode + augment", True)):
        cfgs[name] = os.path.join(d, f"scaling-{full}.json")
        with open(cfgs[name], "w") as f:
            json.dump(scaling_config(data, args.files, args.steps, full), f)
    subprocess.run([args.bin, "gen", "--config", cfgs["decode only"], "--quiet"], check=True)
    res = {name: {"one": [], "many": [], "cores1": [], "per_rank": []} for name in cfgs}
    for _ in range(args.rounds):
        for name, cfg in cfgs.items():
            r = res[name]
            r1 = run([args.bin, "run", "--config", cfg], os.path.join(d, "one"))
            r["one"].append(r1["throughput"]["samples_per_s"])
            r["cores1"].append(cores(r1))
            rn = run(MPIRUN + ["-np", str(args.ranks), args.bin, "run", "--config", cfg], os.path.join(d, "many"))
            r["many"].append(rn["throughput"]["samples_per_s"])
            r["per_rank"].append([x["samples_per_s"] for x in rn["ranks"]])
    print(f"\nscaling: {args.files} JPEGs 500x375 -> read -> decode [-> RRC 224 + flip + normalize] -> batch 32, "
          f"1 thread per stage, step 1 ms (the pipeline is the bottleneck); {args.steps} measured steps per rank; "
          f"{args.rounds} rounds alternating, medians")
    for name, r in res.items():
        m1, mn, c1 = statistics.median(r["one"]), statistics.median(r["many"]), statistics.median(r["cores1"])
        mid = r["many"].index(sorted(r["many"])[len(r["many"]) // 2])
        limit = min(args.ranks, (os.cpu_count() or 1) / c1) if c1 > 0 else float("nan")
        print(f"  {name}: 1 rank {m1:.1f} samples/s using {c1:.2f} cores; {args.ranks} ranks {mn:.1f} samples/s "
              f"(ranks {', '.join(f'{x:.1f}' for x in r['per_rank'][mid])}); speed-up {mn / m1:.2f}x, "
              f"the cores allow {limit:.2f}x")
        print(f"    1 rank runs:  " + " ".join(f"{x:.1f}" for x in r["one"]))
        print(f"    {args.ranks} ranks runs: " + " ".join(f"{x:.1f}" for x in r["many"]))


def exchange(args, d):
    cfg = os.path.join(d, "exchange.json")
    with open(cfg, "w") as f:
        json.dump(exchange_config(args.step_ms, args.exchange_steps), f)
    sizes = [int(x) for x in args.sizes.split(",")]
    rows = {s: [] for s in sizes}
    barrier = []
    for _ in range(args.rounds):
        r = run(MPIRUN + ["-np", str(args.ranks), args.bin, "run", "--config", cfg, "--set",
                          "device.allreduce.mode=barrier"], os.path.join(d, "barrier"))
        barrier.append(r["step_breakdown_ms"]["comm"])
        for s in sizes:
            r = run(MPIRUN + ["-np", str(args.ranks), args.bin, "run", "--config", cfg, "--set",
                              "device.allreduce.mode=mpi", "--set", f"device.allreduce.bytes={s}"],
                    os.path.join(d, f"mpi{s}"))
            with open(os.path.join(d, f"mpi{s}", "rank-0", "report.json")) as f:
                a = json.load(f)["allreduce"]
            rows[s].append((a["measured_ms"]["p50"], a["measured_ms"]["mean"], a["algbw_gb_per_s"]))
    med = {s: tuple(statistics.median(x[k] for x in rows[s]) for k in range(3)) for s in sizes}
    ref = reference(args, d, sizes)
    # the model's one parameter, as a user would set it: algbw measured at one size (here: 4 MB, and the largest)
    cal = [s for s in sizes if s == 4194304][:1] + [sizes[-1]]
    print(f"\nexchange: mpirun -np {args.ranks}, one host (shared memory), after every {args.step_ms} ms step; "
          f"{args.exchange_steps} measured steps per run, {args.rounds} rounds, medians (rank 0)")
    print(f"  barrier (4-byte allreduce): {statistics.median(barrier) * 1000:.1f} us per step")
    print("  measured: pipebench's allreduce.measured_ms; ref: a plain MPI_Allreduce loop (bench/allreduce_ref.c) "
          "with the same gap; model: bytes / gb_per_s with gb_per_s = the measured algbw at " +
          " and at ".join(f"{c / 1e6:.1f} MB" for c in cal))
    print(f"  {'bytes':>10} {'p50 ms':>8} {'mean ms':>8} {'ref p50':>8} {'ref mean':>8} {'algbw':>6}" +
          "".join(f" {'model@' + str(c >> 20) + 'M':>10} {'err %':>7}" for c in cal))
    for s in sizes:
        p50, mean, bw = med[s]
        line = f"  {s:>10} {p50:8.3f} {mean:8.3f} {ref[s][0]:8.3f} {ref[s][1]:8.3f} {bw:6.2f}"
        for c in cal:
            model = s / med[c][2] / 1e6
            line += f" {model:10.3f} {(model - mean) / mean * 100:7.1f}"
        print(line)


def reference(args, d, sizes):
    """bench/allreduce_ref.c at every size, median of the rounds: {bytes: (p50 ms, mean ms)}."""
    exe = os.path.join(d, "allreduce_ref")
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "allreduce_ref.c")
    subprocess.run(["mpicc", "-O2", "-o", exe, src], check=True)
    out = {s: [] for s in sizes}
    for _ in range(args.rounds):
        for s in sizes:
            p = subprocess.run(MPIRUN + ["-np", str(args.ranks), exe, str(s), str(args.exchange_steps),
                                         str(args.step_ms)], capture_output=True, text=True, check=True)
            _, p50, mean = p.stdout.split()
            out[s].append((float(p50), float(mean)))
    return {s: (statistics.median(x[0] for x in out[s]), statistics.median(x[1] for x in out[s])) for s in sizes}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build-release/pipebench")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--files", type=int, default=512)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--step-ms", type=float, default=5)
    ap.add_argument("--exchange-steps", type=int, default=100)
    ap.add_argument("--sizes", default="65536,1048576,4194304,16777216,67108864")
    ap.add_argument("--only", choices=["scaling", "exchange"])
    args = ap.parse_args()
    ver = subprocess.run(["mpirun", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    print(f"{platform.node()}: {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}; {ver}; "
          f"pipebench {args.bin}")
    with tempfile.TemporaryDirectory() as d:
        if args.only != "exchange":
            scaling(args, d)
        if args.only != "scaling":
            exchange(args, d)


if __name__ == "__main__":
    main()
