/* libFuzzer target: TFRecord framing (src/engine/pipeline/dataset/tfrecord.c, crc32c.c) and the tf.train.Example
 * parser (tf_example.c over protobuf-c), the way the read stage (src/engine/pipeline/stage_read.c) reads a TFRecord
 * file: the whole file in memory, pb_tfrecord_next record by record, each record's feature taken with
 * pb_example_get_bytes (and the label with pb_example_get_int64, as a labelled dataset would).
 *
 * Input: a TFRecord file.  It is read twice: as it is (so corrupt framing and bad CRCs are exercised), and
 * as a copy whose CRCs are recomputed wherever a record's length fits, so that mutated record contents get
 * past the CRC checks and reach the Example parser.  The whole input is also parsed as one Example.
 *
 * Checked besides ASan/UBSan/leaks: pb_tfrecord_count agrees with walking pb_tfrecord_next; records lie
 * inside the buffer and follow each other; errors are -EBADMSG (or -ENOMEM) with a one-line message; the hardware
 * and table CRC32C agree. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "tfrecord.h"

static void fail(const char *what, const char *detail) {
  fprintf(stderr, "fuzz_tfrecord: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  abort();
}

static void check_error(int rc, const pb_err *err) {
  if (rc != -EBADMSG && rc != -ENOMEM) fail("unexpected error code", err->msg);
  if (!err->msg[0]) fail("error without a message", NULL);
  if (strchr(err->msg, '\n')) fail("error message of more than one line", err->msg);
}

static unsigned touch(const uint8_t *p, size_t n) {
  unsigned sum = 0;
  for (size_t i = 0; i < n; i++) sum += p[i];
  return sum;
}

/* What the read stage does with one record: its payload feature, then (as a labelled reader would) the
 * label.  A value stays valid only until the thread's next pb_example_get_* call: use it before that. */
static void parse_example(const uint8_t *rec, size_t rec_bytes, uint64_t at) {
  static const char *const bytes_features[] = {"image/encoded", "image/format", ""};
  pb_err err = {{0}};
  for (size_t i = 0; i < sizeof bytes_features / sizeof *bytes_features; i++) {
    const uint8_t *val = NULL;
    size_t val_bytes = 0;
    int rc = pb_example_get_bytes(rec, rec_bytes, bytes_features[i], &val, &val_bytes, "fuzz.tfrecord", at, &err);
    if (rc == 0) {
      if (!val) fail("pb_example_get_bytes gave a NULL value", NULL);
      if (touch(val, val_bytes) == 0xFFFFFFFFu) fputc('.', stderr);
    } else {
      check_error(rc, &err);
    }
  }
  int64_t label;
  int rc = pb_example_get_int64(rec, rec_bytes, "image/class/label", &label, "fuzz.tfrecord", at, &err);
  if (rc) check_error(rc, &err);
}

/* Walks the file as the read stage does and checks it against pb_tfrecord_count. */
static void walk(const uint8_t *buf, size_t len) {
  pb_err count_err = {{0}}, err = {{0}};
  size_t nrecords = 0;
  int count_rc = pb_tfrecord_count(buf, len, &nrecords, "fuzz.tfrecord", &count_err);
  if (count_rc) check_error(count_rc, &count_err);

  size_t offset = 0, n = 0;
  int rc;
  for (;;) {
    const uint8_t *rec = NULL;
    size_t rec_bytes = 0, at = offset;
    rc = pb_tfrecord_next(buf, len, &offset, &rec, &rec_bytes, "fuzz.tfrecord", &err);
    if (rc != 1) break;
    if (rec != buf + at + PB_TFRECORD_HEADER_BYTES || offset != at + pb_tfrecord_framed_bytes(rec_bytes) ||
        offset > len)
      fail("record outside the buffer or not where its header says", NULL);
    parse_example(rec, rec_bytes, at);
    n++;
  }
  if (rc < 0) check_error(rc, &err);
  if (rc != count_rc || (rc == 0 && n != nrecords) || (rc < 0 && strcmp(err.msg, count_err.msg) != 0))
    fail("pb_tfrecord_count and pb_tfrecord_next disagree", NULL);
}

static void store_le32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Recomputes both CRCs of every record whose length fits in the buffer, up to the first one that does not. */
static void fix_crcs(uint8_t *buf, size_t len) {
  size_t at = 0;
  while (len - at >= PB_TFRECORD_HEADER_BYTES) {
    uint64_t data_bytes = 0;
    for (int i = 7; i >= 0; i--) data_bytes = data_bytes << 8 | buf[at + i];
    store_le32(buf + at + 8, pb_crc32c_masked(buf + at, 8));
    size_t left = len - at - PB_TFRECORD_HEADER_BYTES;
    if (data_bytes > left || left - data_bytes < PB_TFRECORD_FOOTER_BYTES) return;
    uint8_t *data = buf + at + PB_TFRECORD_HEADER_BYTES;
    store_le32(data + data_bytes, pb_crc32c_masked(data, (size_t)data_bytes));
    at += pb_tfrecord_framed_bytes((size_t)data_bytes);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (pb_crc32c_sw(0, data, size) != pb_crc32c_hw(0, data, size)) fail("table and SSE4.2 CRC32C differ", NULL);
  walk(data, size);

  uint8_t *copy = malloc(size ? size : 1);
  if (!copy) return 0;
  memcpy(copy, data, size);
  fix_crcs(copy, size);
  walk(copy, size);
  free(copy);

  parse_example(data, size, 0);
  return 0;
}
