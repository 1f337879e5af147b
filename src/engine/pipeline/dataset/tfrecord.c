#include "tfrecord.h"

#include <errno.h>
#include <inttypes.h>

#include "crc32c.h"
#include "dataset_err.h"

/* The format is little-endian whatever the host: assemble values byte by byte. */
static uint64_t load_le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

static uint32_t load_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void store_le64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void store_le32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

int pb_tfrecord_header(const uint8_t *hdr, uint64_t *data_bytes) {
  if (load_le32(hdr + 8) != pb_crc32c_masked(hdr, 8)) return -EBADMSG;
  *data_bytes = load_le64(hdr);
  return 0;
}

/* The header of the record at `at`: its data size, or an error naming what is wrong with it. */
static int read_header(const uint8_t *buf, size_t len, size_t at, uint64_t *data_bytes, const char *file,
                       pb_err *err) {
  const char *name = pb_ds_name(file);
  size_t left = len - at;
  if (left < PB_TFRECORD_HEADER_BYTES)
    return PB_BAD_DATA(err, "%s: offset %zu: truncated record header: %zu bytes left (expected %d: an 8-byte "
                       "length and its 4-byte crc)", name, at, left, PB_TFRECORD_HEADER_BYTES);
  if (pb_tfrecord_header(buf + at, data_bytes) != 0)
    return PB_BAD_DATA(err, "%s: offset %zu: record length crc mismatch: stored 0x%08" PRIx32 ", computed 0x%08"
                       PRIx32 " (expected a TFRecord file: masked CRC32C of the 8-byte length)", name, at,
                       load_le32(buf + at + 8), pb_crc32c_masked(buf + at, 8));
  if (*data_bytes > len)
    return PB_BAD_DATA(err, "%s: offset %zu: record length %" PRIu64 " is beyond the end of the file "
                       "(expected at most the file's %zu bytes)", name, at, *data_bytes, len);
  return 0;
}

/* Checks that the record's data and footer are all in the buffer and that the data crc matches. */
static int check_data(const uint8_t *buf, size_t len, size_t at, uint64_t data_bytes, const char *file,
                      pb_err *err) {
  const char *name = pb_ds_name(file);
  size_t left = len - at - PB_TFRECORD_HEADER_BYTES;
  if (data_bytes > left || left - data_bytes < PB_TFRECORD_FOOTER_BYTES)
    return PB_BAD_DATA(err, "%s: offset %zu: truncated record: %zu bytes left after the header (expected %"
                       PRIu64 " data bytes and a 4-byte crc)", name, at, left, data_bytes);
  const uint8_t *data = buf + at + PB_TFRECORD_HEADER_BYTES;
  uint32_t stored = load_le32(data + data_bytes), computed = pb_crc32c_masked(data, data_bytes);
  if (stored != computed)
    return PB_BAD_DATA(err, "%s: offset %zu: record data crc mismatch over %" PRIu64 " bytes: stored 0x%08"
                       PRIx32 ", computed 0x%08" PRIx32 " (expected masked CRC32C of the data)", name, at,
                       data_bytes, stored, computed);
  return 0;
}

int pb_tfrecord_next(const uint8_t *buf, size_t len, size_t *offset, const uint8_t **rec, size_t *rec_bytes,
                     const char *file, pb_err *err) {
  size_t at = *offset;
  if (at >= len) return 0;
  uint64_t data_bytes;
  int rc = read_header(buf, len, at, &data_bytes, file, err);
  if (rc == 0) rc = check_data(buf, len, at, data_bytes, file, err);
  if (rc < 0) return rc;
  *rec = buf + at + PB_TFRECORD_HEADER_BYTES;
  *rec_bytes = (size_t)data_bytes;
  *offset = at + pb_tfrecord_framed_bytes((size_t)data_bytes);
  return 1;
}

int pb_tfrecord_count(const uint8_t *buf, size_t len, size_t *nrecords, const char *file, pb_err *err) {
  size_t offset = 0, n = 0, rec_bytes;
  const uint8_t *rec;
  int rc;
  while ((rc = pb_tfrecord_next(buf, len, &offset, &rec, &rec_bytes, file, err)) == 1) n++;
  if (rc == 0) *nrecords = n;
  return rc;
}

int pb_tfrecord_write_record(FILE *f, const void *data, size_t len) {
  uint8_t header[PB_TFRECORD_HEADER_BYTES], footer[PB_TFRECORD_FOOTER_BYTES];
  store_le64(header, (uint64_t)len);
  store_le32(header + 8, pb_crc32c_masked(header, 8));
  store_le32(footer, pb_crc32c_masked(data, len));
  errno = 0;
  if (fwrite(header, sizeof header, 1, f) != 1 || (len > 0 && fwrite(data, len, 1, f) != 1) ||
      fwrite(footer, sizeof footer, 1, f) != 1)
    return errno ? -errno : -EIO;
  return 0;
}
