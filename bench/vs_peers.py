#!/usr/bin/env python3
"""pipebench against tf.data and DALI's CPU pipelines (and the PyTorch DataLoader) on the same JPEG files and
cores, in three image regimes (issue 36): images/s per worker.

Every contender does the same work: RandomResizedCrop 224 (scale [0.08, 1], ratio [3/4, 4/3], 10 attempts),
horizontal flip, normalize to float32, CHW, batch 64, with the plain bilinear filter (no antialiasing), on
--workers cores (taskset), its thread pools set to that many:

  pb            read (1 thread) -> decode (W) -> map crop, flip, normalize, to_chw (W) -> batch -> prefetch, an
                emulated device step of 0 ms: the whole image decoded, then cropped
  pb_fused      the same with decode's fused_crop (scale auto: each crop at its own DCT scale, docs/CONFIG.md)
                and the batch's fuse_map
  tf            tf.data 2.x: read_file -> decode_jpeg -> slice(sample_distorted_bounding_box) -> resize ->
                flip -> normalize -> transpose, map(num_parallel_calls=W) -> batch -> prefetch, a private
                thread pool of W, intra-op parallelism 1
  tf_fused      the same decoding with decode_and_crop_jpeg (only the crop's region)
  dali          DALI's CPU pipeline (device_id=None, num_threads=W): readers.file -> decoders.image ->
                random_resized_crop -> crop_mirror_normalize (CHW, float, random mirror)
  dali_fused    decoders.image_random_crop (the fused decoder) -> resize -> crop_mirror_normalize

The paired ratios compare like with like: pb / tf and pb / dali (whole-image paths), pb_fused / tf_fused and
pb_fused / dali_fused.  Rounds are interleaved (every contender once a round, the order rotating), each run
--seconds after a warm-up, in a process of its own; the figures are medians of the rounds, the ratios each
round's own, with a distribution-free interval from 5 rounds on (vs_pytorch.py's median_interval).

Regimes (--regime NAME=DIR, repeatable; a DIR of *.jpg files, or "gen" for --images 500x375 q90 JPEGs that
pipebench generates): the issue's are ImageNet-size generated, large baseline photographs and progressive
photographs.  Debian's mate-backgrounds package holds both (`apt-get download mate-backgrounds && dpkg-deb -x
mate-backgrounds_*.deb x`): x/usr/share/backgrounds/mate/nature/*.jpg and desktop/GreenTraditional.jpg are
baseline photos of 1.8-4.9 MP, abstract/Elephants*.jpg, nature/FreshFlower.jpg and GreenMeadow.jpg progressive
ones of 1.3-17.9 MP (docs/PERFORMANCE.md lists the files).

TensorFlow and DALI are benchmark dependencies only, each in its own venv (--tf-python, --dali-python); a
contender whose Python lacks its library is left out and said so.

    bench/vs_peers.py --bin build/pipebench --regime imagenet=gen --regime photos=/data/photos \\
        [--workers 2] [--seconds 15] [--rounds 5] [--tf-python /tmp/tf-venv/bin/python] \\
        [--dali-python /tmp/dali-venv/bin/python] [--json]
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vs_pytorch import cpus, median_interval  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TF_WORKER = r'''
import json, os, sys, time
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import tensorflow as tf
files, w, batch, seconds, warmup, fused = json.loads(sys.argv[1])
tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(w)
mean = tf.constant([0.485, 0.456, 0.406]) * 255.0
std = tf.constant([0.229, 0.224, 0.225]) * 255.0

def load(path):
    data = tf.io.read_file(path)
    shape = tf.io.extract_jpeg_shape(data)
    begin, size, _ = tf.image.sample_distorted_bounding_box(
        shape, tf.zeros([0, 0, 4], tf.float32), min_object_covered=0.0, aspect_ratio_range=(3 / 4, 4 / 3),
        area_range=(0.08, 1.0), max_attempts=10, use_image_if_no_bounding_boxes=True)
    if fused:
        img = tf.io.decode_and_crop_jpeg(data, tf.stack([begin[0], begin[1], size[0], size[1]]), channels=3)
    else:
        img = tf.slice(tf.io.decode_jpeg(data, channels=3), begin, size)
    img = tf.image.resize(img, [224, 224], method="bilinear", antialias=False)
    img = tf.image.random_flip_left_right(img)
    return tf.transpose((img - mean) / std, [2, 0, 1])

ds = (tf.data.Dataset.from_tensor_slices(files).repeat().shuffle(len(files))
      .map(load, num_parallel_calls=w, deterministic=False).batch(batch, drop_remainder=True).prefetch(4))
opts = tf.data.Options()
opts.threading.private_threadpool_size = w
it = iter(ds.with_options(opts))
for _ in range(warmup):
    next(it)
n, t0 = 0, time.perf_counter()
while time.perf_counter() - t0 < seconds:
    n += int(next(it).shape[0])
print(json.dumps({"images_per_s": n / (time.perf_counter() - t0), "version": tf.__version__}))
os._exit(0)
'''

DALI_WORKER = r'''
import json, os, sys, time
from nvidia.dali import fn, pipeline_def, types
import nvidia.dali as dali
files, w, batch, seconds, warmup, fused = json.loads(sys.argv[1])
mean = [0.485 * 255, 0.456 * 255, 0.406 * 255]
std = [0.229 * 255, 0.224 * 255, 0.225 * 255]

@pipeline_def(batch_size=batch, num_threads=w, device_id=None, prefetch_queue_depth=4)
def pipe():
    jpegs, _ = fn.readers.file(files=files, random_shuffle=True, name="reader")
    if fused:
        img = fn.decoders.image_random_crop(jpegs, device="cpu", output_type=types.RGB,
                                            random_aspect_ratio=[3 / 4, 4 / 3], random_area=[0.08, 1.0],
                                            num_attempts=10)
        img = fn.resize(img, resize_x=224, resize_y=224, interp_type=types.INTERP_LINEAR, antialias=False)
    else:
        img = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
        img = fn.random_resized_crop(img, size=[224, 224], random_aspect_ratio=[3 / 4, 4 / 3],
                                     random_area=[0.08, 1.0], num_attempts=10, interp_type=types.INTERP_LINEAR,
                                     antialias=False)
    return fn.crop_mirror_normalize(img, dtype=types.FLOAT, output_layout="CHW", mean=mean, std=std,
                                    mirror=fn.random.coin_flip())

p = pipe()
p.build()
for _ in range(warmup):
    p.run()
n, t0 = 0, time.perf_counter()
while time.perf_counter() - t0 < seconds:
    out, = p.run()
    n += len(out)
print(json.dumps({"images_per_s": n / (time.perf_counter() - t0), "version": dali.__version__}))
os._exit(0)
'''


def pipebench_config(data, w, batch, fused, gen_images):
    ds = {"path": data, "format": "jpeg"}
    if gen_images:
        ds["generate"] = {"num_files": gen_images, "samples_per_file": 1,
                          "image": {"width": 500, "height": 375, "quality": 90}}
    return {
        "name": "vs-peers", "seed": 1, "dataset": ds,
        "stages": [
            {"name": "read", "type": "read", "threads": 1},
            {"name": "decode", "type": "decode", "threads": w, "fused_crop": fused},
            {"name": "augment", "type": "map", "threads": w,
             "ops": [{"op": "random_resized_crop", "size": 224}, {"op": "flip", "p": 0.5},
                     {"op": "normalize", "dtype": "float32"}, {"op": "to_chw"}]},
            {"name": "batch", "type": "batch", "size": batch, "drop_remainder": True, "fuse_map": fused},
            {"name": "prefetch", "type": "prefetch", "depth": 4}],
        "device": {"kind": "emulated", "step_ms": 0},
        "run": {"warmup_steps": 2},
    }


def pipebench_once(a, tmp, data, fused, gen_images, i):
    cfg = pipebench_config(data, a.workers, a.batch, fused, gen_images)
    path, out = os.path.join(tmp, f"pb-{fused}.json"), os.path.join(tmp, f"out-{fused}-{i}")
    with open(path, "w") as f:
        json.dump(cfg, f)
    subprocess.run(["taskset", "-c", cpus(a.workers), a.bin, "run", "--config", path, "--quiet", "--no-trace",
                    "--format", "json", "--out", out, "--set", f"run.duration_s={a.seconds}"], check=True,
                   stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f)["throughput"]["samples_per_s"]


def peer_once(a, python, script, files, fused):
    arg = json.dumps([files, a.workers, a.batch, a.seconds, a.warmup_batches, fused])
    p = subprocess.run(["taskset", "-c", cpus(a.workers), python, "-c", script, arg], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}")
    info = json.loads(p.stdout.strip().splitlines()[-1])
    return info["images_per_s"], info["version"]


def has(python, module):
    if not python:
        return False
    try:
        return subprocess.run([python, "-c", f"import {module}"], capture_output=True).returncode == 0
    except OSError:
        return False


def regime_data(a, tmp, name, where):
    """(directory, its files, images to generate or 0)."""
    if where != "gen":
        return where, sorted(glob.glob(os.path.join(where, "*.jpg"))), 0
    data = os.path.join(tmp, f"gen-{name}")
    cfg = os.path.join(tmp, "gen.json")
    with open(cfg, "w") as f:
        json.dump(pipebench_config(data, 1, a.batch, False, a.images), f)
    subprocess.run([a.bin, "gen", "--config", cfg, "--quiet"], check=True)
    return data, sorted(glob.glob(os.path.join(data, "*.jpg"))), a.images


def run_regime(a, tmp, name, where, peers):
    data, files, gen_images = regime_data(a, tmp, name, where)
    contenders = [("pb", None), ("pb_fused", None)]
    for peer in peers:
        contenders += [(peer, False), (f"{peer}_fused", True)]
    runs = {c: [] for c, _ in contenders}
    versions = {}
    for i in range(a.rounds):
        k = i % len(contenders)
        for c, fused in contenders[k:] + contenders[:k]:
            if c.startswith("pb"):
                runs[c].append(pipebench_once(a, tmp, data, c == "pb_fused", gen_images, i))
            else:
                python, script = (a.tf_python, TF_WORKER) if c.startswith("tf") else (a.dali_python, DALI_WORKER)
                rate, versions[c.split("_")[0]] = peer_once(a, python, script, files, fused)
                runs[c].append(rate)
    row = {"regime": name, "files": len(files), "versions": versions,
           "per_worker": {c: statistics.median(v) / a.workers for c, v in runs.items()}, "runs": runs}
    for peer in peers:
        for pb, other in (("pb", peer), ("pb_fused", f"{peer}_fused")):
            ratios = [x / y for x, y in zip(runs[pb], runs[other])]
            row[f"{pb}/{other}"] = {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios),
                                    "interval": median_interval(ratios)}
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/pipebench"))
    ap.add_argument("--regime", action="append", required=True, help="NAME=DIR or NAME=gen")
    ap.add_argument("--images", type=int, default=512, help="generated images for a gen regime")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup-batches", type=int, default=4)
    ap.add_argument("--tf-python")
    ap.add_argument("--dali-python")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    peers = [p for p, py, mod in (("tf", a.tf_python, "tensorflow"), ("dali", a.dali_python, "nvidia.dali"))
             if has(py, mod) or print(f"{p}: no {mod} in {py}: left out", file=sys.stderr)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for spec in a.regime:
            name, where = spec.split("=", 1)
            rows.append(run_regime(a, tmp, name, where, peers))
            if not a.json:
                print_row(rows[-1], peers)
    if a.json:
        print(json.dumps({"workers": a.workers, "seconds": a.seconds, "rounds": a.rounds, "rows": rows}, indent=2))
    return 0


def print_row(row, peers):
    pw = row["per_worker"]
    print(f"## {row['regime']} ({row['files']} files; {row['versions']})")
    print("images/s per worker: " + ", ".join(f"{c} {v:.1f}" for c, v in pw.items()))
    for peer in peers:
        for pb, other in (("pb", peer), ("pb_fused", f"{peer}_fused")):
            r = row[f"{pb}/{other}"]
            iv = r["interval"]
            ivs = f", interval {iv[0]:.2f}-{iv[1]:.2f} ({iv[2] * 100:.0f} %)" if iv else ""
            print(f"  {pb} / {other}: {r['median']:.2f}x (rounds {r['min']:.2f}-{r['max']:.2f}{ivs})")
    print()


if __name__ == "__main__":
    sys.exit(main())
