#!/usr/bin/env python3
"""Checks of pipebench's GPU validation suite (tests/gpu/README.md).  Python 3 standard library only.

    check.py RESULTS_DIR [--emulated]     read RESULTS_DIR/runs (or runs.tar.gz), write RESULTS_DIR/summary.md
                                          and checks.json; exit 1 when a check failed, else 0
    check.py --batch-bytes CONFIG         print the bytes of one batch of CONFIG (its sample shape x dtype
                                          x batch size), for run.sh to size the copy loop

RESULTS_DIR/runs/<name>/ holds one run each (run.sh): report.json (pipebench's), stdout.txt, stderr.txt,
exit_code, or skipped.txt when it was not run; runs/copy_loop/pinned.jsonl and
runs/copy_loop_pageable/pageable.jsonl the reference copy loop's JSON lines; runs/meta.txt run.sh's
settings.

A check's result is one of: pass, FAIL, "n/a (emulated)" (needs a GPU; --emulated), "not run (...)"
(the GPU refused what it needs, e.g. CUPTI), "skipped (...)" (e.g. one GPU for the two-device check),
"info" (a figure without a target).  Only FAIL makes the exit status 1.
"""
import json
import math
import os
import sys
import tarfile
import tempfile

TARGET_H2D_FRACTION = 0.90  # pipebench pinned H2D >= 90 % of the copy loop's median
STEP_KERNEL_ERROR_PCT = 2.0  # |device.step_kernel.error_pct| <= 2
STEP_P50_PCT = 2.0  # |steps.p50_ms - step_ms| <= 2 % of step_ms
IDLE_POINTS = 2.0  # |device_idle_pct (CUPTI) - idle_pct_cuda_events| <= 2 points
NORMALIZE_RATIO = (0.24, 0.26)  # uint8 bytes / float32 bytes per sample, ideally 1/4
STEP_RUNS = (("step_5ms", 5.0), ("step_20ms", 20.0), ("step_100ms", 100.0))

DTYPE_BYTES = {"uint8": 1, "float16": 2, "float32": 4}

# Every report key the checks read (the summary lists the ones a report lacked).
KEYS_READ = [
    "device.kind", "device.name", "device.count", "device.timing_source", "device.timing_source_reason",
    "device.gpu_timestamps_dropped", "device.idle_pct_cuda_events", "device.step_kernel.target_ms",
    "device.step_kernel.measured_ms", "device.step_kernel.error_pct", "device.per_device[].h2d_gb_per_s",
    "device.per_device[].index", "device.per_device[].idle_pct", "device.most_idle",
    "throughput.samples_per_s", "throughput.batches_per_s", "throughput.bytes_per_s", "steps.p50_ms",
    "device_idle_pct", "bottleneck.stage", "interrupted", "pipebench_version",
]
# Keys that only a GPU fills in (null or absent on the emulated device).
GPU_ONLY = ("device.step_kernel", "device.idle_pct_cuda_events", "device.timing_source_reason",
            "device.gpu_timestamps_dropped")


class CheckError(Exception):
    """A check cannot be evaluated: it fails with this message."""


class Missing(CheckError):
    def __init__(self, run, path, what="missing"):
        self.run, self.path = run, path
        super().__init__("%s: report key %s %s" % (run, path, what))


# ------------------------------------------------------------------------------------------ inputs

def read_text(path, default=None):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return default


def read_meta(runs):
    meta = {}
    for line in (read_text(os.path.join(runs, "meta.txt"), "") or "").splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            meta[k.strip()] = v.strip()
    return meta


class Run:
    """One run's folder: exit status, report, why it is missing."""

    def __init__(self, runs, name, missing_log):
        self.name = name
        self.dir = os.path.join(runs, name)
        self.rel = os.path.join("runs", name)
        self.missing_log = missing_log
        self.skipped = read_text(os.path.join(self.dir, "skipped.txt"))
        if self.skipped is not None:
            self.skipped = self.skipped.strip()
        rc = read_text(os.path.join(self.dir, "exit_code"))
        self.exit_code = int(rc.strip()) if rc and rc.strip().lstrip("-").isdigit() else None
        wall = read_text(os.path.join(self.dir, "wall_s"))
        self.wall_s = int(wall.strip()) if wall and wall.strip().isdigit() else None
        self.report = None
        self.report_error = None
        text = read_text(os.path.join(self.dir, "report.json"))
        if text is not None:
            try:
                self.report = json.loads(text)
            except ValueError as e:
                self.report_error = "report.json is not valid JSON (%s)" % e

    def stderr_hint(self):
        err = (read_text(os.path.join(self.dir, "stderr.txt"), "") or "").strip().splitlines()
        last = err[-1].strip() if err else ""
        if len(last) > 160:
            last = last[:157] + "..."
        return ("; stderr: " + last) if last else ""

    def failure(self):
        """Why this run cannot be checked, or None when its report is there."""
        if self.skipped is not None:
            return "not run: " + self.skipped
        if self.exit_code is None and self.report is None:
            return "run missing (no %s/exit_code)" % self.rel
        if self.exit_code not in (0, None):
            why = " (stopped at its time limit)" if self.exit_code == 124 else ""
            return "run failed, exit %d%s, see %s/stderr.txt%s" % (self.exit_code, why, self.rel, self.stderr_hint())
        if self.report is None:
            return "run failed, see %s/stderr.txt (%s)%s" % (
                self.rel, self.report_error or "no report.json", self.stderr_hint())
        if self.report.get("interrupted") is True:
            return "run interrupted (report says interrupted: true), see %s/stderr.txt" % self.rel
        return None

    def require(self):
        why = self.failure()
        if why:
            raise CheckError(why)
        return self

    def get(self, path, required=True):
        """The value at a dotted path ("device.per_device[0].h2d_gb_per_s"); Missing when absent."""
        cur = self.report
        walked = []
        for part in path.split("."):
            idx = None
            if "[" in part:
                part, rest = part.split("[", 1)
                idx = int(rest.rstrip("]"))
            walked.append(part)
            if not isinstance(cur, dict) or part not in cur:
                if required:
                    self.missing_log.add((self.name, ".".join(walked)))
                    raise Missing(self.name, ".".join(walked))
                return None
            cur = cur[part]
            if idx is not None:
                walked[-1] += "[%d]" % idx
                if not isinstance(cur, list) or idx >= len(cur):
                    if required:
                        self.missing_log.add((self.name, ".".join(walked)))
                        raise Missing(self.name, ".".join(walked), "missing (the array is shorter)"
                                      if isinstance(cur, list) else "missing (not an array)")
                    return None
                cur = cur[idx]
        return cur

    def num(self, path):
        v = self.get(path)
        if v is None:
            raise Missing(self.name, path, "is null")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise Missing(self.name, path, "is not a number (%r)" % (v,))
        return float(v)

    def device_kind_ok(self, expect):
        kind = self.get("device.kind")
        if kind != expect:
            raise CheckError("%s: device.kind is %r, expected %r" % (self.name, kind, expect))


def read_jsonl(path):
    rows, bad = [], 0
    for line in (read_text(path, "") or "").splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            rows.append(json.loads(line))
        except ValueError:
            bad += 1
    return rows, bad


def batch_bytes_of(config_path):
    """Bytes of one batch: the sample of a synthetic dataset (shape x dtype) x the batch stage's size."""
    with open(config_path, encoding="utf-8") as f:
        cfg = json.load(f)
    ds = cfg.get("dataset", {})
    if ds.get("format") != "synthetic":
        raise SystemExit("check.py: %s: dataset.format is not synthetic; cannot size a batch" % config_path)
    n = 1
    for d in ds["shape"]:
        n *= int(d)
    batch = [s for s in cfg["stages"] if s.get("type") == "batch"]
    if len(batch) != 1:
        raise SystemExit("check.py: %s: expected one batch stage" % config_path)
    return n * DTYPE_BYTES[ds.get("dtype", "uint8")] * int(batch[0]["size"])


# ------------------------------------------------------------------------------------------ checks

def cell(v):
    """Text for a markdown table cell: one line, with | escaped."""
    return str(v).replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def fmt(v, digits=2):
    if v is None:
        return "?"
    if isinstance(v, float):
        return "%.*f" % (digits, v)
    return str(v)


class Suite:
    def __init__(self, runs_dir, emulated, meta):
        self.runs_dir = runs_dir
        self.emulated = emulated
        self.meta = meta
        self.kind = "emulated" if emulated else "gpu"
        self.rows = []  # (check, target, measured, result)
        self.missing = set()  # (run, key)
        self.gpu_only_null = set()  # (run, key): null in an emulated report, as it should be
        self._runs = {}

    def run(self, name):
        if name not in self._runs:
            self._runs[name] = Run(self.runs_dir, name, self.missing)
        return self._runs[name]

    def add(self, check, target, measured, result):
        self.rows.append((check, target, measured, result))

    def guarded(self, check, target, fn):
        """Runs fn() -> (measured, result); a CheckError becomes a FAIL row with its message."""
        try:
            measured, result = fn()
        except CheckError as e:
            measured, result = str(e), "FAIL"
        except Exception as e:  # a bug here must not hide the other checks
            measured, result = "check.py error: %s: %s" % (type(e).__name__, e), "FAIL"
        self.add(check, target, measured, result)

    # -- the reference copy loop
    def copy_loop(self, pageable=False):
        name = "copy_loop_pageable" if pageable else "copy_loop"
        r = self.run(name)
        if r.skipped is not None:
            raise CheckError("copy loop not run: " + r.skipped)
        if r.exit_code not in (0,):
            raise CheckError("copy loop failed (exit %s), see %s/stderr.txt%s" % (r.exit_code, r.rel, r.stderr_hint()))
        rows, bad = read_jsonl(os.path.join(r.dir, "pageable.jsonl" if pageable else "pinned.jsonl"))
        if not rows:
            raise CheckError("copy loop printed no JSON (%d bad lines), see %s" % (bad, r.rel))
        return rows

    def loop_at(self, rows, nbytes):
        for row in rows:
            if row.get("bytes") == nbytes:
                return row
        raise CheckError("the copy loop has no result for %d bytes (sizes: %s)" % (
            nbytes, ", ".join(str(x.get("bytes")) for x in rows)))

    def report_batch_bytes(self, r):
        bps, batches = r.num("throughput.bytes_per_s"), r.num("throughput.batches_per_s")
        if batches <= 0:
            raise CheckError("%s: throughput.batches_per_s is %s" % (r.name, batches))
        return bps / batches

    def check_h2d(self):
        batch = int(self.meta["batch_bytes"]) if self.meta.get("batch_bytes", "").isdigit() else None
        target = ">= %d %% of the copy loop's median (pinned, same size)" % round(TARGET_H2D_FRACTION * 100)

        def pinned():
            r = self.run("h2d_pinned").require()
            if self.emulated:
                v = r.get("device.per_device[0].h2d_gb_per_s", required=False)
                return ("emulated device: per_device[0].h2d_gb_per_s %s" % (
                    "absent" if v is None else "%s GB/s" % fmt(v)), "n/a (emulated)")
            r.device_kind_ok("gpu")
            if batch is None:
                raise CheckError("run.sh did not record the batch size (runs/meta.txt batch_bytes)")
            per_batch = self.report_batch_bytes(r)
            if abs(per_batch - batch) > 0.005 * batch:
                raise CheckError("the report moves %.0f bytes per batch, the copy loop copied %d: sizes differ"
                                 % (per_batch, batch))
            got = r.num("device.per_device[0].h2d_gb_per_s")
            loop = self.loop_at(self.copy_loop(), batch)
            ref = float(loop["median_gb_per_s"])
            frac = got / ref if ref > 0 else float("nan")
            measured = ("pipebench %.2f GB/s vs copy loop %.2f GB/s (min %.2f, max %.2f) at %d bytes = %.1f %%; "
                        "timing %s" % (got, ref, loop.get("min_gb_per_s", float("nan")),
                                       loop.get("max_gb_per_s", float("nan")), batch, frac * 100,
                                       r.get("device.timing_source", required=False)))
            return measured, "pass" if frac >= TARGET_H2D_FRACTION else "FAIL"

        self.guarded("H2D pinned bandwidth", target, pinned)

        def pageable():
            r = self.run("h2d_pageable").require()
            if not self.emulated:
                r.device_kind_ok("gpu")
            got = r.num("device.per_device[0].h2d_gb_per_s")
            parts = ["pipebench pageable %.2f GB/s" % got]
            try:
                pin = self.run("h2d_pinned").require().num("device.per_device[0].h2d_gb_per_s")
                parts.append("= %.1f %% of pipebench pinned (%.2f GB/s)" % (100 * got / pin, pin))
            except CheckError as e:
                parts.append("(pinned figure unavailable: %s)" % e)
            if not self.emulated and batch is not None:
                try:
                    loop = self.loop_at(self.copy_loop(pageable=True), batch)
                    parts.append("; copy loop pageable %.2f GB/s at the same size" % float(loop["median_gb_per_s"]))
                except CheckError as e:
                    parts.append("; copy loop pageable unavailable: %s" % e)
            return " ".join(parts).replace(" ;", ";"), "info"

        self.guarded("H2D pageable bandwidth", "reported (no target)", pageable)

    def check_steps(self):
        for name, step_ms in STEP_RUNS:
            def kernel(name=name, step_ms=step_ms):
                r = self.run(name).require()
                if self.emulated:
                    dev = r.get("device", required=False)
                    sk = json.dumps(dev["step_kernel"]) if isinstance(dev, dict) and "step_kernel" in dev else "absent"
                    return ("device.step_kernel: %s on the emulated device" % sk, "n/a (emulated)")
                r.device_kind_ok("gpu")
                tgt = r.num("device.step_kernel.target_ms")
                meas = r.num("device.step_kernel.measured_ms")
                err = r.num("device.step_kernel.error_pct")
                if abs(tgt - step_ms) > 1e-6 * max(1.0, step_ms):
                    raise CheckError("%s: device.step_kernel.target_ms is %s, the run asked for %s ms" % (name, tgt, step_ms))
                return ("target %s ms, measured %.3f ms, error %+.2f %%" % (fmt(tgt, 1), meas, err),
                        "pass" if abs(err) <= STEP_KERNEL_ERROR_PCT else "FAIL")

            self.guarded("step kernel %g ms: error_pct" % step_ms, "|error_pct| <= %g" % STEP_KERNEL_ERROR_PCT, kernel)

            def p50(name=name, step_ms=step_ms):
                r = self.run(name).require()
                r.device_kind_ok(self.kind)
                v = r.num("steps.p50_ms")
                dev = (v - step_ms) / step_ms * 100
                return ("p50 %.3f ms (%+.2f %%), mean %s ms, idle %s %%, timing %s" % (
                    v, dev, fmt(r.get("steps.mean_ms", required=False), 3),
                    fmt(r.get("device_idle_pct", required=False)),
                    r.get("device.timing_source", required=False)),
                        "pass" if abs(dev) <= STEP_P50_PCT else "FAIL")

            self.guarded("step time %g ms: steps.p50_ms" % step_ms, "within %g %% of %g ms" % (STEP_P50_PCT, step_ms), p50)

    def check_idle(self):
        def idle():
            r = self.run("idle_crosscheck").require()
            if self.emulated:
                return ("device_idle_pct %s %% (emulated timeline)" % fmt(r.get("device_idle_pct", required=False)),
                        "n/a (emulated)")
            r.device_kind_ok("gpu")
            src = r.get("device.timing_source")
            ev = r.get("device.idle_pct_cuda_events")
            idle_pct = r.num("device_idle_pct")
            if src == "cuda_events":
                reason = r.get("device.timing_source_reason", required=False)
                return ("device_idle_pct %.2f %% from CUDA events; CUPTI reason: %s" % (idle_pct, reason),
                        "not run (CUPTI refused: %s)" % reason)
            if src != "cupti":
                raise CheckError("device.timing_source is %r (expected cupti or cuda_events)" % (src,))
            ev = r.num("device.idle_pct_cuda_events")
            diff = idle_pct - ev
            dropped = r.get("device.gpu_timestamps_dropped", required=False)
            return ("CUPTI %.2f %% vs CUDA events %.2f %% (%+.2f points); timestamps dropped %s" % (
                idle_pct, ev, diff, dropped), "pass" if abs(diff) <= IDLE_POINTS else "FAIL")

        self.guarded("device idle: CUPTI vs CUDA events", "within %g points" % IDLE_POINTS, idle)

    def check_resnet(self):
        for name in ("resnet_synthetic", "resnet_real"):
            def one(name=name):
                gen = self.run("resnet_gen")
                if name == "resnet_real" and gen.exit_code not in (0, None):
                    raise CheckError("pipebench gen failed (exit %s), see %s/stderr.txt%s" % (
                        gen.exit_code, gen.rel, gen.stderr_hint()))
                r = self.run(name).require()
                r.device_kind_ok(self.kind)
                idle_pct = r.num("device_idle_pct")
                stage = r.get("bottleneck.stage")
                if not isinstance(stage, str) or not stage:
                    raise CheckError("%s: bottleneck.stage is %r (expected a stage name or \"device\")" % (name, stage))
                sps = r.num("throughput.samples_per_s")
                return ("%.1f samples/s, idle %.2f %%, bottleneck %s, timing %s" % (
                    sps, idle_pct, stage, r.get("device.timing_source", required=False)), "pass")

            self.guarded("resnet preset (%s)" % name.split("_")[1], "numeric idle, a bottleneck stage", one)

    def check_normalize(self):
        def norm():
            host = self.run("normalize_host").require()
            dev = self.run("normalize_device").require()
            for r in (host, dev):
                r.device_kind_ok(self.kind)
            bh = host.num("throughput.bytes_per_s") / host.num("throughput.samples_per_s")
            bd = dev.num("throughput.bytes_per_s") / dev.num("throughput.samples_per_s")
            ratio = bd / bh
            lo, hi = NORMALIZE_RATIO
            return ("on_device %.0f B/sample vs host %.0f B/sample = %.4f; samples/s %.0f vs %.0f" % (
                bd, bh, ratio, dev.num("throughput.samples_per_s"), host.num("throughput.samples_per_s")),
                    "pass" if lo <= ratio <= hi else "FAIL")

        self.guarded("normalize on_device: bytes per sample", "uint8/float32 in [%g, %g]" % NORMALIZE_RATIO, norm)

    def check_multi(self):
        def multi():
            r = self.run("multi_gpu")
            if r.skipped is not None and "GPU(s)" in r.skipped:
                return (r.skipped, "skipped (fewer than 2 GPUs)")
            r.require()
            r.device_kind_ok(self.kind)
            count = r.num("device.count")
            per = r.get("device.per_device")
            if not isinstance(per, list):
                raise CheckError("device.per_device is %r (expected an array)" % (type(per).__name__,))
            if len(per) != int(count):
                raise CheckError("device.per_device has %d entries, device.count is %d" % (len(per), count))
            indices = []
            for i, d in enumerate(per):
                if not isinstance(d, dict) or "index" not in d:
                    self.missing.add(("multi_gpu", "device.per_device[%d].index" % i))
                    raise CheckError("device.per_device[%d] has no index" % i)
                indices.append(d["index"])
            most = r.get("device.most_idle")
            if most not in indices:
                raise CheckError("device.most_idle is %r, not one of the per_device indices %s" % (most, indices))
            idles = ", ".join("%s: idle %s %%, %s steps" % (d.get("index"), fmt(d.get("idle_pct")), d.get("steps"))
                              for d in per)
            return ("%d devices (%s); most idle %s" % (count, idles, most), "pass")

        self.guarded("two devices (device.count 2)", "per_device has count entries, most_idle one of them", multi)

    # -- the header and the runs table
    def machine(self):
        lines = []
        loop = None
        try:
            loop = self.copy_loop()[0]
        except CheckError:
            pass
        smi = [l.strip() for l in (read_text(os.path.join(self.runs_dir, "nvidia_smi.csv"), "") or "").splitlines()
               if l.strip()]
        if loop:
            def ver(v):
                return "%d.%d" % (v // 1000, (v % 1000) // 10) if isinstance(v, int) and v > 0 else str(v)

            lines.append("- GPU: %s (device %s of %s, PCI %s)" % (loop.get("device_name"), loop.get("device"),
                                                                 loop.get("device_count"), loop.get("pci_bus_id")))
            lines.append("- CUDA driver API version: %s (%s); CUDA runtime (static, in the binaries): %s (%s)" % (
                ver(loop.get("driver_version")), loop.get("driver_version"),
                ver(loop.get("runtime_version")), loop.get("runtime_version")))
        for row in smi:
            lines.append("- nvidia-smi: %s (index, name, driver, PCI bus)" % row)
        names = set()
        for name in sorted(self._runs):
            r = self._runs[name]
            if r.report and isinstance(r.report.get("device"), dict):
                names.add("%s: %s" % (r.report["device"].get("kind"), r.report["device"].get("name")))
        if names:
            lines.append("- pipebench's device: " + "; ".join(sorted(names)))
        versions = sorted({str(r.report.get("pipebench_version")) for r in self._runs.values() if r.report})
        if versions:
            lines.append("- pipebench version: " + ", ".join(versions))
        if not loop and not smi:
            why = "emulated mode"
            if not self.emulated:
                try:
                    self.copy_loop()
                except CheckError as e:
                    why = str(e)
            lines.append("- GPU: unknown (no copy loop result: %s)" % why)
        return lines

    def copy_loop_table(self):
        out = []
        for pageable in (False, True):
            try:
                rows = self.copy_loop(pageable)
            except CheckError:
                continue
            for row in rows:
                out.append("| %s | %s | %s | %s | %s | %s |" % (
                    "pageable" if pageable else "pinned", row.get("bytes"), fmt(row.get("median_gb_per_s")),
                    fmt(row.get("min_gb_per_s")), fmt(row.get("max_gb_per_s")), row.get("iters")))
        if not out:
            return []
        return ["", "## Copy loop (pb_h2d_copy_loop: cudaMemcpyAsync H2D, one stream, events per copy, median)", "",
                "| host memory | bytes | median GB/s | min GB/s | max GB/s | copies |", "|---|---|---|---|---|---|"] + out

    def runs_table(self):
        out = ["", "## Runs", "",
               "| run | exit | wall s | device | timing | samples/s | MB/s | step p50 ms | idle % | bottleneck | h2d GB/s (dev 0) |",
               "|---|---|---|---|---|---|---|---|---|---|---|"]
        for name in sorted(os.listdir(self.runs_dir)):
            if not os.path.isdir(os.path.join(self.runs_dir, name)) or name.startswith("copy_loop"):
                continue
            r = self.run(name)
            if r.skipped is not None:
                out.append("| %s | skipped: %s | | | | | | | | | |" % (name, r.skipped))
                continue
            rep = r.report or {}
            dev = rep.get("device") if isinstance(rep.get("device"), dict) else {}
            thr = rep.get("throughput") if isinstance(rep.get("throughput"), dict) else {}
            steps = rep.get("steps") if isinstance(rep.get("steps"), dict) else {}
            bn = rep.get("bottleneck") if isinstance(rep.get("bottleneck"), dict) else {}
            per = dev.get("per_device") if isinstance(dev.get("per_device"), list) else []
            h2d = per[0].get("h2d_gb_per_s") if per and isinstance(per[0], dict) else None
            mbps = thr.get("bytes_per_s") / 1e6 if isinstance(thr.get("bytes_per_s"), (int, float)) else None
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                name, r.exit_code if r.exit_code is not None else "?", r.wall_s if r.wall_s is not None else "",
                dev.get("kind", "") if rep else "", dev.get("timing_source", "") if rep else "",
                fmt(thr.get("samples_per_s"), 1) if rep else "", fmt(mbps, 1) if rep else "",
                fmt(steps.get("p50_ms"), 3) if rep else "", fmt(rep.get("device_idle_pct")) if rep else "",
                bn.get("stage", "") if rep else "", fmt(h2d) if rep else ""))
        return out

    def missing_section(self):
        out = ["", "## Report keys", "",
               "Keys the checks read: " + ", ".join("`%s`" % k for k in KEYS_READ) + "."]
        if self.missing:
            out.append("")
            out.append("Missing from the reports (a check that needs one fails, or is n/a when it is GPU-only "
                       "and the run was emulated):")
            out.append("")
            by_key = {}
            for run, key in sorted(self.missing):
                by_key.setdefault(key, []).append(run)
            for key, names in sorted(by_key.items()):
                out.append("- `%s`: %s" % (key, ", ".join(names)))
        else:
            out.append("")
            out.append("None of them was missing where a check needed it.")
        if self.gpu_only_null:
            out.append("")
            out.append("GPU-only keys present and null on the emulated device, as expected: " + ", ".join(
                "`%s`" % k for k in sorted({k for _, k in self.gpu_only_null})) + ".")
        return out

    def evaluate(self):
        self.check_h2d()
        self.check_steps()
        self.check_idle()
        self.check_normalize()
        self.check_resnet()
        self.check_multi()
        # Report the GPU-only keys the emulated runs lack too, so the list of keys is complete.
        if self.emulated:
            for name in ("step_20ms", "idle_crosscheck"):
                r = self.run(name)
                if r.report:
                    for key in GPU_ONLY:
                        parent, leaf = key.rsplit(".", 1)
                        obj = r.get(parent, required=False)
                        if not isinstance(obj, dict) or leaf not in obj:
                            self.missing.add((name, key + " (GPU-only)"))
                        elif obj[leaf] is None:
                            self.gpu_only_null.add((name, key))

    def summary(self):
        failed = [r for r in self.rows if r[3] == "FAIL"]
        title = "# pipebench GPU validation (%s)" % ("emulated device: the GPU-only checks are n/a" if self.emulated else "GPU")
        lines = [title, ""] + self.machine()
        lines.append("- mode: %s; batch bytes of the H2D configs: %s; budget %s s; resnet dataset: %s files" % (
            self.meta.get("mode", self.kind), self.meta.get("batch_bytes", "?"), self.meta.get("budget_s", "?"),
            self.meta.get("resnet_files", "?")))
        lines.append("- result: %s" % ("%d of %d checks FAILED" % (len(failed), len(self.rows)) if failed
                                       else "no check failed (%d checks)" % len(self.rows)))
        lines += ["", "## Checks", "", "| check | target | measured | result |", "|---|---|---|---|"]
        for check, target, measured, result in self.rows:
            lines.append("| %s | %s | %s | %s |" % (cell(check), cell(target), cell(measured),
                                                   "**FAIL**" if result == "FAIL" else cell(result)))
        lines += self.copy_loop_table() + self.runs_table() + self.missing_section()
        return "\n".join(lines) + "\n", bool(failed)


def main(argv):
    if len(argv) == 3 and argv[1] == "--batch-bytes":
        print(batch_bytes_of(argv[2]))
        return 0
    args = [a for a in argv[1:] if not a.startswith("--")]
    flags = [a for a in argv[1:] if a.startswith("--")]
    if len(args) != 1 or any(f not in ("--emulated",) for f in flags):
        sys.stderr.write(__doc__)
        return 2
    outdir = args[0]
    runs = os.path.join(outdir, "runs")
    tmp = None
    if not os.path.isdir(runs):
        tarball = os.path.join(outdir, "runs.tar.gz")
        if not os.path.isfile(tarball):
            sys.stderr.write("check.py: %s has neither runs/ nor runs.tar.gz\n" % outdir)
            return 2
        tmp = tempfile.TemporaryDirectory()
        with tarfile.open(tarball) as t:
            if hasattr(tarfile, "data_filter"):
                t.extractall(tmp.name, filter="data")
            else:
                t.extractall(tmp.name)
        runs = os.path.join(tmp.name, "runs")
    meta = read_meta(runs)
    emulated = "--emulated" in flags or meta.get("mode") == "emulated"
    suite = Suite(runs, emulated, meta)
    suite.evaluate()
    text, failed = suite.summary()
    with open(os.path.join(outdir, "summary.md"), "w", encoding="utf-8") as f:
        f.write(text)
    with open(os.path.join(outdir, "checks.json"), "w", encoding="utf-8") as f:
        json.dump({"mode": "emulated" if emulated else "gpu", "failed": failed,
                   "checks": [dict(zip(("check", "target", "measured", "result"), r)) for r in suite.rows],
                   "missing_keys": sorted("%s: %s" % m for m in suite.missing)}, f, indent=1)
        f.write("\n")
    sys.stdout.write(text)
    if tmp:
        tmp.cleanup()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
