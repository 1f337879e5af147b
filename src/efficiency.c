/* How close to the hardware (docs/METRICS.md "efficiency"): each stage's throughput against its ceiling
 * x its threads, and the pipeline's against the best the machine allows, from the calibration the run
 * found (calibration.h).  Ceilings are per thread, measured by `pipebench calibrate` doing only that work:
 *   read    the dataset's storage, one thread, the read stage's block size and mode (MB/s -> samples/s by
 *           the bytes each sample took in this run)
 *   decode  the dataset's own JPEGs, one core, at the decode stage's scale (images/s)
 *   batch   memcpy on one core (GB/s -> samples/s by the bytes collated per sample)
 *   h2d     the GPU link (pinned or pageable as the stage copies): one link, not per thread
 * Other stages (map, shuffle, prefetch, cache, the in-memory source) have no machine ceiling: null. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "efficiency.h"

/* Samples/s one thread of the stage could reach at the calibrated rate, or NAN; *source names it. */
static double per_thread_ceiling(const pb_stage_report *sr, const pb_ceilings *c, const char **source, bool *per_link) {
  *per_link = false;
  *source = NULL;
  if (strcmp(sr->type, "decode") == 0 && isfinite(c->decode_images_per_s)) {
    *source = "decode_images_per_s_per_core";
    return c->decode_images_per_s;
  }
  double bytes_per_sample = sr->samples > 0 ? (double)sr->bytes_in / (double)sr->samples : NAN;
  if (!(bytes_per_sample > 0)) return NAN;
  if (strcmp(sr->type, "read") == 0 && isfinite(c->read_mb_per_s)) {
    static const char *const k_sources[] = {"read_buffered_sequential_mb_per_s", "read_buffered_random_mb_per_s",
                                            "read_direct_sequential_mb_per_s", "read_direct_random_mb_per_s"};
    *source = k_sources[1]; /* a calibration's read_mode is one of the four (calibration.c) */
    for (int m = 0; m < PB_READ_MODES; m++)
      if (strcmp(c->read_mode, pb_read_mode_name((pb_read_mode)m)) == 0) *source = k_sources[m];
    return c->read_mb_per_s * 1e6 / bytes_per_sample;
  }
  if (strcmp(sr->type, "batch") == 0 && isfinite(c->memcpy_gb_per_s)) {
    *source = "memcpy_gb_per_s_one_core";
    return c->memcpy_gb_per_s * 1e9 / bytes_per_sample;
  }
  if (strcmp(sr->type, "h2d") == 0 && isfinite(c->h2d_gb_per_s)) {
    *source = "h2d_gb_per_s";
    *per_link = true;
    return c->h2d_gb_per_s * 1e9 / bytes_per_sample;
  }
  return NAN;
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
  for (int i = 0; i < r->nstages; i++) {
    pb_stage_report *sr = &r->stages[i];
    sr->ceiling_per_thread_per_s = sr->ceiling_per_s = sr->efficiency_pct = NAN;
    sr->ceiling_source = NULL;
    if (!c->have || sr->skipped) continue;
    bool per_link;
    double one = per_thread_ceiling(sr, c, &sr->ceiling_source, &per_link);
    if (!isfinite(one)) continue;
    sr->ceiling_per_thread_per_s = one;
    sr->ceiling_per_s = per_link ? one : one * sr->threads;
    double rate = r->measured_s > 0 ? (double)sr->samples / r->measured_s : NAN;
    sr->efficiency_pct = rate / sr->ceiling_per_s * 100.0;
    /* The best the machine allows: every core on this stage alone (the link is one, whatever the cores). */
    double best = per_link ? one : one * cores;
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
