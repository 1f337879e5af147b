/* gen's plan (gen_plan.h): names, the split of samples over files, sizes and seeds, and the refusals. */
#include "gen_plan.h"

#include <math.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "synth_image.h"

void pb_gen_file_name(pb_format format, uint64_t index, char *out, size_t len) {
  switch (format) {
    case PB_FMT_JPEG:
      snprintf(out, len, "img-%08" PRIu64 ".jpg", index);
      break;
    case PB_FMT_TFRECORD:
      snprintf(out, len, "shard-%05" PRIu64 ".tfrecord", index);
      break;
    case PB_FMT_NPY:
      snprintf(out, len, "sample-%08" PRIu64 ".npy", index);
      break;
    case PB_FMT_NPZ:
      snprintf(out, len, "sample-%08" PRIu64 ".npz", index);
      break;
    default:
      snprintf(out, len, "records-%05" PRIu64 ".bin", index);
      break;
  }
}

/* Does name read prefix, at least min_digits digits and nothing else, then suffix? */
static bool name_matches(const char *name, const char *prefix, int min_digits, const char *suffix) {
  size_t n = strlen(prefix);
  if (strncmp(name, prefix, n) != 0) return false;
  name += n;
  int digits = 0;
  while (*name >= '0' && *name <= '9') name++, digits++;
  return digits >= min_digits && strcmp(name, suffix) == 0;
}

bool pb_gen_is_generated(const char *name) {
  if (strncmp(name, ".tmp-", 5) == 0) name += 5;
  return strcmp(name, PB_GEN_MANIFEST) == 0 || name_matches(name, "img-", 8, ".jpg") ||
         name_matches(name, "shard-", 5, ".tfrecord") || name_matches(name, "sample-", 8, ".npy") ||
         name_matches(name, "sample-", 8, ".npz") || name_matches(name, "records-", 5, ".bin");
}

bool pb_gen_jpeg_payload(const pb_dataset_cfg *d) {
  return d->format == PB_FMT_JPEG || (d->format == PB_FMT_TFRECORD && d->payload == PB_PAYLOAD_JPEG);
}

uint64_t pb_gen_sample_index(uint64_t file, uint64_t samples_per_file, uint64_t k) {
  return file * samples_per_file + k;
}

/* ImageNet's 1000 classes, in turn. */
int64_t pb_gen_label(uint64_t sample_index) { return (int64_t)(sample_index % 1000); }

uint64_t pb_gen_size_seed(uint64_t seed, uint64_t key) { return seed * 0x9E3779B97F4A7C15ULL + key; }

uint64_t pb_gen_bytes_seed(uint64_t seed, uint64_t key) { return seed ^ (key * 0xD1B54A32D192ED03ULL); }

size_t pb_gen_record_bytes(const pb_config *cfg, uint64_t key) {
  const pb_generate_cfg *g = &cfg->dataset.generate;
  if (!g->record_bytes_stdev) return (size_t)g->record_bytes;
  pb_rng rng;
  pb_rng_seed(&rng, pb_gen_size_seed(cfg->seed, key));
  double v = pb_rng_normal(&rng, (double)g->record_bytes, (double)g->record_bytes_stdev);
  /* A normal with a wide spread (unet3d's: 14.7 +- 6.8 MB) has a tail below zero; a 1-byte "volume" is no
   * sample anyone trains on, so the floor is a tenth of the mean (at least 1 byte). */
  double floor_bytes = fmax(1.0, floor((double)g->record_bytes / 10.0));
  return v < floor_bytes ? (size_t)floor_bytes : (size_t)v;
}

int pb_gen_array_shape(uint64_t samples_per_file, size_t record_bytes, int64_t shape[2]) {
  shape[0] = samples_per_file > 1 ? (int64_t)samples_per_file : (int64_t)record_bytes;
  shape[1] = (int64_t)record_bytes;
  return samples_per_file > 1 ? 2 : 1;
}

int pb_gen_workers(unsigned available, int64_t num_files) {
  int n = (int)PB_MIN(PB_MAX(available, 1u), 16u);
  return (int)PB_MIN((int64_t)n, num_files);
}

/* What a JPEG can hold (libjpeg's 65500-pixel sides) and the image generator's pixel limit: the schema
 * allows sides up to 65535, which a decode's `max_pixels` judges, but gen cannot write them. */
static const char *image_too_big(const pb_generate_cfg *g, bool jpeg, const char **path, char *why, size_t len) {
  if (!jpeg || !g->has_image) return NULL;
  if (g->width > PB_SYNTH_MAX_SIDE || g->height > PB_SYNTH_MAX_SIDE) {
    *path = g->width > PB_SYNTH_MAX_SIDE ? "dataset.generate.image.width" : "dataset.generate.image.height";
    snprintf(why, len, "%lld pixels is more than a JPEG can hold (expected at most %d)",
             (long long)PB_MAX(g->width, g->height), PB_SYNTH_MAX_SIDE);
    return why;
  }
  if ((int64_t)g->width * g->height > PB_SYNTH_MAX_PIXELS) {
    *path = "dataset.generate.image";
    snprintf(why, len, "%lld x %lld is %lld pixels (expected at most %lld pixels per generated image)",
             (long long)g->width, (long long)g->height, (long long)g->width * g->height,
             (long long)PB_SYNTH_MAX_PIXELS);
    return why;
  }
  return NULL;
}

/* The refusals that need no arithmetic: a key missing or at odds with the format. */
static const char *spec_refusal(const pb_dataset_cfg *d, bool jpeg, const char **path) {
  const pb_generate_cfg *g = &d->generate;
  if (!g->present) return "missing (expected num_files, samples_per_file and image or record_bytes)";
  if (d->format == PB_FMT_SYNTHETIC)
    return *path = "dataset.format", "synthetic data lives in memory (expected a file format to generate)";
  if (!d->path[0] || d->path[0] == '@' || strpbrk(d->path, "*?[{"))
    return *path = "dataset.path", "not a directory (expected a directory to write into, not a glob or @list)";
  if (jpeg && !g->has_image)
    return *path = "dataset.generate.image", "missing (expected width, height and quality for JPEG payloads)";
  if (!jpeg && !g->record_bytes)
    return *path = "dataset.generate.record_bytes", "missing (expected the bytes of each record)";
  if (d->format == PB_FMT_RAW && g->record_bytes_stdev)
    return *path = "dataset.generate.record_bytes_stdev", "raw records are fixed-size (expected 0)";
  if (d->format == PB_FMT_JPEG && g->samples_per_file != 1)
    return *path = "dataset.generate.samples_per_file", "a JPEG file holds one image (expected 1)";
  return NULL;
}

const char *pb_gen_refusal(const pb_config *cfg, const char **path, char *why_buf, size_t len) {
  const pb_dataset_cfg *d = &cfg->dataset;
  const pb_generate_cfg *g = &d->generate;
  bool jpeg = pb_gen_jpeg_payload(d);
  *path = "dataset.generate";
  const char *why = spec_refusal(d, jpeg, path);
  if (!why) why = image_too_big(g, jpeg, path, why_buf, len);
  if (!why && d->format == PB_FMT_RAW && d->record_bytes != g->record_bytes) {
    snprintf(why_buf, len,
             "%lld, not the %lld bytes of the records gen writes (expected "
             "dataset.generate.record_bytes, or no dataset.record_bytes: it defaults to that)",
             (long long)d->record_bytes, (long long)g->record_bytes);
    *path = "dataset.record_bytes", why = why_buf;
  }
  return why;
}
