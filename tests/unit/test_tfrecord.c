/* CRC32C, TFRecord framing and tf.train.Example: known vectors, hardware vs table, round trips, every
 * single-bit corruption and every truncation of a small file (run under ASan: no out-of-bounds read), and
 * a file written by TensorFlow's own TFRecordWriter (tests/fixtures/images.tfrecord). */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "crc32c.h"
#include "tfrecord.h"
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

static uint64_t fnv1a64(const uint8_t *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

/* Frames `n` records of the given sizes (record i filled with bytes i*7+j) into a memory buffer. */
static uint8_t *framed(const size_t *sizes, int n, size_t *len) {
  char *buf = NULL;
  FILE *f = open_memstream(&buf, len);
  for (int i = 0; i < n; i++) {
    uint8_t *data = malloc(sizes[i] + 1);
    for (size_t j = 0; j < sizes[i]; j++) data[j] = (uint8_t)(i * 7 + j);
    assert_int_equal(pb_tfrecord_write_record(f, data, sizes[i]), 0);
    free(data);
  }
  fclose(f);
  return (uint8_t *)buf;
}

/* ---- CRC32C ------------------------------------------------------------------------------------------- */

static void test_crc32c_known_vectors(void **state) {
  uint8_t zeros[32] = {0}, ones[32], up[32], down[32];
  for (int i = 0; i < 32; i++) ones[i] = 0xff, up[i] = (uint8_t)i, down[i] = (uint8_t)(31 - i);
  assert_int_equal(pb_crc32c(0, "123456789", 9), 0xE3069283u);
  assert_int_equal(pb_crc32c(0, "", 0), 0);
  /* RFC 3720 (iSCSI) B.4 test vectors */
  assert_int_equal(pb_crc32c(0, zeros, 32), 0x8A9136AAu);
  assert_int_equal(pb_crc32c(0, ones, 32), 0x62A8AB43u);
  assert_int_equal(pb_crc32c(0, up, 32), 0x46DD794Eu);
  assert_int_equal(pb_crc32c(0, down, 32), 0x113FDB5Cu);
  assert_int_equal(pb_crc32c_sw(0, "123456789", 9), 0xE3069283u);
  assert_int_equal(pb_crc32c(pb_crc32c(0, "1234", 4), "56789", 5), 0xE3069283u); /* chainable */
}

static void test_crc32c_masked(void **state) {
  uint32_t crc = pb_crc32c(0, "123456789", 9);
  assert_int_equal(pb_crc32c_masked("123456789", 9), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
}

static void test_crc32c_hw_matches_table(void **state) {
  pb_rng r;
  pb_rng_seed(&r, 7);
  uint8_t *buf = malloc(70000);
  for (size_t i = 0; i < 70000; i++) buf[i] = (uint8_t)pb_rng_next(&r);
  for (int trial = 0; trial < 500; trial++) { /* random offsets: every alignment of the 8-byte loop */
    size_t off = pb_rng_next(&r) % 64, len = trial < 100 ? (size_t)trial : pb_rng_next(&r) % 65536;
    uint32_t seed = trial % 2 ? (uint32_t)pb_rng_next(&r) : 0;
    assert_int_equal(pb_crc32c_hw(seed, buf + off, len), pb_crc32c_sw(seed, buf + off, len));
  }
  free(buf);
  print_message("crc32c: SSE4.2 %s\n", pb_crc32c_hw_available() ? "used" : "not available (table only)");
}

/* ---- TFRecord framing ----------------------------------------------------------------------------------- */

static void test_tfrecord_round_trip(void **state) {
  size_t sizes[] = {0, 1, 1000, 13}, len, offset = 0, rec_bytes, n;
  uint8_t *buf = framed(sizes, 4, &len);
  const uint8_t *rec;
  pb_err err = {{0}};
  assert_int_equal(len, 4 * 16 + 1014);
  for (int i = 0; i < 4; i++) {
    size_t at = offset;
    assert_int_equal(pb_tfrecord_next(buf, len, &offset, &rec, &rec_bytes, "f", &err), 1);
    assert_int_equal(rec_bytes, sizes[i]);
    assert_ptr_equal(rec, buf + at + PB_TFRECORD_HEADER_BYTES); /* zero-copy */
    for (size_t j = 0; j < rec_bytes; j++) assert_int_equal(rec[j], (uint8_t)(i * 7 + j));
    assert_int_equal(offset, at + pb_tfrecord_framed_bytes(sizes[i]));
  }
  assert_int_equal(pb_tfrecord_next(buf, len, &offset, &rec, &rec_bytes, "f", &err), 0);
  assert_int_equal(pb_tfrecord_count(buf, len, &n, "f", &err), 0);
  assert_int_equal(n, 4);
  uint64_t data_bytes;
  assert_int_equal(pb_tfrecord_header(buf + 16, &data_bytes), 0);
  assert_int_equal(data_bytes, 1);
  free(buf);
}

static void test_tfrecord_empty_file(void **state) {
  size_t offset = 0, rec_bytes, n = 99;
  const uint8_t *rec;
  pb_err err;
  assert_int_equal(pb_tfrecord_next(NULL, 0, &offset, &rec, &rec_bytes, "f", &err), 0);
  assert_int_equal(pb_tfrecord_count(NULL, 0, &n, "f", &err), 0);
  assert_int_equal(n, 0);
}

/* Reads every record of buf; returns the first error (or 0) with err set, and how many records came. */
static int read_all(const uint8_t *buf, size_t len, size_t *nrecords, pb_err *err) {
  size_t offset = 0, rec_bytes;
  const uint8_t *rec;
  int rc;
  *nrecords = 0;
  while ((rc = pb_tfrecord_next(buf, len, &offset, &rec, &rec_bytes, "x.tfrecord", err)) == 1) (*nrecords)++;
  return rc;
}

static void expect_offset(const pb_err *err, size_t offset, const char *what) {
  char want[64];
  snprintf(want, sizeof want, "x.tfrecord: offset %zu: ", offset);
  if (strncmp(err->msg, want, strlen(want)) != 0 || !strstr(err->msg, what) || !strstr(err->msg, "(expected "))
    fail_msg("got '%s', wanted '%s...%s'", err->msg, want, what);
}

static void test_tfrecord_every_bit_flip_is_caught(void **state) {
  size_t sizes[] = {5, 9}, len, n;
  uint8_t *buf = framed(sizes, 2, &len);
  pb_err err;
  size_t second = pb_tfrecord_framed_bytes(5);
  for (size_t i = 0; i < len; i++) {
    for (int bit = 0; bit < 8; bit++) {
      buf[i] ^= (uint8_t)(1u << bit);
      int rc = read_all(buf, len, &n, &err);
      buf[i] ^= (uint8_t)(1u << bit);
      assert_int_equal(rc, -EBADMSG);
      size_t rec = i < second ? 0 : second, in_rec = i - rec;
      assert_int_equal(n, rec == 0 ? 0 : 1);
      /* a flipped length is caught by the length crc before it is trusted */
      expect_offset(&err, rec, in_rec < PB_TFRECORD_HEADER_BYTES ? "length crc mismatch" : "data crc mismatch");
    }
  }
  free(buf);
}

static void test_tfrecord_every_truncation_is_caught(void **state) {
  size_t sizes[] = {3, 0, 20}, len, n;
  uint8_t *full = framed(sizes, 3, &len);
  size_t starts[] = {0, pb_tfrecord_framed_bytes(3), pb_tfrecord_framed_bytes(3) + pb_tfrecord_framed_bytes(0)};
  pb_err err;
  for (size_t cut = 0; cut < len; cut++) {
    uint8_t *buf = malloc(cut ? cut : 1); /* exactly cut bytes: ASan flags any read past them */
    memcpy(buf, full, cut);
    int rc = read_all(buf, cut, &n, &err);
    int rec = cut >= starts[2] ? 2 : cut >= starts[1] ? 1 : 0;
    if (cut == starts[rec]) { /* ends on a record boundary: a valid, shorter file */
      assert_int_equal(rc, 0);
      assert_int_equal(n, (size_t)rec);
    } else {
      assert_int_equal(rc, -EBADMSG);
      assert_int_equal(n, (size_t)rec);
      expect_offset(&err, starts[rec], cut - starts[rec] < PB_TFRECORD_HEADER_BYTES ? "truncated record header"
                                                                                    : "truncated record");
    }
    free(buf);
  }
  free(full);
}

static void test_tfrecord_length_beyond_file(void **state) {
  uint8_t buf[40] = {0};
  uint64_t huge = 1ULL << 40;
  for (int i = 0; i < 8; i++) buf[i] = (uint8_t)(huge >> (8 * i));
  uint32_t crc = pb_crc32c_masked(buf, 8);
  for (int i = 0; i < 4; i++) buf[8 + i] = (uint8_t)(crc >> (8 * i));
  size_t n;
  pb_err err;
  assert_int_equal(read_all(buf, sizeof buf, &n, &err), -EBADMSG);
  expect_offset(&err, 0, "record length 1099511627776 is beyond the end of the file");
}

static void test_tfrecord_write_error(void **state) {
  FILE *f = fopen("/dev/full", "w");
  if (!f) skip();
  setvbuf(f, NULL, _IONBF, 0); /* unbuffered: the write itself fails, not a later flush */
  assert_int_equal(pb_tfrecord_write_record(f, "abc", 3), -ENOSPC);
  fclose(f);
}

/* ---- tf.train.Example ------------------------------------------------------------------------------------ */

/* Example{features{feature{key:"img" value{bytes_list{value:"abc"}}}}}, encoded by hand from the wire format. */
static const uint8_t hand_built[] = {0x0a, 0x10, 0x0a, 0x0e, 0x0a, 0x03, 'i',  'm',  'g', 0x12,
                                     0x07, 0x0a, 0x05, 0x0a, 0x03, 'a',  'b',  'c'};

static void test_example_hand_built(void **state) {
  const uint8_t *value;
  size_t value_bytes;
  pb_err err;
  assert_int_equal(pb_example_get_bytes(hand_built, sizeof hand_built, "img", &value, &value_bytes, "f", 0, &err), 0);
  assert_int_equal(value_bytes, 3);
  assert_memory_equal(value, "abc", 3);
  assert_int_equal(pb_example_get_bytes(hand_built, sizeof hand_built, "image/encoded", &value, &value_bytes,
                                        "h.tfrecord", 96, &err), -EBADMSG);
  assert_string_equal(err.msg, "h.tfrecord: offset 96: feature 'image/encoded' not in the Example (expected one "
                               "of: 'img')");
}

static void test_example_encoder_round_trip(void **state) {
  uint8_t payload[300], *rec;
  for (int i = 0; i < 300; i++) payload[i] = (uint8_t)(i * 31);
  pb_example_feature features[] = {
    {.name = "image/encoded", .kind = PB_FEATURE_BYTES, .data = payload, .bytes = sizeof payload},
    {.name = "image/class/label", .kind = PB_FEATURE_INT64, .int64 = -123456789012LL},
    {.name = "empty", .kind = PB_FEATURE_BYTES, .data = NULL, .bytes = 0},
  };
  size_t n = pb_example_encode(features, 3, &rec), value_bytes;
  assert_true(n > sizeof payload);
  const uint8_t *value;
  int64_t label;
  pb_err err;
  assert_int_equal(pb_example_get_int64(rec, n, "image/class/label", &label, "f", 0, &err), 0);
  assert_int_equal(label, -123456789012LL);
  assert_int_equal(pb_example_get_bytes(rec, n, "image/encoded", &value, &value_bytes, "f", 0, &err), 0);
  assert_int_equal(value_bytes, sizeof payload);
  assert_memory_equal(value, payload, sizeof payload);
  assert_int_equal(pb_example_get_bytes(rec, n, "empty", &value, &value_bytes, "f", 0, &err), 0);
  assert_non_null(value);
  assert_int_equal(value_bytes, 0);
  free(rec);
  n = pb_example_encode_bytes("x", "hello", 5, &rec);
  assert_int_equal(pb_example_get_bytes(rec, n, "x", &value, &value_bytes, "f", 0, &err), 0);
  assert_memory_equal(value, "hello", 5);
  free(rec);
}

static void test_example_errors(void **state) {
  uint8_t *rec;
  const uint8_t *value;
  size_t value_bytes;
  int64_t i64;
  pb_err err;
  static const uint8_t garbage[] = {0xff, 0xff, 0xff, 0xff};
  assert_int_equal(pb_example_get_bytes(garbage, 4, "x", &value, &value_bytes, "g", 12, &err), -EBADMSG);
  assert_string_equal(err.msg, "g: offset 12: record of 4 bytes is not a tf.train.Example (expected a serialized "
                               "tf.train.Example protobuf)");
  assert_int_equal(pb_example_get_bytes((const uint8_t *)"", 0, "x", &value, &value_bytes, "g", 0, &err), -EBADMSG);
  assert_non_null(strstr(err.msg, "which has no features"));
  size_t n = pb_example_encode(&(pb_example_feature){.name = "label", .kind = PB_FEATURE_INT64, .int64 = 3}, 1, &rec);
  assert_int_equal(pb_example_get_bytes(rec, n, "label", &value, &value_bytes, "g", 0, &err), -EBADMSG);
  assert_string_equal(err.msg, "g: offset 0: feature 'label' is a int64_list (expected a bytes_list)");
  assert_int_equal(pb_example_get_int64(hand_built, sizeof hand_built, "img", &i64, "g", 0, &err), -EBADMSG);
  assert_non_null(strstr(err.msg, "is a bytes_list (expected a int64_list)"));
  free(rec);
}

/* BytesList with two values, and with none: both are "not exactly 1". */
static void test_example_value_count(void **state) {
  static const uint8_t two[] = {0x0a, 0x12, 0x0a, 0x10, 0x0a, 0x01, 'k', 0x12, 0x0b, 0x0a,
                                0x09, 0x0a, 0x03, 'a',  'b',  'c',  0x0a, 0x02, 'd', 'e'};
  static const uint8_t none[] = {0x0a, 0x09, 0x0a, 0x07, 0x0a, 0x01, 'k', 0x12, 0x02, 0x0a, 0x00};
  const uint8_t *value;
  size_t value_bytes;
  pb_err err;
  assert_int_equal(pb_example_get_bytes(two, sizeof two, "k", &value, &value_bytes, "g", 5, &err), -EBADMSG);
  assert_string_equal(err.msg, "g: offset 5: feature 'k' holds 2 values (expected exactly 1)");
  assert_int_equal(pb_example_get_bytes(none, sizeof none, "k", &value, &value_bytes, "g", 5, &err), -EBADMSG);
  assert_string_equal(err.msg, "g: offset 5: feature 'k' holds 0 values (expected exactly 1)");
}

/* A missing-feature error lists what is there, cut short when the list would not fit on one line. */
static void test_example_missing_lists_features(void **state) {
  pb_example_feature f[40];
  char names[40][40];
  for (int i = 0; i < 40; i++) {
    snprintf(names[i], sizeof names[i], "feature/number/%02d/with/a/long/name", i);
    f[i] = (pb_example_feature){.name = names[i], .kind = PB_FEATURE_INT64, .int64 = i};
  }
  uint8_t *rec;
  size_t n = pb_example_encode(f, 40, &rec), value_bytes;
  const uint8_t *value;
  pb_err err;
  assert_int_equal(pb_example_get_bytes(rec, n, "nope", &value, &value_bytes, "g", 0, &err), -EBADMSG);
  assert_non_null(strstr(err.msg, "'feature/number/00/with/a/long/name', 'feature/number/01"));
  assert_non_null(strstr(err.msg, ", ...)"));
  free(rec);
}

/* Growing records: the arena regrows and nothing leaks (LeakSanitizer checks at exit). */
static void test_example_arena_reuse(void **state) {
  pb_err err;
  for (size_t size = 1; size < 200000; size = size * 3 + 1) {
    uint8_t *data = calloc(size, 1), *rec;
    data[size - 1] = 0x5a;
    size_t n = pb_example_encode_bytes("d", data, size, &rec), value_bytes;
    const uint8_t *value;
    for (int rep = 0; rep < 3; rep++) {
      assert_int_equal(pb_example_get_bytes(rec, n, "d", &value, &value_bytes, "f", 0, &err), 0);
      assert_int_equal(value_bytes, size);
      assert_int_equal(value[size - 1], 0x5a);
    }
    free(rec);
    free(data);
  }
}

static void *parse_in_thread(void *arg) {
  const uint8_t *value;
  size_t value_bytes;
  pb_err err;
  intptr_t rc = pb_example_get_bytes(hand_built, sizeof hand_built, "img", &value, &value_bytes, "t", 0, &err);
  return (void *)rc; /* the thread's arena is freed at its exit: LeakSanitizer would report it otherwise */
}

static void test_example_thread_arena_freed(void **state) {
  pthread_t t;
  void *rc;
  assert_int_equal(pthread_create(&t, NULL, parse_in_thread, NULL), 0);
  pthread_join(t, &rc);
  assert_null(rc);
  pb_example_release_arena();
  pb_example_release_arena(); /* twice is harmless */
}

/* ---- a file written by TensorFlow ---------------------------------------------------------------------- */

static void test_tensorflow_written_file(void **state) {
  char path[4096], expected_path[4096];
  fixture_path(path, sizeof path, "images.tfrecord");
  fixture_path(expected_path, sizeof expected_path, "images.tfrecord.expected");
  size_t len, offset = 0, rec_bytes, nrecords;
  uint8_t *buf = read_whole(path, &len);
  FILE *expected = fopen(expected_path, "r");
  assert_non_null(expected);
  const uint8_t *rec, *value;
  pb_err err;
  unsigned long long want_offset, want_hash;
  size_t want_bytes;
  long long want_label;
  for (int i = 0; fscanf(expected, "%llu %zu %llx %lld", &want_offset, &want_bytes, &want_hash, &want_label) == 4;
       i++) {
    size_t at = offset, value_bytes;
    assert_int_equal(at, want_offset);
    assert_int_equal(pb_tfrecord_next(buf, len, &offset, &rec, &rec_bytes, path, &err), 1);
    assert_int_equal(pb_example_get_bytes(rec, rec_bytes, "image/encoded", &value, &value_bytes, path, at, &err), 0);
    assert_int_equal(value_bytes, want_bytes);
    assert_int_equal(fnv1a64(value, value_bytes), want_hash);
    assert_int_equal(value[0], 0xff); /* a JPEG: SOI marker */
    assert_int_equal(value[1], 0xd8);
    int64_t label;
    assert_int_equal(pb_example_get_int64(rec, rec_bytes, "image/class/label", &label, path, at, &err), 0);
    assert_int_equal(label, want_label);
  }
  fclose(expected);
  assert_int_equal(pb_tfrecord_next(buf, len, &offset, &rec, &rec_bytes, path, &err), 0);
  assert_int_equal(pb_tfrecord_count(buf, len, &nrecords, path, &err), 0);
  assert_int_equal(nrecords, 3);
  free(buf);
}

/* pipebench's writer and TensorFlow's frame the same record identically. */
static void test_writer_matches_tensorflow(void **state) {
  char path[4096];
  fixture_path(path, sizeof path, "images.tfrecord");
  size_t len, offset = 0, rec_bytes, ours_bytes;
  uint8_t *buf = read_whole(path, &len);
  const uint8_t *rec;
  pb_err err;
  assert_int_equal(pb_tfrecord_next(buf, len, &offset, &rec, &rec_bytes, path, &err), 1);
  char *ours = NULL;
  FILE *f = open_memstream(&ours, &ours_bytes);
  assert_int_equal(pb_tfrecord_write_record(f, rec, rec_bytes), 0);
  fclose(f);
  assert_int_equal(ours_bytes, offset);
  assert_memory_equal(ours, buf, offset);
  free(ours);
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_crc32c_known_vectors),
    cmocka_unit_test(test_crc32c_masked),
    cmocka_unit_test(test_crc32c_hw_matches_table),
    cmocka_unit_test(test_tfrecord_round_trip),
    cmocka_unit_test(test_tfrecord_empty_file),
    cmocka_unit_test(test_tfrecord_every_bit_flip_is_caught),
    cmocka_unit_test(test_tfrecord_every_truncation_is_caught),
    cmocka_unit_test(test_tfrecord_length_beyond_file),
    cmocka_unit_test(test_tfrecord_write_error),
    cmocka_unit_test(test_example_hand_built),
    cmocka_unit_test(test_example_encoder_round_trip),
    cmocka_unit_test(test_example_errors),
    cmocka_unit_test(test_example_value_count),
    cmocka_unit_test(test_example_missing_lists_features),
    cmocka_unit_test(test_example_arena_reuse),
    cmocka_unit_test(test_example_thread_arena_freed),
    cmocka_unit_test(test_tensorflow_written_file),
    cmocka_unit_test(test_writer_matches_tensorflow),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
