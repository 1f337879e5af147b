/* What a directory of the user's data holds (data_probe.h). */
#include "data_probe.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <turbojpeg.h>
#include <unistd.h>

#include "files.h"
#include "npy.h"
#include "tf_example.h"
#include "tfrecord.h"

#define HEAD_BYTES (256u << 10)      /* a JPEG's header, past an EXIF block with a thumbnail */
#define MAX_RECORD_BYTES (64u << 20) /* a first record larger than this is not read */
#define MAGIC_CHECKS 4096            /* files of no known extension whose first bytes are read */

const char *pb_probe_format_name(pb_probe_format f) {
  static const char *const names[] = {"other", "jpeg", "tfrecord", "npy", "npz"};
  return f >= 0 && f < PB_PROBE__COUNT ? names[f] : "other";
}

/* A file's format by its extension, in any case; PB_PROBE_NONE for none we know (the magic decides). */
static pb_probe_format by_extension(const char *path) {
  static const struct {
    const char *ext;
    pb_probe_format f;
  } k_exts[] = {{"jpg", PB_PROBE_JPEG},
                {"jpeg", PB_PROBE_JPEG},
                {"jpe", PB_PROBE_JPEG},
                {"tfrecord", PB_PROBE_TFRECORD},
                {"tfrecords", PB_PROBE_TFRECORD},
                {"tfr", PB_PROBE_TFRECORD},
                {"npy", PB_PROBE_NPY},
                {"npz", PB_PROBE_NPZ}};
  const char *ext = pb_file_extension(path);
  for (size_t i = 0; i < PB_ARRAY_LEN(k_exts); i++)
    if (strcasecmp(ext, k_exts[i].ext) == 0) return k_exts[i].f;
  return PB_PROBE_NONE;
}

/* A file of no known extension by its first bytes (ImageNet's TFRecord shards are train-00000-of-01024). */
static pb_probe_format by_magic(const char *path) {
  uint8_t h[16];
  size_t n = pb_data_file_head(path, h, sizeof h, 0);
  uint64_t data_bytes;
  if (n >= 3 && h[0] == 0xFF && h[1] == 0xD8 && h[2] == 0xFF) return PB_PROBE_JPEG;
  if (n >= 6 && memcmp(h, "\x93NUMPY", 6) == 0) return PB_PROBE_NPY;
  if (n >= PB_TFRECORD_HEADER_BYTES && pb_tfrecord_header(h, &data_bytes) == 0 && data_bytes > 0)
    return PB_PROBE_TFRECORD;
  return PB_PROBE_NONE;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* The extension of the file's own name (lower case, without the dot; "" when none) among f's. */
static void note_extension(pb_data_probe *p, pb_probe_format f, const char *path) {
  const char *own = pb_file_extension(path);
  char ext[16] = "";
  if (strlen(own) < sizeof ext)
    for (size_t i = 0; own[i]; i++) ext[i] = (char)tolower((unsigned char)own[i]);
  for (int i = 0; i < p->nexts[f]; i++)
    if (strcmp(p->exts[f][i], ext) == 0) return;
  if (p->nexts[f] < 16) snprintf(p->exts[f][p->nexts[f]++], sizeof p->exts[f][0], "%s", ext);
}

/* Each file's format, and the counts, sizes and skipped names per format. */
static pb_probe_format *classify(const pb_file_list *l, pb_data_probe *p) {
  pb_probe_format *fmt = calloc(l->count ? l->count : 1, sizeof *fmt);
  if (!fmt) return NULL;
  int magic_checks = 0, nskipped = 0;
  for (size_t i = 0; i < l->count; i++) {
    const char *path = l->files[i].path;
    fmt[i] = by_extension(path);
    if (fmt[i] == PB_PROBE_NONE && magic_checks++ < MAGIC_CHECKS) fmt[i] = by_magic(path);
    note_extension(p, fmt[i], path);
    if (fmt[i] == PB_PROBE_NONE && nskipped < PB_PROBE_EXAMPLES)
      snprintf(p->skipped[nskipped++], sizeof p->skipped[0], "%.255s", path);
    p->files[fmt[i]].count++;
    p->files[fmt[i]].bytes += l->files[i].bytes;
  }
  return fmt;
}

/* Smallest, median and largest file of each format. */
static int file_sizes(const pb_file_list *l, const pb_probe_format *fmt, pb_data_probe *p) {
  uint64_t *sizes = malloc((l->count ? l->count : 1) * sizeof *sizes);
  if (!sizes) return -ENOMEM;
  for (int f = 0; f < PB_PROBE__COUNT; f++) {
    size_t n = 0;
    for (size_t i = 0; i < l->count; i++)
      if (fmt[i] == (pb_probe_format)f) sizes[n++] = l->files[i].bytes;
    if (!n) continue;
    qsort(sizes, n, sizeof *sizes, cmp_u64);
    p->files[f].min_bytes = sizes[0], p->files[f].median_bytes = sizes[n / 2], p->files[f].max_bytes = sizes[n - 1];
  }
  free(sizes);
  return 0;
}

/* Up to PB_PROBE_SAMPLE files of format f, spread over the listing. */
static int sample_files(const pb_file_list *l, const pb_probe_format *fmt, pb_probe_format f, const pb_file **out) {
  size_t total = 0;
  for (size_t i = 0; i < l->count; i++) total += fmt[i] == f;
  int n = 0;
  for (size_t i = 0, seen = 0; i < l->count && n < PB_PROBE_SAMPLE; i++) {
    if (fmt[i] != f) continue;
    if (seen++ * PB_PROBE_SAMPLE >= (size_t)n * total) out[n++] = &l->files[i];
  }
  return n;
}

static void note_bad(pb_data_probe *p, const char *file, const char *why) {
  if (p->bad < PB_PROBE_EXAMPLES) {
    snprintf(p->bad_files[p->bad], sizeof p->bad_files[0], "%.255s", file);
    snprintf(p->bad_why[p->bad], sizeof p->bad_why[0], "%.159s", why);
  }
  p->bad++;
}

/* What a file's first bytes say it is, for a file that does not parse as its extension says. */
static const char *what_it_is(const uint8_t *h, size_t n) {
  if (n >= 8 && memcmp(h, "\x89PNG\r\n\x1a\n", 8) == 0) return "a PNG";
  if (n >= 3 && memcmp(h, "GIF", 3) == 0) return "a GIF";
  if (n >= 2 && (memcmp(h, "BM", 2) == 0)) return "a BMP";
  if (n >= 4 && memcmp(h, "RIFF", 4) == 0) return "a RIFF (WebP?) file";
  return "not a JPEG";
}

/* One JPEG's header into the tallies (dims kept in w[], h[] for the medians). */
static void jpeg_header(tjhandle tj, const char *file, const uint8_t *buf, size_t n, pb_data_probe *p, int *w, int *h,
                        int *nd) {
  int width, height, subsamp, cs;
  if (tjDecompressHeader3(tj, buf, (unsigned long)n, &width, &height, &subsamp, &cs) != 0) {
    bool soi = n >= 2 && buf[0] == 0xFF && buf[1] == 0xD8;
    note_bad(p, file, soi ? tjGetErrorStr2(tj) : what_it_is(buf, n));
    return;
  }
  if (cs == TJCS_CMYK || cs == TJCS_YCCK) p->cmyk++;
  if (subsamp >= 0 && subsamp < 6)
    p->subsamp[subsamp]++;
  else
    p->other++;
  w[*nd] = width, h[*nd] = height, (*nd)++;
}

static void dims_summary(pb_data_probe *p, int *w, int *h, int nd) {
  if (!nd) return;
  qsort(w, (size_t)nd, sizeof *w, cmp_int);
  qsort(h, (size_t)nd, sizeof *h, cmp_int);
  p->width_min = w[0], p->width_median = w[nd / 2], p->width_max = w[nd - 1];
  p->height_min = h[0], p->height_median = h[nd / 2], p->height_max = h[nd - 1];
}

static int probe_jpegs(const pb_file **files, int n, pb_data_probe *p) {
  tjhandle tj = tjInitDecompress();
  uint8_t *buf = malloc(HEAD_BYTES);
  int w[PB_PROBE_SAMPLE], h[PB_PROBE_SAMPLE], nd = 0;
  if (!tj || !buf) {
    if (tj) tjDestroy(tj);
    free(buf);
    return -ENOMEM;
  }
  for (int i = 0; i < n; i++) {
    size_t got = pb_data_file_head(files[i]->path, buf, HEAD_BYTES, 0);
    p->sampled++;
    if (!got)
      note_bad(p, files[i]->path, "unreadable");
    else
      jpeg_header(tj, files[i]->path, buf, got, p, w, h, &nd);
  }
  dims_summary(p, w, h, nd);
  tjDestroy(tj);
  free(buf);
  return 0;
}

/* The first record of a TFRecord file (malloc'd into *rec), or 0 bytes. */
static size_t first_record(const char *path, uint8_t **rec) {
  uint8_t hdr[PB_TFRECORD_HEADER_BYTES];
  uint64_t data_bytes = 0;
  *rec = NULL;
  if (pb_data_file_head(path, hdr, sizeof hdr, 0) != sizeof hdr || pb_tfrecord_header(hdr, &data_bytes) ||
      !data_bytes || data_bytes > MAX_RECORD_BYTES || !(*rec = malloc(data_bytes)))
    return 0;
  if (pb_data_file_head(path, *rec, data_bytes, PB_TFRECORD_HEADER_BYTES) == data_bytes) return data_bytes;
  free(*rec);
  *rec = NULL;
  return 0;
}

/* Records in a TFRecord file, from the headers alone (each record's length; no data is read). */
static uint64_t count_records(const char *path, uint64_t file_bytes) {
  uint64_t n = 0;
  for (uint64_t off = 0; off < file_bytes;) {
    uint8_t hdr[PB_TFRECORD_HEADER_BYTES];
    uint64_t data_bytes = 0;
    if (pb_data_file_head(path, hdr, sizeof hdr, off) != sizeof hdr || pb_tfrecord_header(hdr, &data_bytes)) return 0;
    off += pb_tfrecord_framed_bytes(data_bytes);
    n++;
  }
  return n;
}

/* The features of a first record; the JPEG one and the largest bytes one marked. */
static void list_features(const uint8_t *rec, size_t bytes, const char *file, pb_data_probe *p) {
  pb_example_feature_info info[PB_PROBE_FEATURES];
  pb_err err;
  int n = pb_example_features(rec, bytes, info, PB_PROBE_FEATURES, file, &err);
  if (n < 0) return note_bad(p, file, err.msg);
  p->nfeatures = PB_MIN(n, PB_PROBE_FEATURES);
  uint64_t largest = 0;
  for (int i = 0; i < p->nfeatures; i++) {
    pb_probe_feature *f = &p->features[i];
    snprintf(f->name, sizeof f->name, "%.63s", info[i].name);
    f->int64 = info[i].kind == 1;
    f->value_bytes = info[i].kind == 0 ? info[i].first_bytes : 0;
    f->jpeg = info[i].kind == 0 && info[i].first_bytes >= 3 && info[i].first[0] == 0xFF && info[i].first[1] == 0xD8;
    if (f->jpeg && p->jpeg_feature < 0) p->jpeg_feature = i;
    if (info[i].kind == 0 && f->value_bytes > largest) largest = f->value_bytes, p->raw_feature = i;
  }
}

/* The JPEG inside a record's feature, into the JPEG tallies. */
static void record_jpeg(tjhandle tj, const uint8_t *rec, size_t bytes, const pb_file *f, pb_data_probe *p, int *w,
                        int *h, int *nd) {
  const uint8_t *value;
  size_t value_bytes;
  pb_err err;
  if (pb_example_get_bytes(rec, bytes, p->features[p->jpeg_feature].name, &value, &value_bytes, f->path, 0, &err))
    return note_bad(p, f->path, err.msg);
  jpeg_header(tj, f->path, value, value_bytes, p, w, h, nd);
}

static int probe_tfrecords(const pb_file **files, int n, pb_data_probe *p) {
  tjhandle tj = tjInitDecompress();
  if (!tj) return -ENOMEM;
  int w[PB_PROBE_SAMPLE], h[PB_PROBE_SAMPLE], nd = 0;
  p->records_first_file = n ? count_records(files[0]->path, files[0]->bytes) : 0;
  for (int i = 0; i < n; i++) {
    uint8_t *rec;
    size_t bytes = first_record(files[i]->path, &rec);
    p->sampled++;
    if (!bytes)
      note_bad(p, files[i]->path, "no readable first record (expected a TFRecord file)");
    else if (i == 0)
      list_features(rec, bytes, files[i]->path, p);
    if (bytes && p->jpeg_feature >= 0) record_jpeg(tj, rec, bytes, files[i], p, w, h, &nd);
    free(rec);
  }
  pb_example_release_arena();
  dims_summary(p, w, h, nd);
  tjDestroy(tj);
  return 0;
}

static void keep_npy(pb_data_probe *p, const pb_npy_info *info) {
  bool first = p->dtype[0] == '\0';
  bool same = !first && strcmp(p->dtype, info->descr) == 0 && p->ndims == info->ndims;
  for (int d = 0; same && d < info->ndims && d < 8; d++) same = p->shape[d] == info->shape[d];
  if (!first && !same) p->shapes_vary = true;
  if (!first) return;
  snprintf(p->dtype, sizeof p->dtype, "%s", info->descr);
  p->ndims = PB_MIN(info->ndims, 8);
  memcpy(p->shape, info->shape, (size_t)p->ndims * sizeof p->shape[0]);
}

static int probe_npys(const pb_file **files, int n, pb_data_probe *p) {
  uint8_t head[4096];
  for (int i = 0; i < n; i++) {
    pb_npy_info info;
    pb_err err;
    size_t got = pb_data_file_head(files[i]->path, head, sizeof head, 0);
    p->sampled++;
    if (pb_npy_parse_header(head, got, &info, files[i]->path, &err))
      note_bad(p, files[i]->path, err.msg);
    else
      keep_npy(p, &info);
  }
  return 0;
}

/* An npz archive's members (the first file's), and its first member's dtype and shape. */
static int probe_npzs(const pb_file **files, int n, pb_data_probe *p) {
  for (int i = 0; i < n; i++) {
    pb_npz *z;
    pb_err err;
    p->sampled++;
    if (pb_npz_open(files[i]->path, &z, &err)) {
      note_bad(p, files[i]->path, err.msg);
      continue;
    }
    int nm = 0;
    const pb_npz_member *m = pb_npz_list(z, &nm);
    for (int k = 0; i == 0 && k < nm && k < 4; k++)
      snprintf(p->members[p->nmembers++], sizeof p->members[0], "%.63s", m[k].name);
    uint8_t head[4096];
    pb_npy_info info;
    size_t got = nm && m[0].offset_bytes != PB_NPZ_NO_OFFSET
                     ? pb_data_file_head(files[i]->path, head, sizeof head, m[0].offset_bytes)
                     : 0;
    if (got && !pb_npy_parse_header(head, got, &info, files[i]->path, &err)) keep_npy(p, &info);
    pb_npz_close(z);
  }
  return 0;
}

static pb_probe_format dominant(const pb_data_probe *p) {
  pb_probe_format best = PB_PROBE_NONE;
  size_t most = 0;
  for (int f = PB_PROBE_JPEG; f < PB_PROBE__COUNT; f++)
    if (p->files[f].count > most) most = p->files[f].count, best = (pb_probe_format)f;
  return best;
}

static int probe_format(const pb_file_list *l, const pb_probe_format *fmt, pb_data_probe *p) {
  const pb_file *files[PB_PROBE_SAMPLE];
  int n = sample_files(l, fmt, p->format, files);
  switch (p->format) {
    case PB_PROBE_JPEG:
      return probe_jpegs(files, n, p);
    case PB_PROBE_TFRECORD:
      return probe_tfrecords(files, n, p);
    case PB_PROBE_NPY:
      return probe_npys(files, n, p);
    case PB_PROBE_NPZ:
      return probe_npzs(files, n, p);
    default:
      return 0;
  }
}

int pb_data_probe_run(const char *path, pb_data_probe *out, pb_err *err) {
  memset(out, 0, sizeof *out);
  out->jpeg_feature = out->raw_feature = -1;
  pb_file_list l = {0};
  int rc = pb_files_list(path, &l, err);
  if (rc) return rc;
  pb_probe_format *fmt = classify(&l, out);
  rc = fmt ? file_sizes(&l, fmt, out) : -ENOMEM;
  if (!rc) {
    out->format = dominant(out);
    rc = probe_format(&l, fmt, out);
  }
  if (rc) pb_err_setc(err, rc, "%s: out of memory probing the dataset", path);
  free(fmt);
  pb_file_list_free(&l);
  return rc;
}
