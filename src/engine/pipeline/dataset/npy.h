/* NumPy's .npy files (format versions 1.0, 2.0 and 3.0) and .npz archives of them (np.savez: a zip of
 * stored, i.e. uncompressed, NAME.npy members, read with libzip).
 *
 * .npy layout: "\x93NUMPY", major, minor, header length (uint16 LE for 1.0, uint32 LE for 2.0/3.0), then a
 * Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with spaces and a
 * newline, then the raw array data. */
#ifndef PB_NPY_H
#define PB_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"

#define PB_NPY_MAX_DIMS 64 /* numpy 2's limit (numpy 1 allowed 32) */

/* The element types pipebench handles as numbers; anything else numpy can store as plain bytes ('S', 'V',
 * 'U', float128, complex256) parses as PB_NPY_OTHER and is moved as opaque items of itemsize bytes. */
typedef enum pb_npy_dtype {
  PB_NPY_OTHER,
  PB_NPY_BOOL,
  PB_NPY_INT8, PB_NPY_INT16, PB_NPY_INT32, PB_NPY_INT64,
  PB_NPY_UINT8, PB_NPY_UINT16, PB_NPY_UINT32, PB_NPY_UINT64,
  PB_NPY_FLOAT16, PB_NPY_FLOAT32, PB_NPY_FLOAT64,
  PB_NPY_COMPLEX64, PB_NPY_COMPLEX128,
} pb_npy_dtype;

typedef struct pb_npy_info {
  int version_major, version_minor;
  char descr[24];        /* canonical: byte order, kind, size as numpy writes it, e.g. "<f4", "|u1", ">i8" */
  pb_npy_dtype dtype;
  char kind;             /* numpy's kind letter: b i u f c S U V */
  char byteorder;        /* '<' little, '>' big, '|' not applicable (1-byte items, bytes); '=' resolved */
  size_t itemsize_bytes;
  bool fortran_order;    /* data laid out column-major */
  int ndims;             /* 0 for a scalar */
  int64_t shape[PB_NPY_MAX_DIMS];
  uint64_t count;        /* elements: the product of shape (1 for a scalar) */
  size_t data_offset_bytes; /* where the array data starts in the file */
  size_t data_bytes;     /* count * itemsize_bytes */
} pb_npy_info;

/* Parses a whole .npy file held in `buf` and checks that it holds exactly data_bytes after the header.
 * 0, or -EBADMSG with err = "<file>: offset N: <what is wrong> (expected <what>)". */
int pb_npy_parse(const uint8_t *buf, size_t len, pb_npy_info *info, const char *file, pb_err *err);

/* The same from the first bytes of a file only (data_offset_bytes of them suffice; 128 usually do): for
 * readers that read the header before the data.  Does not check the data size. */
int pb_npy_parse_header(const uint8_t *buf, size_t len, pb_npy_info *info, const char *file, pb_err *err);

/* Parses a dtype string ("<f4", "|u1", "f8", ">i2", ...) into info's descr, dtype, kind, byteorder and
 * itemsize_bytes.  0, or -EINVAL when numpy would not write it as a plain-data .npy. */
int pb_npy_parse_descr(const char *descr, pb_npy_info *info);

/* Writes a C-order .npy (version 1.0, header padded to a multiple of 64 bytes exactly as numpy does, so the
 * file is byte-identical to np.save's).  `bytes` must equal prod(shape) * itemsize.  0 or -errno
 * (-EINVAL for a bad descr, shape or size). */
int pb_npy_write(FILE *f, const char *descr, const int64_t *shape, int ndims, const void *data, size_t bytes);

/* ---- .npz ------------------------------------------------------------------------------------------- */

#define PB_NPZ_NO_OFFSET UINT64_MAX

typedef struct pb_npz_member {
  char *name;            /* as stored, e.g. "x.npy" (np.load calls it "x") */
  uint64_t bytes;        /* size of the member: a whole .npy file */
  uint64_t offset_bytes; /* where the member's bytes start within the zip file, so a reader can pread (or
                            mmap) them without libzip; PB_NPZ_NO_OFFSET when it could not be determined */
} pb_npz_member;

/* An open archive.  Not thread-safe (libzip is not): use one per thread, or read members by offset. */
typedef struct pb_npz pb_npz;

/* Opens `path` and lists its members.  Refuses (-EBADMSG, naming the member) an archive with a compressed
 * or encrypted member: pipebench reads np.savez archives, not np.savez_compressed ones. */
int pb_npz_open(const char *path, pb_npz **out, pb_err *err);

/* The members, in archive order; *nmembers gets their count.  Valid until pb_npz_close. */
const pb_npz_member *pb_npz_list(const pb_npz *z, int *nmembers);

/* Index of the member called `name` or `name`.npy, or -1. */
int pb_npz_find(const pb_npz *z, const char *name);

/* Reads member `index` (its whole .npy) into `buf`, which must hold its `bytes`; the zip's CRC is checked.
 * 0 or a negative errno with err set. */
int pb_npz_read_member(pb_npz *z, int index, void *buf, size_t buf_bytes, pb_err *err);

void pb_npz_close(pb_npz *z);

/* Writes `path` as np.savez would: member i is NAME.npy (names[i] + ".npy") holding a .npy of dtype
 * `descr` with shape shapes[i][0 .. ndims[i]) and data datas[i] of bytes[i] bytes, stored uncompressed.
 * 0 or a negative errno with err set. */
int pb_npz_write(const char *path, const char *const *names, const void *const *datas, const size_t *bytes,
                 const int64_t *const *shapes, const int *ndims, int nmembers, const char *descr, pb_err *err);

#endif
