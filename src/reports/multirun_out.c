/* The figures every command made of several runs writes the same way (multirun_out.h). */
#include "multirun_out.h"

#include <math.h>

void pb_multi_add_number(cJSON *o, const char *key, double v, int decimals) {
  if (isnan(v) || isinf(v)) {
    cJSON_AddNullToObject(o, key);
    return;
  }
  double scale = pow(10.0, decimals), r = round(v * scale) / scale;
  cJSON_AddNumberToObject(o, key, isfinite(r) ? r : v);
}

const char *pb_multi_bottleneck(const pb_report *r) {
  return r->bottleneck_stage[0] ? r->bottleneck_stage : "-";
}

cJSON *pb_multi_figures_json(const pb_run_figures *f, const char *out_dir) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddNumberToObject(o, "status", f->status);
  cJSON_AddStringToObject(o, "out_dir", out_dir);
  pb_multi_add_number(o, "samples_per_s", f->samples_per_s, 1);
  pb_multi_add_number(o, "batches_per_s", f->batches_per_s, 1);
  pb_multi_add_number(o, "device_idle_pct", f->device_idle_pct, 2);
  pb_multi_add_number(o, "accelerator_utilization_pct", f->accelerator_utilization_pct, 2);
  pb_multi_add_number(o, "input_bound_pct", f->input_bound_pct, 2);
  if (f->have && f->classification) cJSON_AddStringToObject(o, "classification", f->classification);
  else cJSON_AddNullToObject(o, "classification");
  if (f->have && f->bottleneck[0]) cJSON_AddStringToObject(o, "bottleneck", f->bottleneck);
  else cJSON_AddNullToObject(o, "bottleneck");
  cJSON_AddBoolToObject(o, "interrupted", f->interrupted);
  return o;
}

cJSON *pb_multi_run_json(const pb_report *r, int status, const char *out_dir) {
  pb_run_figures f;
  pb_run_figures_of(r, status, 0, &f);
  return pb_multi_figures_json(&f, out_dir);
}
