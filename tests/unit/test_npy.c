/* .npy and .npz: files written by numpy itself (tests/fixtures), pipebench's writer against numpy's bytes,
 * round trips over dtypes and shapes, every bad header we can think of, every truncation, and the refusal of
 * np.savez_compressed archives. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "npy.h"
#include "unit_util.h"

/* ---- helpers ------------------------------------------------------------------------------------------ */

static uint8_t *read_whole(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  *len = (size_t)ftell(f);
  rewind(f);
  uint8_t *buf = malloc(*len ? *len : 1);
  assert_int_equal(fread(buf, 1, *len, f), *len);
  fclose(f);
  return buf;
}

static uint8_t *read_fixture(const char *name, size_t *len) {
  char path[4096];
  fixture_path(path, sizeof path, name);
  return read_whole(path, len);
}

static int parse_fixture(const char *name, pb_npy_info *info, uint8_t **buf) {
  size_t len;
  pb_err err;
  *buf = read_fixture(name, &len);
  int rc = pb_npy_parse(*buf, len, info, name, &err);
  if (rc != 0) print_error("%s\n", err.msg);
  return rc;
}

/* A .npy with a hand-written header dict (padded like numpy's) and `data_bytes` zero bytes of data. */
static uint8_t *npy_with_header(int major, const char *dict, size_t data_bytes, size_t *len) {
  size_t prefix = major == 1 ? 10 : 12, text = strlen(dict) + 1, pad = 64 - (prefix + text) % 64;
  size_t hlen = text + pad;
  *len = prefix + hlen + data_bytes;
  uint8_t *buf = calloc(1, *len);
  memcpy(buf, "\x93NUMPY", 6);
  buf[6] = (uint8_t)major;
  for (size_t i = 0; i < prefix - 8; i++) buf[8 + i] = (uint8_t)(hlen >> (8 * i));
  memcpy(buf + prefix, dict, text - 1);
  memset(buf + prefix + text - 1, ' ', pad);
  buf[prefix + hlen - 1] = '\n';
  return buf;
}

/* ---- numpy-written .npy files ------------------------------------------------------------------------- */

static void test_numpy_f32(void **state) {
  pb_npy_info info;
  uint8_t *buf;
  assert_int_equal(parse_fixture("f32_2x3x4.npy", &info, &buf), 0);
  assert_int_equal(info.version_major, 1);
  assert_string_equal(info.descr, "<f4");
  assert_int_equal(info.dtype, PB_NPY_FLOAT32);
  assert_int_equal(info.kind, 'f');
  assert_int_equal(info.byteorder, '<');
  assert_int_equal(info.itemsize_bytes, 4);
  assert_false(info.fortran_order);
  assert_int_equal(info.ndims, 3);
  assert_int_equal(info.shape[0], 2);
  assert_int_equal(info.shape[1], 3);
  assert_int_equal(info.shape[2], 4);
  assert_int_equal(info.count, 24);
  assert_int_equal(info.data_offset_bytes, 128);
  assert_int_equal(info.data_bytes, 96);
  for (int i = 0; i < 24; i++) {
    float v;
    memcpy(&v, buf + info.data_offset_bytes + 4 * i, 4);
    assert_true(v == 0.5f * (float)i);
  }
  free(buf);
}

static void test_numpy_u8_fortran(void **state) {
  pb_npy_info info;
  uint8_t *buf;
  static const uint8_t column_major[12] = {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11};
  assert_int_equal(parse_fixture("u8_fortran_3x4.npy", &info, &buf), 0);
  assert_true(info.fortran_order);
  assert_string_equal(info.descr, "|u1");
  assert_int_equal(info.dtype, PB_NPY_UINT8);
  assert_int_equal(info.byteorder, '|');
  assert_int_equal(info.ndims, 2);
  assert_int_equal(info.shape[0], 3);
  assert_int_equal(info.shape[1], 4);
  assert_memory_equal(buf + info.data_offset_bytes, column_major, 12);
  free(buf);
}

static void test_numpy_big_endian_v2(void **state) {
  pb_npy_info info;
  uint8_t *buf;
  assert_int_equal(parse_fixture("i8_be_v2.npy", &info, &buf), 0);
  assert_int_equal(info.version_major, 2);
  assert_string_equal(info.descr, ">i8");
  assert_int_equal(info.dtype, PB_NPY_INT64);
  assert_int_equal(info.byteorder, '>');
  assert_int_equal(info.ndims, 1);
  assert_int_equal(info.shape[0], 5);
  for (int i = 0; i < 5; i++) {
    uint64_t v = 0;
    for (int b = 0; b < 8; b++) v = (v << 8) | buf[info.data_offset_bytes + 8 * (size_t)i + (size_t)b];
    assert_int_equal((int64_t)v, i - 2);
  }
  free(buf);
}

static void test_numpy_scalar_v3(void **state) {
  pb_npy_info info;
  uint8_t *buf;
  assert_int_equal(parse_fixture("f8_scalar_v3.npy", &info, &buf), 0);
  assert_int_equal(info.version_major, 3);
  assert_int_equal(info.dtype, PB_NPY_FLOAT64);
  assert_int_equal(info.ndims, 0);
  assert_int_equal(info.count, 1);
  double v;
  memcpy(&v, buf + info.data_offset_bytes, 8);
  assert_true(v == 2.5);
  free(buf);
}

/* A numpy file cut at every byte: always an error (never a crash or an over-read: ASan), with the offset. */
static void test_every_truncation(void **state) {
  size_t len;
  uint8_t *full = read_fixture("f32_2x3x4.npy", &len);
  pb_npy_info info;
  pb_err err;
  for (size_t cut = 0; cut < len; cut++) {
    uint8_t *buf = malloc(cut ? cut : 1);
    memcpy(buf, full, cut);
    assert_int_equal(pb_npy_parse(buf, cut, &info, "t.npy", &err), -EBADMSG);
    assert_memory_equal(err.msg, "t.npy: offset ", 14);
    assert_non_null(strstr(err.msg, "(expected "));
    free(buf);
  }
  assert_int_equal(pb_npy_parse_header(full, 128, &info, "t.npy", &err), 0); /* header alone is enough */
  free(full);
}

/* ---- writer ------------------------------------------------------------------------------------------- */

static void test_writer_matches_numpy(void **state) {
  size_t len, ours_bytes;
  uint8_t *theirs = read_fixture("f32_2x3x4.npy", &len);
  float data[24];
  for (int i = 0; i < 24; i++) data[i] = 0.5f * (float)i;
  char *ours = NULL;
  FILE *f = open_memstream(&ours, &ours_bytes);
  assert_int_equal(pb_npy_write(f, "<f4", (int64_t[]){2, 3, 4}, 3, data, sizeof data), 0);
  fclose(f);
  assert_int_equal(ours_bytes, len);
  assert_memory_equal(ours, theirs, len); /* byte-identical to np.save */
  free(ours);
  free(theirs);
}

typedef struct write_case {
  const char *descr, *want_descr;
  int ndims;
  int64_t shape[4];
  pb_npy_dtype dtype;
} write_case;

static void test_writer_round_trip(void **state) {
  static const write_case cases[] = {
    {"<f4", "<f4", 1, {7}, PB_NPY_FLOAT32},          {"|u1", "|u1", 3, {2, 2, 3}, PB_NPY_UINT8},
    {">f8", ">f8", 2, {3, 1}, PB_NPY_FLOAT64},       {"<i8", "<i8", 0, {0}, PB_NPY_INT64},
    {"<i2", "<i2", 2, {0, 5}, PB_NPY_INT16},         {"<u4", "<u4", 4, {1, 2, 3, 4}, PB_NPY_UINT32},
    {"|b1", "|b1", 1, {3}, PB_NPY_BOOL},             {"<f2", "<f2", 1, {5}, PB_NPY_FLOAT16},
    {"<c8", "<c8", 1, {2}, PB_NPY_COMPLEX64},        {"|S5", "|S5", 1, {2}, PB_NPY_OTHER},
    {"<U3", "<U3", 1, {2}, PB_NPY_OTHER},            {"f4", "<f4", 1, {2}, PB_NPY_FLOAT32},
    {"<u1", "|u1", 1, {2}, PB_NPY_UINT8},            {"=i4", "<i4", 1, {2}, PB_NPY_INT32},
  };
  for (size_t c = 0; c < PB_ARRAY_LEN(cases); c++) {
    const write_case *w = &cases[c];
    pb_npy_info want, got;
    assert_int_equal(pb_npy_parse_descr(w->descr, &want), 0);
    size_t bytes = want.itemsize_bytes;
    for (int d = 0; d < w->ndims; d++) bytes *= (size_t)w->shape[d];
    uint8_t *data = malloc(bytes + 1);
    for (size_t i = 0; i < bytes; i++) data[i] = (uint8_t)(i * 13 + c);
    char *file = NULL;
    size_t file_bytes;
    pb_err err;
    FILE *f = open_memstream(&file, &file_bytes);
    assert_int_equal(pb_npy_write(f, w->descr, w->shape, w->ndims, data, bytes), 0);
    fclose(f);
    assert_int_equal(pb_npy_parse((uint8_t *)file, file_bytes, &got, "w.npy", &err), 0);
    assert_string_equal(got.descr, w->want_descr);
    assert_int_equal(got.dtype, w->dtype);
    assert_int_equal(got.ndims, w->ndims);
    for (int d = 0; d < w->ndims; d++) assert_int_equal(got.shape[d], w->shape[d]);
    assert_int_equal(got.data_offset_bytes % 64, 0);
    assert_int_equal(got.data_bytes, bytes);
    assert_memory_equal(file + got.data_offset_bytes, data, bytes);
    free(file);
    free(data);
  }
}

static void test_writer_rejects_bad_arguments(void **state) {
  FILE *f = fopen("/dev/null", "w");
  float data[6] = {0};
  assert_int_equal(pb_npy_write(f, "<f4", (int64_t[]){2, 3}, 2, data, 20), -EINVAL); /* 24 bytes needed */
  assert_int_equal(pb_npy_write(f, "<O8", (int64_t[]){2, 3}, 2, data, 24), -EINVAL);
  assert_int_equal(pb_npy_write(f, "<f4", (int64_t[]){-2, 3}, 2, data, 24), -EINVAL);
  assert_int_equal(pb_npy_write(f, "<f4", (int64_t[]){6}, -1, data, 24), -EINVAL);
  fclose(f);
}

/* ---- bad headers ------------------------------------------------------------------------------------------ */

typedef struct bad_case {
  const char *dict;
  const char *want; /* a piece of the error message */
} bad_case;

static void test_bad_headers(void **state) {
  static const bad_case cases[] = {
    {"{'descr': '<f4', 'fortran_order': False, }", "expected the keys 'descr', 'fortran_order' and 'shape'"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1, }", "expected only the keys"},
    {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", "expected each key once"},
    {"{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", "expected a plain numeric or bytes dtype"},
    {"{'descr': '<f3', 'fortran_order': False, 'shape': (2,), }", "expected a plain numeric or bytes dtype"},
    {"{'descr': '<M8[ns]', 'fortran_order': False, 'shape': (2,), }", "expected a plain numeric or bytes dtype"},
    {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", "structured dtypes are not supported"},
    {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }", "expected True or False"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", "expected a non-negative integer dimension"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2 3), }", "expected ',' or ')' in the shape tuple"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': [2], }", "expected a shape tuple"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", "below 2^63"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4), }", "more bytes than"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } x", "expected only space padding"},
    {"{'descr': '<f4' 'fortran_order': False, 'shape': (2,), }", "expected ',' or '}'"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), ", "expected a quoted key"},
    {"['descr', '<f4']", "expected '{' opening the header dict"},
    {"{'descr': '<f\\x34', 'fortran_order': False, 'shape': (2,), }", "expected a dtype string"},
  };
  for (size_t c = 0; c < PB_ARRAY_LEN(cases); c++) {
    size_t len;
    uint8_t *buf = npy_with_header(1, cases[c].dict, 8, &len);
    pb_npy_info info;
    pb_err err = {{0}};
    int rc = pb_npy_parse(buf, len, &info, "bad.npy", &err);
    if (rc != -EBADMSG || !strstr(err.msg, cases[c].want) || strncmp(err.msg, "bad.npy: offset ", 16) != 0)
      fail_msg("case %zu: rc %d, '%s' (wanted '%s')", c, rc, err.msg, cases[c].want);
    free(buf);
  }
}

static void test_bad_prefix_and_sizes(void **state) {
  size_t len;
  pb_npy_info info;
  pb_err err;
  uint8_t *buf = npy_with_header(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8, &len);
  assert_int_equal(pb_npy_parse(buf, len, &info, "a.npy", &err), 0);
  assert_int_equal(pb_npy_parse(buf, len - 1, &info, "a.npy", &err), -EBADMSG);
  assert_string_equal(err.msg, "a.npy: offset 128: .npy data is 7 bytes (expected 8: 2 items of 4 bytes for the "
                               "header's shape)");
  buf[7] = 1; /* version 1.1 */
  assert_int_equal(pb_npy_parse(buf, len, &info, "a.npy", &err), -EBADMSG);
  assert_string_equal(err.msg, "a.npy: offset 6: unsupported .npy version 1.1 (expected 1.0, 2.0 or 3.0)");
  buf[7] = 0;
  buf[6] = 4;
  assert_int_equal(pb_npy_parse(buf, len, &info, "a.npy", &err), -EBADMSG);
  buf[6] = 1;
  buf[0] = 'N';
  assert_int_equal(pb_npy_parse(buf, len, &info, "a.npy", &err), -EBADMSG);
  assert_string_equal(err.msg, "a.npy: offset 0: not a .npy file (expected the magic bytes \\x93NUMPY)");
  buf[0] = 0x93;
  buf[8] = 0xff; /* header length beyond the file */
  buf[9] = 0xff;
  assert_int_equal(pb_npy_parse(buf, len, &info, "a.npy", &err), -EBADMSG);
  assert_string_equal(err.msg, "a.npy: offset 10: truncated .npy header: 126 bytes left (expected 65535)");
  free(buf);
  /* and more data than the shape says is an error too: the shape would be wrong */
  buf = npy_with_header(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 9, &len);
  assert_int_equal(pb_npy_parse(buf, len, &info, "a.npy", &err), -EBADMSG);
  free(buf);
}

/* What older numpys (Python 2) and other writers produce: "L" longs, double quotes, version 2 prefix. */
static void test_lenient_forms(void **state) {
  size_t len;
  pb_npy_info info;
  pb_err err;
  uint8_t *buf = npy_with_header(2, "{\"descr\": \"<i4\", \"fortran_order\": True, \"shape\": (3L, 2L)}", 24, &len);
  assert_int_equal(pb_npy_parse(buf, len, &info, "old.npy", &err), 0);
  assert_true(info.fortran_order);
  assert_int_equal(info.shape[0], 3);
  assert_int_equal(info.shape[1], 2);
  assert_int_equal(info.data_offset_bytes, 128);
  free(buf);
  buf = npy_with_header(1, "{'descr':'<i4','fortran_order':False,'shape':(0,)}", 0, &len);
  assert_int_equal(pb_npy_parse(buf, len, &info, "empty.npy", &err), 0);
  assert_int_equal(info.count, 0);
  free(buf);
}

/* ---- .npz ------------------------------------------------------------------------------------------------ */

/* Every member read through libzip equals the same bytes pread at its offset (the zero-copy path). */
static void check_offsets(const char *path, pb_npz *z) {
  size_t file_bytes;
  uint8_t *file = read_whole(path, &file_bytes);
  int n;
  const pb_npz_member *m = pb_npz_list(z, &n);
  pb_err err;
  for (int i = 0; i < n; i++) {
    uint8_t *buf = malloc(m[i].bytes);
    assert_int_equal(pb_npz_read_member(z, i, buf, m[i].bytes, &err), 0);
    assert_int_not_equal(m[i].offset_bytes, PB_NPZ_NO_OFFSET);
    assert_true(m[i].offset_bytes + m[i].bytes <= file_bytes);
    assert_memory_equal(file + m[i].offset_bytes, buf, m[i].bytes);
    free(buf);
  }
  free(file);
}

static void check_member(pb_npz *z, const char *name, const char *descr, int ndims, const int64_t *shape,
                         const void *data, size_t bytes) {
  int i = pb_npz_find(z, name), n;
  assert_true(i >= 0);
  const pb_npz_member *m = &pb_npz_list(z, &n)[i];
  uint8_t *buf = malloc(m->bytes);
  pb_err err;
  pb_npy_info info;
  assert_int_equal(pb_npz_read_member(z, i, buf, m->bytes, &err), 0);
  assert_int_equal(pb_npy_parse(buf, m->bytes, &info, m->name, &err), 0);
  assert_string_equal(info.descr, descr);
  assert_int_equal(info.ndims, ndims);
  for (int d = 0; d < ndims; d++) assert_int_equal(info.shape[d], shape[d]);
  assert_int_equal(info.data_bytes, bytes);
  assert_memory_equal(buf + info.data_offset_bytes, data, bytes);
  free(buf);
}

static void test_numpy_npz(void **state) {
  char path[4096];
  fixture_path(path, sizeof path, "two.npz");
  pb_npz *z;
  pb_err err;
  assert_int_equal(pb_npz_open(path, &z, &err), 0);
  int n;
  const pb_npz_member *m = pb_npz_list(z, &n);
  assert_int_equal(n, 2);
  assert_string_equal(m[0].name, "x.npy");
  assert_string_equal(m[1].name, "y.npy");
  assert_int_equal(pb_npz_find(z, "x"), 0);
  assert_int_equal(pb_npz_find(z, "y.npy"), 1);
  assert_int_equal(pb_npz_find(z, "z"), -1);
  float x[6] = {0, 1, 2, 3, 4, 5};
  uint8_t y[4] = {0, 1, 2, 3};
  check_member(z, "x", "<f4", 2, (int64_t[]){2, 3}, x, sizeof x);
  check_member(z, "y", "|u1", 1, (int64_t[]){4}, y, sizeof y);
  check_offsets(path, z);
  uint8_t small[8];
  assert_int_equal(pb_npz_read_member(z, 0, small, sizeof small, &err), -EINVAL);
  assert_int_equal(pb_npz_read_member(z, 2, small, sizeof small, &err), -EINVAL);
  pb_npz_close(z);
}

static void test_compressed_npz_refused(void **state) {
  char path[4096];
  fixture_path(path, sizeof path, "two_compressed.npz");
  pb_npz *z = (pb_npz *)1;
  pb_err err;
  assert_int_equal(pb_npz_open(path, &z, &err), -EBADMSG);
  assert_null(z);
  assert_non_null(strstr(err.msg, "member 'x.npy' is compressed"));
  assert_non_null(strstr(err.msg, "(expected stored members: write it with np.savez, not np.savez_compressed)"));
}

static void test_npz_open_errors(void **state) {
  pb_npz *z;
  pb_err err;
  char path[4096];
  assert_int_equal(pb_npz_open("/nonexistent/x.npz", &z, &err), -ENOENT);
  assert_non_null(strstr(err.msg, "/nonexistent/x.npz: cannot open as a zip archive"));
  fixture_path(path, sizeof path, "f32_2x3x4.npy"); /* not a zip */
  assert_int_equal(pb_npz_open(path, &z, &err), -EBADMSG);
  assert_non_null(strstr(err.msg, "Not a zip archive"));
}

static char *temp_path(const char *suffix) {
  char dir[] = "/tmp/pb_npz_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char *path = malloc(strlen(dir) + strlen(suffix) + 2);
  sprintf(path, "%s/%s", dir, suffix);
  return path;
}

static void remove_temp(char *path) {
  unlink(path);
  *strrchr(path, '/') = '\0';
  rmdir(path);
  free(path);
}

static void test_npz_write_round_trip(void **state) {
  char *path = temp_path("w.npz");
  float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {-1, -2, -3};
  const char *names[] = {"a", "b"};
  const void *datas[] = {a, b};
  size_t bytes[] = {sizeof a, sizeof b};
  const int64_t sa[] = {3, 2}, sb[] = {3};
  const int64_t *shapes[] = {sa, sb};
  int ndims[] = {2, 1};
  pb_err err;
  assert_int_equal(pb_npz_write(path, names, datas, bytes, shapes, ndims, 2, "<f4", &err), 0);
  pb_npz *z;
  assert_int_equal(pb_npz_open(path, &z, &err), 0);
  check_member(z, "a", "<f4", 2, sa, a, sizeof a);
  check_member(z, "b", "<f4", 1, sb, b, sizeof b);
  check_offsets(path, z);
  pb_npz_close(z);
  bytes[1] = 8; /* does not match the shape */
  assert_int_equal(pb_npz_write(path, names, datas, bytes, shapes, ndims, 2, "<f4", &err), -EINVAL);
  assert_non_null(strstr(err.msg, "member 'b.npy': 8 bytes do not make a '<f4' array"));
  assert_int_equal(pb_npz_write(path, names, datas, bytes, shapes, ndims, 0, "<f4", &err), -EINVAL);
  remove_temp(path);
}

/* A stored member whose bytes were damaged on disk: libzip's CRC check turns it into an error. */
static void test_npz_corrupt_member(void **state) {
  char src[4096];
  fixture_path(src, sizeof src, "two.npz");
  size_t len;
  uint8_t *file = read_whole(src, &len);
  pb_npz *z;
  pb_err err;
  assert_int_equal(pb_npz_open(src, &z, &err), 0);
  int n;
  uint64_t at = pb_npz_list(z, &n)[1].offset_bytes + 130; /* inside y's data */
  pb_npz_close(z);
  file[at] ^= 0x40;
  char *path = temp_path("c.npz");
  FILE *f = fopen(path, "wb");
  fwrite(file, 1, len, f);
  fclose(f);
  assert_int_equal(pb_npz_open(path, &z, &err), 0);
  uint8_t buf[256];
  assert_int_equal(pb_npz_read_member(z, 1, buf, sizeof buf, &err), -EBADMSG);
  assert_non_null(strstr(err.msg, "member 'y.npy': CRC error"));
  pb_npz_close(z);
  remove_temp(path);
  free(file);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_numpy_f32),
    cmocka_unit_test(test_numpy_u8_fortran),
    cmocka_unit_test(test_numpy_big_endian_v2),
    cmocka_unit_test(test_numpy_scalar_v3),
    cmocka_unit_test(test_every_truncation),
    cmocka_unit_test(test_writer_matches_numpy),
    cmocka_unit_test(test_writer_round_trip),
    cmocka_unit_test(test_writer_rejects_bad_arguments),
    cmocka_unit_test(test_bad_headers),
    cmocka_unit_test(test_bad_prefix_and_sizes),
    cmocka_unit_test(test_lenient_forms),
    cmocka_unit_test(test_numpy_npz),
    cmocka_unit_test(test_compressed_npz_refused),
    cmocka_unit_test(test_npz_open_errors),
    cmocka_unit_test(test_npz_write_round_trip),
    cmocka_unit_test(test_npz_corrupt_member),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
