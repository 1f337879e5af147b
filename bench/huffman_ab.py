#!/usr/bin/env python3
"""fused_crop's Huffman decoding: pipebench's own decoder (src/engine/pipeline/dataset/jpeg_huff.c) against
libjpeg-turbo's, side by side in one run of one binary (PB_DEBUG_LIBJPEG_HUFFMAN=1 leaves every file to
libjpeg's decoder).  The pipeline is bench/vs_pytorch.py's pb-fused row (read, decode with fused_crop,
RandomResizedCrop 224 antialiased + flip + normalize, batch with fuse_map, emulated device at step 0) on
its generated 500x375 q90 JPEGs, on --workers cores (taskset).  Runs alternate, libjpeg first in odd
rounds and pipebench's first in even ones; the figures are medians of --rounds runs of --seconds each:
images/s and the decode stage's CPU time per image.

    bench/huffman_ab.py [--bin build-release/pipebench] [--images 1024] [--workers 1] [--seconds 8]
                        [--rounds 5] [--keep DIR]
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
import vs_pytorch  # noqa: E402  (the pb-fused pipeline and its dataset)


def once(a, tmp, data, libjpeg, i):
    env = dict(os.environ)
    env.pop("PB_DEBUG_LIBJPEG_HUFFMAN", None)
    if libjpeg:
        env["PB_DEBUG_LIBJPEG_HUFFMAN"] = "1"
    out = os.path.join(tmp, f"out-{int(libjpeg)}-{i}")
    cfg = vs_pytorch.pipebench_config(data, a.images, 64, a.workers, fused=True, antialias=True)
    rep = vs_pytorch.run_pipebench(a, cfg, os.path.join(tmp, "fused.json"), out, a.workers, env)
    if not rep["accounting"]["balanced"] or rep["accounting"]["errors"]:
        sys.exit(f"huffman_ab: {out}/report.json: the run did not balance or had errors")
    return rep["throughput"]["samples_per_s"], vs_pytorch.decode_cpu_us(rep)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(vs_pytorch.ROOT, "build-release", "pipebench"))
    ap.add_argument("--images", type=int, default=1024)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--keep", help="a directory for the dataset and reports (default: a temporary one)")
    a = ap.parse_args()
    tmp = a.keep or tempfile.mkdtemp(prefix="pb-huffman-ab-")
    os.makedirs(tmp, exist_ok=True)
    data = os.path.join(tmp, "data")
    cfg = vs_pytorch.pipebench_config(data, a.images, 64, a.workers, fused=True, antialias=True)
    with open(os.path.join(tmp, "gen.json"), "w") as f:
        json.dump(cfg, f)
    subprocess.run([a.bin, "gen", "--config", os.path.join(tmp, "gen.json"), "--quiet", "--force"], check=True)
    print(f"{platform.node()}: {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}; "
          f"W={a.workers}, {a.rounds} rounds of {a.seconds:g} s, medians")
    res = {False: [], True: []}
    for i in range(a.rounds):
        order = [True, False] if i % 2 == 0 else [False, True]
        for libjpeg in order:
            res[libjpeg].append(once(a, tmp, data, libjpeg, i))
    for libjpeg in (True, False):
        rate = [r for r, _ in res[libjpeg]]
        us = [u for _, u in res[libjpeg]]
        name = "libjpeg-turbo's Huffman" if libjpeg else "pipebench's Huffman"
        print(f"  {name:24s} {statistics.median(rate):8.1f} images/s  decode {statistics.median(us):6.1f} us/image"
              f"   runs: {' '.join(f'{r:.1f}' for r in rate)}")
    speed = statistics.median(r for r, _ in res[False]) / statistics.median(r for r, _ in res[True])
    dec = statistics.median(u for _, u in res[True]) / statistics.median(u for _, u in res[False])
    print(f"  images/s x{speed:.3f}; decode time per image / {dec:.3f}")
    if not a.keep:
        subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
