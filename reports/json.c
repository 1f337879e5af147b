/* report.json (docs/CONTRACT.md §3): the pb_report as a cJSON tree, and its atomic write to disk.
 *
 * Every section is built by one small function that returns NULL when anything in it failed to allocate;
 * put() propagates that up, so pb_report_to_json returns either a complete tree or NULL, never a report
 * that silently lacks keys.  Doubles are rounded before they are added because cJSON prints %.17g, which
 * turns 230.91 into 230.90999999999999 and makes the file hard to read and diff. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report.h"
#include "json_text.h"

/* Decimals per kind of number (see docs/METRICS.md); INT = an integer count, added unrounded. */
enum { INT = -1, MS = 3, US = 3, PCT = 2, PER_S = 1, FRAC = 4, SEC = 3 };

/* NAN (and +-inf) mean "not available": JSON null. */
static cJSON *num(double v, int decimals) {
  if (!isfinite(v)) return cJSON_CreateNull();
  if (decimals >= 0) {
    double scale = pow(10.0, decimals);
    double r = round(v * scale) / scale;
    if (isfinite(r)) v = r; /* a value too big to scale is already "round" */
  }
  return cJSON_CreateNumber(v);
}

static cJSON *u64(uint64_t v) { return cJSON_CreateNumber((double)v); }
static cJSON *str(const char *s) { return s ? cJSON_CreateString(s) : cJSON_CreateNull(); }

/* Adds `v` under `key`; on any failure (v NULL from an earlier allocation, or the add itself) frees v
 * and clears *ok. */
static void put(cJSON *obj, const char *key, cJSON *v, bool *ok) {
  if (!v || !obj || !cJSON_AddItemToObject(obj, key, v)) {
    cJSON_Delete(v);
    *ok = false;
  }
}

static cJSON *finish(cJSON *obj, bool ok) {
  if (ok && obj) return obj;
  cJSON_Delete(obj);
  return NULL;
}

/* The step kernel's start-up check against CUDA events (GPU only; null on the emulated device). */
static cJSON *step_kernel_json(const pb_report *r) {
  if (!r->step_kernel_measured) return cJSON_CreateNull();
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  put(o, "target_ms", num(r->step_kernel_target_ms, MS), &ok);
  put(o, "measured_ms", num(r->step_kernel_measured_ms, MS), &ok);
  put(o, "error_pct", num(r->step_kernel_error_pct, PCT), &ok);
  return finish(o, ok);
}

static cJSON *one_device_json(const pb_device_report *d) {
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  put(o, "index", cJSON_CreateNumber(d->index), &ok);
  put(o, "id", cJSON_CreateNumber(d->id), &ok);
  put(o, "name", str(d->name), &ok);
  put(o, "steps", u64(d->steps), &ok);
  put(o, "idle_pct", num(d->idle_pct, PCT), &ok);
  put(o, "input_wait_ms", num(d->input_wait_ms, MS), &ok);
  put(o, "h2d_gb_per_s", num(d->h2d_gb_per_s, FRAC), &ok);
  return finish(o, ok);
}

static cJSON *per_device_json(const pb_report *r) {
  cJSON *a = cJSON_CreateArray();
  bool ok = a != NULL;
  for (int k = 0; ok && k < r->device_count && k < PB_MAX_DEVICES; k++) {
    cJSON *d = one_device_json(&r->per_device[k]);
    if (!d || !cJSON_AddItemToArray(a, d)) cJSON_Delete(d), ok = false;
  }
  return finish(a, ok);
}

static cJSON *device_json(const pb_report *r) {
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  int n = r->device_count < PB_MAX_DEVICES ? r->device_count : PB_MAX_DEVICES;
  put(o, "kind", str(r->device_kind), &ok);
  put(o, "name", str(r->device_name), &ok);
  put(o, "count", cJSON_CreateNumber(r->device_count), &ok);
  put(o, "ids", cJSON_CreateIntArray(r->device_ids, n > 0 ? n : 0), &ok);
  put(o, "timing_source", str(r->timing_source), &ok);
  put(o, "timing_source_reason",
      r->timing_source_reason && r->timing_source_reason[0] ? str(r->timing_source_reason) : cJSON_CreateNull(), &ok);
  put(o, "gpu_timestamps_dropped", u64(r->gpu_timestamps_dropped), &ok);
  put(o, "idle_pct_cuda_events", num(r->idle_pct_cuda_events, PCT), &ok);
  put(o, "step_kernel", step_kernel_json(r), &ok);
  put(o, "per_device", per_device_json(r), &ok);
  put(o, "most_idle", cJSON_CreateNumber(r->most_idle_device), &ok);
  put(o, "host_late_ms", num(r->host_late_ms, MS), &ok);
  put(o, "host_late_pct", num(r->host_late_pct, PCT), &ok);
  return finish(o, ok);
}

static cJSON *throughput_json(const pb_report *r) {
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  put(o, "samples_per_s", num(r->samples_per_s, PER_S), &ok);
  /* batches are few per second (0.04/s with 25 s steps): one decimal would erase them */
  put(o, "batches_per_s", num(r->batches_per_s, 3), &ok);
  put(o, "bytes_per_s", num(r->bytes_per_s, PER_S), &ok);
  put(o, "noise_pct", num(r->noise_pct, PCT), &ok);
  return finish(o, ok);
}

static cJSON *steps_json(const pb_report *r) {
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  put(o, "count", u64(r->step_count), &ok);
  put(o, "mean_ms", num(r->step_mean_ms, MS), &ok);
  put(o, "p50_ms", num(r->step_p50_ms, MS), &ok);
  put(o, "p90_ms", num(r->step_p90_ms, MS), &ok);
  put(o, "p99_ms", num(r->step_p99_ms, MS), &ok);
  return finish(o, ok);
}

static cJSON *breakdown_json(const pb_report *r) {
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  put(o, "input_wait", num(r->input_wait_ms, MS), &ok);
  put(o, "h2d", num(r->h2d_ms, MS), &ok);
  put(o, "compute", num(r->compute_ms, MS), &ok);
  put(o, "comm", num(r->comm_ms, MS), &ok);
  put(o, "host_late", num(r->host_late_ms, MS), &ok);
  put(o, "other", num(r->other_ms, MS), &ok);
  return finish(o, ok);
}

/* device.allreduce: null when none; else the exchange per step, modelled and measured. */
static cJSON *allreduce_json(const pb_report *r) {
  const pb_allreduce_report *x = &r->allreduce;
  if (x->mode == PB_ALLREDUCE_NONE) return cJSON_CreateNull();
  cJSON *o = cJSON_CreateObject(), *m = cJSON_CreateObject();
  bool ok = true, okm = true;
  put(o, "mode", str(pb_allreduce_mode_name(x->mode)), &ok);
  put(o, "bytes", u64(x->bytes), &ok);
  put(o, "world_size", cJSON_CreateNumber(x->world_size), &ok);
  put(o, "gb_per_s", num(x->gb_per_s, 3), &ok);
  put(o, "model_ms", num(x->model_ms, MS), &ok);
  put(m, "mean", num(x->measured_mean_ms, MS), &okm);
  put(m, "p50", num(x->measured_p50_ms, MS), &okm);
  put(m, "p99", num(x->measured_p99_ms, MS), &okm);
  put(o, "measured_ms", finish(m, okm), &ok);
  put(o, "algbw_gb_per_s", num(x->algbw_gb_per_s, 3), &ok);
  put(o, "busbw_gb_per_s", num(x->busbw_gb_per_s, 3), &ok);
  put(o, "stopped_by_other_rank", cJSON_CreateBool(x->peer_stopped), &ok);
  return finish(o, ok);
}

/* The stage-graph node rebuilt from the trace (TF Profiler fields); null without a trace. */
static cJSON *graph_node_json(const pb_stage_report *s) {
  if (s->skipped || isnan(s->graph_self_ms)) return cJSON_CreateNull();
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  put(o, "parent", s->parent[0] ? cJSON_CreateString(s->parent) : cJSON_CreateNull(), &ok);
  put(o, "start_ms", num(s->graph_start_ms, MS), &ok);
  put(o, "total_ms", num(s->graph_total_ms, MS), &ok);
  put(o, "self_ms", num(s->graph_self_ms, MS), &ok);
  put(o, "calls", u64(s->graph_calls), &ok);
  return finish(o, ok);
}

/* One table drives both the measured stage and the skipped one (all nulls), so the two cannot drift. */
typedef struct stage_field {
  const char *key;
  double v;
  int decimals;
} stage_field;

static cJSON *stage_json(const pb_stage_report *s) {
  const stage_field f[] = {
      {"calls", (double)s->calls, INT},          {"total_ms", s->total_ms, MS},
      {"self_ms", s->self_ms, MS},               {"mean_us", s->mean_us, US},
      {"p50_us", s->p50_us, US},                 {"p99_us", s->p99_us, US},
      {"wait_in_ms", s->wait_in_ms, MS},         {"blocked_out_ms", s->blocked_out_ms, MS},
      {"utilization", s->utilization, FRAC},     {"capacity_per_s", s->capacity_per_s, PER_S},
      {"bytes_in", (double)s->bytes_in, INT},    {"bytes_out", (double)s->bytes_out, INT},
      {"queue_mean_fill", s->queue_mean_fill, FRAC},
      {"queue_capacity", s->queue_capacity, INT},
      {"critical_path_ms", s->critical_path_ms, MS},
      {"critical_path_pct", s->critical_path_pct, PCT},
      {"critical_path_self_ms", s->critical_path_self_ms, MS},
      {"cpu_fraction", s->cpu_fraction, FRAC},
      {"cpu_delay_fraction", s->cpu_delay_fraction, FRAC},
      {"ceiling_per_thread_per_s", s->ceiling_per_thread_per_s, PER_S},
      {"ceiling_per_s", s->ceiling_per_s, PER_S},
      {"efficiency_pct", s->efficiency_pct, PCT},
  };
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  put(o, "name", cJSON_CreateString(s->name), &ok);
  put(o, "type", str(s->type), &ok);
  put(o, "threads", cJSON_CreateNumber(s->threads), &ok);
  put(o, "skipped", cJSON_CreateBool(s->skipped), &ok);
  if (s->type && strcmp(s->type, "batch") == 0) put(o, "in_place", cJSON_CreateBool(s->in_place), &ok);
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
    put(o, f[i].key, s->skipped ? cJSON_CreateNull() : num(f[i].v, f[i].decimals), &ok);
  put(o, "ceiling_source", s->skipped ? cJSON_CreateNull() : str(s->ceiling_source), &ok);
  put(o, "graph", graph_node_json(s), &ok);
  return finish(o, ok);
}

static cJSON *stages_json(const pb_report *r) {
  cJSON *a = cJSON_CreateArray();
  bool ok = a != NULL;
  for (int i = 0; ok && i < r->nstages; i++) {
    cJSON *s = stage_json(&r->stages[i]);
    if (!s || !cJSON_AddItemToArray(a, s)) {
      cJSON_Delete(s);
      ok = false;
    }
  }
  return finish(a, ok);
}

static cJSON *bottleneck_json(const pb_report *r) {
  if (!r->bottleneck_stage[0]) return cJSON_CreateNull();
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  put(o, "stage", cJSON_CreateString(r->bottleneck_stage), &ok);
  cJSON *all = cJSON_CreateArray(); /* the stage and its co-bottlenecks */
  put(o, "stages", all, &ok);
  if (ok) cJSON_AddItemToArray(all, cJSON_CreateString(r->bottleneck_stage));
  for (int i = 0; ok && i < r->nco_stages; i++) cJSON_AddItemToArray(all, cJSON_CreateString(r->co_stages[i]));
  put(o, "transient", r->transient[0] ? cJSON_CreateString(r->transient) : cJSON_CreateNull(), &ok);
  put(o, "reason", cJSON_CreateString(r->bottleneck_reason), &ok);
  put(o, "capacity_per_s", num(r->bottleneck_capacity_per_s, PER_S), &ok);
  put(o, "required_per_s", num(r->bottleneck_required_per_s, PER_S), &ok);
  return finish(o, ok);
}

static cJSON *critical_path_json(const pb_report *r) {
  if (!r->critical_path_available) return cJSON_CreateNull();
  cJSON *o = cJSON_CreateObject(), *segs = cJSON_CreateArray();
  bool ok = segs != NULL;
  put(o, "total_ms", num(r->critical_path_total_ms, MS), &ok);
  for (int i = 0; ok && i < r->npath_segments; i++) {
    cJSON *e = cJSON_CreateObject();
    put(e, "stage", cJSON_CreateString(r->path_segments[i].stage), &ok);
    put(e, "ms", num(r->path_segments[i].ms, MS), &ok);
    put(e, "self_ms", num(r->path_segments[i].self_ms, MS), &ok);
    if (!ok || !cJSON_AddItemToArray(segs, e)) {
      cJSON_Delete(e);
      ok = false;
    }
  }
  put(o, "segments", segs, &ok);
  put(o, "hops", u64(r->critical_path_hops), &ok);
  put(o, "ended_at", cJSON_CreateString(r->critical_path_stop), &ok);
  return finish(o, ok);
}

static cJSON *trace_json(const pb_report *r) {
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  put(o, "enabled", cJSON_CreateBool(r->traced), &ok);
  put(o, "events", u64(r->trace_events), &ok);
  put(o, "events_dropped", u64(r->trace_events_dropped), &ok);
  put(o, "complete", r->traced ? cJSON_CreateBool(r->trace_complete) : cJSON_CreateNull(), &ok);
  put(o, "analysed_ms", r->traced ? num(r->trace_window_ms, MS) : cJSON_CreateNull(), &ok);
  put(o, "measured_ms", num(r->measured_s * 1e3, MS), &ok);
  return finish(o, ok);
}

static cJSON *model_json(const pb_report *r) {
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  put(o, "lowest_capacity_stage", r->model_stage[0] ? cJSON_CreateString(r->model_stage) : cJSON_CreateNull(), &ok);
  put(o, "lowest_capacity_per_s", num(r->model_capacity_per_s, PER_S), &ok);
  put(o, "device_rate_per_s", num(r->device_rate_per_s, PER_S), &ok);
  put(o, "cpu_limit_per_s", num(r->cpu_limit_per_s, PER_S), &ok);
  put(o, "cpus", cJSON_CreateNumber(r->ncpu), &ok);
  put(o, "cores_used", num(r->cores_used, 2), &ok);
  return finish(o, ok);
}

/* The model of the pipeline (model.h): how well its replay of this run matched it. */
static cJSON *pipeline_model_json(const pb_report *r) {
  const pb_model *m = &r->model;
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  put(o, "valid", cJSON_CreateBool(m->valid), &ok);
  put(o, "why", m->valid ? cJSON_CreateNull() : cJSON_CreateString(m->why), &ok);
  put(o, "replay_samples_per_s", num(m->valid ? m->replay_samples_per_s : NAN, PER_S), &ok);
  put(o, "replay_idle_pct", num(m->valid ? m->replay_idle_pct : NAN, PCT), &ok);
  put(o, "fit_error_pct", num(m->valid ? m->fit_error_pct : NAN, PCT), &ok);
  put(o, "calibrated", cJSON_CreateBool(m->calibrated), &ok);
  put(o, "service_scale", num(m->valid ? m->service_scale : NAN, 4), &ok);
  put(o, "cores", num(m->valid ? m->cores : NAN, 2), &ok);
  put(o, "epoch_samples", m->valid && m->epoch_samples > 0 ? cJSON_CreateNumber((double)m->epoch_samples) : cJSON_CreateNull(), &ok);
  return finish(o, ok);
}

static cJSON *machine_json(const pb_report *r) {
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  put(o, "cores_online", cJSON_CreateNumber(r->ncpu), &ok);
  put(o, "cores_usable", num(r->cores_usable, 2), &ok);
  put(o, "cores_affinity", num(r->cores_affinity, 2), &ok);
  put(o, "cores_quota", num(r->cores_quota, 2), &ok);
  put(o, "cores_taken_by_others", num(r->cores_taken_by_others, 2), &ok);
  put(o, "limited_by", r->cores_limited_by[0] ? cJSON_CreateString(r->cores_limited_by) : cJSON_CreateNull(), &ok);
  return finish(o, ok);
}

static cJSON *recommendations_json(const pb_report *r) {
  cJSON *a = cJSON_CreateArray();
  bool ok = a != NULL;
  for (int i = 0; ok && i < r->nrecommendations; i++) {
    const pb_recommendation *rc = &r->recommendations[i];
    cJSON *e = cJSON_CreateObject();
    put(e, "action", cJSON_CreateString(rc->action), &ok);
    put(e, "reason", cJSON_CreateString(rc->reason), &ok);
    put(e, "predicted_samples_per_s", num(rc->predicted_samples_per_s, PER_S), &ok);
    put(e, "predicted_idle_pct", num(rc->predicted_idle_pct, PCT), &ok);
    put(e, "up_to", cJSON_CreateBool(rc->up_to), &ok);
    put(e, "kind", str(rc->kind), &ok);
    if (!ok || !cJSON_AddItemToArray(a, e)) {
      cJSON_Delete(e);
      ok = false;
    }
  }
  return finish(a, ok);
}

static cJSON *first_errors_json(const pb_report *r) {
  cJSON *a = cJSON_CreateArray();
  bool ok = a != NULL;
  int n = r->nfirst_errors < PB_MAX_FIRST_ERRORS ? r->nfirst_errors : PB_MAX_FIRST_ERRORS;
  for (int i = 0; ok && i < n; i++) {
    cJSON *e = cJSON_CreateObject();
    put(e, "file", cJSON_CreateString(r->first_errors[i].file), &ok);
    put(e, "message", cJSON_CreateString(r->first_errors[i].message), &ok);
    if (!ok || !cJSON_AddItemToArray(a, e)) {
      cJSON_Delete(e);
      ok = false;
    }
  }
  return finish(a, ok);
}

static cJSON *accounting_json(const pb_report *r) {
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  put(o, "files_read", u64(r->files_read), &ok);
  put(o, "samples_read", u64(r->samples_read), &ok);
  put(o, "samples_decoded", u64(r->samples_decoded), &ok);
  put(o, "samples_batched", u64(r->samples_batched), &ok);
  put(o, "samples_consumed", u64(r->samples_consumed), &ok);
  put(o, "samples_dropped", u64(r->samples_dropped), &ok);
  put(o, "errors", u64(r->errors), &ok);
  put(o, "samples_in_flight", u64(r->samples_in_flight), &ok);
  put(o, "balanced", cJSON_CreateBool(r->balanced), &ok);
  put(o, "first_errors", first_errors_json(r), &ok);
  return finish(o, ok);
}

static cJSON *engine_json(const pb_report *r) {
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  put(o, "cpu_s", num(r->cpu_s, SEC), &ok);
  put(o, "cpu_ns_per_sample", num(r->cpu_ns_per_sample, 1), &ok);
  return finish(o, ok);
}

/* What the pipeline may buffer (checked against limits.max_memory_mb before the run), the trace rings, and
 * the process's peak resident set; peak_rss_bytes is null when unknown (a trace from before it existed). */
static cJSON *memory_json(const pb_report *r) {
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  put(o, "planned_bytes", u64(r->memory_planned_bytes), &ok);
  put(o, "limit_bytes", u64(r->memory_limit_bytes), &ok);
  put(o, "trace_bytes", u64(r->memory_trace_bytes), &ok);
  put(o, "peak_rss_bytes", r->memory_peak_rss_bytes ? u64(r->memory_peak_rss_bytes) : cJSON_CreateNull(), &ok);
  return finish(o, ok);
}

/* How close to the machine's ceilings (METRICS.md "efficiency"); calibration null (and why) without one. */
static cJSON *efficiency_json(const pb_report *r) {
  const pb_efficiency *e = &r->efficiency;
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  if (e->have) {
    cJSON *c = cJSON_CreateObject();
    put(c, "file", cJSON_CreateString(e->source), &ok);
    put(c, "measured_at", cJSON_CreateString(e->measured_at), &ok);
    put(o, "calibration", c, &ok);
  } else {
    put(o, "calibration", cJSON_CreateNull(), &ok);
  }
  put(o, "why", e->have ? cJSON_CreateNull() : cJSON_CreateString(e->why), &ok);
  put(o, "cores", cJSON_CreateNumber(e->cores), &ok);
  put(o, "best_samples_per_s", num(e->best_samples_per_s, PER_S), &ok);
  put(o, "limited_by", e->limited_by[0] ? cJSON_CreateString(e->limited_by) : cJSON_CreateNull(), &ok);
  put(o, "pipeline_pct", num(e->pipeline_pct, PCT), &ok);
  return finish(o, ok);
}

/* The run as a whole, before the per-stage table. */
static void put_run(cJSON *root, const pb_report *r, bool *ok) {
  put(root, "pipebench_version", str(r->version), ok);
  put(root, "config", r->config ? cJSON_Duplicate(r->config, 1) : cJSON_CreateNull(), ok);
  put(root, "data", cJSON_CreateString(r->synthetic ? "synthetic" : "real"), ok);
  put(root, "interrupted", cJSON_CreateBool(r->interrupted), ok);
  put(root, "device", device_json(r), ok);
  put(root, "measured_s", num(r->measured_s, SEC), ok);
  put(root, "warmup_steps", cJSON_CreateNumber((double)r->warmup_steps), ok);
  put(root, "throughput", throughput_json(r), ok);
  put(root, "steps", steps_json(r), ok);
  put(root, "step_breakdown_ms", breakdown_json(r), ok);
  put(root, "allreduce", allreduce_json(r), ok);
  put(root, "device_idle_pct", num(r->device_idle_pct, PCT), ok);
  put(root, "accelerator_utilization_pct", num(r->accelerator_utilization_pct, PCT), ok);
  put(root, "input_bound_pct", num(r->input_bound_pct, PCT), ok);
  put(root, "classification", str(r->classification), ok);
}

cJSON *pb_report_to_json(const pb_report *r) {
  cJSON *root = cJSON_CreateObject();
  bool ok = true;
  put_run(root, r, &ok);
  put(root, "stages", stages_json(r), &ok);
  put(root, "critical_path", critical_path_json(r), &ok);
  put(root, "bottleneck", bottleneck_json(r), &ok);
  put(root, "capacity_model", model_json(r), &ok);
  put(root, "model", pipeline_model_json(r), &ok);
  put(root, "machine", machine_json(r), &ok);
  put(root, "recommendations", recommendations_json(r), &ok);
  put(root, "trace", trace_json(r), &ok);
  put(root, "ranks", cJSON_CreateNull(), &ok);
  put(root, "most_input_bound_rank", cJSON_CreateNull(), &ok);
  put(root, "accounting", accounting_json(r), &ok);
  put(root, "engine", engine_json(r), &ok);
  put(root, "memory", memory_json(r), &ok);
  put(root, "efficiency", efficiency_json(r), &ok);
  return finish(root, ok);
}

static int text_body(FILE *f, const void *text) {
  return fputs(text, f) < 0 || fputc('\n', f) == EOF ? (errno ? -errno : -EIO) : 0;
}

/* Written to PATH.tmp and renamed over PATH (pb_write_atomic), so a reader (a watcher, a crashed run's
 * leftovers) sees either the old report or the whole new one, and a second signal leaves no PATH.tmp.  A
 * failed write, flush or close (a deferred error: NFS, quota) counts.  No fsync: surviving a power cut is
 * not worth the latency at the end of every run. */
int pb_report_write_json(const pb_report *r, const char *path) {
  cJSON *tree = pb_report_to_json(r);
  char *text = tree ? pb_json_print(tree, true) : NULL;
  cJSON_Delete(tree);
  int rc = text ? pb_write_atomic(path, text_body, text) : -ENOMEM;
  cJSON_free(text);
  return rc;
}
