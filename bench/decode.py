#!/usr/bin/env python3
"""JPEG decode rate, side by side with libjpeg-turbo's own tjbench (issue 3's decode performance target).

It writes --images synthetic 500x375 q90 JPEGs (pipebench's generator, src/engine/pipeline/dataset/synth_image.c) into a
temporary directory, then measures single-threaded decode rates in images/s at the same DCT scaling:

  tjbench         `tjbench FILE -benchtime T -warmup W -nowrite -rgb [-scale 1/N]` (decompress-only mode: the
                  input is a JPEG) on --tjbench-images of the files; the rate is their combined images/s
                  (count / total seconds per image), from tjbench's "Frame rate: ... fps" lines.
  decoder core    pb_jpeg_decode (src/engine/pipeline/dataset/jpeg.c) in a tight loop over all the files, one thread, one
                  reused decoder: the ceiling for the decode stage, without the pipeline around it.
  pipebench       the real decode stage: read (1 thread) -> decode (1 thread) -> batch -> emulated device, step 0.

The generator and the decoder-core loop are compiled from the sources into the temporary directory with
--cc (default cc -O2), so this runs without a build of pipebench.

    bench/decode.py [--images 64] [--scale 1|1/2|1/4|1/8] [--benchtime 5] [--tjbench-images 3]
                    [--seed 42] [--keep DIR] [--json]
"""
import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

HELPER_C = r"""
/* bench/decode.py's helper: `gen DIR N W H Q SEED` writes DIR/img_NNNNN.jpg; `decode DIR N DENOM SECONDS`
 * decodes them round-robin with one pb_jpeg_decoder for at least SECONDS and prints images/s. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "jpeg.h"
#include "synth_image.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static void path(char *out, const char *dir, int i) { sprintf(out, "%s/img_%05d.jpg", dir, i); }

static int gen(const char *dir, int n, int w, int h, int q, unsigned long long seed) {
  pb_jpeg_encoder *enc;
  pb_err err;
  if (pb_jpeg_encoder_init(&enc, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
  double t0 = now_s();
  for (int i = 0; i < n; i++) {
    uint8_t *jpeg;
    size_t bytes;
    if (pb_synth_jpeg_with(enc, w, h, q, seed, (uint64_t)i, &jpeg, &bytes, &err))
      return fprintf(stderr, "%s\n", err.msg), 1;
    char p[4096];
    path(p, dir, i);
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(jpeg, 1, bytes, f) != bytes || fclose(f)) return perror(p), 1;
    free(jpeg);
  }
  printf("gen_ms_per_image %.3f\n", (now_s() - t0) * 1e3 / n);
  pb_jpeg_encoder_free(enc);
  return 0;
}

static int decode(const char *dir, int n, int denom, double seconds) {
  uint8_t **data = calloc((size_t)n, sizeof *data);
  size_t *bytes = calloc((size_t)n, sizeof *bytes), cap = 0;
  for (int i = 0; i < n; i++) {
    char p[4096];
    path(p, dir, i);
    FILE *f = fopen(p, "rb");
    if (!f) return perror(p), 1;
    fseek(f, 0, SEEK_END);
    bytes[i] = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    data[i] = malloc(bytes[i]);
    if (fread(data[i], 1, bytes[i], f) != bytes[i]) return perror(p), 1;
    fclose(f);
  }
  pb_jpeg_decoder *dec;
  pb_err err;
  if (pb_jpeg_decoder_init(&dec, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
  int w, h;
  if (pb_jpeg_header(dec, data[0], bytes[0], &w, &h, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
  cap = pb_jpeg_decoded_bytes(w, h, denom);
  uint8_t *out = malloc(cap);
  long count = 0;
  for (int warm = 0; warm < n; warm++) pb_jpeg_decode(dec, data[warm], bytes[warm], denom, 0, out, cap, &w, &h, &err);
  double t0 = now_s(), t;
  do {
    for (int k = 0; k < 16; k++, count++) {
      int i = (int)(count % n);
      if (pb_jpeg_decode(dec, data[i], bytes[i], denom, 0, out, cap, &w, &h, &err))
        return fprintf(stderr, "%s\n", err.msg), 1;
    }
    t = now_s() - t0;
  } while (t < seconds);
  printf("images_per_s %.3f\n", count / t);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 8 && !strcmp(argv[1], "gen"))
    return gen(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]), strtoull(argv[7], 0, 10));
  if (argc == 6 && !strcmp(argv[1], "decode")) return decode(argv[2], atoi(argv[3]), atoi(argv[4]), atof(argv[5]));
  fprintf(stderr, "usage: helper gen DIR N W H Q SEED | decode DIR N DENOM SECONDS\n");
  return 2;
}
"""

WIDTH, HEIGHT, QUALITY = 500, 375, 90


def build_helper(cc, workdir):
    src = os.path.join(workdir, "helper.c")
    exe = os.path.join(workdir, "helper")
    with open(src, "w") as f:
        f.write(HELPER_C)
    sources = [os.path.join(ROOT, p) for p in
               ("src/engine/pipeline/dataset/synth_image.c", "src/engine/pipeline/dataset/jpeg.c",
                "src/engine/pipeline/dataset/jpeg_region.c", "src/engine/pipeline/dataset/jpeg_huff.c", "src/engine/pipeline/dataset/jpeg_phuff.c",
                "src/core/decode_scale.c", "src/core/common.c")]
    cmd = cc.split() + ["-std=gnu11", "-I", os.path.join(ROOT, "src/core"), "-I", os.path.join(ROOT, "src/engine/pipeline/dataset"),
                        src] + sources + ["-o", exe, "-lturbojpeg", "-ljpeg", "-luv", "-lm"]
    subprocess.run(cmd, check=True)
    return exe


def run_helper(exe, *args):
    out = subprocess.run([exe] + [str(a) for a in args], capture_output=True, text=True, check=True).stdout
    return {k: float(v) for k, v in (line.split() for line in out.splitlines())}


def generate(exe, img_dir, count, seed):
    stats = run_helper(exe, "gen", img_dir, count, WIDTH, HEIGHT, QUALITY, seed)
    sizes = [os.path.getsize(os.path.join(img_dir, f)) for f in sorted(os.listdir(img_dir))]
    return {"count": count, "min_bytes": min(sizes), "mean_bytes": sum(sizes) / len(sizes), "max_bytes": max(sizes),
            "gen_ms_per_image": stats["gen_ms_per_image"]}


def tjbench_fps(path, scale, benchtime, warmup):
    cmd = ["tjbench", path, "-benchtime", str(benchtime), "-warmup", str(warmup), "-nowrite", "-rgb"]
    if scale != 1:
        cmd += ["-scale", f"1/{scale}"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rates = re.findall(r"Decompress\s+-->\s+Frame rate:\s+([0-9.]+)\s+fps", out)
    if len(rates) != 1:
        sys.exit(f"decode.py: could not read tjbench's frame rate from:\n{out}")
    return float(rates[0])


def tjbench_rate(files, scale, benchtime, warmup):
    """Combined images/s over the files: each tjbench run times one image decoded again and again."""
    fps = [tjbench_fps(f, scale, benchtime, warmup) for f in files]
    return len(fps) / sum(1 / r for r in fps), fps


def pipebench_rate(img_dir, scale, args):
    """pipebench's own decode stage, single-threaded, on the same files and scaling: read (1 thread) ->
    decode (1 thread) -> batch(16) -> prefetch(2) -> emulated device with step 0, so decode is the
    bottleneck.  Returns (samples/s, the stage the report blames)."""
    cfg = {"name": "decode-bench", "seed": args.seed,
           "dataset": {"path": img_dir, "format": "jpeg"},
           "stages": [{"name": "read", "type": "read", "threads": 1},
                      {"name": "decode", "type": "decode", "threads": 1, "scale": "1" if scale == 1 else f"1/{scale}"},
                      {"name": "batch", "type": "batch", "size": 16},
                      {"name": "prefetch", "type": "prefetch", "depth": 2}],
           "device": {"kind": "emulated", "step_ms": 0},
           "run": {"duration_s": args.benchtime, "warmup_steps": 10}}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "decode.json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        out = subprocess.run([args.bin, "--config", path, "--json", "--no-trace", "--no-progress", "--quiet",
                              "--out", os.path.join(tmp, "out")], capture_output=True, text=True, check=True).stdout
    rep = json.loads(out)
    assert rep["accounting"]["balanced"] and rep["accounting"]["errors"] == 0, "bad accounting"
    return rep["throughput"]["samples_per_s"], (rep.get("bottleneck") or {}).get("stage")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=64, help="images to generate (default 64)")
    ap.add_argument("--scale", default="1", choices=["1", "1/2", "1/4", "1/8"], help="DCT scaling (default 1)")
    ap.add_argument("--benchtime", type=float, default=5.0, help="seconds per measurement (default 5)")
    ap.add_argument("--warmup", type=float, default=1.0, help="tjbench warm-up seconds (default 1)")
    ap.add_argument("--tjbench-images", type=int, default=3, help="files tjbench is run on (default 3)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--cc", default="cc -O2", help="compiler for the helper (default 'cc -O2')")
    ap.add_argument("--keep", metavar="DIR", help="write the images to DIR and keep them")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build-release", "pipebench"), help="pipebench binary")
    ap.add_argument("--runs", type=int, default=3, help="alternating tjbench/pipebench rounds; medians (default 3)")
    args = ap.parse_args()
    if not shutil.which("tjbench"):
        sys.exit("decode.py: tjbench not found (expected it on PATH: Debian's libjpeg-turbo-progs)")
    scale = 1 if args.scale == "1" else int(args.scale.split("/")[1])

    work = tempfile.mkdtemp(prefix="pb-decode-bench-")
    try:
        img_dir = args.keep or os.path.join(work, "images")
        os.makedirs(img_dir, exist_ok=True)
        exe = build_helper(args.cc, work)
        data = generate(exe, img_dir, args.images, args.seed)
        files = [os.path.join(img_dir, f"img_{i:05d}.jpg") for i in range(min(args.tjbench_images, args.images))]
        tj_runs, pb_runs, core_runs, blamed = [], [], [], set()
        for _ in range(args.runs):  # side by side: the same machine state for both, alternating
            tj, tj_each = tjbench_rate(files, scale, args.benchtime, args.warmup)
            tj_runs.append(tj)
            core_runs.append(run_helper(exe, "decode", img_dir, args.images, scale, args.benchtime)["images_per_s"])
            rate, stage = pipebench_rate(img_dir, scale, args)
            pb_runs.append(rate)
            blamed.add(stage)
        tj, core, pb = statistics.median(tj_runs), statistics.median(core_runs), statistics.median(pb_runs)
    finally:
        shutil.rmtree(work)

    result = {"machine": platform.processor() or platform.machine(), "image": f"{WIDTH}x{HEIGHT} q{QUALITY}",
              "scale": args.scale, "dataset": data, "tjbench_images_per_s": tj, "tjbench_each": tj_each,
              "decoder_core_images_per_s": core, "pipebench_images_per_s": pb,
              "runs": {"tjbench": tj_runs, "decoder_core": core_runs, "pipebench": pb_runs,
                       "bottleneck_named": sorted(str(b) for b in blamed)}}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    kb = lambda b: f"{b / 1024:.1f} KiB"
    print(f"dataset: {data['count']} x {WIDTH}x{HEIGHT} q{QUALITY}: {kb(data['min_bytes'])} min, "
          f"{kb(data['mean_bytes'])} mean, {kb(data['max_bytes'])} max; generated in "
          f"{data['gen_ms_per_image']:.2f} ms/image (incl. encoding)")
    print(f"scale {args.scale}, one thread, images/s:")
    row = lambda label, rest: print(f"  {label:<28}{rest}")
    print(f"medians of {args.runs} alternating rounds of {args.benchtime:g} s each")
    row(f"tjbench ({len(tj_each)} files)", f"{tj:9.1f}   runs: " + " ".join(f"{r:.1f}" for r in tj_runs))
    row("pb_jpeg_decode core loop", f"{core:9.1f}   {100 * core / tj:.1f}% of tjbench")
    if pb is None:
        row("pipebench decode stage", "(not wired yet: see pipebench_rate() in bench/decode.py)")
    else:
        row("pipebench decode stage", f"{pb:9.1f}   {100 * pb / tj:.1f}% of tjbench (target >= 95%)   runs: "
            + " ".join(f"{r:.1f}" for r in pb_runs) + f"   bottleneck named: {', '.join(sorted(str(b) for b in blamed))}")


if __name__ == "__main__":
    main()
