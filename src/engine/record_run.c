#include "record_run.h"
#include "json_text.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

/* Copies one worker's ring, oldest event first. */
static int copy_traces(pb_stage_rec *sr, const pb_stage *s) {
  sr->workers = calloc((size_t)s->threads, sizeof *sr->workers);
  if (!sr->workers) return -ENOMEM;
  for (int k = 0; k < s->threads; k++) {
    pb_worker_trace *t = &sr->workers[k];
    if (pb_trace_ring_linearize(&s->workers[k].trace, &t->ev, &t->n, &t->dropped)) return -ENOMEM;
  }
  return 0;
}

static int stage_from_run(pb_stage_rec *sr, const pb_stage *s, const pb_config *cfg, bool traced) {
  snprintf(sr->name, sizeof sr->name, "%s", s->name);
  snprintf(sr->type, sizeof sr->type, "%s", s->ops->type);
  sr->threads = s->threads;
  sr->cfg_index = s->cfg ? (int)(s->cfg - cfg->stages) : -1;
  sr->is_source = s->is_source;
  sr->batched = s->batched;
  pb_stage_totals(s, &sr->ctr, &sr->hist);
  sr->cpu_delay_ns = 0;
  for (int k = 0; k < s->threads; k++) {
    sr->cpu_ns += s->workers[k].cpu_ns;
    int64_t d = s->workers[k].cpu_delay_ns;
    sr->cpu_delay_ns = d < 0 || sr->cpu_delay_ns < 0 ? -1 : sr->cpu_delay_ns + d;
  }
  sr->queue_capacity = s->out->capacity;
  return traced ? copy_traces(sr, s) : 0;
}

static void stage_skipped(pb_stage_rec *sr, const pb_stage_cfg *sc, int index) {
  snprintf(sr->name, sizeof sr->name, "%s", sc->name);
  snprintf(sr->type, sizeof sr->type, "%s", pb_stage_type_name(sc->type));
  sr->threads = sc->threads;
  sr->cfg_index = index;
  sr->skipped = true;
  sr->cpu_delay_ns = -1;
  pb_hist_reset(&sr->hist);
}

/* Takes the step record over from the run (no copy: it can be long, and mapped from its spill file). */
static void take_steps(pb_record *rec, pb_steps *s) {
  rec->nsteps = s->n;
  rec->steps = pb_steps_take(s, &rec->steps_map_bytes);
  rec->start_ns = s->start_ns;
  rec->start_unix_ns = pb_unix_ns() - (pb_now_ns() - s->start_ns);
  rec->window_start_ns = s->window_start_ns;
  rec->window_end_ns = s->window_end_ns;
  rec->measured_count = s->measured_count;
  rec->samples_consumed = s->samples_consumed;
  rec->samples_failed = s->samples_failed;
  rec->steps_failed = s->failed;
  rec->peer_stopped = s->peer_stopped;
  rec->world_size = 1; /* the caller sets its rank in a job */
  pb_utf8_copy(rec->steps_failure, sizeof rec->steps_failure, s->failure); /* as trace.json writes it */
}

static uint64_t trace_ring_bytes(const pb_engine *e) {
  uint64_t bytes = 0;
  for (int i = 0; i < e->nstages; i++)
    for (int k = 0; e->stages[i].workers && k < e->stages[i].threads; k++)
      if (e->stages[i].workers[k].trace.ev) bytes += ((uint64_t)e->stages[i].workers[k].trace.mask + 1) * sizeof(pb_event);
  return bytes;
}

int pb_record_from_run(pb_record *rec, const pb_config *cfg, const pb_engine *e, pb_steps *s,
                       const pb_device *d, bool synthetic, bool interrupted, uint64_t queued_samples,
                       double cpu_s) {
  memset(rec, 0, sizeof *rec);
  rec->cfg = cfg;
  rec->synthetic = synthetic;
  rec->interrupted = interrupted;
  snprintf(rec->device_kind, sizeof rec->device_kind, "%s", d->kind);
  snprintf(rec->timing_source, sizeof rec->timing_source, "%s", d->timing_source);
  snprintf(rec->device_name, sizeof rec->device_name, "%s", d->name);
  rec->device_count = d->count;
  snprintf(rec->timing_source_reason, sizeof rec->timing_source_reason, "%s", d->timing_source_reason);
  memcpy(rec->device_ids, d->ids, sizeof rec->device_ids);
  memcpy(rec->device_names, d->names, sizeof rec->device_names);
  rec->step_kernel = d->step_kernel;
  rec->idle_pct_cuda_events = d->idle_pct_cuda_events;
  rec->gpu_timestamps_dropped = d->gpu_timestamps_dropped;
  /* Batches dealt to a device that stopped before stepping them are queued samples too. */
  rec->queued_samples = queued_samples + s->samples_undelivered;
  rec->cpu_s = cpu_s;
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  rec->ncpu = n > 0 ? (int)n : 1;
  rec->cores_usable = rec->cores_affinity = rec->ncpu; /* run.c sets what the machine probe says */
  rec->cores_quota = NAN;
  rec->dataset_files = e->have_files ? e->files.count : 0;
  rec->dataset_files_skipped = e->have_files ? e->files_skipped.count : 0;
  rec->traced = e->tracing;
  rec->planned_bytes = pb_engine_memory_bytes(e, PB_QUEUES_FULL, NULL, 0);
  rec->planned_queues_empty_bytes = pb_engine_memory_bytes(e, PB_QUEUES_EMPTY, NULL, 0);
  rec->trace_bytes = trace_ring_bytes(e);
  struct rusage ru;
  rec->peak_rss_bytes = getrusage(RUSAGE_SELF, &ru) == 0 ? (uint64_t)ru.ru_maxrss * 1024u : 0; /* KB on Linux */
  rec->nfirst_errors = e->nfirst_errors;
  /* file names are bytes, and the engine cut them at a byte count: kept as the UTF-8 that JSON writes,
   * within the field, so trace.json reads back into the same fields (analyze) */
  for (int i = 0; i < e->nfirst_errors; i++) {
    pb_utf8_copy(rec->first_errors[i].file, sizeof rec->first_errors[i].file, e->first_errors[i].file);
    pb_utf8_copy(rec->first_errors[i].message, sizeof rec->first_errors[i].message, e->first_errors[i].message);
  }
  take_steps(rec, s);
  pb_ceilings_none(&rec->ceilings, "not looked up"); /* run.c looks the calibration up */
  uint64_t window_ns = s->window_end_ns > s->window_start_ns ? s->window_end_ns - s->window_start_ns : 0;
  int next = 0;
  if (!e->stages[0].cfg) { /* the in-memory source: a row of its own */
    if (stage_from_run(&rec->stages[rec->nstages++], &e->stages[next++], cfg, e->tracing)) return -ENOMEM;
    rec->stages[0].queue_mean_fill = pb_queue_mean_fill(e->stages[0].out, window_ns);
  }
  for (int i = 0; i < cfg->nstages; i++) {
    pb_stage_rec *sr = &rec->stages[rec->nstages++];
    if (next < e->nstages && e->stages[next].cfg == &cfg->stages[i]) {
      if (stage_from_run(sr, &e->stages[next], cfg, e->tracing)) return -ENOMEM;
      sr->queue_mean_fill = pb_queue_mean_fill(e->stages[next].out, window_ns);
      next++;
    } else {
      stage_skipped(sr, &cfg->stages[i], i);
    }
  }
  return 0;
}

