#!/usr/bin/env python3
"""Regenerates the seed corpora in tests/fuzz/corpus/ (README.md here).  The seeds are committed; the build
and CI never run this.  Needs only Python 3 and libjpeg-turbo's cjpeg (Debian: libjpeg-turbo-progs).

    tests/fuzz/make_corpus.py

Reproducers of fixed bugs live in the same directories under names starting with 'repro-': this script
leaves them alone (it only rewrites the seeds it makes).
"""
import glob
import io
import os
import re
import shutil
import struct
import subprocess
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(HERE, "corpus")


def out(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- config: the presets and examples, edge cases, and --set arguments after NUL bytes ----------------------

SYNTH = b'{"dataset": {"format": "synthetic", "shape": [224, 224, 3]}, "stages": [{"type": "batch", "size": 32}]}'
RAW = (b'{"dataset": {"format": "raw", "record_bytes": 4096}, "stages": [{"type": "read"}, '
       b'{"type": "map", "ops": []}, {"type": "batch", "size": 8}]}')
ALL_OPS = (b'{"dataset": {"format": "jpeg", "path": "d", "generate": {"num_files": 4, "image": {"width": 64, '
           b'"height": 48, "quality": 80}}}, "stages": [{"type": "read", "threads": 2, "direct": true, '
           b'"latency_us": 10, "bandwidth_mb_per_s": 5.5}, {"type": "decode", "scale": "1/2", "max_pixels": 1000000}, '
           b'{"type": "map", "ops": [{"op": "resize", "size": 40}, {"op": "center_crop", "size": 32}, '
           b'{"op": "random_resized_crop", "size": 24, "scale": [0.5, 1], "ratio": [0.75, 1.3333]}, '
           b'{"op": "flip", "p": 0.25}, {"op": "normalize", "mean": [123.7, 116.3, 103.5], "std": [58.4, 57.1, 57.4], '
           b'"dtype": "float16"}, {"op": "to_chw"}, {"op": "spin", "us": 1}, {"op": "sleep", "us": 0}]}, '
           b'{"type": "cache"}, {"type": "shuffle", "buffer": 16}, '
           b'{"type": "batch", "size": 4, "drop_remainder": false}, '
           b'{"type": "prefetch", "depth": 2}, {"type": "h2d", "pinned": false, "streams": 2}], '
           b'"device": {"kind": "emulated", "count": 2, "ids": [0, 1], "step_ms": {"dist": "normal", "mean": 5, '
           b'"stdev": 1}, "h2d_gb_per_s": 12, "allreduce": {"mode": "model", "params": 25000000, "gb_per_s": 10}}, '
           b'"run": {"epochs": 2, "warmup_steps": 1, "on_error": "fail", "max_errors": 3}, '
           b'"limits": {"max_memory_mb": 512}, "seed": 7, "name": "all"}')
TFREC = (b'{"dataset": {"format": "tfrecord", "path": "t", "feature": "image/encoded", "payload": "raw", '
         b'"generate": {"num_files": 2, "samples_per_file": 10, "record_bytes": 100, "record_bytes_stdev": 5}}, '
         b'"stages": [{"type": "read"}, {"type": "batch", "size": 5}], "run": {"duration_s": 0.5}}')
NPZ = (b'{"dataset": {"format": "npz", "path": "n", "generate": {"num_files": 2, "record_bytes": 64}}, '
       b'"stages": [{"type": "read"}, {"type": "batch", "size": 1}], "device": {"allreduce": {"mode": "barrier", '
       b'"bytes": 1024}}}')


def config_corpus():
    for f in sorted(glob.glob(os.path.join(ROOT, "configs", "*.json")) +
                    glob.glob(os.path.join(ROOT, "configs", "examples", "*.json"))):
        with open(f, "rb") as fh:
            out("config", os.path.basename(f), fh.read())
    out("config", "synth.json", SYNTH)
    out("config", "raw.json", RAW)
    out("config", "all_ops.json", ALL_OPS)
    out("config", "tfrecord.json", TFREC)
    out("config", "npz.json", NPZ)
    out("config", "bom.json", b"\xef\xbb\xbf" + SYNTH)
    out("config", "empty_object.json", b"{}")
    out("config", "not_object.json", b"[1, 2, 3]")
    out("config", "bad_json.json", b'{"stages": [{"type": "batch", "size": 3}')
    out("config", "deep.json", b'{"a":' * 40 + b"1" + b"}" * 40)
    out("config", "unknown_key.json", SYNTH[:-1] + b', "stagez": []}')
    out("config", "big_numbers.json",
        b'{"dataset": {"format": "synthetic", "shape": [1e300, -0, 9223372036854775807]}, '
        b'"stages": [{"type": "batch", "size": 1e20}], "seed": 18446744073709551615}')
    out("config", "set_batch.json", SYNTH + b"\0stages.batch.size=64\0run.steps=null")
    out("config", "set_index.json", RAW + b"\0stages[1].ops=[{\"op\":\"spin\",\"us\":5}]\0dataset.record_bytes=7")
    out("config", "set_object.json", SYNTH + b'\0device.step_ms={"dist":"normal","mean":12.5,"stdev":0.1}')
    out("config", "set_bad.json", SYNTH + b"\0stages..x=1\0a[99999999999]=2\0=\0noequals")
    out("config", "set_name.json", ALL_OPS + b"\0stages.decode.scale=1/8\0stages.map.ops[0].size=null")


def config_dict():
    """libFuzzer dictionary: every key and enum value of src/core/config_schema.c and friends."""
    words = set()
    for f in glob.glob(os.path.join(ROOT, "src", "config_*.c")):
        with open(f, encoding="utf-8") as fh:
            text = fh.read()
        for w in re.findall(r'"([a-z][a-z0-9_/]*)"', text):
            words.add(w)
    lines = ["# JSON keys and values of the config schema (src/config_*.c); regenerate with make_corpus.py"]
    for w in sorted(words):
        lines.append('"\\"%s\\""' % w)
    for tok in ["{", "}", "[", "]", ":", ",", "null", "true", "false", "-1", "0.5", "1e400",
                "\\x00", "\\x00stages.", "\\x00dataset.", "\\x00device.", "\\x00run.", "=", "[0]", "=null"]:
        lines.append('"%s"' % tok)
    with open(os.path.join(HERE, "config.dict"), "w") as fh:
        fh.write("\n".join(lines) + "\n")


# ---- jpeg: tiny real JPEGs from cjpeg, each after a selector byte (fuzz_jpeg.c) -------------------------------

def pnm(width, height, grey, seed):
    px = bytearray()
    for y in range(height):
        for x in range(width):
            v = (x * 37 + y * 11 + seed * 53 + (x * y) % 7 * 20) & 0xFF
            px += bytes([v]) if grey else bytes([v, (v * 3 + y * 8) & 0xFF, (255 - v + x * 5) & 0xFF])
    return (b"P5" if grey else b"P6") + b"\n%d %d\n255\n" % (width, height) + bytes(px)


def cjpeg(args, image):
    return subprocess.run(["cjpeg", "-quality", "75"] + args, input=image, stdout=subprocess.PIPE,
                          check=True).stdout


def jpeg_corpus():
    cases = [
        ("grey_16x16_baseline", 16, 16, True, []),
        ("grey_33x7_progressive", 33, 7, True, ["-progressive"]),
        ("rgb_16x16_420_baseline", 16, 16, False, ["-sample", "2x2,1x1,1x1"]),
        ("rgb_33x7_444_baseline", 33, 7, False, ["-sample", "1x1,1x1,1x1"]),
        ("rgb_33x7_420_progressive", 33, 7, False, ["-progressive", "-sample", "2x2,1x1,1x1"]),
        ("rgb_16x16_444_progressive", 16, 16, False, ["-progressive", "-sample", "1x1,1x1,1x1"]),
        ("rgb_40x24_422_restart", 40, 24, False, ["-sample", "2x1,1x1,1x1", "-restart", "1B", "-optimize"]),
        ("rgb_17x9_arithmetic", 17, 9, False, ["-arithmetic"]),
        ("rgb_24x24_rgb_colorspace", 24, 24, False, ["-rgb"]),
        ("rgb_64x48_411", 64, 48, False, ["-sample", "4x1,1x1,1x1"]),
        # progressive with restarts and optimised tables: every scan kind of jpeg_phuff.c, EOB runs, restarts
        ("rgb_48x40_422_progressive_restart", 48, 40, False,
         ["-progressive", "-sample", "2x1,1x1,1x1", "-restart", "2B", "-optimize", "-quality", "95"]),
    ]
    for i, (name, w, h, grey, args) in enumerate(cases):
        data = cjpeg(args, pnm(w, h, grey, i))
        out("jpeg", name + ".sel%d" % (i % 4), bytes([i % 4]) + data)
    good = cjpeg([], pnm(16, 16, False, 99))
    out("jpeg", "truncated_half.sel1", b"\x01" + good[: len(good) // 2])
    out("jpeg", "soi_only.sel0", b"\x00\xff\xd8")
    out("jpeg", "not_jpeg.sel0", b"\x00GIF89a")
    # A header claiming 4096x4096 (over the target's 4,000,000-pixel cap): refused before decoding.
    sof = good.find(b"\xff\xc0")
    big = bytearray(good)
    struct.pack_into(">HH", big, sof + 5, 4096, 4096)
    out("jpeg", "huge_header.sel2", b"\x02" + bytes(big))


# ---- tfrecord: the fixture, hand-made files, and bare Example payloads ------------------------------------------

def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def masked(data):
    c = crc32c(data)
    return ((c >> 15 | c << 17) + 0xA282EAD8) & 0xFFFFFFFF


def record(data):
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked(length)) + data + struct.pack("<I", masked(data))


def varint(n):
    n &= (1 << 64) - 1
    b = bytearray()
    while True:
        if n < 0x80:
            b.append(n)
            return bytes(b)
        b.append(n & 0x7F | 0x80)
        n >>= 7


def field(num, payload):  # length-delimited
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def feature_bytes(*values):
    return field(1, b"".join(field(1, v) for v in values))  # Feature.bytes_list


def feature_int64(*values):
    return field(3, field(1, b"".join(varint(v) for v in values)))  # Feature.int64_list, packed


def feature_float(*values):
    return field(2, field(1, b"".join(struct.pack("<f", v) for v in values)))


def example(entries):
    feats = b"".join(field(1, field(1, k) + field(2, v)) for k, v in entries)
    return field(1, feats)


def tfrecord_corpus():
    fixture = os.path.join(ROOT, "tests", "fixtures", "images.tfrecord")
    shutil.copy(fixture, os.path.join(CORPUS, "tfrecord", "images.tfrecord"))
    jpeg = cjpeg([], pnm(8, 8, False, 5))
    ex1 = example([(b"image/encoded", feature_bytes(jpeg)), (b"image/class/label", feature_int64(3))])
    ex2 = example([(b"image/encoded", feature_bytes(b"")), (b"image/format", feature_bytes(b"raw")),
                   (b"image/class/label", feature_int64(-1))])
    ex3 = example([(b"image/encoded", feature_bytes(b"a", b"b")), (b"image/class/label", feature_float(1.5))])
    ex4 = example([(b"other", feature_bytes(b"x")), (b"image/encoded", feature_int64(1, 2))])
    ex_dup = example([(b"image/encoded", feature_bytes(b"first")), (b"image/encoded", feature_bytes(b"second"))])
    out("tfrecord", "one_jpeg.tfrecord", record(ex1))
    out("tfrecord", "mixed.tfrecord", record(ex2) + record(ex3) + record(ex4) + record(ex_dup))
    out("tfrecord", "empty_record.tfrecord", record(b"") + record(example([])))
    out("tfrecord", "not_example.tfrecord", record(b"\xff\xff\xff\xff") + record(b"plain bytes"))
    two = record(ex2) + record(ex1)
    out("tfrecord", "truncated.tfrecord", two[:-7])
    bad = bytearray(record(ex2) + record(ex1))
    bad[len(record(ex2)) + 20] ^= 1
    out("tfrecord", "bad_data_crc.tfrecord", bytes(bad))
    out("tfrecord", "example_payload.bin", ex1)
    out("tfrecord", "example_dup.bin", ex_dup)
    out("tfrecord", "empty", b"")


# ---- npy: the fixtures and hand-made .npy and .npz files --------------------------------------------------------

def npy(descr, shape, data, version=1, fortran=False, pad_to=64):
    shape_text = "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
    d = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape_text)
    head_len = 8 + (2 if version == 1 else 4)
    total = head_len + len(d) + 1
    d = d + " " * ((pad_to - total % pad_to) % pad_to) + "\n"
    lenfmt = "<H" if version == 1 else "<I"
    return b"\x93NUMPY" + bytes([version, 0]) + struct.pack(lenfmt, len(d)) + d.encode("latin-1") + data


def npz(members, zip64=False, compress=False):
    bio = io.BytesIO()
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(bio, "w", method) as z:
        for name, data in members:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = method
            with z.open(info, "w", force_zip64=zip64) as f:
                f.write(data)
    return bio.getvalue()


def npy_corpus():
    for f in sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "*.npy")) +
                    glob.glob(os.path.join(ROOT, "tests", "fixtures", "*.npz"))):
        shutil.copy(f, os.path.join(CORPUS, "npy", os.path.basename(f)))
    u8 = npy("|u1", (2, 3), bytes(range(6)))
    f4 = npy("<f4", (3,), struct.pack("<3f", 1.0, 2.0, 3.0))
    out("npy", "u8_2x3.npy", u8)
    out("npy", "v2_c8.npy", npy("<c8", (1, 1), b"\0" * 8, version=2))
    out("npy", "v3_U3.npy", npy("<U3", (2,), b"\0" * 24, version=3))
    out("npy", "S5_fortran.npy", npy("|S5", (2, 2), b"abcde" * 4, fortran=True))
    out("npy", "empty_dim.npy", npy(">i2", (0, 5), b""))
    out("npy", "python2_long.npy",
        b"\x93NUMPY\x01\x00" + struct.pack("<H", 70) +
        b'{"descr": "<i8", "fortran_order": False, "shape": (1L, 1L), }'.ljust(69) + b"\n" + b"\0" * 8)
    out("npy", "many_dims.npy", npy("|b1", (1,) * 64, b"\x01"))
    out("npy", "short_data.npy", npy("<f8", (4,), b"\0" * 8))
    out("npy", "zip64.npz", npz([("x.npy", f4), ("y.npy", u8)], zip64=True))
    out("npy", "plain_zip.npz", npz([("a.npy", u8), ("dir/b.txt", b"not an array")]))
    out("npy", "deflated.npz", npz([("x.npy", f4)], compress=True))
    out("npy", "empty_member.npz", npz([("e.npy", b"")]))
    out("npy", "empty_archive.npz", npz([]))


def main():
    for t in ("config", "jpeg", "tfrecord", "npy"):
        os.makedirs(os.path.join(CORPUS, t), exist_ok=True)
    config_corpus()
    config_dict()
    jpeg_corpus()
    tfrecord_corpus()
    npy_corpus()


if __name__ == "__main__":
    main()
