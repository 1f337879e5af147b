/* TFRecord framing, as TensorFlow's RecordWriter writes it:
 *
 *   uint64 data_bytes (LE) | uint32 masked CRC32C of those 8 bytes | data | uint32 masked CRC32C of data
 *
 * The reader works on a memory buffer holding a whole file (the read stage reads files into memory); every
 * record's two CRCs are checked.  Each record is usually a serialized tf.train.Example: see tf_example.h
 * (included here, so this one header gives the whole TFRecord format). */
#ifndef PB_TFRECORD_H
#define PB_TFRECORD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"
#include "tf_example.h"

#define PB_TFRECORD_HEADER_BYTES 12 /* length + its crc */
#define PB_TFRECORD_FOOTER_BYTES 4  /* data crc */

/* Reads the record at *offset in `buf` (a whole file of `len` bytes).  Returns 1 with *rec pointing into
 * `buf` (zero-copy) and *offset moved past the record; 0 when *offset == len (a clean end); a negative errno
 * (-EBADMSG) with `err` set to "<file>: offset N: ..." for a truncated header, a bad length crc, a length
 * beyond the file, truncated data or a bad data crc.  N is the offset of the broken record's first byte. */
int pb_tfrecord_next(const uint8_t *buf, size_t len, size_t *offset, const uint8_t **rec, size_t *rec_bytes,
                     const char *file, pb_err *err);

/* Walks (and checks) every record of a whole file in memory: 0 with *nrecords, or the first error. */
int pb_tfrecord_count(const uint8_t *buf, size_t len, size_t *nrecords, const char *file, pb_err *err);

/* For readers that read a file in blocks: checks the 12-byte header at `hdr` and gives the record's data
 * size, so the caller knows the record spans PB_TFRECORD_HEADER_BYTES + *data_bytes + PB_TFRECORD_FOOTER_BYTES.
 * 0, or -EBADMSG when the length's crc does not match. */
int pb_tfrecord_header(const uint8_t *hdr, uint64_t *data_bytes);

/* Bytes one record of `data_bytes` occupies in the file. */
static inline size_t pb_tfrecord_framed_bytes(size_t data_bytes) {
  return PB_TFRECORD_HEADER_BYTES + data_bytes + PB_TFRECORD_FOOTER_BYTES;
}

/* Appends one framed record to `f`: 0 or -errno (a short write without errno gives -EIO). */
int pb_tfrecord_write_record(FILE *f, const void *data, size_t len);

#endif
