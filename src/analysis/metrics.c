#include "metrics.h"

#include "efficiency.h"
#include "analysis.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

pb_step_parts pb_step_breakdown(const pb_step *st) {
  pb_step_parts p = {0};
  p.step_ns = pb_step_end_ns(st) - st->prev_end_ns;
  p.compute_ns = st->compute_end_ns - st->compute_start_ns;
  p.comm_ns = st->comm_end_ns > st->comm_start_ns ? st->comm_end_ns - st->comm_start_ns : 0;
  /* The device waits from the previous step's end to this compute's start.  The part of that wait
   * during which this batch was being copied is non-overlapped H2D; the part before the batch left
   * the pipeline, minus any copy inside it, is input wait. */
  p.h2d_ns = pb_overlap_ns(st->prev_end_ns, st->compute_start_ns, st->h2d_start_ns, st->h2d_end_ns);
  uint64_t waiting = st->ready_ns > st->prev_end_ns ? st->ready_ns - st->prev_end_ns : 0;
  uint64_t copy_in_wait = pb_overlap_ns(st->prev_end_ns, st->ready_ns, st->h2d_start_ns, st->h2d_end_ns);
  p.input_wait_ns = waiting - copy_in_wait;
  /* From the moment the step could have started (previous step over, batch handed on and copied) to
   * its start, the device waited on the host alone: a late wake-up on a loaded machine, not input. */
  uint64_t could_start = st->prev_end_ns;
  if (st->ready_ns > could_start) could_start = st->ready_ns;
  if (st->h2d_end_ns > could_start) could_start = st->h2d_end_ns;
  p.host_late_ns = st->compute_start_ns > could_start ? st->compute_start_ns - could_start : 0;
  uint64_t known = p.input_wait_ns + p.h2d_ns + p.compute_ns + p.comm_ns + p.host_late_ns;
  if (known > p.step_ns) { /* clocks of two sources (a GPU's) can disagree by a little: never below 0 */
    uint64_t over = known - p.step_ns;
    p.host_late_ns -= over < p.host_late_ns ? over : p.host_late_ns;
    known = p.input_wait_ns + p.h2d_ns + p.compute_ns + p.comm_ns + p.host_late_ns;
  }
  p.other_ns = p.step_ns > known ? p.step_ns - known : 0;
  return p;
}

const char *pb_classify(double input_bound_pct) {
  if (isnan(input_bound_pct)) return NULL;
  if (input_bound_pct >= 20.0) return "highly_input_bound";
  if (input_bound_pct >= 5.0) return "moderately_input_bound";
  return "not_input_bound";
}

/* Sums of the measured steps. */
typedef struct step_sums {
  uint64_t n, samples, bytes, step_ns, input_wait_ns, h2d_ns, compute_ns, comm_ns, other_ns, host_late_ns;
  uint64_t compute_in_window_ns;
  double *step_ms; /* one per measured step, for exact percentiles */
  double *comm_ms; /* the same for the gradient exchange */
} step_sums;

static void sum_steps(const pb_record *s, step_sums *t) {
  memset(t, 0, sizeof *t);
  t->step_ms = malloc((s->nsteps ? s->nsteps : 1) * sizeof *t->step_ms);
  t->comm_ms = malloc((s->nsteps ? s->nsteps : 1) * sizeof *t->comm_ms);
  for (size_t i = 0; i < s->nsteps; i++) {
    const pb_step *st = &s->steps[i];
    if (!st->measured) continue;
    pb_step_parts p = pb_step_breakdown(st);
    if (t->step_ms) t->step_ms[t->n] = (double)p.step_ns / 1e6;
    if (t->comm_ms) t->comm_ms[t->n] = (double)p.comm_ns / 1e6;
    t->n++;
    t->samples += st->samples;
    t->bytes += st->bytes;
    t->step_ns += p.step_ns;
    t->input_wait_ns += p.input_wait_ns;
    t->h2d_ns += p.h2d_ns;
    t->compute_ns += p.compute_ns;
    t->comm_ns += p.comm_ns;
    t->other_ns += p.other_ns;
    t->host_late_ns += p.host_late_ns;
  }
  for (size_t i = 0; i < s->nsteps; i++) /* device busy time inside the window, every step counted */
    t->compute_in_window_ns += pb_overlap_ns(s->steps[i].compute_start_ns, s->steps[i].compute_end_ns,
                                          s->window_start_ns, s->window_end_ns);
}

static void fill_steps(pb_report *r, const pb_record *rec, const step_sums *t) {
  double n = (double)t->n, wall_s = r->measured_s, devs = rec->device_count;
  r->step_count = t->n;
  r->samples_per_s = wall_s > 0 ? (double)t->samples / wall_s : NAN;
  r->batches_per_s = wall_s > 0 ? n / wall_s : NAN;
  r->bytes_per_s = wall_s > 0 ? (double)t->bytes / wall_s : NAN;
  r->step_mean_ms = t->n ? (double)t->step_ns / n / 1e6 : NAN;
  r->step_p50_ms = pb_percentile(t->step_ms, t->n, 50);
  r->step_p90_ms = pb_percentile(t->step_ms, t->n, 90);
  r->step_p99_ms = pb_percentile(t->step_ms, t->n, 99);
  r->input_wait_ms = t->n ? (double)t->input_wait_ns / n / 1e6 : NAN;
  r->h2d_ms = t->n ? (double)t->h2d_ns / n / 1e6 : NAN;
  r->compute_ms = t->n ? (double)t->compute_ns / n / 1e6 : NAN;
  r->comm_ms = t->n ? (double)t->comm_ns / n / 1e6 : NAN;
  r->other_ms = t->n ? (double)t->other_ns / n / 1e6 : NAN;
  r->host_late_ms = t->n ? (double)t->host_late_ns / n / 1e6 : NAN;
  r->host_late_pct = t->step_ns ? (double)t->host_late_ns / (double)t->step_ns * 100 : NAN;
  double device_s = devs * wall_s;
  r->accelerator_utilization_pct = device_s > 0 ? (double)t->compute_in_window_ns / 1e9 / device_s * 100 : NAN;
  r->device_idle_pct = device_s > 0 ? 100.0 - r->accelerator_utilization_pct : NAN;
  r->input_bound_pct =
      t->step_ns ? (double)(t->input_wait_ns + t->h2d_ns) / (double)t->step_ns * 100 : NAN;
  r->classification = pb_classify(r->input_bound_pct);
}

/* device.allreduce: what was configured, the model's time and what the measured steps' exchanges took. */
static void fill_allreduce(pb_report *r, const pb_record *rec, const step_sums *t) {
  const pb_allreduce_cfg *a = &rec->cfg->device.allreduce;
  pb_allreduce_report *x = &r->allreduce;
  int world = rec->world_size > 1 ? rec->world_size : 1;
  *x = (pb_allreduce_report){.mode = a->mode, .world_size = world, .peer_stopped = rec->peer_stopped};
  uint64_t bytes = a->mode == PB_ALLREDUCE_MODEL || a->mode == PB_ALLREDUCE_MPI ? pb_allreduce_bytes(a) : 0;
  x->bytes = bytes;
  x->gb_per_s = a->gb_per_s > 0 ? a->gb_per_s : NAN;
  x->model_ms = a->gb_per_s > 0 && bytes ? (double)bytes / a->gb_per_s / 1e6 : NAN;
  x->measured_mean_ms = r->comm_ms;
  x->measured_p50_ms = pb_percentile(t->comm_ms, t->comm_ms ? t->n : 0, 50);
  x->measured_p99_ms = pb_percentile(t->comm_ms, t->comm_ms ? t->n : 0, 99);
  /* nccl-tests' figures: algorithm bandwidth = bytes / time; bus bandwidth = algbw x 2(n-1)/n, what each
   * link of a ring carries.  Only for a real exchange between ranks: the barrier's and model's say nothing. */
  bool real = a->mode == PB_ALLREDUCE_MPI && world > 1 && t->comm_ns > 0;
  double algbw = real ? (double)bytes * (double)t->n / (double)t->comm_ns : NAN; /* bytes/ns = GB/s */
  x->algbw_gb_per_s = algbw;
  x->busbw_gb_per_s = real ? algbw * 2.0 * (world - 1) / world : NAN;
}


/* Per device: its idle %, input wait and copy bandwidth; the most idle one is named. */
static void fill_devices(pb_report *r, const pb_record *rec) {
  int n = rec->device_count > 0 && rec->device_count <= PB_MAX_DEVICES ? rec->device_count : 1;
  uint64_t wait_ns[PB_MAX_DEVICES] = {0}, copy_ns[PB_MAX_DEVICES] = {0}, copy_bytes[PB_MAX_DEVICES] = {0};
  for (int k = 0; k < n; k++) {
    pb_device_report *d = &r->per_device[k];
    *d = (pb_device_report){.index = k, .id = rec->device_ids[k]};
    snprintf(d->name, sizeof d->name, "%s", rec->device_names[k]);
  }
  for (size_t i = 0; i < rec->nsteps; i++) {
    const pb_step *st = &rec->steps[i];
    if (!st->measured || st->device >= n) continue;
    r->per_device[st->device].steps++;
    wait_ns[st->device] += pb_step_breakdown(st).input_wait_ns;
    if (st->h2d_end_ns <= st->h2d_start_ns) continue;
    copy_ns[st->device] += st->h2d_end_ns - st->h2d_start_ns;
    copy_bytes[st->device] += st->bytes;
  }
  bool measured = r->measured_s > 0;
  r->most_idle_device = 0;
  for (int k = 0; k < n; k++) {
    pb_device_report *d = &r->per_device[k];
    d->idle_pct = measured ? pb_steps_idle_pct(rec->steps, rec->nsteps, 1, k, rec->window_start_ns, rec->window_end_ns) : NAN;
    d->input_wait_ms = d->steps ? (double)wait_ns[k] / (double)d->steps / 1e6 : NAN;
    d->h2d_gb_per_s = copy_ns[k] ? (double)copy_bytes[k] / (double)copy_ns[k] : NAN; /* bytes/ns = GB/s */
    if (d->idle_pct > r->per_device[r->most_idle_device].idle_pct) r->most_idle_device = k;
  }
}

static void fill_device_info(pb_report *r, const pb_record *rec) {
  r->device_kind = rec->device_kind;
  snprintf(r->device_name, sizeof r->device_name, "%s", rec->device_name);
  snprintf(r->device_fallback, sizeof r->device_fallback, "%s", rec->device_fallback);
  r->device_count = rec->device_count;
  r->timing_source = rec->timing_source;
  r->timing_source_reason = rec->timing_source_reason;
  memcpy(r->device_ids, rec->device_ids, sizeof r->device_ids);
  r->step_kernel_measured = rec->step_kernel.measured;
  r->step_kernel_target_ms = rec->step_kernel.target_ms;
  r->step_kernel_measured_ms = rec->step_kernel.measured_ms;
  r->step_kernel_error_pct = rec->step_kernel.error_pct;
  r->idle_pct_cuda_events = rec->idle_pct_cuda_events;
  r->gpu_timestamps_dropped = rec->gpu_timestamps_dropped;
}

static void fill_stage(pb_stage_report *sr, const pb_stage_rec *s, double wall_s) {
  const pb_counters *c = &s->ctr;
  snprintf(sr->name, sizeof sr->name, "%s", s->name);
  sr->type = s->type;
  sr->threads = s->threads;
  sr->critical_path_ms = sr->critical_path_pct = sr->critical_path_self_ms = NAN;
  sr->graph_start_ms = sr->graph_total_ms = sr->graph_self_ms = NAN;
  if (s->skipped) {
    sr->skipped = true;
    sr->cpu_fraction = sr->cpu_delay_fraction = NAN;
    return;
  }
  sr->calls = c->calls;
  sr->self_ms = (double)c->busy_ns / 1e6;
  sr->wait_in_ms = (double)c->wait_in_ns / 1e6;
  sr->blocked_out_ms = (double)c->blocked_out_ns / 1e6;
  sr->total_ms = sr->self_ms + sr->wait_in_ms;
  sr->mean_us = c->calls ? pb_hist_mean(&s->hist) / 1e3 : NAN;
  sr->p50_us = c->calls ? (double)pb_hist_percentile(&s->hist, 50) / 1e3 : NAN;
  sr->p99_us = c->calls ? (double)pb_hist_percentile(&s->hist, 99) / 1e3 : NAN;
  sr->utilization = wall_s > 0 ? sr->self_ms / 1e3 / (s->threads * wall_s) : NAN;
  uint64_t samples = s->is_source ? c->samples_out : c->samples_in;
  sr->samples = samples;
  /* Over the calls that ended in the window: the same calls `samples` and `mean_us` count (busy_ns also
   * holds the in-window part of calls cut by the window's edges, which moved a batch-level stage's
   * capacity by up to ~20 %).  A source counts samples as it makes them, so its busy time fits. */
  double service_s = s->is_source ? (double)c->busy_ns / 1e9 : (double)s->hist.sum_ns / 1e9;
  sr->capacity_per_s = service_s > 0 ? s->threads * (double)samples / service_s : NAN;
  sr->bytes_in = c->bytes_in;
  sr->read_ops = c->read_ops;
  sr->bytes_out = c->bytes_out;
  sr->queue_mean_fill = s->queue_mean_fill;
  sr->queue_capacity = s->queue_capacity;
  double f = c->busy_total_ns ? (double)s->cpu_ns / (double)c->busy_total_ns : NAN;
  sr->cpu_fraction = isnan(f) ? NAN : f > 1 ? 1 : f;
  /* Run-queue delay also follows wake-ups from queue waits, outside the service time: capped so that
   * CPU and delay together never exceed the busy time. */
  double d = c->busy_total_ns && s->cpu_delay_ns >= 0 ? (double)s->cpu_delay_ns / (double)c->busy_total_ns : NAN;
  sr->cpu_delay_fraction = isnan(d) || isnan(sr->cpu_fraction) ? NAN : fmin(d, 1 - sr->cpu_fraction);
}

/* fio's figures for the read stage: bytes and reads a second from storage over the measured window. */
static void fill_storage(pb_report *r, const pb_stage_report *sr) {
  bool read = !sr->skipped && strcmp(sr->type, "read") == 0 && r->measured_s > 0;
  r->storage_bytes_per_s = read ? (double)sr->bytes_in / r->measured_s : NAN;
  /* bytes without reads: a trace from before reads were counted */
  bool counted = sr->read_ops > 0 || sr->bytes_in == 0;
  r->read_ops_per_s = read && counted ? (double)sr->read_ops / r->measured_s : NAN;
}

static void fill_stages(pb_report *r, const pb_record *rec) {
  bool in_place = rec->cfg && pb_config_batch_in_place(rec->cfg, rec->synthetic);
  r->storage_bytes_per_s = r->read_ops_per_s = NAN;
  for (int i = 0; i < rec->nstages; i++) {
    pb_stage_report *sr = &r->stages[r->nstages++];
    fill_stage(sr, &rec->stages[i], r->measured_s);
    sr->in_place = in_place && !sr->skipped && strcmp(sr->type, "batch") == 0;
    if (strcmp(sr->type, "read") == 0) fill_storage(r, sr);
  }
}

static void fill_accounting(pb_report *r, const pb_record *rec) {
  uint64_t in_flight = rec->queued_samples;
  for (int i = 0; i < rec->nstages; i++) {
    const pb_stage_rec *sr = &rec->stages[i];
    const pb_counters *c = &sr->ctr;
    if (sr->skipped) continue;
    in_flight += c->samples_in_flight;
    r->errors += c->samples_error_total;
    r->samples_dropped += c->samples_dropped_total;
    r->samples_read += c->samples_replayed_total; /* a cache's replays count as samples yielded */
    if (sr->is_source) {
      r->samples_read += c->samples_out_total;
      r->files_read = c->files_read_total;
    }
    if (strcmp(sr->type, "batch") == 0) r->samples_batched = c->samples_out_total;
    if (strcmp(sr->type, "decode") == 0) r->samples_decoded = c->samples_out_total;
  }
  r->samples_consumed = rec->samples_consumed;
  r->files_skipped = rec->dataset_files_skipped;
  for (int i = 0; i < rec->nfirst_errors && r->nfirst_errors < PB_MAX_FIRST_ERRORS; i++) {
    pb_first_error *fe = &r->first_errors[r->nfirst_errors++];
    snprintf(fe->file, sizeof fe->file, "%s", rec->first_errors[i].file);
    snprintf(fe->message, sizeof fe->message, "%s", rec->first_errors[i].message);
  }
  r->errors += rec->samples_failed;
  if (rec->steps_failed && r->nfirst_errors < PB_MAX_FIRST_ERRORS) {
    pb_first_error *fe = &r->first_errors[r->nfirst_errors++];
    snprintf(fe->file, sizeof fe->file, "%s", "(device)");
    snprintf(fe->message, sizeof fe->message, "%s", rec->steps_failure);
  }
  r->samples_in_flight = in_flight;
  r->balanced = r->samples_read == r->samples_consumed + r->samples_dropped + r->errors + in_flight;
}

/* The run's own noise: the measured steps, in the order they ended, cut into 8 runs of consecutive steps;
 * over each, the share of its span (from the end of the step before it, or the window's start, to the end
 * of its last step) in which the devices computed; the half-width of the 95 % interval of their mean, as
 * % of it (NAN with fewer than 16 measured steps).  The devices' share, not samples/s: a device whose
 * step times vary (bursty steps) moves samples/s from one run of steps to the next by itself, which says
 * nothing about how well this run measured the pipeline; what the pipeline controls is how much of the
 * time the device gets to work.  Cutting by steps, not equal time slices, keeps a slice from gaining or
 * losing a whole step at its edges.  Two capacities, or a prediction and this run, closer than this are
 * one as far as this run can tell. */
#define NOISE_GROUPS 8
static double noise_pct(const pb_record *rec, uint64_t measured) {
  if (measured < 2 * NOISE_GROUPS || rec->window_end_ns <= rec->window_start_ns) return NAN;
  double busy_share[NOISE_GROUPS] = {0}, busy_ns = 0;
  int devices = rec->device_count > 0 ? rec->device_count : 1;
  uint64_t seen = 0, from = rec->window_start_ns;
  int g = 0;
  for (size_t i = 0; i < rec->nsteps && g < NOISE_GROUPS; i++) {
    const pb_step *st = &rec->steps[i];
    if (!st->measured) continue;
    busy_ns += (double)(st->compute_end_ns - st->compute_start_ns);
    seen++;
    if (seen * NOISE_GROUPS < measured * (uint64_t)(g + 1)) continue; /* group g ends at step measured (g+1)/8 */
    uint64_t end = pb_step_end_ns(st);
    busy_share[g++] = end > from ? busy_ns / ((double)(end - from) * devices) : NAN;
    from = end;
    busy_ns = 0;
  }
  if (g < NOISE_GROUPS) return NAN;
  double mean = 0, var = 0;
  for (int k = 0; k < NOISE_GROUPS; k++) mean += busy_share[k] / NOISE_GROUPS;
  for (int k = 0; k < NOISE_GROUPS; k++) var += (busy_share[k] - mean) * (busy_share[k] - mean) / (NOISE_GROUPS - 1);
  return mean > 0 ? 1.96 * sqrt(var / NOISE_GROUPS) / mean * 100 : NAN;
}

/* MLPerf Storage's pass/fail: AU against run.au_target_pct, compared as the report shows AU (2 decimals), so
 * that "90.00 % < 90 %: FAIL" cannot be printed. */
static void fill_au_target(pb_report *r, const pb_record *rec) {
  r->au_target_pct = rec->cfg ? rec->cfg->run.au_target_pct : 0;
  double au = round(r->accelerator_utilization_pct * 100) / 100;
  r->au_passed = !(r->au_target_pct > 0) || isnan(au) ? -1 : au >= r->au_target_pct;
}

void pb_metrics_compute(pb_report *r, const pb_record *rec) {
  r->version = PB_VERSION;
  r->synthetic = rec->synthetic;
  r->interrupted = rec->interrupted;
  snprintf(r->config_name, sizeof r->config_name, "%s", rec->cfg->name);
  snprintf(r->config_about, sizeof r->config_about, "%s", rec->cfg->about);
  r->source = rec->source;
  fill_device_info(r, rec);
  /* the window opens once the configured warm-up steps have ended; a run stopped before that excluded
   * only the steps it completed */
  int64_t warmup = rec->cfg->run.warmup_steps;
  r->warmup_steps = rec->window_start_ns || (int64_t)rec->nsteps >= warmup ? warmup : (int64_t)rec->nsteps;
  bool measured = rec->measured_count > 0;
  r->measured_s = measured && rec->window_end_ns > rec->window_start_ns
                     ? (double)(rec->window_end_ns - rec->window_start_ns) / 1e9
                     : 0;
  step_sums t;
  sum_steps(rec, &t);
  fill_steps(r, rec, &t);
  fill_allreduce(r, rec, &t);
  free(t.step_ms);
  free(t.comm_ms);
  fill_devices(r, rec);
  fill_au_target(r, rec);
  fill_stages(r, rec);
  fill_accounting(r, rec);
  r->cpu_s = rec->cpu_s;
  r->memory_planned_bytes = rec->planned_bytes;
  r->memory_planned_queues_empty_bytes = rec->planned_queues_empty_bytes;
  r->memory_limit_bytes = rec->cfg ? (uint64_t)rec->cfg->max_memory_mb * 1000000u : 0;
  r->memory_trace_bytes = rec->trace_bytes;
  r->memory_peak_rss_bytes = rec->peak_rss_bytes;
  r->cpu_ns_per_sample = r->samples_read ? rec->cpu_s * 1e9 / (double)r->samples_read : NAN;
  r->ncpu = rec->ncpu;
  r->cores_usable = rec->cores_usable > 0 ? rec->cores_usable : rec->ncpu;
  r->cores_taken_by_others = rec->cores_taken_by_others;
  r->cores_affinity = rec->cores_affinity > 0 ? rec->cores_affinity : r->cores_usable;
  r->cores_quota = rec->cores_quota > 0 ? rec->cores_quota : NAN;
  snprintf(r->cores_limited_by, sizeof r->cores_limited_by, "%s", rec->cores_limited_by);
  r->noise_pct = noise_pct(rec, t.n);
  pb_analysis_run(r, rec);
  pb_efficiency_compute(r, &rec->ceilings);
}
