#include "multirun.h"
#include "json_text.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "gen.h"
#include "html.h"

int pb_multi_load(const pb_multi *m, const char *const *sets, int nsets, pb_config *cfg, pb_err *err) {
  const char *all[PB_MULTI_MAX_SETS + 1];
  int n = 0;
  for (int i = 0; i < m->nbase_sets && n < PB_MULTI_MAX_SETS; i++) all[n++] = m->base_sets[i];
  for (int i = 0; i < nsets && n < PB_MULTI_MAX_SETS; i++) all[n++] = sets[i];
  all[n] = NULL;
  return pb_config_load(cfg, m->config_file, all, n, err);
}

int pb_multi_begin(pb_multi *m, const char *const *sets, int nsets, pb_config *base, bool needs_real_data) {
  pb_err err;
  if (pb_multi_load(m, sets, nsets, base, &err)) {
    fprintf(stderr, "pipebench: %s\n", err.msg);
    return PB_EXIT_USAGE;
  }
  if (pb_engine_check(base, !needs_real_data, &err)) {
    fprintf(stderr, "pipebench: %s\n", err.msg);
    return PB_EXIT_USAGE;
  }
  int rc = needs_real_data ? pb_gen_if_missing(base, m->run.quiet, m->run.no_progress) : 0;
  if (rc) return rc;
  snprintf(m->name, sizeof m->name, "%s", base->name);
  return pb_run_make_out_dir(base, m->run.out_dir, m->command, m->out_dir, sizeof m->out_dir);
}

int pb_multi_run(pb_multi *m, const pb_config *cfg, const char *name, bool synthetic, pb_report *report) {
  pb_run_opts o = m->run;
  char dir[PB_PATH_LEN + 64];
  snprintf(dir, sizeof dir, "%s/%s", m->out_dir, name);
  o.out_dir = dir;
  o.synthetic = synthetic;
  if (!m->device_given) o.device = cfg->device.kind;
  /* the command prints its own table; each run keeps its own files */
  o.formats = (m->run.formats & (PB_FMT_TRACE | PB_FMT_HTML | PB_FMT_CSV)) | PB_FMT_JSON;
  o.json_stdout = false;
  snprintf(m->progress_label, sizeof m->progress_label, "%s %s", m->command, name);
  o.progress_label = m->progress_label;
  o.quiet_notices = m->first_notice_shown;
  o.result = report;
  m->first_notice_shown = true;
  m->runs++;
  memset(report, 0, sizeof *report);
  report->samples_per_s = NAN;
  /* a run whose generate settings differ from the dataset there (a sweep over a generate key that
   * keeps one dataset.path) reads the files its config names, as `run` would */
  int rc = synthetic ? 0 : pb_gen_if_missing(cfg, m->run.quiet, m->run.no_progress);
  return rc ? rc : pb_run(cfg, &o);
}

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

cJSON *pb_multi_run_json(const pb_report *r, int status, const char *out_dir) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddNumberToObject(o, "status", status);
  cJSON_AddStringToObject(o, "out_dir", out_dir);
  bool have = r->version != NULL; /* the run wrote a report */
  pb_multi_add_number(o, "samples_per_s", have ? r->samples_per_s : NAN, 1);
  pb_multi_add_number(o, "batches_per_s", have ? r->batches_per_s : NAN, 1);
  pb_multi_add_number(o, "device_idle_pct", have ? r->device_idle_pct : NAN, 2);
  pb_multi_add_number(o, "accelerator_utilization_pct", have ? r->accelerator_utilization_pct : NAN, 2);
  pb_multi_add_number(o, "input_bound_pct", have ? r->input_bound_pct : NAN, 2);
  if (have && r->classification) cJSON_AddStringToObject(o, "classification", r->classification);
  else cJSON_AddNullToObject(o, "classification");
  if (have && r->bottleneck_stage[0]) cJSON_AddStringToObject(o, "bottleneck", r->bottleneck_stage);
  else cJSON_AddNullToObject(o, "bottleneck");
  cJSON_AddBoolToObject(o, "interrupted", have && r->interrupted);
  return o;
}

int pb_multi_write_json(const pb_multi *m, const char *name, cJSON *json) {
  char path[PB_PATH_LEN + 64];
  snprintf(path, sizeof path, "%s/%s", m->out_dir, name);
  char *text = json ? pb_json_print(json, true) : NULL;
  FILE *f = text ? fopen(path, "w") : NULL;
  int rc = 0;
  if (!f || fprintf(f, "%s\n", text) < 0) rc = text ? -errno : -ENOMEM;
  if (f && fclose(f) != 0 && !rc) rc = -errno;
  free(text);
  if (rc) {
    fprintf(stderr, "pipebench: %s: cannot write: %s\n", path, strerror(-rc));
    return PB_EXIT_RUNTIME;
  }
  if (!(m->run.formats & PB_FMT_HTML)) return 0;
  snprintf(path, sizeof path, "%s/report.html", m->out_dir);
  rc = pb_html_write_command(m->command, m->name, m->config_file, m->out_dir, true, json, path);
  if (rc) {
    fprintf(stderr, "pipebench: %s: cannot write the HTML report: %s\n", path, strerror(-rc));
    return PB_EXIT_RUNTIME;
  }
  return 0;
}
