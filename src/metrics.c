#include "metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t overlap_ns(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1) {
  uint64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
  return hi > lo ? hi - lo : 0;
}

pb_step_parts pb_step_breakdown(const pb_step *st) {
  pb_step_parts p = {0};
  p.step_ns = st->compute_end_ns - st->prev_end_ns;
  p.compute_ns = st->compute_end_ns - st->compute_start_ns;
  /* The device waits from the previous step's end to this compute's start.  The part of that wait
   * during which this batch was being copied is non-overlapped H2D; the part before the batch left
   * the pipeline, minus any copy inside it, is input wait. */
  p.h2d_ns = overlap_ns(st->prev_end_ns, st->compute_start_ns, st->h2d_start_ns, st->h2d_end_ns);
  uint64_t waiting = st->ready_ns > st->prev_end_ns ? st->ready_ns - st->prev_end_ns : 0;
  uint64_t copy_in_wait = overlap_ns(st->prev_end_ns, st->ready_ns, st->h2d_start_ns, st->h2d_end_ns);
  p.input_wait_ns = waiting - copy_in_wait;
  uint64_t known = p.input_wait_ns + p.h2d_ns + p.compute_ns;
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
  uint64_t n, samples, bytes, step_ns, input_wait_ns, h2d_ns, compute_ns, other_ns, compute_in_window_ns;
  double *step_ms; /* one per measured step, for exact percentiles */
} step_sums;

static void sum_steps(const pb_steps *s, step_sums *t) {
  memset(t, 0, sizeof *t);
  t->step_ms = malloc((s->n ? s->n : 1) * sizeof *t->step_ms);
  for (size_t i = 0; i < s->n; i++) {
    const pb_step *st = &s->v[i];
    if (!st->measured) continue;
    pb_step_parts p = pb_step_breakdown(st);
    if (t->step_ms) t->step_ms[t->n] = (double)p.step_ns / 1e6;
    t->n++;
    t->samples += st->samples;
    t->bytes += st->bytes;
    t->step_ns += p.step_ns;
    t->input_wait_ns += p.input_wait_ns;
    t->h2d_ns += p.h2d_ns;
    t->compute_ns += p.compute_ns;
    t->other_ns += p.other_ns;
  }
  for (size_t i = 0; i < s->n; i++) /* device busy time inside the window, every step counted */
    t->compute_in_window_ns += overlap_ns(s->v[i].compute_start_ns, s->v[i].compute_end_ns,
                                          s->window_start_ns, s->window_end_ns);
}

static void fill_steps(pb_report *r, const pb_run_record *rec, const step_sums *t) {
  const pb_steps *s = rec->steps;
  double n = (double)t->n, wall_s = r->measured_s, devs = rec->device->count;
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
  r->other_ms = t->n ? (double)t->other_ns / n / 1e6 : NAN;
  double device_s = devs * wall_s;
  r->accelerator_utilization_pct = device_s > 0 ? (double)t->compute_in_window_ns / 1e9 / device_s * 100 : NAN;
  r->device_idle_pct = device_s > 0 ? 100.0 - r->accelerator_utilization_pct : NAN;
  r->input_bound_pct =
      t->step_ns ? (double)(t->input_wait_ns + t->h2d_ns) / (double)t->step_ns * 100 : NAN;
  r->classification = pb_classify(r->input_bound_pct);
  (void)s;
}

static void fill_stage(pb_stage_report *sr, const pb_stage *s, double wall_s) {
  pb_counters c;
  pb_hist *h = malloc(sizeof *h);
  if (!h) return;
  pb_stage_totals(s, &c, h);
  snprintf(sr->name, sizeof sr->name, "%s", s->name);
  sr->type = s->ops->type;
  sr->threads = s->threads;
  sr->calls = c.calls;
  sr->self_ms = (double)c.busy_ns / 1e6;
  sr->wait_in_ms = (double)c.wait_in_ns / 1e6;
  sr->blocked_out_ms = (double)c.blocked_out_ns / 1e6;
  sr->total_ms = sr->self_ms + sr->wait_in_ms;
  sr->mean_us = c.calls ? pb_hist_mean(h) / 1e3 : NAN;
  sr->p50_us = c.calls ? (double)pb_hist_percentile(h, 50) / 1e3 : NAN;
  sr->p99_us = c.calls ? (double)pb_hist_percentile(h, 99) / 1e3 : NAN;
  sr->utilization = wall_s > 0 ? sr->self_ms / 1e3 / (s->threads * wall_s) : NAN;
  uint64_t samples = s->is_source ? c.samples_out : c.samples_in;
  sr->capacity_per_s = c.busy_ns ? s->threads * (double)samples / ((double)c.busy_ns / 1e9) : NAN;
  sr->bytes_in = c.bytes_in;
  sr->bytes_out = c.bytes_out;
  sr->queue_mean_fill = pb_queue_mean_fill(s->out, (uint64_t)(wall_s * 1e9));
  sr->queue_capacity = s->out->capacity;
  sr->critical_path_ms = sr->critical_path_pct = NAN;
  free(h);
}

static void fill_skipped(pb_stage_report *sr, const pb_stage_cfg *sc) {
  memset(sr, 0, sizeof *sr);
  snprintf(sr->name, sizeof sr->name, "%s", sc->name);
  sr->type = pb_stage_type_name(sc->type);
  sr->threads = sc->threads;
  sr->skipped = true;
}

/* Report rows: the source, then the config's stages in order (those synthetic mode skipped, marked). */
static void fill_stages(pb_report *r, const pb_run_record *rec) {
  const pb_engine *e = rec->engine;
  int next = 0;
  if (!e->stages[0].cfg) /* the in-memory source: a row of its own */
    fill_stage(&r->stages[r->nstages++], &e->stages[next++], r->measured_s);
  for (int i = 0; i < rec->cfg->nstages; i++) {
    const pb_stage_cfg *sc = &rec->cfg->stages[i];
    if (next < e->nstages && e->stages[next].cfg == sc)
      fill_stage(&r->stages[r->nstages++], &e->stages[next++], r->measured_s);
    else
      fill_skipped(&r->stages[r->nstages++], sc);
  }
}

/* Until the critical path lands: the device when not input-bound, else the lowest-capacity stage. */
static void fill_bottleneck(pb_report *r, const pb_run_record *rec) {
  const pb_config *cfg = rec->cfg;
  double batch = (double)cfg->stages[pb_config_batch_index(cfg)].size;
  r->bottleneck_required_per_s =
      r->compute_ms > 0 ? batch * rec->device->count / (r->compute_ms / 1e3) : NAN;
  if (!r->classification) return;
  if (strcmp(r->classification, "not_input_bound") == 0) {
    snprintf(r->bottleneck_stage, sizeof r->bottleneck_stage, "device");
    r->bottleneck_capacity_per_s = r->bottleneck_required_per_s;
    snprintf(r->bottleneck_reason, sizeof r->bottleneck_reason,
             "not input-bound: the device waited for input %.2f %% of step time (< 5 %%)", r->input_bound_pct);
    return;
  }
  const pb_stage_report *min = NULL;
  for (int i = 0; i < r->nstages; i++) {
    const pb_stage_report *sr = &r->stages[i];
    if (!sr->skipped && !isnan(sr->capacity_per_s) && (!min || sr->capacity_per_s < min->capacity_per_s))
      min = sr;
  }
  if (!min) return;
  snprintf(r->bottleneck_stage, sizeof r->bottleneck_stage, "%s", min->name);
  r->bottleneck_capacity_per_s = min->capacity_per_s;
  snprintf(r->bottleneck_reason, sizeof r->bottleneck_reason,
           "lowest capacity (threads / mean service time) of all stages: %.1f samples/s; capacity model "
           "only (the critical-path analysis is not in this version)",
           min->capacity_per_s);
}

static void fill_accounting(pb_report *r, const pb_run_record *rec) {
  const pb_engine *e = rec->engine;
  uint64_t in_flight = rec->queued_samples;
  for (int i = 0; i < e->nstages; i++) {
    pb_counters c;
    pb_hist *h = malloc(sizeof *h);
    if (!h) continue;
    pb_stage_totals(&e->stages[i], &c, h);
    free(h);
    in_flight += c.samples_in_flight;
    r->errors += c.samples_error_total;
    r->samples_dropped += c.samples_dropped_total;
    r->samples_read += c.samples_replayed_total; /* a cache's replays count as samples yielded */
    if (e->stages[i].is_source) {
      r->samples_read += c.samples_out_total;
      r->files_read = c.files_read_total;
    }
    if (e->stages[i].cfg && e->stages[i].cfg->type == PB_STAGE_BATCH) r->samples_batched = c.samples_out_total;
    if (e->stages[i].cfg && e->stages[i].cfg->type == PB_STAGE_DECODE) r->samples_decoded = c.samples_out_total;
  }
  r->samples_consumed = rec->steps->samples_consumed;
  for (int i = 0; i < e->nfirst_errors && r->nfirst_errors < PB_MAX_FIRST_ERRORS; i++) {
    pb_first_error *fe = &r->first_errors[r->nfirst_errors++];
    snprintf(fe->file, sizeof fe->file, "%s", e->first_errors[i].file);
    snprintf(fe->message, sizeof fe->message, "%s", e->first_errors[i].message);
  }
  r->errors += rec->steps->samples_failed;
  if (rec->steps->failed && r->nfirst_errors < PB_MAX_FIRST_ERRORS) {
    pb_first_error *fe = &r->first_errors[r->nfirst_errors++];
    snprintf(fe->file, sizeof fe->file, "%s", "(device)");
    snprintf(fe->message, sizeof fe->message, "%s", rec->steps->failure);
  }
  r->samples_in_flight = in_flight;
  r->balanced = r->samples_read == r->samples_consumed + r->samples_dropped + r->errors + in_flight;
}

void pb_metrics_compute(pb_report *r, const pb_run_record *rec) {
  const pb_steps *s = rec->steps;
  r->version = PB_VERSION;
  r->synthetic = rec->synthetic;
  r->interrupted = rec->interrupted;
  snprintf(r->config_name, sizeof r->config_name, "%s", rec->cfg->name);
  r->device_kind = rec->device->kind;
  snprintf(r->device_name, sizeof r->device_name, "%s", rec->device->name);
  r->device_count = rec->device->count;
  r->timing_source = rec->device->timing_source;
  r->warmup_steps = rec->cfg->run.warmup_steps;
  bool measured = s->measured_count > 0;
  r->measured_s = measured && s->window_end_ns > s->window_start_ns
                     ? (double)(s->window_end_ns - s->window_start_ns) / 1e9
                     : 0;
  step_sums t;
  sum_steps(s, &t);
  fill_steps(r, rec, &t);
  free(t.step_ms);
  fill_stages(r, rec);
  fill_bottleneck(r, rec);
  fill_accounting(r, rec);
  r->cpu_s = rec->cpu_s;
  r->cpu_ns_per_sample = r->samples_read ? rec->cpu_s * 1e9 / (double)r->samples_read : NAN;
}
