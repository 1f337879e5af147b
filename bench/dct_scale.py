#!/usr/bin/env python3
"""fused_crop's per-crop DCT scaling (decode scale "auto"), against the exact path (scale "1") (issue 36):
what it changes in the pixels, and what it saves.

Error: a helper compiled against a pipebench build's libraries draws --crops random_resized_crop windows per
image (torchvision's draw, scale [0.08, 1], the seed fixed) and makes each crop's 224x224 uint8 output twice:
exactly (the region decoded at full size, then resized) and as the decode stage does under "auto" (the region
decoded at the crop's DCT scale, pb_crop_denom, its place pb_crop_scaled, then resized), with the plain and
the antialiased bilinear filter.  It prints, per DCT scale and filter, the crops, their PSNR (mean, the 5th
percentile, the lowest; 255 peak, over all pixels and channels) and the largest absolute difference; and
how near each comes to a reference, the exact crop resized with the antialiased filter (the downscale that
does not alias): the mean PSNR of the exact output and of the scaled one against it.

Speed: --rounds interleaved pairs of pipebench runs on the same files and cores: read -> decode (fused_crop,
scale 1 | auto) -> random_resized_crop 224, flip, normalize float32, to_chw -> batch 64, emulated device of
0 ms, 2 decode and 2 map threads; samples/s, medians and the paired ratio.

    bench/dct_scale.py --build build DIR [DIR ...] [--crops 64] [--rounds 5] [--steps 30] [--json]
"""
import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

HELPER_C = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common.h"
#include "decode_scale.h"
#include "jpeg.h"
#include "ops.h"

static uint8_t *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *d = malloc(*n);
  if (d && fread(d, 1, *n, f) != *n) { free(d); d = NULL; }
  fclose(f);
  return d;
}

/* PSNR of b against a (255 peak, over every byte of a 224x224x3 image; 99 when equal), the largest
 * difference in *maxd. */
static double psnr(const uint8_t *a, const uint8_t *b, int *maxd) {
  double se = 0;
  for (size_t p = 0; p < 224 * 224 * 3; p++) {
    int dd = abs((int)a[p] - (int)b[p]);
    se += (double)dd * dd;
    if (maxd && dd > *maxd) *maxd = dd;
  }
  double mse = se / (224 * 224 * 3);
  return mse > 0 ? 10 * log10(255.0 * 255.0 / mse) : 99.0;
}

/* The crop (x, y, w, h) of the image decoded at 1/denom, resized to 224x224 uint8 into out. */
static int crop_out(pb_jpeg_region *r, const uint8_t *data, size_t n, int denom, int x, int y, int w, int h,
                    pb_resample mode, uint8_t *out) {
  pb_jpeg_rect rect = {x, y, w, h}, got;
  size_t cap = pb_jpeg_region_capacity(&rect, 1 << 15);
  uint8_t *buf = malloc(cap);
  pb_err err;
  if (pb_jpeg_decode_region(r, data, n, &rect, denom, 0, buf, cap, &got, &err)) {
    fprintf(stderr, "%s\n", err.msg);
    exit(1);
  }
  pb_image in = {buf, got.h, got.w, 3, PB_DTYPE_UINT8, false}, o = {out, 224, 224, 3, PB_DTYPE_UINT8, false};
  void *scratch = malloc(pb_crop_resize_scratch_bytes(&in, h, w, 224, 224, mode) + 64);
  int rc = pb_crop_resize(&in, 0, x - got.x, h, w, &o, mode, scratch);
  free(scratch);
  free(buf);
  return rc;
}

int main(int argc, char **argv) {
  int crops = atoi(argv[1]);
  static const double scale[2] = {0.08, 1.0}, ratio[2] = {3.0 / 4, 4.0 / 3};
  pb_jpeg_region *r;
  pb_jpeg_decoder *dec;
  pb_err err;
  if (pb_jpeg_region_init(&r, &err) || pb_jpeg_decoder_init(&dec, &err)) return 1;
  static uint8_t exact[224 * 224 * 3], scaled[224 * 224 * 3], ref[224 * 224 * 3];
  for (int f = 2; f < argc; f++) {
    size_t n;
    uint8_t *data = slurp(argv[f], &n);
    int W, H;
    if (!data || pb_jpeg_header(dec, data, n, &W, &H, &err)) return 1;
    pb_rng rng;
    pb_rng_seed(&rng, 1000 + (uint64_t)f);
    for (int k = 0; k < crops; k++) {
      int i, j, h, w;
      pb_rrc_params(&rng, H, W, scale, ratio, &i, &j, &h, &w);
      int d = pb_crop_denom(h, w, 224);
      if (crop_out(r, data, n, 1, j, i, w, h, PB_RESAMPLE_BILINEAR_AA, ref)) return 1; /* the reference */
      for (int aa = 0; aa < 2; aa++) {
        pb_resample mode = aa ? PB_RESAMPLE_BILINEAR_AA : PB_RESAMPLE_BILINEAR;
        if (crop_out(r, data, n, 1, j, i, w, h, mode, exact)) return 1;
        int sx, sy, sw, sh;
        pb_crop_scaled(j, i, w, h, d, pb_jpeg_scaled_dim(W, d), pb_jpeg_scaled_dim(H, d), &sx, &sy, &sw, &sh);
        if (crop_out(r, data, n, d, sx, sy, sw, sh, mode, scaled)) return 1;
        int maxd = 0;
        double p = psnr(exact, scaled, &maxd); /* before maxd is printed */
        printf("%s %d %d %.3f %d %.3f %.3f\n", argv[f], d, aa, p, maxd, psnr(exact, ref, NULL), psnr(scaled, ref, NULL));
      }
    }
    free(data);
  }
  return 0;
}
"""


def build_helper(build, work):
    src = os.path.join(work, "helper.c")
    with open(src, "w") as f:
        f.write(HELPER_C)
    exe = os.path.join(work, "crop_error")
    inc = []
    for d in ("src/core", "src/engine/pipeline", "src/engine/pipeline/dataset", "src/engine/pipeline/ops"):
        inc += ["-I", os.path.join(ROOT, d)]
    libs = [os.path.join(build, f"libpb_{n}.a") for n in ("engine", "record", "core")]
    cmd = ["cc", "-O2", "-std=gnu11", "-I/usr/include/cjson"] + inc + [src] + libs + \
        ["-lturbojpeg", "-ljpeg", "-luv", "-lcjson", "-lm", "-lpthread"]
    subprocess.run(cmd + ["-o", exe], check=True)
    return exe


def pctl(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def error_table(exe, files, crops):
    out = subprocess.run([exe, str(crops)] + files, check=True, capture_output=True, text=True).stdout
    rows = {}
    for line in out.splitlines():
        _, d, aa, psnr, maxd, exact_ref, scaled_ref = line.split()
        rows.setdefault((int(d), int(aa)), []).append((float(psnr), int(maxd), float(exact_ref), float(scaled_ref)))
    table = []
    for (d, aa), v in sorted(rows.items()):
        p = [x[0] for x in v]
        table.append({"denom": d, "filter": "antialias" if aa else "plain", "crops": len(v),
                      "psnr_mean": statistics.mean(p), "psnr_p5": pctl(p, 0.05), "psnr_min": min(p),
                      "max_abs": max(x[1] for x in v),
                      "exact_vs_reference_psnr": statistics.mean(x[2] for x in v),
                      "scaled_vs_reference_psnr": statistics.mean(x[3] for x in v)})
    return table


CONFIG = """{"name": "dct", "seed": 1, "dataset": {"path": "%s", "format": "jpeg"},
 "stages": [{"name": "read", "type": "read", "threads": 1},
            {"name": "decode", "type": "decode", "threads": 2, "fused_crop": true, "scale": "%s"},
            {"name": "augment", "type": "map", "threads": 2,
             "ops": [{"op": "random_resized_crop", "size": 224}, {"op": "flip", "p": 0.5},
                     {"op": "normalize", "dtype": "float32"}, {"op": "to_chw"}]},
            {"name": "batch", "type": "batch", "size": 64, "drop_remainder": true}],
 "device": {"kind": "emulated", "step_ms": 0}, "run": {"steps": %d, "warmup_steps": 3}}"""


def rate(binary, work, data, scale, steps):
    cfg = os.path.join(work, "dct.json")
    with open(cfg, "w") as f:
        f.write(CONFIG % (data, scale, steps))
    out = os.path.join(work, "out")
    subprocess.run([binary, "--config", cfg, "--no-trace", "--out", out, "-q"], check=True, capture_output=True)
    return json.load(open(os.path.join(out, "report.json")))["throughput"]["samples_per_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--crops", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    result = {}
    with tempfile.TemporaryDirectory() as work:
        exe = build_helper(os.path.abspath(a.build), work)
        for d in a.dirs:
            files = sorted(glob.glob(os.path.join(d, "*.jpg")))
            res = {"files": len(files), "error": error_table(exe, files, a.crops)}
            runs = {"1": [], "auto": []}
            ratios = []
            for k in range(a.rounds):
                order = ["1", "auto"] if k % 2 == 0 else ["auto", "1"]
                got = {s: rate(os.path.join(a.build, "pipebench"), work, d, s, a.steps) for s in order}
                for s in got:
                    runs[s].append(got[s])
                ratios.append(got["auto"] / got["1"])
            res["samples_per_s"] = {s: {"median": statistics.median(v), "min": min(v), "max": max(v)}
                                    for s, v in runs.items()}
            res["ratio"] = {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)}
            result[d] = res
    if a.json:
        print(json.dumps(result, indent=2))
        return 0
    for d, res in result.items():
        print(f"## {d} ({res['files']} files)")
        print("| DCT scale | filter | crops | scaled vs exact: PSNR mean | p5 | min | max abs |"
              " vs reference: exact | scaled |")
        print("|---|---|---|---|---|---|---|---|---|")
        for t in res["error"]:
            print(f"| 1/{t['denom']} | {t['filter']} | {t['crops']} | {t['psnr_mean']:.1f} dB | "
                  f"{t['psnr_p5']:.1f} | {t['psnr_min']:.1f} | {t['max_abs']} | "
                  f"{t['exact_vs_reference_psnr']:.1f} | {t['scaled_vs_reference_psnr']:.1f} |")
        s = res["samples_per_s"]
        print(f"\nsamples/s, scale 1: {s['1']['median']:.1f} ({s['1']['min']:.1f}-{s['1']['max']:.1f}); auto: "
              f"{s['auto']['median']:.1f} ({s['auto']['min']:.1f}-{s['auto']['max']:.1f}); paired ratio "
              f"{res['ratio']['median']:.2f}x ({res['ratio']['min']:.2f}-{res['ratio']['max']:.2f})\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
