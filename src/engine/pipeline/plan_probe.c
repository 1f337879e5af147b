/* Reading the dataset's sample sizes for the memory plan (plan_probe.h). */
#include "plan_probe.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files.h"
#include "jpeg.h"
#include "decode_scale.h"
#include "tfrecord.h"

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Bytes of a file read whole as one sample, for the plan: the largest listed file, unless it is an outlier
 * (more than 4x the 99th percentile): then the 99th percentile, and the few larger files take their excess
 * from the run's memory budget when read (pb_pool_plan), or are refused as samples when it cannot cover them.
 * One 3 GB file in a directory of photos then costs one sample error, not every buffer of the plan. */
static uint64_t listed_sample_bytes(const pb_file_list *l) {
  if (l->count == 0) return 0;
  uint64_t *sizes = malloc(l->count * sizeof *sizes);
  if (!sizes) return 0;
  for (size_t i = 0; i < l->count; i++) sizes[i] = l->files[i].bytes;
  qsort(sizes, l->count, sizeof *sizes, cmp_u64);
  uint64_t largest = sizes[l->count - 1], p99 = sizes[(l->count - 1) * 99 / 100];
  free(sizes);
  return largest > 4 * p99 ? p99 : largest;
}

#define PROBE_FILES 16                  /* headers read while planning: the 8 largest files, 8 spread out */
#define PROBE_HEADER_BYTES (256u << 10) /* enough for the SOF after an EXIF block with a thumbnail */

#define PROBE_MAX_RECORD_BYTES (64u << 20) /* a first record larger than this is not read to plan */


/* Puts f among the k largest in top[0..*n) (kept in descending size; k is small). */
static void keep_largest(const pb_file **top, int *n, int k, const pb_file *f) {
  int at = *n < k ? (*n)++ : k;
  if (at == k && f->bytes <= top[k - 1]->bytes) return;
  if (at == k) at = k - 1;
  while (at > 0 && top[at - 1]->bytes < f->bytes) top[at] = top[at - 1], at--;
  top[at] = f;
}

/* The files whose headers the plan reads: the largest (the likeliest largest images) and some spread over
 * the listing (in case size and pixels disagree).  One pass for the largest, no sort of the whole listing.
 * Returns how many of `out` were filled. */
static int probe_files(const pb_file_list *l, const pb_file **out) {
  int n = 0;
  for (size_t i = 0; i < l->count; i++) keep_largest(out, &n, PROBE_FILES / 2, &l->files[i]);
  for (int k = 0; k < PROBE_FILES / 2 && (size_t)n < l->count; k++) out[n++] = &l->files[l->count * (size_t)k / (PROBE_FILES / 2)];
  return n;
}

/* The sample at the head of a file, into *buf (malloc'd, the caller frees): a JPEG file's first bytes, or
 * the feature's bytes of a TFRecord file's first record (whole).  Returns the bytes in *buf (0: none) and
 * the sample's full size in *sample_bytes. */
static size_t head_sample(const pb_engine *e, const pb_file *f, uint8_t **buf, uint64_t *sample_bytes) {
  const pb_dataset_cfg *d = &e->cfg->dataset;
  *buf = NULL;
  if (d->format == PB_FMT_JPEG) {
    *sample_bytes = f->bytes;
    *buf = malloc(PROBE_HEADER_BYTES);
    return *buf ? pb_data_file_head(f->path, *buf, PROBE_HEADER_BYTES, 0) : 0;
  }
  uint8_t hdr[PB_TFRECORD_HEADER_BYTES];
  uint64_t data_bytes = 0;
  if (d->format != PB_FMT_TFRECORD || pb_data_file_head(f->path, hdr, sizeof hdr, 0) != sizeof hdr ||
      pb_tfrecord_header(hdr, &data_bytes) || data_bytes == 0 || data_bytes > PROBE_MAX_RECORD_BYTES)
    return 0;
  uint8_t *rec = malloc(data_bytes);
  const uint8_t *value = NULL;
  size_t value_bytes = 0;
  pb_err err;
  if (rec && pb_data_file_head(f->path, rec, data_bytes, PB_TFRECORD_HEADER_BYTES) == data_bytes &&
      pb_example_get_bytes(rec, data_bytes, d->feature, &value, &value_bytes, f->path, 0, &err) == 0 &&
      (*buf = malloc(value_bytes ? value_bytes : 1)))
    memcpy(*buf, value, value_bytes);
  pb_example_release_arena();
  free(rec);
  *sample_bytes = *buf ? value_bytes : 0;
  return *buf ? value_bytes : 0;
}

uint64_t pb_probe_sample_bytes(const pb_engine *e) {
  const pb_dataset_cfg *d = &e->cfg->dataset;
  if (d->format == PB_FMT_JPEG) return listed_sample_bytes(&e->files);
  if (d->format != PB_FMT_TFRECORD) return 0;
  const pb_file *files[PROBE_FILES];
  int n = probe_files(&e->files, files);
  uint64_t largest = 0;
  for (int i = 0; i < n; i++) {
    uint8_t *buf;
    uint64_t bytes = 0;
    head_sample(e, files[i], &buf, &bytes);
    free(buf);
    largest = PB_MAX(largest, bytes);
  }
  return largest;
}

uint64_t pb_probe_decoded_bytes(const pb_engine *e, const pb_stage_cfg *decode) {
  const pb_dataset_cfg *d = &e->cfg->dataset;
  bool jpeg = d->format == PB_FMT_JPEG || (d->format == PB_FMT_TFRECORD && d->payload == PB_PAYLOAD_JPEG);
  pb_jpeg_decoder *dec = NULL;
  pb_err err;
  if (!jpeg || pb_jpeg_decoder_init(&dec, &err)) return 0;
  const pb_file *files[PROBE_FILES];
  int n = probe_files(&e->files, files), min_side = pb_decode_min_side(e->cfg, decode);
  uint64_t largest = 0;
  for (int i = 0; i < n; i++) {
    uint8_t *buf;
    uint64_t bytes = 0;
    size_t got = head_sample(e, files[i], &buf, &bytes);
    int w = 0, h = 0;
    bool ok = got && !pb_jpeg_header(dec, buf, got, &w, &h, &err) && w > 0 && h > 0;
    free(buf);
    if (!ok || (decode->max_pixels > 0 && (int64_t)w * h > decode->max_pixels)) continue; /* refused when met */
    largest = PB_MAX(largest, (uint64_t)pb_jpeg_decoded_bytes(w, h, pb_decode_denom(decode, min_side, w, h)));
  }
  pb_jpeg_decoder_free(dec);
  return largest;
}
