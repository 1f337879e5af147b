/* The capacity model (Plumber's, MLSys 2022) and the bottleneck.
 *
 * Capacity of a stage = threads x samples / busy time: the samples/s it could sustain if it never waited
 * for input or for downstream.  The device's rate = batch x devices / mean compute time.  A stage is
 * CPU-bound when its threads' CPU time is most of their busy time net of run-queue delay
 * (pb_stage_cpu_bound); those share
 * the machine's cores, which bounds the pipeline at ncpu / (CPU seconds per sample, summed).
 *
 * The bottleneck is "device" when the run is not input-bound.  Otherwise it is the stage with the most
 * self time on the critical path (CONTRACT §3), cross-checked against the model's lowest-capacity
 * stage; without a trace (--no-trace) the model alone decides.  Both answers are reported. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis.h"

static void capacity_model(pb_report *r, const pb_record *rec) {
  const pb_config *cfg = rec->cfg;
  pb_pipeline_capacities(r); /* what the model compares, here and in pb_recommend */
  double batch = (double)cfg->stages[pb_config_batch_index(cfg)].size;
  /* a step's device time includes its gradient exchange: the device takes no batch during it */
  double device_ms = r->compute_ms + (r->comm_ms > 0 ? r->comm_ms : 0);
  r->device_rate_per_s = device_ms > 0 ? batch * rec->device_count / (device_ms / 1e3) : NAN;
  const pb_stage_report *min = NULL;
  double cpu_per_sample = 0;
  for (int i = 0; i < r->nstages; i++) {
    const pb_stage_report *sr = &r->stages[i];
    if (sr->skipped || isnan(sr->pipeline_capacity_per_s)) continue;
    if (!min || sr->pipeline_capacity_per_s < min->pipeline_capacity_per_s) min = sr;
    cpu_per_sample += pb_stage_cpu_s_per_sample(sr);
    if (!isnan(sr->utilization) && !isnan(sr->cpu_fraction)) r->cores_used += sr->utilization * sr->threads * sr->cpu_fraction;
  }
  r->cpu_limit_per_s = cpu_per_sample > 0 ? rec->ncpu / cpu_per_sample : NAN;
  r->model_capacity_per_s = min ? min->pipeline_capacity_per_s : NAN;
  snprintf(r->model_stage, sizeof r->model_stage, "%s", min ? min->name : "");
}

/* The stage with the most self time on the critical path (not the device), or NULL. */
static const pb_path_segment *path_bottleneck(const pb_report *r) {
  const pb_path_segment *best = NULL;
  for (int i = 0; i < r->npath_segments; i++) {
    const pb_path_segment *p = &r->path_segments[i];
    if (strcmp(p->stage, "device") != 0 && (!best || p->self_ms > best->self_ms)) best = p;
  }
  return best && best->self_ms > 0 ? best : NULL;
}

/* A stage named by the path must have done a real share of the path's work: one with next to no self
 * time on it (a lineage gap, a path that ran through hand-offs) is no verdict. */
#define PB_MIN_PATH_SELF_PCT 5.0
static bool negligible_on_path(const pb_report *r, const pb_path_segment *p) {
  return !(r->critical_path_total_ms > 0) || p->self_ms < PB_MIN_PATH_SELF_PCT / 100 * r->critical_path_total_ms;
}

static const pb_stage_report *stage_named(const pb_report *r, const char *name) {
  int i = pb_report_stage_index(r, name);
  return i >= 0 ? &r->stages[i] : NULL;
}

/* Why the model's answer differs from the path's, in words. */
static void disagreement(const pb_report *r, char *out, size_t len) {
  double cores_used = r->cores_used;
  if (cores_used >= 0.85 * r->ncpu)
    snprintf(out, len,
             "; the capacity model names %s (%.1f samples/s) instead: the %d cores were saturated (%.1f in use), "
             "so every CPU-bound stage's service time includes time spent waiting for a core and the "
             "capacities are not independent",
             r->model_stage, r->model_capacity_per_s, r->ncpu, cores_used);
  else
    snprintf(out, len,
             "; the capacity model names %s (%.1f samples/s) instead: its mean rate is the lowest, but the "
             "device waited on %s more often (rates that vary over time, or a stage starved by its input)",
             r->model_stage, r->model_capacity_per_s, path_bottleneck(r)->stage);
}

static void blame_stage(pb_report *r, const char *name, const char *why) {
  const pb_stage_report *sr = stage_named(r, name);
  snprintf(r->bottleneck_stage, sizeof r->bottleneck_stage, "%s", name);
  r->bottleneck_capacity_per_s = sr ? sr->pipeline_capacity_per_s : NAN;
  snprintf(r->bottleneck_reason, sizeof r->bottleneck_reason, "%s", why);
}

/* The device also lost time to the host launching its steps late (a loaded host whose device thread
 * did not get a core in time): said beside the verdict, since no pipeline change gives that back. */
#define PB_HOST_LATE_NOTE_PCT 5.0
static void append_host_late(pb_report *r) {
  if (!(r->host_late_pct >= PB_HOST_LATE_NOTE_PCT)) return;
  size_t n = strlen(r->bottleneck_reason);
  snprintf(r->bottleneck_reason + n, sizeof r->bottleneck_reason - n,
           "; besides, the host launched steps late for %.1f %% of step time (%.2f ms a step: the device thread "
           "did not get a core in time on a loaded host), which cost the device time that is not input",
           r->host_late_pct, r->host_late_ms);
}

static void decide(pb_report *r, const pb_record *rec);

void pb_bottleneck(pb_report *r, const pb_record *rec) {
  decide(r, rec);
  if (r->classification) append_host_late(r);
}

static void decide(pb_report *r, const pb_record *rec) {
  capacity_model(r, rec);
  r->bottleneck_required_per_s = r->device_rate_per_s;
  if (!r->classification) return; /* no measured step */
  char why[512], extra[400] = "";
  if (strcmp(r->classification, "not_input_bound") == 0) {
    snprintf(r->bottleneck_stage, sizeof r->bottleneck_stage, "device");
    r->bottleneck_capacity_per_s = r->device_rate_per_s;
    snprintf(r->bottleneck_reason, sizeof r->bottleneck_reason,
             "not input-bound: the device waited for input %.2f %% of step time (< 5 %%)", r->input_bound_pct);
    return;
  }
  const pb_path_segment *p = r->critical_path_available ? path_bottleneck(r) : NULL;
  char refused[200] = "";
  if (p && negligible_on_path(r, p)) {
    snprintf(refused, sizeof refused, "the critical path's largest stage self time (%s, %.1f of %.1f ms) is under %.0f %% of it",
             p->stage, p->self_ms, r->critical_path_total_ms, PB_MIN_PATH_SELF_PCT);
    p = NULL;
  }
  if (p) {
    if (r->model_stage[0] && strcmp(r->model_stage, p->stage) != 0) disagreement(r, extra, sizeof extra);
    else snprintf(extra, sizeof extra, "; the capacity model agrees (lowest capacity, %.1f samples/s)",
                  r->model_capacity_per_s);
    snprintf(why, sizeof why,
             "input-bound (%.1f %% of step time waiting): most self time on the critical path, %.1f of %.1f ms "
             "(%.1f %%)%s",
             r->input_bound_pct, p->self_ms, r->critical_path_total_ms,
             r->critical_path_total_ms > 0 ? p->self_ms / r->critical_path_total_ms * 100.0 : NAN, extra);
    blame_stage(r, p->stage, why);
    return;
  }
  if (!r->model_stage[0]) return;
  snprintf(why, sizeof why,
           "input-bound (%.1f %% of step time waiting): lowest capacity (threads / mean service time), %.1f "
           "samples/s; capacity model only (%s)",
           r->input_bound_pct, r->model_capacity_per_s,
           refused[0] ? refused : r->traced ? "the critical path did not reach a stage" : "no trace: --no-trace");
  blame_stage(r, r->model_stage, why);
}
