/* How close to the hardware (docs/METRICS.md "efficiency"): each stage's throughput against its ceiling
 * x its threads, and the pipeline's against the best the machine allows, from the calibration the run
 * found (calibration.h).  Ceilings are per thread, measured by `pipebench calibrate` doing only that work:
 *   read    the dataset's storage, one thread, the read stage's block size and mode (MB/s -> samples/s by
 *           the bytes each sample took in this run)
 *   decode  the dataset's own JPEGs, one core, at the decode stage's scale (images/s)
 *   batch   memcpy on one core (GB/s -> samples/s by the bytes collated per sample); none when the map
 *           before it writes into the batch (fuse_map), which leaves nothing to copy
 *   h2d     the GPU link (pinned or pageable as the stage copies): one link, not per thread
 * A read stage with emulated storage (latency_us, bandwidth_mb_per_s) has those added to the calibrated
 * rate: per block, and as a cap on the whole stage.
 * Other stages (map, shuffle, prefetch, cache, the in-memory source) have no machine ceiling: null. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "efficiency.h"

/* A stage's ceiling: samples/s per thread, and a cap on the whole stage whatever its threads (the GPU
 * link, an emulated storage bandwidth; INFINITY when none). */
typedef struct ceiling {
  double per_thread, stage_cap;
  const char *source;
} ceiling;

/* The read stage: the calibrated storage, slowed by its emulated latency per block and capped by its
 * emulated bandwidth when the config sets them (calibrate measures the real disk, not the emulation). */
static ceiling read_ceiling(const pb_ceilings *c, double bytes_per_sample) {
  static const char *const k_sources[] = {"read_buffered_sequential_mb_per_s", "read_buffered_random_mb_per_s",
                                          "read_direct_sequential_mb_per_s", "read_direct_random_mb_per_s"};
  ceiling k = {c->read_mb_per_s * 1e6 / bytes_per_sample, INFINITY, k_sources[1]};
  for (int m = 0; m < PB_READ_MODES; m++)
    if (strcmp(c->read_mode, pb_read_mode_name((pb_read_mode)m)) == 0) k.source = k_sources[m];
  if (c->read_latency_us > 0 && c->read_block_bytes > 0) {
    double blocks = ceil(bytes_per_sample / c->read_block_bytes);
    k.per_thread = 1.0 / (1.0 / k.per_thread + blocks * c->read_latency_us * 1e-6);
    k.source = "read_emulated_storage";
  }
  if (c->read_cap_mb_per_s > 0) {
    k.stage_cap = c->read_cap_mb_per_s * 1e6 / bytes_per_sample;
    k.source = "read_emulated_storage";
  }
  return k;
}

/* The stage's ceiling, or per_thread NAN when it has none. */
static ceiling stage_ceiling(const pb_stage_report *sr, const pb_ceilings *c) {
  ceiling none = {NAN, INFINITY, NULL};
  if (strcmp(sr->type, "decode") == 0 && isfinite(c->decode_images_per_s))
    return (ceiling){c->decode_images_per_s, INFINITY, "decode_images_per_s_per_core"};
  double bytes_per_sample = sr->samples > 0 ? (double)sr->bytes_in / (double)sr->samples : NAN;
  if (!(bytes_per_sample > 0)) return none;
  if (strcmp(sr->type, "read") == 0 && isfinite(c->read_mb_per_s)) return read_ceiling(c, bytes_per_sample);
  /* collated in place (fuse_map), a batch copies nothing: no ceiling */
  if (strcmp(sr->type, "batch") == 0 && !sr->in_place && isfinite(c->memcpy_gb_per_s))
    return (ceiling){c->memcpy_gb_per_s * 1e9 / bytes_per_sample, INFINITY, "memcpy_gb_per_s_one_core"};
  if (strcmp(sr->type, "h2d") == 0 && isfinite(c->h2d_gb_per_s)) {
    double link = c->h2d_gb_per_s * 1e9 / bytes_per_sample; /* one link, not per thread */
    return (ceiling){link, link, "h2d_gb_per_s"};
  }
  return none;
}

/* Only a stage before a cache sees fewer samples than the pipeline delivers for a reason; elsewhere the
 * counts differ by the elements in flight at the window's edges, which must not raise the bound. */
static bool upstream_of_cache(const pb_report *r, int i) {
  for (int j = i + 1; j < r->nstages; j++)
    if (r->stages[j].type && strcmp(r->stages[j].type, "cache") == 0) return true;
  return false;
}

void pb_efficiency_compute(pb_report *r, const pb_ceilings *c) {
  pb_efficiency *e = &r->efficiency;
  memset(e, 0, sizeof *e);
  e->pipeline_pct = e->best_samples_per_s = NAN;
  e->have = c->have;
  snprintf(e->why, sizeof e->why, "%s", c->why);
  snprintf(e->source, sizeof e->source, "%s", c->have ? c->source : "");
  snprintf(e->measured_at, sizeof e->measured_at, "%s", c->measured_at);
  int cores = r->ncpu > 0 ? r->ncpu : 1;
  e->cores = cores;
  double delivered = r->measured_s > 0 && isfinite(r->samples_per_s) ? r->samples_per_s * r->measured_s : 0;
  for (int i = 0; i < r->nstages; i++) {
    pb_stage_report *sr = &r->stages[i];
    sr->ceiling_per_thread_per_s = sr->ceiling_per_s = sr->efficiency_pct = NAN;
    sr->ceiling_source = NULL;
    /* No samples in the window (upstream of a cache that replays): no work to put against a ceiling. */
    if (!c->have || sr->skipped || sr->samples == 0) continue;
    ceiling k = stage_ceiling(sr, c);
    if (!isfinite(k.per_thread)) continue;
    sr->ceiling_source = k.source;
    sr->ceiling_per_thread_per_s = k.per_thread;
    sr->ceiling_per_s = fmin(k.per_thread * sr->threads, k.stage_cap);
    double rate = r->measured_s > 0 ? (double)sr->samples / r->measured_s : NAN;
    sr->efficiency_pct = rate / sr->ceiling_per_s * 100.0;
    /* The best the machine allows: every core on this stage alone (a stage cap holds whatever the
     * cores).  A stage that saw only part of the pipeline's samples (a cache replays past it) bounds the
     * pipeline at that divided by its share. */
    double best = fmin(k.per_thread * cores, k.stage_cap);
    if (upstream_of_cache(r, i) && delivered > (double)sr->samples) best *= delivered / (double)sr->samples;
    if (!isfinite(e->best_samples_per_s) || best < e->best_samples_per_s) {
      e->best_samples_per_s = best;
      snprintf(e->limited_by, sizeof e->limited_by, "%s", sr->name);
    }
  }
  if (c->have && isfinite(r->device_rate_per_s) && r->device_rate_per_s > 0 &&
      (!isfinite(e->best_samples_per_s) || r->device_rate_per_s < e->best_samples_per_s)) {
    e->best_samples_per_s = r->device_rate_per_s; /* the device's own step rate bounds the pipeline too */
    snprintf(e->limited_by, sizeof e->limited_by, "device");
  }
  if (isfinite(e->best_samples_per_s) && e->best_samples_per_s > 0)
    e->pipeline_pct = r->samples_per_s / e->best_samples_per_s * 100.0;
}
