/* .npy header parsing and writing.  The header is a Python dict literal; rather than a Python evaluator this
 * is a small parser for exactly the subset numpy writes (and older numpys wrote: "3L" longs, either quote). */
#include "npy.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "dataset_err.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_BYTES 6
#define NPY_ALIGN_BYTES 64        /* numpy pads header ends to this (mmap-friendly data start) */
#define NPY_GROWTH_AXIS_DIGITS 21 /* numpy leaves room to rewrite the first axis in place */

/* ---- descr ----------------------------------------------------------------------------------------- */

static bool valid_itemsize(char kind, size_t n) {
  switch (kind) {
    case 'b': return n == 1;
    case 'i': case 'u': return n == 1 || n == 2 || n == 4 || n == 8;
    case 'f': return n == 2 || n == 4 || n == 8 || n == 16;
    case 'c': return n == 8 || n == 16 || n == 32;
    case 'S': case 'V': case 'U': return n >= 1;
    default: return false; /* 'O' (pickled objects), datetimes, structured types */
  }
}

static pb_npy_dtype dtype_code(char kind, size_t n) {
  static const struct { char kind; size_t n; pb_npy_dtype code; } table[] = {
    {'b', 1, PB_NPY_BOOL},    {'i', 1, PB_NPY_INT8},     {'i', 2, PB_NPY_INT16},     {'i', 4, PB_NPY_INT32},
    {'i', 8, PB_NPY_INT64},   {'u', 1, PB_NPY_UINT8},    {'u', 2, PB_NPY_UINT16},    {'u', 4, PB_NPY_UINT32},
    {'u', 8, PB_NPY_UINT64},  {'f', 2, PB_NPY_FLOAT16},  {'f', 4, PB_NPY_FLOAT32},   {'f', 8, PB_NPY_FLOAT64},
    {'c', 8, PB_NPY_COMPLEX64}, {'c', 16, PB_NPY_COMPLEX128},
  };
  for (size_t i = 0; i < PB_ARRAY_LEN(table); i++)
    if (table[i].kind == kind && table[i].n == n) return table[i].code;
  return PB_NPY_OTHER;
}

/* numpy writes '|' where byte order cannot matter and resolves '=' (native) to '<' or '>'. */
static char resolve_order(char order, char kind, size_t itemsize) {
  if (kind == 'S' || kind == 'V' || (itemsize == 1 && kind != 'U')) return '|';
  if (order == '<' || order == '>') return order;
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  return '>';
#else
  return '<';
#endif
}

int pb_npy_parse_descr(const char *descr, pb_npy_info *info) {
  const char *p = descr;
  char order = (*p && strchr("<>|=", *p)) ? *p++ : '=';
  char kind = *p ? *p++ : '\0';
  if (!isdigit((unsigned char)*p)) return -EINVAL;
  size_t n = 0;
  for (; isdigit((unsigned char)*p); p++) {
    if (n > 100000000) return -EINVAL; /* no real dtype is this wide: refuse rather than overflow */
    n = n * 10 + (size_t)(*p - '0');
  }
  if (*p != '\0' || !valid_itemsize(kind, n)) return -EINVAL;
  info->kind = kind;
  info->itemsize_bytes = kind == 'U' ? 4 * n : n; /* 'U' counts UCS-4 characters */
  info->byteorder = resolve_order(order, kind, info->itemsize_bytes);
  info->dtype = dtype_code(kind, n);
  snprintf(info->descr, sizeof info->descr, "%c%c%zu", info->byteorder, kind, n);
  return 0;
}

/* ---- header dict ------------------------------------------------------------------------------------ */

typedef struct cursor {
  const char *start, *p, *end;
  size_t base; /* file offset of `start`, so errors point into the file */
  const char *file;
  pb_err *err;
} cursor;

enum { KEY_DESCR = 1, KEY_FORTRAN = 2, KEY_SHAPE = 4, KEY_ALL = 7 };

static size_t cur_offset(const cursor *c) { return c->base + (size_t)(c->p - c->start); }

static void skip_ws(cursor *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static bool accept(cursor *c, char ch) {
  skip_ws(c);
  if (c->p >= c->end || *c->p != ch) return false;
  c->p++;
  return true;
}

/* "bad .npy header at 'xyz'": a few printable bytes of what was found make the error self-explanatory. */
static int syntax(cursor *c, const char *expected) {
  char near[16];
  size_t n = 0;
  for (const char *q = c->p; q < c->end && n < sizeof near - 1; q++)
    near[n++] = isprint((unsigned char)*q) ? *q : '?';
  near[n] = '\0';
  return PB_BAD_DATA(c->err, "%s: offset %zu: bad .npy header at '%s' (expected %s)", pb_ds_name(c->file),
                     cur_offset(c), n ? near : "end of header", expected);
}

static int expect(cursor *c, char ch, const char *expected) { return accept(c, ch) ? 0 : syntax(c, expected); }

static int parse_string(cursor *c, char *out, size_t cap, const char *expected) {
  skip_ws(c);
  if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return syntax(c, expected);
  char quote = *c->p++;
  size_t n = 0;
  for (; c->p < c->end && *c->p != quote; c->p++) {
    if (*c->p == '\\' || n + 1 >= cap) return syntax(c, expected);
    out[n++] = *c->p;
  }
  if (c->p >= c->end) return syntax(c, "a closing quote");
  c->p++;
  out[n] = '\0';
  return 0;
}

static bool accept_word(cursor *c, const char *word) {
  size_t n = strlen(word);
  skip_ws(c);
  if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return false;
  c->p += n;
  return true;
}

static int parse_bool(cursor *c, bool *out) {
  if (accept_word(c, "True"))
    *out = true;
  else if (accept_word(c, "False"))
    *out = false;
  else
    return syntax(c, "True or False");
  return 0;
}

static int parse_dim(cursor *c, int64_t *out) {
  skip_ws(c);
  if (c->p >= c->end || !isdigit((unsigned char)*c->p)) return syntax(c, "a non-negative integer dimension");
  int64_t v = 0;
  for (; c->p < c->end && isdigit((unsigned char)*c->p); c->p++) {
    if (v > (INT64_MAX - 9) / 10) return syntax(c, "a dimension below 2^63");
    v = v * 10 + (*c->p - '0');
  }
  if (c->p < c->end && *c->p == 'L') c->p++; /* Python 2 long, as numpy 1.x under Python 2 wrote */
  *out = v;
  return 0;
}

static int parse_shape(cursor *c, pb_npy_info *info) {
  int rc = expect(c, '(', "a shape tuple such as (2, 3)");
  for (info->ndims = 0; rc == 0 && !accept(c, ')');) {
    if (info->ndims == PB_NPY_MAX_DIMS) return syntax(c, "at most 64 dimensions");
    rc = parse_dim(c, &info->shape[info->ndims++]);
    if (rc == 0 && !accept(c, ',')) return expect(c, ')', "',' or ')' in the shape tuple");
  }
  return rc;
}

static int parse_descr_value(cursor *c, pb_npy_info *info) {
  char descr[32];
  const char *at = c->p;
  int rc = parse_string(c, descr, sizeof descr,
                        "a dtype string such as '<f4' (structured dtypes are not supported)");
  if (rc == 0 && pb_npy_parse_descr(descr, info) != 0) {
    c->p = at; /* point the error at the value, not past it */
    rc = syntax(c, "a plain numeric or bytes dtype such as '<f4', '|u1', '<i8'");
  }
  return rc;
}

static int parse_value(cursor *c, const char *key, pb_npy_info *info, unsigned *seen) {
  if (strcmp(key, "descr") == 0) {
    *seen |= KEY_DESCR;
    return parse_descr_value(c, info);
  }
  if (strcmp(key, "fortran_order") == 0) {
    *seen |= KEY_FORTRAN;
    return parse_bool(c, &info->fortran_order);
  }
  if (strcmp(key, "shape") == 0) {
    *seen |= KEY_SHAPE;
    return parse_shape(c, info);
  }
  return syntax(c, "only the keys 'descr', 'fortran_order' and 'shape'");
}

static int parse_entry(cursor *c, pb_npy_info *info, unsigned *seen) {
  char key[32];
  unsigned before = *seen;
  const char *at = c->p;
  int rc = parse_string(c, key, sizeof key, "a quoted key: 'descr', 'fortran_order' or 'shape'");
  if (rc == 0) rc = expect(c, ':', "':' after the key");
  if (rc == 0) rc = parse_value(c, key, info, seen);
  if (rc == 0 && *seen == before) {
    c->p = at;
    rc = syntax(c, "each key once");
  }
  return rc;
}

static int parse_dict(cursor *c, pb_npy_info *info) {
  unsigned seen = 0;
  int rc = expect(c, '{', "'{' opening the header dict");
  while (rc == 0 && !accept(c, '}')) {
    rc = parse_entry(c, info, &seen);
    if (rc == 0 && !accept(c, ',')) {
      rc = expect(c, '}', "',' or '}' in the header dict");
      break;
    }
  }
  if (rc != 0) return rc;
  if (seen != KEY_ALL) return syntax(c, "the keys 'descr', 'fortran_order' and 'shape'");
  skip_ws(c);
  return c->p == c->end ? 0 : syntax(c, "only space padding after the header dict");
}

/* ---- whole header ------------------------------------------------------------------------------------- */

static uint32_t load_le(const uint8_t *p, int nbytes) {
  uint32_t v = 0;
  for (int i = nbytes - 1; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

/* Magic, version and header length: where the dict text starts and how long it is. */
static int parse_prefix(const uint8_t *buf, size_t len, pb_npy_info *info, size_t *dict_at, size_t *dict_bytes,
                        const char *file, pb_err *err) {
  const char *name = pb_ds_name(file);
  if (len < NPY_MAGIC_BYTES || memcmp(buf, NPY_MAGIC, NPY_MAGIC_BYTES) != 0)
    return PB_BAD_DATA(err, "%s: offset 0: not a .npy file (expected the magic bytes \\x93NUMPY)", name);
  if (len < NPY_MAGIC_BYTES + 2 || buf[6] < 1 || buf[6] > 3 || buf[7] != 0)
    return PB_BAD_DATA(err, "%s: offset 6: unsupported .npy version %d.%d (expected 1.0, 2.0 or 3.0)", name,
                       len > 6 ? buf[6] : -1, len > 7 ? buf[7] : -1);
  info->version_major = buf[6];
  info->version_minor = buf[7];
  int len_bytes = buf[6] == 1 ? 2 : 4;
  *dict_at = NPY_MAGIC_BYTES + 2 + (size_t)len_bytes;
  if (len < *dict_at)
    return PB_BAD_DATA(err, "%s: offset 8: truncated .npy header length (expected %d bytes)", name, len_bytes);
  *dict_bytes = load_le(buf + 8, len_bytes);
  if (*dict_bytes > len - *dict_at)
    return PB_BAD_DATA(err, "%s: offset %zu: truncated .npy header: %zu bytes left (expected %zu)", name,
                       *dict_at, len - *dict_at, *dict_bytes);
  return 0;
}

static int compute_sizes(pb_npy_info *info, size_t at, const char *file, pb_err *err) {
  uint64_t count = 1;
  for (int i = 0; i < info->ndims; i++) {
    uint64_t d = (uint64_t)info->shape[i];
    if (d != 0 && count > UINT64_MAX / d) goto overflow;
    count *= d;
  }
  if (info->itemsize_bytes && count > SIZE_MAX / info->itemsize_bytes) goto overflow;
  info->count = count;
  info->data_bytes = (size_t)count * info->itemsize_bytes;
  return 0;
overflow:
  return PB_BAD_DATA(err, "%s: offset %zu: .npy shape holds more bytes than memory can address (expected a "
                     "shape whose size fits in 64 bits)", pb_ds_name(file), at);
}

int pb_npy_parse_header(const uint8_t *buf, size_t len, pb_npy_info *info, const char *file, pb_err *err) {
  size_t dict_at, dict_bytes;
  *info = (pb_npy_info){0};
  int rc = parse_prefix(buf, len, info, &dict_at, &dict_bytes, file, err);
  if (rc != 0) return rc;
  cursor c = {.start = (const char *)buf + dict_at, .p = (const char *)buf + dict_at,
              .end = (const char *)buf + dict_at + dict_bytes, .base = dict_at, .file = file, .err = err};
  rc = parse_dict(&c, info);
  info->data_offset_bytes = dict_at + dict_bytes;
  return rc == 0 ? compute_sizes(info, dict_at, file, err) : rc;
}

int pb_npy_parse(const uint8_t *buf, size_t len, pb_npy_info *info, const char *file, pb_err *err) {
  int rc = pb_npy_parse_header(buf, len, info, file, err);
  if (rc != 0) return rc;
  size_t have = len - info->data_offset_bytes;
  if (have == info->data_bytes) return 0;
  return PB_BAD_DATA(err, "%s: offset %zu: .npy data is %zu bytes (expected %zu: %llu items of %zu bytes for "
                     "the header's shape)", pb_ds_name(file), info->data_offset_bytes, have, info->data_bytes,
                     (unsigned long long)info->count, info->itemsize_bytes);
}

/* ---- writer ---------------------------------------------------------------------------------------------- */

/* Python's repr of the shape tuple: "()", "(5,)", "(2, 3, 4)". */
static void shape_repr(const int64_t *shape, int ndims, char *out, size_t cap) {
  size_t n = (size_t)snprintf(out, cap, "(");
  for (int i = 0; i < ndims && n < cap; i++)
    n += (size_t)snprintf(out + n, cap - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
  if (n < cap) snprintf(out + n, cap - n, ndims == 1 ? ",)" : ")");
}

/* The version 1.0 header, byte-for-byte what numpy's _write_array_header produces. */
static size_t npy_header(char *out, size_t cap, const char *descr, const int64_t *shape, int ndims) {
  char shape_text[PB_NPY_MAX_DIMS * 22 + 4], first_dim[24];
  shape_repr(shape, ndims, shape_text, sizeof shape_text);
  int growth = 0;
  if (ndims > 0)
    growth = NPY_GROWTH_AXIS_DIGITS - snprintf(first_dim, sizeof first_dim, "%lld", (long long)shape[0]);
  int dict = snprintf(out + 10, cap - 10, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }%*s", descr,
                      shape_text, growth > 0 ? growth : 0, "");
  size_t hlen = (size_t)dict + 1, pad = NPY_ALIGN_BYTES - (10 + hlen) % NPY_ALIGN_BYTES;
  if (10 + hlen + pad > cap || hlen + pad > UINT16_MAX) return 0;
  memcpy(out, NPY_MAGIC "\x01\x00", 8);
  out[8] = (char)((hlen + pad) & 0xff);
  out[9] = (char)((hlen + pad) >> 8);
  memset(out + 10 + dict, ' ', pad);
  out[10 + hlen + pad - 1] = '\n';
  return 10 + hlen + pad;
}

static bool shape_bytes(const int64_t *shape, int ndims, size_t itemsize, size_t *bytes) {
  size_t n = itemsize;
  for (int i = 0; i < ndims; i++) {
    if (shape[i] < 0 || (shape[i] != 0 && n > SIZE_MAX / (uint64_t)shape[i])) return false;
    n *= (size_t)shape[i];
  }
  *bytes = n;
  return true;
}

int pb_npy_write(FILE *f, const char *descr, const int64_t *shape, int ndims, const void *data, size_t bytes) {
  pb_npy_info info;
  size_t want_bytes;
  if (!descr || ndims < 0 || ndims > PB_NPY_MAX_DIMS || (ndims > 0 && !shape)) return -EINVAL;
  if (pb_npy_parse_descr(descr, &info) != 0) return -EINVAL;
  if (!shape_bytes(shape, ndims, info.itemsize_bytes, &want_bytes) || want_bytes != bytes) return -EINVAL;
  char header[2048];
  size_t header_bytes = npy_header(header, sizeof header, info.descr, shape, ndims);
  if (header_bytes == 0) return -EINVAL;
  errno = 0;
  if (fwrite(header, header_bytes, 1, f) != 1 || (bytes > 0 && fwrite(data, bytes, 1, f) != 1))
    return errno ? -errno : -EIO;
  return 0;
}
