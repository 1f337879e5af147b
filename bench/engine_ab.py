#!/usr/bin/env python3
"""Two pipebench builds' engine cost side by side (bench/engine.py's pipeline), alternating run by run so
that the machine's drift hits both alike: did a change make the engine dearer?

    bench/engine_ab.py --a OLD_BIN --b NEW_BIN [--rounds 10] [--hops 0,4] [--steps 20000]

Build the other commit into its own tree first, e.g.
    git worktree add /tmp/pb-old <commit> && cmake -S /tmp/pb-old -B /tmp/pb-old/build -G Ninja \\
        -DCMAKE_BUILD_TYPE=Release -DPB_WITH_CUDA=OFF -DBUILD_TESTING=OFF && ninja -C /tmp/pb-old/build pipebench
"""
import argparse
import json
import os
import platform
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import engine  # noqa: E402  (bench/engine.py: the pipeline and one run)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, help="the baseline binary")
    ap.add_argument("--b", required=True, help="the binary to compare")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--hops", default="0,4")
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--sample-bytes", type=int, default=64)
    args = ap.parse_args()
    hops = [int(h) for h in args.hops.split(",")]
    bins = {"a": args.a, "b": args.b}
    res = {k: {h: [] for h in hops} for k in bins}
    print(f"{platform.node()}: {os.cpu_count()} CPUs; a = {args.a}, b = {args.b}; {args.rounds} rounds, "
          f"{args.steps} steps of 256 samples each run, medians")
    with tempfile.TemporaryDirectory() as d:
        for _ in range(args.rounds):
            for h in hops:
                cfg = os.path.join(d, f"hops{h}.json")
                with open(cfg, "w") as f:
                    json.dump(engine.config(h, args.sample_bytes // 4, args.steps), f)
                for k, b in bins.items():
                    res[k][h].append(engine.run_once(b, cfg, os.path.join(d, "out")))
    for h in hops:
        med = {k: (statistics.median(x[0] for x in res[k][h]), statistics.median(x[1] for x in res[k][h]))
               for k in bins}
        print(f"hops {h}: a {med['a'][0]:,.0f} samples/s {med['a'][1]:.1f} CPU ns/sample | "
              f"b {med['b'][0]:,.0f} samples/s {med['b'][1]:.1f} CPU ns/sample | "
              f"b/a samples/s {med['b'][0] / med['a'][0]:.3f}, CPU {med['b'][1] / med['a'][1]:.3f}")
        for k in bins:
            print(f"  {k} runs (M samples/s): " + " ".join(f"{x[0] / 1e6:.2f}" for x in res[k][h]))


if __name__ == "__main__":
    main()
