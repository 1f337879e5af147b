#!/usr/bin/env python3
"""pipebench against the PyTorch DataLoader on the same JPEG files (issue 10): images/s per worker.

Both do the ImageNet training input pipeline on the same dataset (pipebench's generator: --images
500x375 q90 JPEGs), on the same cores (taskset), with the same number of workers, in one script run:

  torch-pil     torch.utils.data.DataLoader(num_workers=W, batch_size=B, pin_memory=on a GPU) over a
                Dataset that opens each file with PIL, .convert("RGB"), then torchvision's
                RandomResizedCrop(224), RandomHorizontalFlip(), ToTensor(), Normalize(ImageNet mean/std)
  torch-tv      the same, decoding with torchvision.io.decode_jpeg (libjpeg-turbo) and the tensor
                transforms (RandomResizedCrop(224, antialias=True), flip, to float, Normalize)
  pipebench     read (1 thread) -> decode (W threads) -> map RandomResizedCrop 224, flip, normalize
                float32, to_chw (W threads) -> batch B -> prefetch -> h2d (pinned), a device step of 0 ms
                (--device gpu when a GPU is there, else emulated): pure input-pipeline throughput
  pb-fused      the same with the decode stage's fused_crop: it decodes only the region the crop keeps
                (as tf.data's decode_and_crop_jpeg and DALI do); the same pixels reach the batch

"Per worker": images/s / W for both.  pipebench runs more threads than W (a reader, W decoders, W
augmenters) but on the same W cores (taskset), as the DataLoader's W worker processes plus its main
process do.  Each figure is the median of --repeats runs of --seconds each after a warm-up; the
DataLoader's warm-up is its first --warmup-batches batches (worker start-up excluded).

    bench/vs_pytorch.py [--bin build-release/pipebench] [--images 1024] [--workers 1,2] [--batch 64]
                        [--seconds 20] [--repeats 3] [--decoders pil,tv] [--keep DIR] [--json]

PyTorch and torchvision are only needed here, never by pipebench.  Without them the script says so and
exits 0 after the pipebench rows.
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
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cpus(w):
    """The first w CPUs this process may use, as a taskset list."""
    allowed = sorted(os.sched_getaffinity(0))
    return ",".join(str(c) for c in allowed[:w])


def pipebench_config(data, images, batch, w, fused=False):
    return {
        "name": "vs-pytorch", "seed": 1,
        "dataset": {"path": data, "format": "jpeg",
                    "generate": {"num_files": images, "samples_per_file": 1,
                                 "image": {"width": 500, "height": 375, "quality": 90}}},
        "stages": [
            {"name": "read", "type": "read", "threads": 1},
            {"name": "decode", "type": "decode", "threads": w, "fused_crop": fused},
            {"name": "augment", "type": "map", "threads": w,
             "ops": [{"op": "random_resized_crop", "size": 224}, {"op": "flip", "p": 0.5},
                     {"op": "normalize", "dtype": "float32"}, {"op": "to_chw"}]},
            {"name": "batch", "type": "batch", "size": batch, "drop_remainder": True},
            {"name": "prefetch", "type": "prefetch", "depth": 4},
            {"name": "h2d", "type": "h2d", "pinned": True}],
        "device": {"kind": "auto", "step_ms": 0},
        "run": {"warmup_steps": 5},
    }


def run_pipebench(a, tmp, data, w, fused=False):
    cfg_path = os.path.join(tmp, f"pb-{w}-{fused}.json")
    with open(cfg_path, "w") as f:
        json.dump(pipebench_config(data, a.images, a.batch, w, fused), f)
    rates = []
    for i in range(a.repeats):
        out = os.path.join(tmp, f"out-{w}-{fused}-{i}")
        subprocess.run(["taskset", "-c", cpus(w), a.bin, "run", "--config", cfg_path, "--quiet", "--no-trace",
                        "--format", "json", "--out", out, "--set", f"run.duration_s={a.seconds}"], check=True)
        with open(os.path.join(out, "report.json")) as f:
            rep = json.load(f)
        rates.append(rep["throughput"]["samples_per_s"])
        device = rep["device"]["kind"]
    return statistics.median(rates), rates, device


TORCH_WORKER = r'''
import json, os, sys, time
import torch
from torch.utils.data import DataLoader, Dataset
import torchvision.transforms as T
from PIL import Image
files, w, batch, seconds, warmup, decoder = json.loads(sys.argv[1])
mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
if decoder == "pil":
    tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize(mean, std)])
else:
    import torchvision.io as io
    tf = T.Compose([T.RandomResizedCrop(224, antialias=True), T.RandomHorizontalFlip(),
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


def run_torch(a, files, w, decoder):
    arg = json.dumps([files, w, a.batch, a.seconds, a.warmup_batches, decoder])
    rates, info = [], {}
    for _ in range(a.repeats):
        p = subprocess.run(["taskset", "-c", cpus(w), a.python, "-c", TORCH_WORKER, arg], capture_output=True,
                           text=True)
        if p.returncode != 0:
            raise RuntimeError(p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}")
        info = json.loads(p.stdout.strip().splitlines()[-1])
        rates.append(info["images_per_s"])
    return statistics.median(rates), rates, info


def torch_available(python):
    p = subprocess.run([python, "-c", "import torch, torchvision, PIL; print(torch.__version__, "
                        "torchvision.__version__)"], capture_output=True, text=True)
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
    ap.add_argument("--decoders", default="pil,tv")
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
    rows = []
    for w in workers:
        pb, pb_runs, device = run_pipebench(a, tmp, data, w)
        fu, fu_runs, _ = run_pipebench(a, tmp, data, w, fused=True)
        row = {"workers": w, "pipebench": pb, "pipebench_runs": pb_runs, "pb_fused": fu, "pb_fused_runs": fu_runs,
               "device": device}
        if versions:
            for d in a.decoders.split(","):
                t, t_runs, info = run_torch(a, files, w, d)
                row[f"torch_{d}"], row[f"torch_{d}_runs"], row["torch_cuda"] = t, t_runs, info["cuda"]
        rows.append(row)
    result = {"machine": f"{platform.node()} ({os.cpu_count()} CPUs), {platform.platform()}",
              "torch": versions, "images": a.images, "batch": a.batch, "seconds": a.seconds,
              "repeats": a.repeats, "rows": rows}
    if a.json:
        print(json.dumps(result, indent=1))
    else:
        print(f"machine: {result['machine']}")
        print(f"torch/torchvision: {versions or 'not installed: pipebench rows only'}")
        print(f"{a.images} JPEGs 500x375 q90, batch {a.batch}, {a.seconds:g} s x {a.repeats} runs (median)")
        print(f"{'workers':>7} {'pipebench/s':>12} {'pb-fused/s':>11} " +
              "".join(f"{'torch-' + d + '/s':>13} {'pb x':>6} {'fused x':>8} " for d in a.decoders.split(",")
                      if versions))
        for r in rows:
            line = f"{r['workers']:>7} {r['pipebench']:>12.1f} {r['pb_fused']:>11.1f} "
            for d in (a.decoders.split(",") if versions else []):
                t = r[f"torch_{d}"]
                line += f"{t:>13.1f} {r['pipebench'] / t:>6.2f} {r['pb_fused'] / t:>8.2f} "
            print(line)
        print("per worker: divide by workers (the same for both sides)")
    if not a.keep:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
