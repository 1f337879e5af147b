#!/usr/bin/env python3
"""pipebench against the PyTorch DataLoader on the same JPEG files (issue 10): images/s per worker.

Both do the ImageNet training input pipeline on the same dataset (pipebench's generator: --images
500x375 q90 JPEGs), on the same cores (taskset), with the same number of workers, in one script run:

  torch-pil     torch.utils.data.DataLoader(num_workers=W, batch_size=B, pin_memory=on a GPU) over a
                Dataset that opens each file with PIL, .convert("RGB"), then torchvision's
                RandomResizedCrop(224), RandomHorizontalFlip(), ToTensor(), Normalize(ImageNet mean/std)
  torch-tv      the same, decoding with torchvision.io.decode_jpeg (libjpeg-turbo) and the tensor
                transforms (RandomResizedCrop(224, antialias=A), flip, to float, Normalize)
  pipebench     read (1 thread) -> decode (W threads) -> map RandomResizedCrop 224 (antialias A), flip,
                normalize float32, to_chw (W threads) -> batch B -> prefetch -> h2d (pinned), a device
                step of 0 ms (a GPU when there is one, else emulated): pure input-pipeline throughput
  pb-fused      the same with the decode stage's fused_crop: it decodes only the region the crop keeps
                (as tf.data's decode_and_crop_jpeg and DALI do; its Huffman decoding is pipebench's
                own, libjpeg-turbo does the rest: src/engine/pipeline/dataset/jpeg_huff.c), and the batch's
                fuse_map: the map writes each result into its slot in the batch, no collate copy
                (tf.data's map_and_batch fusion); the same pixels reach the batch

Both sides resample with the same filter, in two groups (--filters):
  aa            antialiased (Pillow's bilinear, widened when shrinking): what PIL always does and
                torchvision's default; pipebench's `antialias: true`.  Rows: pipebench, pb-fused,
                torch-pil, torch-tv.
  plain         2x2-tap bilinear (torch's interpolate): torchvision with antialias=False, pipebench's
                default.  PIL has no such resize, so: pipebench, pb-fused, torch-tv.

"Per worker": images/s / W for both.  pipebench runs more threads than W (a reader, W decoders, W
augmenters) but on the same W cores (taskset), as the DataLoader's W worker processes plus its main
process do.  Each figure is the median of --repeats runs of --seconds each after a warm-up; the
DataLoader's warm-up is its first --warmup-batches batches (worker start-up excluded).  A row's runs are
interleaved: --repeats rounds, each running every contender once (the order rotating by one each round),
so the machine's slow spells fall on both sides alike.  The paired ratios are each round's pipebench /
torch, and their median: the figure to quote on a noisy machine.  From 5 rounds on, pb-fused's median
ratio also gets a distribution-free confidence interval (order statistics of the rounds' ratios, at
least 90 % coverage): if it holds 3.0, the run cannot tell pipebench from exactly 3x.  The last lines
give the floor under pipebench: its decode stage's CPU time per image (median over the runs) and W /
that, the most W cores could do if nothing after decode cost anything, against each torch row.

    bench/vs_pytorch.py [--bin build-release/pipebench] [--images 1024] [--workers 1,2] [--batch 64]
                        [--seconds 20] [--repeats 3] [--filters aa,plain] [--keep DIR] [--json]

PyTorch and torchvision are only needed here, never by pipebench.  Without them the script says so and
exits 0 after the pipebench rows.
"""
import argparse
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cpus(w):
    """The first w CPUs this process may use, as a taskset list."""
    allowed = sorted(os.sched_getaffinity(0))
    return ",".join(str(c) for c in allowed[:w])


def pipebench_config(data, images, batch, w, fused=False, antialias=False):
    return {
        "name": "vs-pytorch", "seed": 1,
        "dataset": {"path": data, "format": "jpeg",
                    "generate": {"num_files": images, "samples_per_file": 1,
                                 "image": {"width": 500, "height": 375, "quality": 90}}},
        "stages": [
            {"name": "read", "type": "read", "threads": 1},
            # scale "1": the exact path, the same pixels as torchvision's full decode (the default "auto" would
            # decode a large crop at its own DCT scale: bench/vs_peers.py measures that)
            {"name": "decode", "type": "decode", "threads": w, "fused_crop": fused, "scale": "1"},
            {"name": "augment", "type": "map", "threads": w,
             "ops": [{"op": "random_resized_crop", "size": 224, "antialias": antialias}, {"op": "flip", "p": 0.5},
                     {"op": "normalize", "dtype": "float32"}, {"op": "to_chw"}]},
            {"name": "batch", "type": "batch", "size": batch, "drop_remainder": True, "fuse_map": fused},
            {"name": "prefetch", "type": "prefetch", "depth": 4},
            {"name": "h2d", "type": "h2d", "pinned": True}],
        "device": {"kind": "auto", "step_ms": 0},
        "run": {"warmup_steps": 5},
    }


def run_pipebench(a, cfg, cfg_path, out, w, env=None):
    """Writes cfg to cfg_path, runs it for a.seconds on the first w CPUs, results in out: its report."""
    with open(cfg_path, "w") as f:
        json.dump(cfg, f)
    subprocess.run(["taskset", "-c", cpus(w), a.bin, "run", "--config", cfg_path, "--quiet", "--no-trace",
                    "--format", "json", "--out", out, "--set", f"run.duration_s={a.seconds}"], check=True, env=env)
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f)


def decode_cpu_us(rep):
    """The decode stage's CPU time per image in us, not its waits."""
    dec = next(s for s in rep["stages"] if s["type"] == "decode")
    return dec["mean_us"] * (dec["cpu_fraction"] or 1.0)


def pipebench_once(a, tmp, data, w, fused, antialias, i):
    """One timed pipebench run: (images/s, device kind, the decode stage's CPU time per image in us)."""
    tag = f"{w}-{fused}-{antialias}"
    rep = run_pipebench(a, pipebench_config(data, a.images, a.batch, w, fused, antialias),
                        os.path.join(tmp, f"pb-{tag}.json"), os.path.join(tmp, f"out-{tag}-{i}"), w)
    return rep["throughput"]["samples_per_s"], rep["device"]["kind"], decode_cpu_us(rep)


TORCH_WORKER = r'''
import json, os, sys, time
import torch
from torch.utils.data import DataLoader, Dataset
import torchvision.transforms as T
from PIL import Image
files, w, batch, seconds, warmup, decoder, antialias = json.loads(sys.argv[1])
mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
if decoder == "pil":
    tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize(mean, std)])
else:
    import torchvision.io as io
    tf = T.Compose([T.RandomResizedCrop(224, antialias=antialias), T.RandomHorizontalFlip(),
                    T.ConvertImageDtype(torch.float32), T.Normalize(mean, std)])

class Files(Dataset):
    def __len__(self):
        return len(files)
    def __getitem__(self, i):
        path = files[i]
        if decoder == "pil":
            with open(path, "rb") as f:
                img = Image.open(f).convert("RGB")
        else:
            img = io.decode_jpeg(io.read_file(path), mode=io.ImageReadMode.RGB)
        return tf(img), 0

class Epochs(torch.utils.data.Sampler):
    # endless: a new shuffle of the files every epoch, as pipebench's read stage does
    def __iter__(self):
        while True:
            yield from torch.randperm(len(files)).tolist()

cuda = torch.cuda.is_available()
loader = DataLoader(Files(), batch_size=batch, sampler=Epochs(), num_workers=w, pin_memory=cuda,
                    persistent_workers=True, prefetch_factor=4, drop_last=True)
it = iter(loader)
for _ in range(warmup):
    x, _ = next(it)
    if cuda: x = x.cuda(non_blocking=True)
n, t0 = 0, time.perf_counter()
while time.perf_counter() - t0 < seconds:
    x, _ = next(it)
    if cuda: x = x.cuda(non_blocking=True)
    n += x.shape[0]
if cuda: torch.cuda.synchronize()
print(json.dumps({"images_per_s": n / (time.perf_counter() - t0), "cuda": cuda,
                  "torch": torch.__version__}))
os._exit(0)  # the endless sampler's workers need not be joined
'''


def torch_once(a, files, w, decoder, antialias):
    """One timed DataLoader run in a fresh interpreter: (images/s, what the worker script reported)."""
    arg = json.dumps([files, w, a.batch, a.seconds, a.warmup_batches, decoder, antialias])
    p = subprocess.run(["taskset", "-c", cpus(w), a.python, "-c", TORCH_WORKER, arg], capture_output=True,
                       text=True)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}")
    info = json.loads(p.stdout.strip().splitlines()[-1])
    return info["images_per_s"], info


def run_row(a, tmp, data, files, w, flt, with_torch):
    """All contenders of one row, interleaved: each round runs every contender once, in an order that
    rotates from round to round, so a slow spell of the machine falls on all of them alike instead of on
    whichever happened to run its repeats then.  A round's ratios (pb-fused / a torch row, both measured
    within a minute or two of each other) are the paired figures; the row gives their median too."""
    aa = flt == "aa"
    contenders = [("pipebench", False), ("pb_fused", True)]
    if with_torch:
        contenders += [(f"torch_{d}", d) for d in (["pil", "tv"] if aa else ["tv"])]
    row = {"workers": w, "filter": flt}
    runs = {name: [] for name, _ in contenders}
    decode_us = {"pipebench": [], "pb_fused": []}
    for i in range(a.repeats):
        k = i % len(contenders)
        for name, what in contenders[k:] + contenders[:k]:
            if name.startswith("torch_"):
                rate, info = torch_once(a, files, w, what, aa)
                row["torch_cuda"] = info["cuda"]
            else:
                rate, row["device"], us = pipebench_once(a, tmp, data, w, what, aa, i)
                decode_us[name].append(us)
            runs[name].append(rate)
    for name in runs:
        row[name], row[f"{name}_runs"] = statistics.median(runs[name]), runs[name]
    for name in decode_us:
        row[f"{name}_decode_us"] = statistics.median(decode_us[name])
    for t in (n for n in runs if n.startswith("torch_")):
        for pb in ("pipebench", "pb_fused"):
            row[f"{pb}_over_{t}_rounds"] = [x / y for x, y in zip(runs[pb], runs[t])]
            row[f"{pb}_over_{t}"] = statistics.median(row[f"{pb}_over_{t}_rounds"])
            row[f"{pb}_over_{t}_interval"] = median_interval(row[f"{pb}_over_{t}_rounds"])
    return row


def median_interval(xs, level=0.9):
    """A distribution-free confidence interval for the median of paired ratios: the k-th smallest and
    k-th largest of n, with the largest k whose coverage 1 - 2 P(Binomial(n, 1/2) < k) is at least
    `level` (n=5: min..max, 93.8 %; n=9: 2nd..8th, 96.1 %).  None below 5 rounds: too few to say."""
    n = len(xs)
    if n < 5:
        return None
    below, best = 0.0, None
    for k in range(1, n // 2 + 1):
        below += math.comb(n, k - 1) / 2 ** n  # P(B <= k - 1)
        coverage = 1 - 2 * below
        if coverage < level:
            break
        best = (k, coverage)
    k, coverage = best
    s = sorted(xs)
    return s[k - 1], s[n - k], coverage


def torch_available(python):
    try:
        p = subprocess.run([python, "-c", "import torch, torchvision, PIL; print(torch.__version__, "
                            "torchvision.__version__)"], capture_output=True, text=True)
    except OSError:  # no such interpreter: pipebench rows only, as without torch
        return None
    return p.stdout.strip() if p.returncode == 0 else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build-release/pipebench"))
    ap.add_argument("--python", default=sys.executable, help="the Python that has torch and torchvision")
    ap.add_argument("--images", type=int, default=1024)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--warmup-batches", type=int, default=8)
    ap.add_argument("--filters", default="aa,plain", help="aa, plain or both (see above)")
    ap.add_argument("--keep")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    tmp = a.keep or tempfile.mkdtemp(prefix="pipebench-vs-pytorch-")
    os.makedirs(tmp, exist_ok=True)
    data = os.path.join(tmp, "data")
    workers = [int(w) for w in a.workers.split(",")]
    # the dataset, once, with pipebench's generator
    gen_cfg = os.path.join(tmp, "gen.json")
    with open(gen_cfg, "w") as f:
        json.dump(pipebench_config(data, a.images, a.batch, 1), f)
    subprocess.run([a.bin, "gen", "--config", gen_cfg, "--quiet"], check=True)
    files = sorted(os.path.join(data, n) for n in os.listdir(data) if n.endswith(".jpg"))
    versions = torch_available(a.python)
    filters = a.filters.split(",")
    rows = []
    for w in workers:
        for flt in filters:
            row = run_row(a, tmp, data, files, w, flt, bool(versions))
            rows.append(row)
            # progress on stderr, a row at a time: a long run that is cut short still leaves its figures
            print(f"[vs_pytorch] W={w} {flt}: " + ", ".join(f"{k} {row[k]:.1f}" for k in
                  ("pipebench", "pb_fused", "torch_pil", "torch_tv") if k in row) + " images/s",
                  file=sys.stderr, flush=True)
    result = {"machine": f"{platform.node()} ({os.cpu_count()} CPUs), {platform.platform()}",
              "torch": versions, "images": a.images, "batch": a.batch, "seconds": a.seconds,
              "repeats": a.repeats, "rows": rows}
    if a.json:
        print(json.dumps(result, indent=1))
    else:
        print(f"machine: {result['machine']}")
        print(f"torch/torchvision: {versions or 'not installed: pipebench rows only'}")
        print(f"{a.images} JPEGs 500x375 q90, batch {a.batch}, {a.seconds:g} s x {a.repeats} rounds (median), images/s")
        print(f"{'workers':>7} {'filter':>6} {'pipebench':>10} {'pb-fused':>9} {'torch-pil':>10} {'torch-tv':>9}"
              f"  ratios pipebench / pb-fused over each torch row")
        for r in rows:
            torch_cols = [r.get("torch_pil"), r.get("torch_tv")]
            line = f"{r['workers']:>7} {r['filter']:>6} {r['pipebench']:>10.1f} {r['pb_fused']:>9.1f} " + \
                   " ".join(f"{t:>9.1f}" if t else f"{'-':>9}" for t in torch_cols) + "  "
            line += "  ".join(f"{r['pipebench'] / t:.2f}x/{r['pb_fused'] / t:.2f}x" for t in torch_cols if t)
            print(line)
        print("runs behind each median:")
        for r in rows:
            runs = [f"{k[:-5]} {' '.join(f'{v:.1f}' for v in r[k])}" for k in r if k.endswith("_runs")]
            print(f"  W={r['workers']} {r['filter']}: " + "; ".join(runs))
        print("per worker: divide by workers (the same for both sides)")
        if versions:
            # the paired figure: each round's ratio, from runs made minutes apart, and their median
            print("paired ratios, round by round (median first): pipebench / pb-fused over each torch row")
            for r in rows:
                for t in ("torch_pil", "torch_tv"):
                    if t not in r:
                        continue
                    pb, fu = r[f"pipebench_over_{t}_rounds"], r[f"pb_fused_over_{t}_rounds"]
                    ci = r[f"pb_fused_over_{t}_interval"]
                    print(f"  W={r['workers']} {r['filter']} vs {t[6:]}: {r[f'pipebench_over_{t}']:.2f}x / "
                          f"{r[f'pb_fused_over_{t}']:.2f}x   (" +
                          " ".join(f"{x:.2f}/{y:.2f}" for x, y in zip(pb, fu)) + ")" +
                          (f"  pb-fused median in {ci[0]:.2f}-{ci[1]:.2f}x ({100 * ci[2]:.1f} % confidence)"
                           if ci else ""))
        # The floor under pipebench: its decode stage's CPU time per image (libjpeg-turbo, mostly Huffman
        # decoding, the same library code PIL and torchvision run).  With everything after decode free,
        # W cores could do at most W / that.
        print("decode floor: CPU per image in the decode stage, and the most W cores could do if nothing else cost")
        for r in rows:
            for k, name in (("pipebench", "pipebench"), ("pb_fused", "pb-fused")):
                us = r[f"{k}_decode_us"]
                best = r["workers"] * 1e6 / us
                vs = [f"{best / r[t]:.2f}x {t[6:]}" for t in ("torch_pil", "torch_tv") if r.get(t)]
                print(f"  W={r['workers']} {r['filter']} {name}: {us:.0f} us/image -> at most {best:.0f} images/s"
                      + (f" ({', '.join(vs)})" if vs else ""))
    if not a.keep:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
