#!/usr/bin/env python3
"""tf.data pipelines with known bottlenecks, profiled with the TensorFlow Profiler and read back by pipebench
(issue 35): for each, --rounds rounds of a capture of --steps steps (--captures K: K captures, `pipebench twin`
of them all reading the one whose job ran fastest), `pipebench twin` of it, the real
pipeline's throughput (unprofiled) and the twin's (the twin of that round's capture: a VM's speed drifts by
tens of % over minutes, and a twin spins what the machine took when its capture was made); the medians, and
each round's twin over its real run (paired).  Each round also measures the device's own limit (the same step loop
on a pipeline that costs nothing): a planted stage is the real bottleneck only while the real pipeline runs below
97 % of it.  The first capture's verdict and advice, and the twin's top
recommendation, applied to the real pipeline (a map's num_parallel_calls, a prefetch, a cache) with the gain
measured against the gain predicted (the predicted rate over the capture's or the twin's, against the real
pipeline's after over before), and the rate after it against the predicted rate: the profiler slows the captured
pipeline but not the device, so where the advice makes the device the limit the predicted gain is larger than the
real one while the predicted rate holds.

TensorFlow is a benchmark dependency only (never of pipebench or CI):

    python3 -m venv /tmp/tf-venv && /tmp/tf-venv/bin/pip install tensorflow-cpu
    /tmp/tf-venv/bin/python bench/tf_import.py [--bin build/pipebench] [--rounds 3] [--only NAME]
    /tmp/tf-venv/bin/python bench/tf_import.py --fixtures tests/fixtures/tfdata [--fixture-steps 12]

--fixtures DIR writes the test fixtures instead: each pipeline's capture of --fixture-steps steps as
DIR/<name>.xplane.pb, and DIR/expected.json with the planted answers: the bottleneck (the dataset's name as
the capture gives it, "device", or "overlap" where every iterator keeps up yet the steps wait), a word the
advice must hold (or null), and the share of the steps' time
Python measured in next(iterator) during the capture (perf_counter around each call: the step markers' own
figure, measured apart from the profiler's events), which tests/e2e/test_e2e_twin.c checks pipebench's
reading of the capture against.

The work of every map is CPU: n 128x128 float matmuls (intra-op parallelism 1, so one op is one core), which
the twin's `spin` emulates; the training step is a sleep (the device's time, not the host's).  Every TensorFlow
measurement runs in a process of its own (no earlier pipeline's threads beside it), the real pipeline and its
twin interleaved.  A recommendation on the twin's stage `<Kind>_<n>` goes back to the pipeline's dataset n.
"""
import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# oneDNN's ops (TensorFlow's default on x86) under the TensorFlow Profiler slow these matmul pipelines more the
# longer a capture runs (2.21: starved_parallel_map from 2100 to 650 samples/s within 3 s of one session, 2 GB more
# resident, most of it system time; 2700 unprofiled; docs/IMPORT.md "Capturing"): no reading of such a
# capture gets the unprofiled pipeline back.  Every run here, real and profiled, uses TensorFlow's own (Eigen)
# kernels instead, unless --onednn; the children inherit the choice.
if "--onednn" not in sys.argv:
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
import tensorflow as tf  # noqa: E402

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(2)


def work(n):
    def f(x):
        m = tf.fill([128, 128], tf.cast(x % 7, tf.float32) * 1e-3 + 1e-3)
        for _ in range(n):
            m = tf.matmul(m, m) * 1e-2
        return tf.reduce_sum(m)
    return f


def no_fusion(ds, inject_prefetch=True):
    opts = tf.data.Options()
    opts.experimental_optimization.map_and_batch_fusion = False
    opts.experimental_optimization.inject_prefetch = inject_prefetch  # tf.data adds one at the end by default
    return ds.with_options(opts)


# Each pipeline: build(knobs) -> dataset, where knobs maps a dataset's number to its num_parallel_calls or buffer
# size: tf.data numbers a pipeline's datasets in the order they are made (RangeDataset:0, MapDataset:1, ...),
# each pipeline is built in a fresh process, and the twin names its stages <Kind>_<number>; the step time in s;
# the stage the twin should name (the planted bottleneck).
def slow_map(k):  # Range:0 -> Map:1 (24 matmuls, one call at a time; fused with Batch:2) -> Prefetch:3
    return tf.data.Dataset.range(10**9).map(work(24), num_parallel_calls=k.get(1, 1)).batch(16).prefetch(k.get(3, 2))


def starved_parallel_map(k):  # Range:0 -> Map:1 (10 matmuls) -> ParallelMap:2 (1 matmul) -> Batch:3 -> Prefetch:4
    # tf.data's map_parallelization rewrites Map:1 into a parallel map of its own choosing (2 here)
    return no_fusion(tf.data.Dataset.range(10**9).map(work(10), num_parallel_calls=k.get(1))
                     .map(work(1), num_parallel_calls=k.get(2, 2)).batch(16).prefetch(k.get(4, 2)))


def no_prefetch(k):  # Range:0 -> ParallelMap:1 (3 matmuls, 2 calls) -> Batch:2, no prefetch: made inside the step
    ds = tf.data.Dataset.range(10**9).map(work(3), num_parallel_calls=k.get(1, 2)).batch(16)
    if 3 in k:
        ds = ds.prefetch(k[3])  # -1: tf.data.AUTOTUNE
    return no_fusion(ds, inject_prefetch=False)


def device_bound(k):  # Range:0 -> ParallelMap:1 (1 matmul, 2 calls; fused with Batch:2) -> Prefetch:3; 30 ms steps
    return tf.data.Dataset.range(10**9).map(work(1), num_parallel_calls=k.get(1, 2)).batch(16).prefetch(k.get(3, 2))


def cacheable(k):  # Range:0 -> ParallelMap:1 (16 matmuls, 2 calls) -> Repeat:2 -> Batch:3 -> Prefetch:4; 64 an epoch
    ds = tf.data.Dataset.range(64).map(work(16), num_parallel_calls=k.get(1, 2))
    if "cache" in k:
        ds = ds.cache()
    return no_fusion(ds.repeat().batch(16).prefetch(k.get(4, 2)))


def interleave_source(k):  # Range:0 -> ParallelInterleave:1 (of Range -> Map, 8 matmuls) -> Batch -> Prefetch
    # the inner datasets' numbers (and so the batch's and prefetch's) vary from run to run: knob "inner" is the
    # inner map's num_parallel_calls, "prefetch" the prefetch's buffer
    inner = lambda i: tf.data.Dataset.range(10**6).map(work(8), num_parallel_calls=k.get("inner"))  # noqa: E731
    return (tf.data.Dataset.range(10**6).interleave(inner, cycle_length=2, num_parallel_calls=k.get(1, 1))
            .batch(16).prefetch(k.get("prefetch", 2)))


def unordered_map(k):  # Range:0 -> ParallelMap:1 (2 or, every 4th element, 12 matmuls; deterministic=False) -> Batch:2
    # -> Prefetch:3: the map hands on whichever element is done first, so lineage by start order is wrong here
    def f(x):
        n = tf.where(x % 4 == 0, tf.constant(12, tf.int64), tf.constant(2, tf.int64))
        m = tf.fill([128, 128], tf.cast(x % 7, tf.float32) * 1e-3 + 1e-3)
        return tf.reduce_sum(tf.while_loop(lambda i, m: i < n, lambda i, m: (i + 1, tf.matmul(m, m) * 1e-2),
                                           (tf.constant(0, tf.int64), m))[1])
    return no_fusion(tf.data.Dataset.range(10**9).map(f, num_parallel_calls=k.get(1, 2), deterministic=False)
                     .batch(16).prefetch(k.get(3, 2)))


# The planted answers as a capture names them: the bottleneck's dataset name (or "device") and a word of the
# advice that fixes it (None: none expected).
PLANTED = {
    "slow_map": ("fused(ParallelMapDatasetV2:1,BatchDatasetV2:2)", "num_parallel_calls=2"),
    "starved_parallel_map": ("MapDataset:1", None),  # rewritten to a parallel map of the 2 cores: more cores
    "no_prefetch": ("overlap", ".prefetch("),  # every iterator keeps up; the batch is made inside the step
    "cacheable": ("ParallelMapDatasetV2:1", ".cache()"),
    # the interleave's inner map, "MapDataset:<n>" (its number varies from run to run: a prefix here)
    "interleave_source": ("MapDataset:", None),
    "device_bound": ("device", None),
    "unordered_map": ("ParallelMapDatasetV2:1", None),  # a parallel map of the 2 cores: more cores
}

# What `pipebench analyze` of the capture names: the stage with the most self time on the critical path (the twin's
# stage name; "device" when not input-bound).  no_prefetch's map is on the path because its batch is made inside
# the step; the capture's own verdict there says overlap.
ANALYZED = {
    "slow_map": "MapAndBatch_1",
    "starved_parallel_map": "ParallelMapV2_1",
    "no_prefetch": "ParallelMapV2_1",
    "cacheable": "ParallelMapV2_1",
    "interleave_source": "Map_",
    "device_bound": "device",
    "unordered_map": "ParallelMapV2_1",
}

PIPELINES = {
    "slow_map": (slow_map, 0.010, "MapAndBatch_1"),
    "starved_parallel_map": (starved_parallel_map, 0.005, "ParallelMapV2_1"),
    "no_prefetch": (no_prefetch, 0.012, "ParallelMapV2_1"),  # the analyze of its capture names it too
    "cacheable": (cacheable, 0.005, "ParallelMapV2_1"),
    "interleave_source": (interleave_source, 0.005, "Map_"),
    "device_bound": (device_bound, 0.030, "device"),
    "unordered_map": (unordered_map, 0.005, "ParallelMapV2_1"),
}
BATCH = 16


def real_throughput(build, knobs, step_s, steps):
    """The steps' samples/s after as many steps unmeasured: the same point of the process as a capture's, whose
    throwaway session comes first (a process's first steps run slower, profiled or not)."""
    it = iter(build(knobs))
    for _ in range(5):
        next(it)
    for _ in range(steps):
        next(it)
        time.sleep(step_s)
    t = time.perf_counter()
    for _ in range(steps):
        next(it)
        time.sleep(step_s)
    return steps * BATCH / (time.perf_counter() - t)


def capture(build, knobs, step_s, steps, logdir):
    """The capture's path, the profiled steps' samples/s, and the % of the steps' time in next()."""
    it = iter(build(knobs))
    for _ in range(5):
        next(it)
    # The first profiling sessions of a process run slowest (bench/tf_profiler_cost.py; docs/IMPORT.md "Capturing"):
    # after a throwaway session of one step the next 40 steps ran 1400-1653 samples/s against 2729 in the session
    # after that (starved_parallel_map), 668-773 against 875-994 (slow_map), with oneDNN off.  So a throwaway
    # session as long as the capture first, as a capture of a job should have.
    tf.profiler.experimental.start(logdir + "-warm")
    for _ in range(steps):
        next(it)
        time.sleep(step_s)
    tf.profiler.experimental.stop()
    tf.profiler.experimental.start(logdir)
    t = time.perf_counter()
    in_next = in_steps = 0.0
    for s in range(steps):
        with tf.profiler.experimental.Trace("train", step_num=s, _r=1):
            t0 = time.perf_counter()  # inside the marker: what the loop spends in next() of its step
            next(it)
            t1 = time.perf_counter()
            time.sleep(step_s)
            t2 = time.perf_counter()
        in_next += t1 - t0
        in_steps += t2 - t0
    rate = steps * BATCH / (time.perf_counter() - t)
    tf.profiler.experimental.stop()
    (pb,) = glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb"))
    return pb, rate, 100 * in_next / in_steps


def child(args):
    """One measurement in a process of its own, so that no earlier pipeline's threads run beside it: prints
    JSON {samples_per_s[, capture]}."""
    build, step_s, _ = PIPELINES[args.child[1]]
    knobs = {int(n) if n.isdigit() else n: v for n, v in json.loads(args.child[2]).items()}
    if args.child[0] == "real":
        print(json.dumps({"samples_per_s": real_throughput(build, knobs, step_s, args.steps)}))
    elif args.child[0] == "device":  # the same loop on a pipeline that costs nothing: the device's own limit
        trivial = lambda k: tf.data.Dataset.range(10**9).batch(BATCH).prefetch(2)  # noqa: E731
        print(json.dumps({"samples_per_s": real_throughput(trivial, {}, step_s, args.steps)}))
    else:
        pb, rate, waiting = capture(build, knobs, step_s, args.steps, args.child[3])
        print(json.dumps({"samples_per_s": rate, "capture": pb, "waiting_pct": waiting}))


def in_child(args, kind, name, knobs, logdir=""):
    cmd = [sys.executable, os.path.abspath(__file__), "--steps", str(args.steps), "--child", kind, name,
           json.dumps(knobs), logdir]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def capture_advice(name, said):
    """The capture's top advice as (knobs, predicted samples/s, text), or None: num_parallel_calls=N on a dataset
    (its number), a prefetch at the end (dataset 3 of no_prefetch, AUTOTUNE), or .cache() (cacheable's)."""
    m = re.search(r"^advice    (.*?)(?:  -> ([0-9]+) samples/s predicted)?$", said, re.M)
    if not m or not m.group(2):
        return None
    text, predicted = m.group(1), float(m.group(2))
    npc = re.match(r"num_parallel_calls=(\d+) on ([^:]*):(\d+)", text)
    if npc and name == "interleave_source" and npc.group(2) == "MapDataset":
        return {"inner": int(npc.group(1))}, predicted, text
    if npc:
        return {int(npc.group(3)): int(npc.group(1))}, predicted, text
    if text.startswith("end the pipeline with .prefetch("):
        return {3: -1}, predicted, text
    if text.startswith(".cache()"):
        return {"cache": 1}, predicted, text
    return None


def capture_verdict(said):
    """The bottleneck `pipebench twin` named from the capture alone: a dataset's name, or "device"."""
    m = re.search(r"^verdict   input-bound \([0-9.]+ % waiting\): the slowest is (.+?), [0-9n/a]+ samples/s", said, re.M)
    if m:
        return m.group(1)
    return "overlap" if "for want of overlap" in said else "device"


def run_twin(binary, cfg, out, steps):
    subprocess.run([binary, "run", cfg, "-q", "-o", out, "--no-trace", "-s", f"run.steps={steps}",
                    "-s", "run.warmup_steps=5"], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f)


def knob_of(name, action):
    """'--set stages.ParallelMapV2_1.threads=3' -> (1, 3): the dataset's number (or interleave_source's knob) and
    the value; '--set stages.BatchV2_2.on_demand=false' (batch ahead) -> no_prefetch's prefetch of 1 at the end
    (dataset 3); None when it is none of these."""
    if name == "no_prefetch" and re.search(r"stages\.BatchV2_2\.on_demand=false", action or ""):
        return (3, 1)
    m = re.search(r"stages\.([A-Za-z0-9]+?)_(\d+)(?:_batch)?\.(threads|depth)=(\d+)", action or "")
    if not m:
        return None
    if name == "interleave_source" and m.group(1) in ("Map", "Prefetch"):
        return ("inner" if m.group(1) == "Map" else "prefetch", int(m.group(4)))
    return (int(m.group(2)), int(m.group(4)))


def med(v):
    return statistics.median(v)


def spread(v):
    return f"{min(v):.0f}-{max(v):.0f}"


def take_captures(args, name, tmp, tag):
    """--captures captures of the pipeline, each in a process of its own, and the twin of them (of several, pipebench
    twin reads the one whose job ran fastest): (the fastest's child answer, every capture's samples/s, the twin's
    config, what twin printed)."""
    caps = [in_child(args, "capture", name, {}, os.path.join(tmp, f"{name}-{tag}-{j}")) for j in range(args.captures)]
    cfg = os.path.join(tmp, f"{name}-twin-{tag}.json")
    said = subprocess.run([args.bin, "twin", *[c["capture"] for c in caps], "-o", cfg, "--force"], check=True,
                          capture_output=True, text=True).stdout
    read = re.search(r"^capture   (\S+)", said, re.M).group(1)
    cap = next(c for c in caps if os.path.samefile(c["capture"], read))
    return cap, [c["samples_per_s"] for c in caps], cfg, said


def one(name, args, tmp):
    _, _, want = PIPELINES[name]
    cap, rates, cfg, said = take_captures(args, name, tmp, 0)
    waiting = float(re.search(r"([0-9.]+) % of their time waiting for input", said).group(1))
    verdict = capture_verdict(said)
    planted, word = PLANTED[name]
    advice = [line[10:] for line in said.splitlines() if line.startswith("advice") or
              (line.startswith("          ") and "predicted" in line)]
    print(f"{name}: the capture's verdict {verdict} (planted {planted}) {'OK' if verdict.startswith(planted) else 'MISSED'}; "
          f"advice {advice[0] if advice else '-'}{'' if not word or any(word in a for a in advice) else ' (MISSED ' + word + ')'}; "
          f"waiting {waiting:.1f} % read, {cap['waiting_pct']:.1f} % in next()")
    job = re.search(r"^verdict .*the job ran at ([0-9]+)", said, re.M)
    job = float(job.group(1)) if job else None
    real, twin, reps, profiled, fastest, device = [], [], [], list(rates), [cap["samples_per_s"]], []
    for i in range(args.rounds):  # interleaved: a capture and its twin, the real pipeline, then the twin run
        if i > 0:  # each round its own captures: a VM's speed drifts over minutes (its neighbours), and a twin
            # spins what the machine took when its capture was made
            again, rates, cfg, _ = take_captures(args, name, tmp, i)
            profiled += rates
            fastest.append(again["samples_per_s"])
        real.append(in_child(args, "real", name, {})["samples_per_s"])
        device.append(in_child(args, "device", name, {})["samples_per_s"])
        reps.append(run_twin(args.bin, cfg, os.path.join(tmp, f"{name}-twin-{i}"), args.steps))
        twin.append(reps[-1]["throughput"]["samples_per_s"])
    rep = sorted(reps, key=lambda r: r["throughput"]["samples_per_s"])[len(reps) // 2]
    named = rep["bottleneck"]["stage"] or "-"
    if named == "cores":  # the cores bind: the stage that spends most of them ("CPU per sample by stage: X 89 %")
        top = re.search(r"CPU per sample by stage: ([A-Za-z0-9_]+) ([0-9]+ %)", rep["bottleneck"].get("reason") or "")
        named = f"cores, most to {top.group(1)} ({top.group(2)})" if top else named
    paired = [t / r for t, r in zip(twin, real)]  # each round's twin over that round's real pipeline
    # What the unprofiled pipeline is limited by: the device when it runs as fast as the same loop on a pipeline that
    # costs nothing (within 3 %), whatever was planted; either, when it reaches 90 % of that (a near tie: the
    # machine's noise decides which of the two limits a capture shows)
    truth, accepted = "", [want]
    if want != "device" and med(real) >= 0.97 * med(device):
        accepted, truth = ["device"], f"; but unprofiled it runs at the device's {med(device):.0f} samples/s"
    elif want != "device" and med(real) >= 0.90 * med(device):
        accepted = [want, "device"]
        truth = f" or the device: unprofiled it runs at {med(real) / med(device):.0%} of its rate"
    print(f"  the device alone (the same loop, a pipeline that costs nothing): {med(device):.0f} samples/s "
          f"({spread(device)}); the real pipeline reaches {med(real) / med(device):.0%} of it")
    if args.captures > 1:
        print(f"  {args.captures} captures a round: the fastest (the twin's) {med(fastest):.0f} samples/s "
              f"({spread(fastest)}), every capture {med(profiled):.0f} ({spread(profiled)})")
        profiled = fastest
    print(f"  real {med(real):.0f} samples/s ({spread(real)}), profiled {med(profiled):.0f} ({spread(profiled)}); twin "
          f"{med(twin):.0f} ({spread(twin)}): {med(twin) / med(real) - 1:+.1%} of real (paired "
          f"{min(paired) - 1:+.1%} to {max(paired) - 1:+.1%}), "
          f"{med(twin) / med(profiled) - 1:+.1%} of profiled; input-bound {waiting:.1f} % captured, "
          f"{rep['input_bound_pct']:.1f} % twin; "
          f"bottleneck {named} (planted: {want}{truth}) "
          f"{'OK' if any(named.startswith((a, 'cores, most to ' + a)) for a in accepted) else 'MISSED'}")
    advice = capture_advice(name, said)
    if advice and job:
        knobs, predicted, text = advice
        after = [in_child(args, "real", name, knobs)["samples_per_s"] for _ in range(args.rounds)]
        gain_pred, gain_real = predicted / job, med(after) / med(real)
        print(f"  the capture's advice applied ({text}): real {med(after):.0f} samples/s ({spread(after)}), gain "
              f"{gain_real:.2f}x measured vs {gain_pred:.2f}x predicted ({gain_real / gain_pred - 1:+.1%}); "
              f"the rate after it {med(after) / predicted - 1:+.1%} of the predicted {predicted:.0f}")
    recs = rep.get("recommendations") or []
    if not recs:
        print(f"  no recommendation; twin's classification {rep['classification']}")
        return
    action, predicted = recs[0]["action"], recs[0]["predicted_samples_per_s"]
    knob = knob_of(name, action)
    if not knob or not predicted:
        print(f"  top recommendation {action!r} (predicted {predicted}): not applied (not a stage's threads or depth)")
        return
    after = [in_child(args, "real", name, {knob[0]: knob[1]})["samples_per_s"] for _ in range(args.rounds)]
    gain_pred, gain_real = predicted / med(twin), med(after) / med(real)
    print(f"  applied {action} as dataset {knob[0]} -> {knob[1]}: real {med(after):.0f} samples/s ({spread(after)}), "
          f"gain {gain_real:.2f}x measured vs {gain_pred:.2f}x predicted ({gain_real / gain_pred - 1:+.1%}); "
          f"the rate after it {med(after) / predicted - 1:+.1%} of the predicted {predicted:.0f} samples/s")


def fixtures(args):
    os.makedirs(args.fixtures, exist_ok=True)
    expected, kept = {}, {}
    old = os.path.join(args.fixtures, "expected.json")
    if args.only and os.path.exists(old):  # the other fixtures' answers stay, and the GPU fixture's entry
        with open(old) as f:
            kept = json.load(f)
        expected = kept.get("pipelines", {})
    steps, args.steps = args.steps, args.fixture_steps
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.only or PIPELINES:
            cap = in_child(args, "capture", name, {}, os.path.join(tmp, name))
            shutil.copy(cap["capture"], os.path.join(args.fixtures, f"{name}.xplane.pb"))
            bottleneck, advice = PLANTED[name]
            expected[name] = {"bottleneck": bottleneck, "advice": advice, "stage": ANALYZED[name],
                              "python_waiting_pct": round(cap["waiting_pct"], 2)}
            print(f"{name}: {os.path.getsize(os.path.join(args.fixtures, f'{name}.xplane.pb'))} bytes, "
                  f"{cap['waiting_pct']:.1f} % in next()")
    args.steps = steps
    out = dict(kept, tensorflow=tf.__version__, steps=args.fixture_steps, pipelines=expected)
    print("device_bound changed: rerun bench/tf_gpu_fixture.py for the GPU fixture and its expected \"gpu\" entry")
    with open(os.path.join(args.fixtures, "expected.json"), "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/pipebench")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--captures", type=int, default=1, help="captures a round, the twin made from their fastest")
    ap.add_argument("--only", action="append")
    ap.add_argument("--fixtures")
    ap.add_argument("--fixture-steps", type=int, default=12)
    ap.add_argument("--onednn", action="store_true", help="keep oneDNN's ops on (TensorFlow's default on x86)")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    if args.fixtures:
        return fixtures(args)
    print(f"tensorflow {tf.__version__}, {os.cpu_count()} CPUs, {args.rounds} rounds of {args.steps} steps, oneDNN "
          f"{'on' if os.environ.get('TF_ENABLE_ONEDNN_OPTS') != '0' else 'off'}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.only or PIPELINES:
            one(name, args, tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
