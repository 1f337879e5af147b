/* calibrate's summary (calibrate_out.h). */
#include "calibrate_out.h"

#include <math.h>
#include <string.h>

bool pb_calibrate_out_same_dataset(const pb_calib_dataset *d, const pb_calib_dataset *key) {
  return strcmp(d->path, key->path) == 0 && d->block_bytes == key->block_bytes && strcmp(d->scale, key->scale) == 0 &&
         d->decode_min_side == key->decode_min_side && d->fused_crop == key->fused_crop;
}

static void machine_text(FILE *out, const pb_calibration *c) {
  fprintf(out, "calibration: %s (%s)\n", c->machine, c->measured_at);
  fprintf(out, "  cores            %d\n", c->cores);
  fprintf(out, "  memcpy           %.2f GB/s one core, %.2f GB/s all cores\n", c->memcpy_gb_per_s,
          c->memcpy_all_gb_per_s);
  /* all cores together slower than one alone: other work took the cores while it measured */
  if (c->cores > 1 && c->memcpy_all_gb_per_s < c->memcpy_gb_per_s)
    fprintf(out,
            "  IMPLAUSIBLE      one core copied faster than all %d together: the machine was busy while this "
            "was measured (run pipebench calibrate --force on a quiet machine)\n",
            c->cores);
  if (isfinite(c->h2d_pinned_gb_per_s))
    fprintf(out, "  h2d (%s)  %.2f GB/s pinned, %.2f GB/s pageable; step kernel %.3f ms for %.3f ms (%+.2f %%)\n",
            c->gpu_name, c->h2d_pinned_gb_per_s, c->h2d_pageable_gb_per_s, c->step_kernel_measured_ms,
            c->step_kernel_target_ms, c->step_kernel_error_pct);
  else
    fprintf(out, "  h2d              not measured: %s\n", c->gpu_why);
}

static void dataset_text(FILE *out, const pb_calib_dataset *d) {
  fprintf(out, "  dataset          %s (%llu files, %.1f MB)\n", d->path, (unsigned long long)d->files,
          (double)d->bytes / 1e6);
  if (isfinite(d->decode_images_per_s))
    fprintf(out, "  decode           %.1f images/s per core (%.1f MB/s compressed; scale %s%s)\n",
            d->decode_images_per_s, d->decode_mb_per_s, d->scale,
            d->fused_crop ? ", the crops' regions (fused_crop)" : "");
  for (int m = 0; m < PB_READ_MODES && d->block_bytes; m++) {
    if (isfinite(d->read_mb_per_s[m]))
      fprintf(out, "  read %-19s %.1f MB/s one thread (%d-byte blocks)\n", pb_read_mode_name((pb_read_mode)m),
              d->read_mb_per_s[m], d->block_bytes);
    else
      fprintf(out, "  read %-19s not measured: %s\n", pb_read_mode_name((pb_read_mode)m), d->read_why[m]);
  }
}

void pb_calibrate_out_text(FILE *out, const pb_calibration *c, const pb_calib_dataset *key, const char *cache) {
  machine_text(out, c);
  for (int i = 0; key && i < c->ndatasets; i++)
    if (pb_calibrate_out_same_dataset(&c->datasets[i], key)) dataset_text(out, &c->datasets[i]);
  if (cache) fprintf(out, "  saved in         %s\n", cache);
}
