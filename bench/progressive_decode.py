#!/usr/bin/env python3
"""Whole-image JPEG decoding with pipebench's own entropy decoders against libjpeg-turbo's, per file and scale.

pb_jpeg_decode (the decode stage's whole-image path) is timed on each file with pipebench's Huffman decoding
(src/engine/pipeline/dataset/jpeg_huff.c for baseline scans, jpeg_phuff.c for progressive ones) and with
libjpeg-turbo's own (pb_jpeg_huff_allow(false), as PB_DEBUG_LIBJPEG_HUFFMAN=1 does): the same function,
IDCT, upsampling and colour conversion, only the entropy decoding differs.  The two alternate, libjpeg first
in odd rounds and pipebench's first in even ones; each round takes the fastest of --reps decodes of each, and
the figure is the median of the rounds' paired ratios, with their range.  Every round also checks that both
give the same pixels.  One core (taskset -c --cpu).

    bench/progressive_decode.py DIR_OR_FILE... [--rounds 5] [--reps 3] [--scales 1,2,4,8] [--cpu 1]
                                [--cc "cc -O2"] [--json]
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

HELPER_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "jpeg.h"
#include "jpeg_huff.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

/* helper FILE SCALE REPS LIBJPEG_FIRST: "libjpeg_ms X\npb_ms Y\nsame Z\nwidth W\nheight H\n" */
int main(int argc, char **argv) {
  if (argc != 5) return 2;
  int denom = atoi(argv[2]), reps = atoi(argv[3]), libjpeg_first = atoi(argv[4]);
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 1;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *buf = malloc((size_t)n);
  if (fread(buf, 1, (size_t)n, f) != (size_t)n) return 1;
  fclose(f);
  pb_jpeg_decoder *d;
  pb_err e = {{0}};
  int w, h, ow, oh;
  if (pb_jpeg_decoder_init(&d, &e) || pb_jpeg_header(d, buf, (size_t)n, &w, &h, &e)) {
    fprintf(stderr, "%s: %s\n", argv[1], e.msg);
    return 1;
  }
  size_t cap = pb_jpeg_decoded_bytes(w, h, denom);
  unsigned char *out[2] = {malloc(cap), malloc(cap)};
  double best[2] = {1e30, 1e30}; /* [0] libjpeg's, [1] pipebench's */
  for (int r = 0; r < reps; r++)
    for (int k = 0; k < 2; k++) {
      int own = libjpeg_first ? k : 1 - k;
      pb_jpeg_huff_allow(own);
      double t0 = now_s();
      if (pb_jpeg_decode(d, buf, (size_t)n, denom, 0, out[own], cap, &ow, &oh, &e)) {
        fprintf(stderr, "%s: %s\n", argv[1], e.msg);
        return 1;
      }
      double t = now_s() - t0;
      if (t < best[own]) best[own] = t;
    }
  printf("libjpeg_ms %.3f\npb_ms %.3f\nsame %d\nwidth %d\nheight %d\n", best[0] * 1e3, best[1] * 1e3,
         memcmp(out[0], out[1], cap) == 0, w, h);
  return 0;
}
"""


def build_helper(cc, workdir):
    src, exe = os.path.join(workdir, "helper.c"), os.path.join(workdir, "helper")
    with open(src, "w") as f:
        f.write(HELPER_C)
    sources = [os.path.join(ROOT, "src/engine/pipeline/dataset", p)
               for p in ("jpeg.c", "jpeg_region.c", "jpeg_huff.c", "jpeg_phuff.c")] + \
              [os.path.join(ROOT, "src/core", p) for p in ("decode_scale.c", "common.c")]
    cmd = cc.split() + ["-std=gnu11", "-I", os.path.join(ROOT, "src/core"), "-I",
                        os.path.join(ROOT, "src/engine/pipeline/dataset"), src] + sources + \
        ["-o", exe, "-lturbojpeg", "-ljpeg", "-luv", "-lm", "-lpthread"]
    subprocess.run(cmd, check=True)
    return exe


def files_of(paths):
    out = []
    for p in paths:
        if os.path.isdir(p):
            out += sorted(os.path.join(p, f) for f in os.listdir(p) if f.lower().endswith((".jpg", ".jpeg")))
        else:
            out.append(p)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--scales", default="1,2,4,8")
    ap.add_argument("--cpu", default="1")
    ap.add_argument("--cc", default="cc -O2")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    files = files_of(a.paths)
    if not files:
        sys.exit("progressive_decode: no JPEG files")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        exe = build_helper(a.cc, tmp)
        for path in files:
            for denom in (int(s) for s in a.scales.split(",")):
                lib, own, ratios = [], [], []
                for r in range(a.rounds):
                    res = subprocess.run(["taskset", "-c", a.cpu, exe, path, str(denom), str(a.reps), str(int(r % 2 == 0))],
                                         capture_output=True, text=True)
                    if res.returncode:
                        sys.exit(f"progressive_decode: {path}: {res.stderr.strip()}")
                    v = {k: float(x) for k, x in (line.split() for line in res.stdout.splitlines())}
                    if not v["same"]:
                        sys.exit(f"progressive_decode: {path} at 1/{denom}: the pixels differ from libjpeg's")
                    lib.append(v["libjpeg_ms"])
                    own.append(v["pb_ms"])
                    ratios.append(v["libjpeg_ms"] / v["pb_ms"])
                row = {"file": os.path.basename(path), "scale": f"1/{denom}",
                       "megapixels": v["width"] * v["height"] / 1e6,
                       "libjpeg_ms": statistics.median(lib), "pb_ms": statistics.median(own),
                       "speedup": statistics.median(ratios), "speedup_min": min(ratios), "speedup_max": max(ratios)}
                rows.append(row)
                if not a.json:
                    print(f"{row['file']:<28} {row['megapixels']:5.1f} MP {row['scale']:>4}  libjpeg "
                          f"{row['libjpeg_ms']:7.1f} ms  pipebench {row['pb_ms']:7.1f} ms  {row['speedup']:.2f}x "
                          f"({row['speedup_min']:.2f}-{row['speedup_max']:.2f})", flush=True)
    if a.json:
        print(json.dumps({"machine": platform.processor() or platform.machine(), "rounds": a.rounds,
                          "reps": a.reps, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
