/* report.json (docs/CONTRACT.md §3): the pb_report as a cJSON tree, and its atomic write to disk.
 *
 * Every section is built by one small function that returns NULL when anything in it failed to allocate;
 * pb_json_put() propagates that up, so pb_report_to_json returns either a complete tree or NULL, never a report
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
#include "json_util.h"

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

/* The step kernel's start-up check against CUDA events (GPU only; null on the emulated device). */
static cJSON *step_kernel_json(const pb_report *r) {
  if (!r->step_kernel_measured) return cJSON_CreateNull();
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  pb_json_put(o, "target_ms", num(r->step_kernel_target_ms, MS), &ok);
  pb_json_put(o, "measured_ms", num(r->step_kernel_measured_ms, MS), &ok);
  pb_json_put(o, "error_pct", num(r->step_kernel_error_pct, PCT), &ok);
  return pb_json_finish(o, ok);
}

static cJSON *one_device_json(const pb_device_report *d) {
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  pb_json_put(o, "index", cJSON_CreateNumber(d->index), &ok);
  pb_json_put(o, "id", cJSON_CreateNumber(d->id), &ok);
  pb_json_put(o, "name", str(d->name), &ok);
  pb_json_put(o, "steps", u64(d->steps), &ok);
  pb_json_put(o, "idle_pct", num(d->idle_pct, PCT), &ok);
  pb_json_put(o, "input_wait_ms", num(d->input_wait_ms, MS), &ok);
  pb_json_put(o, "h2d_gb_per_s", num(d->h2d_gb_per_s, FRAC), &ok);
  return pb_json_finish(o, ok);
}

static cJSON *per_device_json(const pb_report *r) {
  cJSON *a = cJSON_CreateArray();
  bool ok = a != NULL;
  for (int k = 0; ok && k < r->device_count && k < PB_MAX_DEVICES; k++) {
    cJSON *d = one_device_json(&r->per_device[k]);
    pb_json_push(a, d, &ok);
  }
  return pb_json_finish(a, ok);
}

static cJSON *device_json(const pb_report *r) {
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  int n = r->device_count < PB_MAX_DEVICES ? r->device_count : PB_MAX_DEVICES;
  pb_json_put(o, "kind", str(r->device_kind), &ok);
  pb_json_put(o, "name", str(r->device_name), &ok);
  pb_json_put(o, "fallback_reason", r->device_fallback[0] ? str(r->device_fallback) : cJSON_CreateNull(), &ok);
  pb_json_put(o, "count", cJSON_CreateNumber(r->device_count), &ok);
  pb_json_put(o, "ids", cJSON_CreateIntArray(r->device_ids, n > 0 ? n : 0), &ok);
  pb_json_put(o, "timing_source", str(r->timing_source), &ok);
  pb_json_put(o, "timing_source_reason",
      r->timing_source_reason && r->timing_source_reason[0] ? str(r->timing_source_reason) : cJSON_CreateNull(), &ok);
  pb_json_put(o, "gpu_timestamps_dropped", u64(r->gpu_timestamps_dropped), &ok);
  pb_json_put(o, "idle_pct_cuda_events", num(r->idle_pct_cuda_events, PCT), &ok);
  pb_json_put(o, "step_kernel", step_kernel_json(r), &ok);
  pb_json_put(o, "per_device", per_device_json(r), &ok);
  pb_json_put(o, "most_idle", cJSON_CreateNumber(r->most_idle_device), &ok);
  pb_json_put(o, "host_late_ms", num(r->host_late_ms, MS), &ok);
  pb_json_put(o, "host_late_pct", num(r->host_late_pct, PCT), &ok);
  return pb_json_finish(o, ok);
}

/* run.au_target_pct's verdict: null without a target; passed null when there was no AU to judge. */
static cJSON *au_target_json(const pb_report *r) {
  if (!(r->au_target_pct > 0)) return cJSON_CreateNull();
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  pb_json_put(o, "target_pct", num(r->au_target_pct, PCT), &ok);
  pb_json_put(o, "passed", r->au_passed < 0 ? cJSON_CreateNull() : cJSON_CreateBool(r->au_passed), &ok);
  return pb_json_finish(o, ok);
}

static cJSON *throughput_json(const pb_report *r) {
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  pb_json_put(o, "samples_per_s", num(r->samples_per_s, PER_S), &ok);
  /* batches are few per second (0.04/s with 25 s steps): one decimal would erase them */
  pb_json_put(o, "batches_per_s", num(r->batches_per_s, 3), &ok);
  pb_json_put(o, "bytes_per_s", num(r->bytes_per_s, PER_S), &ok);
  pb_json_put(o, "storage_bytes_per_s", num(r->storage_bytes_per_s, PER_S), &ok);
  pb_json_put(o, "read_ops_per_s", num(r->read_ops_per_s, PER_S), &ok);
  pb_json_put(o, "noise_pct", num(r->noise_pct, PCT), &ok);
  return pb_json_finish(o, ok);
}

static cJSON *steps_json(const pb_report *r) {
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  pb_json_put(o, "count", u64(r->step_count), &ok);
  pb_json_put(o, "mean_ms", num(r->step_mean_ms, MS), &ok);
  pb_json_put(o, "p50_ms", num(r->step_p50_ms, MS), &ok);
  pb_json_put(o, "p90_ms", num(r->step_p90_ms, MS), &ok);
  pb_json_put(o, "p99_ms", num(r->step_p99_ms, MS), &ok);
  return pb_json_finish(o, ok);
}

static cJSON *breakdown_json(const pb_report *r) {
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  pb_json_put(o, "input_wait", num(r->input_wait_ms, MS), &ok);
  pb_json_put(o, "h2d", num(r->h2d_ms, MS), &ok);
  pb_json_put(o, "compute", num(r->compute_ms, MS), &ok);
  pb_json_put(o, "comm", num(r->comm_ms, MS), &ok);
  pb_json_put(o, "host_late", num(r->host_late_ms, MS), &ok);
  pb_json_put(o, "other", num(r->other_ms, MS), &ok);
  return pb_json_finish(o, ok);
}

/* device.allreduce: null when none; else the exchange per step, modelled and measured. */
static cJSON *allreduce_json(const pb_report *r) {
  const pb_allreduce_report *x = &r->allreduce;
  if (x->mode == PB_ALLREDUCE_NONE) return cJSON_CreateNull();
  cJSON *o = cJSON_CreateObject(), *m = cJSON_CreateObject();
  bool ok = true, okm = true;
  pb_json_put(o, "mode", str(pb_allreduce_mode_name(x->mode)), &ok);
  pb_json_put(o, "bytes", u64(x->bytes), &ok);
  pb_json_put(o, "world_size", cJSON_CreateNumber(x->world_size), &ok);
  pb_json_put(o, "gb_per_s", num(x->gb_per_s, 3), &ok);
  pb_json_put(o, "model_ms", num(x->model_ms, MS), &ok);
  pb_json_put(m, "mean", num(x->measured_mean_ms, MS), &okm);
  pb_json_put(m, "p50", num(x->measured_p50_ms, MS), &okm);
  pb_json_put(m, "p99", num(x->measured_p99_ms, MS), &okm);
  pb_json_put(o, "measured_ms", pb_json_finish(m, okm), &ok);
  pb_json_put(o, "algbw_gb_per_s", num(x->algbw_gb_per_s, 3), &ok);
  pb_json_put(o, "busbw_gb_per_s", num(x->busbw_gb_per_s, 3), &ok);
  pb_json_put(o, "stopped_by_other_rank", cJSON_CreateBool(x->peer_stopped), &ok);
  return pb_json_finish(o, ok);
}

/* The stage-graph node rebuilt from the trace (TF Profiler fields); null without a trace. */
static cJSON *graph_node_json(const pb_stage_report *s) {
  if (s->skipped || isnan(s->graph_self_ms)) return cJSON_CreateNull();
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  pb_json_put(o, "parent", s->parent[0] ? cJSON_CreateString(s->parent) : cJSON_CreateNull(), &ok);
  pb_json_put(o, "start_ms", num(s->graph_start_ms, MS), &ok);
  pb_json_put(o, "total_ms", num(s->graph_total_ms, MS), &ok);
  pb_json_put(o, "self_ms", num(s->graph_self_ms, MS), &ok);
  pb_json_put(o, "calls", u64(s->graph_calls), &ok);
  return pb_json_finish(o, ok);
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
  pb_json_put(o, "name", cJSON_CreateString(s->name), &ok);
  pb_json_put(o, "type", str(s->type), &ok);
  pb_json_put(o, "threads", cJSON_CreateNumber(s->threads), &ok);
  pb_json_put(o, "skipped", cJSON_CreateBool(s->skipped), &ok);
  if (s->type && strcmp(s->type, "batch") == 0) pb_json_put(o, "in_place", cJSON_CreateBool(s->in_place), &ok);
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
    pb_json_put(o, f[i].key, s->skipped ? cJSON_CreateNull() : num(f[i].v, f[i].decimals), &ok);
  pb_json_put(o, "ceiling_source", s->skipped ? cJSON_CreateNull() : str(s->ceiling_source), &ok);
  pb_json_put(o, "graph", graph_node_json(s), &ok);
  return pb_json_finish(o, ok);
}

static cJSON *stages_json(const pb_report *r) {
  cJSON *a = cJSON_CreateArray();
  bool ok = a != NULL;
  for (int i = 0; ok && i < r->nstages; i++) {
    cJSON *s = stage_json(&r->stages[i]);
    pb_json_push(a, s, &ok);
  }
  return pb_json_finish(a, ok);
}

static cJSON *bottleneck_json(const pb_report *r) {
  if (!r->bottleneck_stage[0]) return cJSON_CreateNull();
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  pb_json_put(o, "stage", cJSON_CreateString(r->bottleneck_stage), &ok);
  cJSON *all = cJSON_CreateArray(); /* the stage and its co-bottlenecks */
  pb_json_put(o, "stages", all, &ok);
  pb_json_push(all, cJSON_CreateString(r->bottleneck_stage), &ok);
  for (int i = 0; ok && i < r->nco_stages; i++) pb_json_push(all, cJSON_CreateString(r->co_stages[i]), &ok);
  pb_json_put(o, "transient", r->transient[0] ? cJSON_CreateString(r->transient) : cJSON_CreateNull(), &ok);
  pb_json_put(o, "reason", cJSON_CreateString(r->bottleneck_reason), &ok);
  pb_json_put(o, "capacity_per_s", num(r->bottleneck_capacity_per_s, PER_S), &ok);
  pb_json_put(o, "required_per_s", num(r->bottleneck_required_per_s, PER_S), &ok);
  return pb_json_finish(o, ok);
}

static cJSON *critical_path_json(const pb_report *r) {
  if (!r->critical_path_available) return cJSON_CreateNull();
  cJSON *o = cJSON_CreateObject(), *segs = cJSON_CreateArray();
  bool ok = segs != NULL;
  pb_json_put(o, "total_ms", num(r->critical_path_total_ms, MS), &ok);
  for (int i = 0; ok && i < r->npath_segments; i++) {
    cJSON *e = cJSON_CreateObject();
    pb_json_put(e, "stage", cJSON_CreateString(r->path_segments[i].stage), &ok);
    pb_json_put(e, "ms", num(r->path_segments[i].ms, MS), &ok);
    pb_json_put(e, "self_ms", num(r->path_segments[i].self_ms, MS), &ok);
    pb_json_push(segs, e, &ok);
  }
  pb_json_put(o, "segments", segs, &ok);
  pb_json_put(o, "hops", u64(r->critical_path_hops), &ok);
  pb_json_put(o, "ended_at", cJSON_CreateString(r->critical_path_stop), &ok);
  return pb_json_finish(o, ok);
}

static cJSON *trace_json(const pb_report *r) {
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  pb_json_put(o, "enabled", cJSON_CreateBool(r->traced), &ok);
  pb_json_put(o, "events", u64(r->trace_events), &ok);
  pb_json_put(o, "events_dropped", u64(r->trace_events_dropped), &ok);
  pb_json_put(o, "complete", r->traced ? cJSON_CreateBool(r->trace_complete) : cJSON_CreateNull(), &ok);
  pb_json_put(o, "analysed_ms", r->traced ? num(r->trace_window_ms, MS) : cJSON_CreateNull(), &ok);
  pb_json_put(o, "measured_ms", num(r->measured_s * 1e3, MS), &ok);
  return pb_json_finish(o, ok);
}

static cJSON *model_json(const pb_report *r) {
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  pb_json_put(o, "lowest_capacity_stage", r->model_stage[0] ? cJSON_CreateString(r->model_stage) : cJSON_CreateNull(),
              &ok);
  pb_json_put(o, "lowest_capacity_per_s", num(r->model_capacity_per_s, PER_S), &ok);
  pb_json_put(o, "device_rate_per_s", num(r->device_rate_per_s, PER_S), &ok);
  pb_json_put(o, "cpu_limit_per_s", num(r->cpu_limit_per_s, PER_S), &ok);
  pb_json_put(o, "cpus", cJSON_CreateNumber(r->ncpu), &ok);
  pb_json_put(o, "cores_used", num(r->cores_used, 2), &ok);
  return pb_json_finish(o, ok);
}

/* The model of the pipeline (model.h): how well its replay of this run matched it. */
static cJSON *pipeline_model_json(const pb_report *r) {
  const pb_model *m = &r->model;
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  pb_json_put(o, "valid", cJSON_CreateBool(m->valid), &ok);
  pb_json_put(o, "why", m->valid ? cJSON_CreateNull() : cJSON_CreateString(m->why), &ok);
  pb_json_put(o, "replay_samples_per_s", num(m->valid ? m->replay_samples_per_s : NAN, PER_S), &ok);
  pb_json_put(o, "replay_idle_pct", num(m->valid ? m->replay_idle_pct : NAN, PCT), &ok);
  pb_json_put(o, "fit_error_pct", num(m->valid ? m->fit_error_pct : NAN, PCT), &ok);
  pb_json_put(o, "calibrated", cJSON_CreateBool(m->calibrated), &ok);
  pb_json_put(o, "service_scale", num(m->valid ? m->service_scale : NAN, 4), &ok);
  pb_json_put(o, "cores", num(m->valid ? m->cores : NAN, 2), &ok);
  pb_json_put(o, "epoch_samples",
              m->valid && m->epoch_samples > 0 ? cJSON_CreateNumber((double)m->epoch_samples) : cJSON_CreateNull(), &ok);
  return pb_json_finish(o, ok);
}

static cJSON *machine_json(const pb_report *r) {
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  pb_json_put(o, "cores_online", cJSON_CreateNumber(r->ncpu), &ok);
  pb_json_put(o, "cores_usable", num(r->cores_usable, 2), &ok);
  pb_json_put(o, "cores_affinity", num(r->cores_affinity, 2), &ok);
  pb_json_put(o, "cores_quota", num(r->cores_quota, 2), &ok);
  pb_json_put(o, "cores_taken_by_others", num(r->cores_taken_by_others, 2), &ok);
  pb_json_put(o, "limited_by", r->cores_limited_by[0] ? cJSON_CreateString(r->cores_limited_by) : cJSON_CreateNull(),
              &ok);
  return pb_json_finish(o, ok);
}

static cJSON *recommendations_json(const pb_report *r) {
  cJSON *a = cJSON_CreateArray();
  bool ok = a != NULL;
  for (int i = 0; ok && i < r->nrecommendations; i++) {
    const pb_recommendation *rc = &r->recommendations[i];
    cJSON *e = cJSON_CreateObject();
    pb_json_put(e, "action", cJSON_CreateString(rc->action), &ok);
    pb_json_put(e, "reason", cJSON_CreateString(rc->reason), &ok);
    pb_json_put(e, "predicted_samples_per_s", num(rc->predicted_samples_per_s, PER_S), &ok);
    pb_json_put(e, "predicted_idle_pct", num(rc->predicted_idle_pct, PCT), &ok);
    pb_json_put(e, "up_to", cJSON_CreateBool(rc->up_to), &ok);
    pb_json_put(e, "kind", str(rc->kind), &ok);
    pb_json_push(a, e, &ok);
  }
  return pb_json_finish(a, ok);
}

static cJSON *first_errors_json(const pb_report *r) {
  cJSON *a = cJSON_CreateArray();
  bool ok = a != NULL;
  int n = r->nfirst_errors < PB_MAX_FIRST_ERRORS ? r->nfirst_errors : PB_MAX_FIRST_ERRORS;
  for (int i = 0; ok && i < n; i++) {
    cJSON *e = cJSON_CreateObject();
    pb_json_put(e, "file", cJSON_CreateString(r->first_errors[i].file), &ok);
    pb_json_put(e, "message", cJSON_CreateString(r->first_errors[i].message), &ok);
    pb_json_push(a, e, &ok);
  }
  return pb_json_finish(a, ok);
}

static cJSON *accounting_json(const pb_report *r) {
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  pb_json_put(o, "files_read", u64(r->files_read), &ok);
  pb_json_put(o, "files_skipped", u64(r->files_skipped), &ok);
  pb_json_put(o, "samples_read", u64(r->samples_read), &ok);
  pb_json_put(o, "samples_decoded", u64(r->samples_decoded), &ok);
  pb_json_put(o, "samples_batched", u64(r->samples_batched), &ok);
  pb_json_put(o, "samples_consumed", u64(r->samples_consumed), &ok);
  pb_json_put(o, "samples_dropped", u64(r->samples_dropped), &ok);
  pb_json_put(o, "errors", u64(r->errors), &ok);
  pb_json_put(o, "samples_in_flight", u64(r->samples_in_flight), &ok);
  pb_json_put(o, "balanced", cJSON_CreateBool(r->balanced), &ok);
  pb_json_put(o, "first_errors", first_errors_json(r), &ok);
  return pb_json_finish(o, ok);
}

static cJSON *host_json(const pb_import_host *h) {
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  pb_json_put(o, "host", str(h->host), &ok);
  pb_json_put(o, "capture", str(h->capture), &ok);
  pb_json_put(o, "steps", u64(h->steps), &ok);
  pb_json_put(o, "input_bound_pct", num(h->input_bound_pct, PCT), &ok);
  pb_json_put(o, "samples_per_s", num(h->samples_per_s, PER_S), &ok);
  pb_json_put(o, "bottleneck", h->bottleneck[0] ? str(h->bottleneck) : cJSON_CreateNull(), &ok);
  return pb_json_finish(o, ok);
}

/* Where the report's record came from: pipebench's own run, or another tool's capture (its own verdict and
 * advice in that tool's terms, and its hosts, the one read first). */
static cJSON *source_json(const pb_report *r) {
  const pb_record_source *s = &r->source;
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  bool imported = s->tool[0] != '\0';
  pb_json_put(o, "tool", str(imported ? s->tool : "pipebench"), &ok);
  pb_json_put(o, "capture", imported ? str(s->capture) : cJSON_CreateNull(), &ok);
  pb_json_put(o, "host", imported ? str(s->host) : cJSON_CreateNull(), &ok);
  pb_json_put(o, "step_marker", imported ? str(s->step_marker) : cJSON_CreateNull(), &ok);
  pb_json_put(o, "verdict", imported ? str(s->verdict) : cJSON_CreateNull(), &ok);
  cJSON *advice = imported ? cJSON_CreateArray() : cJSON_CreateNull();
  for (int i = 0; imported && i < s->nadvice; i++) {
    cJSON *a = cJSON_CreateObject();
    bool aok = true;
    pb_json_put(a, "text", str(s->advice[i].text), &aok);
    pb_json_put(a, "predicted_samples_per_s", num(s->advice[i].predicted_per_s, PER_S), &aok);
    pb_json_push(advice, pb_json_finish(a, aok), &ok);
  }
  pb_json_put(o, "advice", advice, &ok);
  cJSON *hosts = imported ? cJSON_CreateArray() : cJSON_CreateNull();
  for (int i = 0; imported && i < s->nhosts && i < PB_MAX_IMPORT_HOSTS; i++)
    pb_json_push(hosts, host_json(&s->hosts[i]), &ok);
  pb_json_put(o, "hosts", hosts, &ok);
  pb_json_put(o, "host_count", imported ? cJSON_CreateNumber(s->nhosts) : cJSON_CreateNull(), &ok);
  pb_json_put(o, "gpu_devices", imported ? cJSON_CreateNumber(s->gpu_devices) : cJSON_CreateNull(), &ok);
  pb_json_put(o, "gpu_kernel_busy_pct",
              imported && s->gpu_devices ? num(s->gpu_kernel_busy_pct, PCT) : cJSON_CreateNull(), &ok);
  pb_json_put(o, "work_drift_pct", imported ? num(s->work_drift_pct, PCT) : cJSON_CreateNull(), &ok);
  return pb_json_finish(o, ok);
}

static cJSON *engine_json(const pb_report *r) {
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  pb_json_put(o, "cpu_s", num(r->cpu_s, SEC), &ok);
  pb_json_put(o, "cpu_ns_per_sample", num(r->cpu_ns_per_sample, 1), &ok);
  return pb_json_finish(o, ok);
}

/* What the pipeline may buffer (checked against limits.max_memory_mb before the run), the trace rings, and
 * the process's peak resident set; peak_rss_bytes is null when unknown (a trace from before it existed). */
static cJSON *memory_json(const pb_report *r) {
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  pb_json_put(o, "planned_bytes", u64(r->memory_planned_bytes), &ok);
  pb_json_put(o, "planned_queues_empty_bytes", u64(r->memory_planned_queues_empty_bytes), &ok);
  pb_json_put(o, "limit_bytes", u64(r->memory_limit_bytes), &ok);
  pb_json_put(o, "trace_bytes", u64(r->memory_trace_bytes), &ok);
  pb_json_put(o, "peak_rss_bytes", r->memory_peak_rss_bytes ? u64(r->memory_peak_rss_bytes) : cJSON_CreateNull(), &ok);
  return pb_json_finish(o, ok);
}

/* How close to the machine's ceilings (METRICS.md "efficiency"); calibration null (and why) without one. */
static cJSON *efficiency_json(const pb_report *r) {
  const pb_efficiency *e = &r->efficiency;
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  if (e->have) {
    cJSON *c = cJSON_CreateObject();
    pb_json_put(c, "file", cJSON_CreateString(e->source), &ok);
    pb_json_put(c, "measured_at", cJSON_CreateString(e->measured_at), &ok);
    pb_json_put(o, "calibration", c, &ok);
  } else {
    pb_json_put(o, "calibration", cJSON_CreateNull(), &ok);
  }
  pb_json_put(o, "why", e->have ? cJSON_CreateNull() : cJSON_CreateString(e->why), &ok);
  pb_json_put(o, "cores", cJSON_CreateNumber(e->cores), &ok);
  pb_json_put(o, "best_samples_per_s", num(e->best_samples_per_s, PER_S), &ok);
  pb_json_put(o, "limited_by", e->limited_by[0] ? cJSON_CreateString(e->limited_by) : cJSON_CreateNull(), &ok);
  pb_json_put(o, "pipeline_pct", num(e->pipeline_pct, PCT), &ok);
  return pb_json_finish(o, ok);
}

/* The run as a whole, before the per-stage table. */
static void put_run(cJSON *root, const pb_report *r, bool *ok) {
  pb_json_put(root, "pipebench_version", str(r->version), ok);
  pb_json_put(root, "config", r->config ? cJSON_Duplicate(r->config, 1) : cJSON_CreateNull(), ok);
  pb_json_put(root, "source", source_json(r), ok);
  pb_json_put(root, "data", cJSON_CreateString(r->synthetic ? "synthetic" : "real"), ok);
  pb_json_put(root, "interrupted", cJSON_CreateBool(r->interrupted), ok);
  pb_json_put(root, "device", device_json(r), ok);
  pb_json_put(root, "measured_s", num(r->measured_s, SEC), ok);
  pb_json_put(root, "warmup_steps", cJSON_CreateNumber((double)r->warmup_steps), ok);
  pb_json_put(root, "throughput", throughput_json(r), ok);
  pb_json_put(root, "steps", steps_json(r), ok);
  pb_json_put(root, "step_breakdown_ms", breakdown_json(r), ok);
  pb_json_put(root, "allreduce", allreduce_json(r), ok);
  pb_json_put(root, "device_idle_pct", num(r->device_idle_pct, PCT), ok);
  pb_json_put(root, "accelerator_utilization_pct", num(r->accelerator_utilization_pct, PCT), ok);
  pb_json_put(root, "au_target", au_target_json(r), ok);
  pb_json_put(root, "input_bound_pct", num(r->input_bound_pct, PCT), ok);
  pb_json_put(root, "classification", str(r->classification), ok);
}

cJSON *pb_report_to_json(const pb_report *r) {
  cJSON *root = cJSON_CreateObject();
  bool ok = true;
  put_run(root, r, &ok);
  pb_json_put(root, "stages", stages_json(r), &ok);
  pb_json_put(root, "critical_path", critical_path_json(r), &ok);
  pb_json_put(root, "bottleneck", bottleneck_json(r), &ok);
  pb_json_put(root, "capacity_model", model_json(r), &ok);
  pb_json_put(root, "model", pipeline_model_json(r), &ok);
  pb_json_put(root, "machine", machine_json(r), &ok);
  pb_json_put(root, "recommendations", recommendations_json(r), &ok);
  pb_json_put(root, "trace", trace_json(r), &ok);
  pb_json_put(root, "ranks", cJSON_CreateNull(), &ok);
  pb_json_put(root, "most_input_bound_rank", cJSON_CreateNull(), &ok);
  pb_json_put(root, "accounting", accounting_json(r), &ok);
  pb_json_put(root, "engine", engine_json(r), &ok);
  pb_json_put(root, "memory", memory_json(r), &ok);
  pb_json_put(root, "efficiency", efficiency_json(r), &ok);
  return pb_json_finish(root, ok);
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
