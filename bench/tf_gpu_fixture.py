#!/usr/bin/env python3
"""A GPU plane planted into a CPU capture: the test fixture for `pipebench analyze` reading a capture's
"/device:GPU:N" plane (issue 35), made because no GPU capture could be made here (TensorFlow CPU writes none).

The plane is written as XLA's CUPTI collector writes it (xla/backends/profiler/gpu/cupti_collector.cc): one
line per stream ("Stream #N(...)"), an event per kernel carrying a `kernel_details` ref stat, an event per copy
carrying `memcpy_details` ("kind_src:pageable kind_dst:device size:N dest:0 async:0"), `correlation_id` on
both, and a memset (neither stat) that the reader must leave out.  Each step of the source capture gets, counted
back from its marker's end (so that they follow the step's input wait):

    H2D copy of the batch   [end - 28.0, end - 26.0) ms     stream 13
    kernels 1, 2, 4, 5       4.0 ms each, 1.0 ms apart from end - 25.8 ms, stream 14
    kernel 3                 on stream 15, from kernel 2's start + 3.0 ms for 2.5 ms (overlapping kernels 2, 3)
    D2H copy                 [end - 1.6, end - 1.4) ms    stream 16 (not the input: left out)
    memset                   [end - 1.2, end - 1.1) ms    stream 16 (no details: left out)

The expected figures (written to expected.json's "gpu" entry): the steps' h2d (2.0 ms each), the kernels'
busy share of the steps' window (their union, computed here), and the host's own time between the copy's end
and the first kernel (0.2 ms).  The script checks that every step's input wait (its IteratorGetNext events)
ended before the copy began.

    /tmp/tf-venv/bin/python bench/tf_gpu_fixture.py tests/fixtures/tfdata/device_bound.xplane.pb \\
        tests/fixtures/tfdata/gpu_device_bound.xplane.pb
"""
import json
import os
import sys

from tensorflow.tsl.profiler.protobuf import xplane_pb2

MS = 1_000_000_000  # ps


def steps_of(plane):
    """(start_ps, end_ps, getnext_end_ps) of each step marker on the host plane."""
    names = {k: m.name for k, m in plane.event_metadata.items()}
    stat_names = {k: m.name for k, m in plane.stat_metadata.items()}
    marks, getnexts = [], []
    for line in plane.lines:
        for ev in line.events:
            t0 = line.timestamp_ns * 1000 + ev.offset_ps
            t1 = t0 + ev.duration_ps
            if any(stat_names.get(s.metadata_id) == "step_num" for s in ev.stats):
                marks.append((t0, t1))
            if "IteratorGetNext" in names.get(ev.metadata_id, ""):
                getnexts.append((t0, t1))
    out = []
    for t0, t1 in sorted(marks):
        g = max([e for s, e in getnexts if t0 <= s < t1] or [t0])
        out.append((t0, t1, g))
    return out


def union(intervals):
    total, covered = 0, None
    for a, b in sorted(intervals):
        if covered is not None and a < covered:
            a = covered
        if b > a:
            total += b - a
            covered = b
        elif covered is None or b > covered:
            covered = b
    return total


def main():
    src, dst = sys.argv[1], sys.argv[2]
    space = xplane_pb2.XSpace()
    space.ParseFromString(open(src, "rb").read())
    host = next(p for p in space.planes if p.name == "/host:CPU")
    steps = steps_of(host)
    gpu = space.planes.add(id=max(p.id for p in space.planes) + 1, name="/device:GPU:0")
    ids = {"event": {}, "stat": {}}

    def metadata_id(kind, table, name):
        """The id of `name` in the plane's event or stat metadata, added on first use."""
        if name not in ids[kind]:
            ids[kind][name] = len(ids[kind]) + 1
            table[ids[kind][name]].id = ids[kind][name]
            table[ids[kind][name]].name = name
        return ids[kind][name]

    def ev_meta(name):
        return metadata_id("event", gpu.event_metadata, name)

    def stat_meta(name):
        return metadata_id("stat", gpu.stat_metadata, name)

    origin_ns = steps[0][0] // 1000 - 1000
    lines = {}

    def line(stream, label):
        if stream not in lines:
            lines[stream] = gpu.lines.add(id=stream, display_id=stream, name=f"Stream #{stream}({label})",
                                          timestamp_ns=origin_ns)
        return lines[stream]

    corr = [100]

    def add(stream, label, name, t0, t1, details_stat=None, details=None):
        ev = line(stream, label).events.add(metadata_id=ev_meta(name), offset_ps=t0 - origin_ns * 1000,
                                            duration_ps=t1 - t0)
        corr[0] += 1
        ev.stats.add(metadata_id=stat_meta("correlation_id"), uint64_value=corr[0])
        if details_stat:
            ev.stats.add(metadata_id=stat_meta(details_stat), ref_value=stat_meta(details))

    kernels, h2d_ms = [], []
    for t0, t1, ready in steps:
        copy0, copy1 = t1 - 28 * MS, t1 - 26 * MS
        if ready > copy0:
            raise SystemExit(f"a step's input wait ends {(ready - t0) / MS:.2f} ms in, after the planted copy")
        add(13, "MemcpyH2D", "MemcpyH2D", copy0, copy1, "memcpy_details",
            "kind_src:pageable kind_dst:device size:6291456 dest:0 async:0")
        h2d_ms.append((copy1 - copy0) / MS)
        k = t1 - int(25.8 * MS)
        for i in range(4):
            kernels.append((k, k + 4 * MS))
            add(14, "Compute", f"volta_sgemm_128x64_nn_{i}", k, k + 4 * MS, "kernel_details",
                "regs:64 static_shared:0 dynamic_shared:0 grid:80,1,1 block:128,1,1 occ_pct:50")
            if i == 1:
                k3 = (k + 3 * MS, k + int(5.5 * MS))
                kernels.append(k3)
                add(15, "Compute", "elementwise_add", k3[0], k3[1], "kernel_details",
                    "regs:16 static_shared:0 dynamic_shared:0 grid:40,1,1 block:256,1,1 occ_pct:100")
            k += 5 * MS
        add(16, "MemcpyD2H", "MemcpyD2H", t1 - int(1.6 * MS), t1 - int(1.4 * MS), "memcpy_details",
            "kind_src:device kind_dst:pageable size:4 dest:0 async:0")
        add(16, "MemcpyD2H", "Memset", t1 - int(1.2 * MS), t1 - int(1.1 * MS))
    window = steps[-1][1] - steps[0][0]
    open(dst, "wb").write(space.SerializeToString())
    exp_path = os.path.join(os.path.dirname(dst), "expected.json")
    exp = json.load(open(exp_path))
    exp["gpu"] = {"capture": os.path.basename(dst), "from": os.path.basename(src), "h2d_ms": h2d_ms[0],
                  "kernel_busy_pct": round(100.0 * union(kernels) / window, 3), "host_before_kernels_ms": 0.2,
                  "steps": len(steps)}
    json.dump(exp, open(exp_path, "w"), indent=2)
    open(exp_path, "a").write("\n")
    print(json.dumps(exp["gpu"]))


if __name__ == "__main__":
    main()
