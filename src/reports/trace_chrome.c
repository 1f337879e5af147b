/* trace.json's Chrome Trace Event view (docs/TRACE.md, "Events"): the "traceEvents" lines that Perfetto and
 * chrome://tracing draw: the host workers' segments (which `pipebench analyze` reads back), the device
 * timeline, the queue fill as counters and one sample's flow.  Written with fprintf, one event a line: a
 * trace holds up to ~1M events, never built as a cJSON tree. */
#include "trace_fields.h"
#include "json_text.h"

#include "timeline.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

typedef struct writer {
  FILE *f;
  const pb_record *rec;
  bool first;                   /* no event written yet (the separator goes before every other one) */
  bool cancelled;               /* a SIGINT/SIGTERM's time budget ran out while writing: stop */
  uint32_t since_check;
  int tid_base[PB_MAX_STAGES + 1]; /* tid of worker 0 of each traced row */
} writer;

/* Signed ns as microseconds with exactly 3 decimals. */
static const char *fmt_us(char *b, size_t len, int64_t ns) {
  uint64_t a = ns < 0 ? -(uint64_t)ns : (uint64_t)ns;
  snprintf(b, len, "%s%llu.%03llu", ns < 0 ? "-" : "", (unsigned long long)(a / 1000), (unsigned long long)(a % 1000));
  return b;
}

/* Polled per event: true once a signal's time budget is spent (checked every 4096 events: a few ms).  A
 * small trace is still written after Ctrl-C; a long run's trace, which takes seconds, is abandoned. */
static bool stopped(writer *w) {
  if (!w->cancelled && ++w->since_check >= 4096) {
    w->since_check = 0;
    w->cancelled = pb_signal_overdue();
  }
  return w->cancelled;
}

static void sep(writer *w) {
  if (!w->first) fputs(",\n", w->f);
  w->first = false;
}

/* ,"name":N -- a number below 2^53, else a string. */
static void fput_u64(FILE *f, const char *name, uint64_t v) {
  if (v < PB_TRACE_EXACT_MAX) fprintf(f, ",\"%s\":%llu", name, (unsigned long long)v);
  else fprintf(f, ",\"%s\":\"%llu\"", name, (unsigned long long)v);
}

/* The opening of an "X" event up to (and including) "name":...,"cat":"..". */
static void x_begin(writer *w, int pid, int tid, uint64_t t0, uint64_t t1, const char *cat) {
  char ts[32], dur[32];
  sep(w);
  fprintf(w->f, "{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%s,\"dur\":%s,\"cat\":\"%s\",\"name\":", pid, tid,
          fmt_us(ts, sizeof ts, (int64_t)(t0 - w->rec->start_ns)), fmt_us(dur, sizeof dur, (int64_t)(t1 - t0)),
          cat);
}

static void meta(writer *w, const char *what, int pid, int tid, const char *name) {
  sep(w);
  fprintf(w->f, "{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"%s\",\"args\":{\"name\":", pid, tid, what);
  pb_json_fput_str(w->f, name);
  fputs("}}", w->f);
}

static void sort_index(writer *w, int pid, int tid, int index) {
  sep(w);
  fprintf(w->f, "{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":%d}}",
          pid, tid, index);
}

static const char *kind_cat(uint8_t kind) {
  switch (kind) {
    case PB_EV_PROCESS: return "process";
    case PB_EV_WAIT: return "wait";
    case PB_EV_BLOCKED: return "blocked";
    case PB_EV_HANDOFF: return "handoff";
    default: return "other";
  }
}

static void key_args(FILE *f, const char *sample_name, const char *batch_name, uint64_t key) {
  if (key == PB_NO_KEY) return;
  if (PB_KEY_IS_BATCH(key)) fput_u64(f, batch_name, key & ~PB_TRACE_BATCH_BIT);
  else fput_u64(f, sample_name, key);
}

static void worker_event(writer *w, const pb_stage_rec *s, int tid, const pb_event *e) {
  FILE *f = w->f;
  x_begin(w, PB_TRACE_PID_HOST, tid, e->t0_ns, e->t1_ns, kind_cat(e->kind));
  if (e->kind == PB_EV_PROCESS) pb_json_fput_str(f, s->name);
  else fputs(e->kind == PB_EV_WAIT      ? "\"wait_in\""
             : e->kind == PB_EV_BLOCKED ? "\"blocked_out\""
             : e->kind == PB_EV_HANDOFF ? "\"handoff\""
                                        : "\"event\"",
             f);
  fprintf(f, ",\"args\":{\"bytes\":%u,\"f\":%u", (unsigned)e->bytes, (unsigned)e->flags);
  key_args(f, "id", "batch", e->key);
  key_args(f, "out_id", "out_batch", e->out);
  if (e->kind != PB_EV_PROCESS && e->kind != PB_EV_WAIT && e->kind != PB_EV_BLOCKED && e->kind != PB_EV_HANDOFF)
    fprintf(f, ",\"k\":%u", (unsigned)e->kind);
  fputs("}}", f);
}

static int device_tracks(const pb_record *rec) {
  int n = rec->device_count > 0 ? rec->device_count : 1;
  for (size_t i = 0; i < rec->nsteps; i++)
    if (rec->steps[i].device + 1 > n) n = rec->steps[i].device + 1;
  return n;
}

static void metadata(writer *w) {
  const pb_record *rec = w->rec;
  char name[PB_NAME_LEN + 64];
  meta(w, "process_name", PB_TRACE_PID_HOST, 0, "pipeline (host)");
  snprintf(name, sizeof name, "device (%s)", rec->device_kind[0] ? rec->device_kind : "unknown");
  meta(w, "process_name", PB_TRACE_PID_DEVICE, 0, name);
  for (int i = 0; i < rec->nstages; i++) {
    const pb_stage_rec *s = &rec->stages[i];
    for (int k = 0; s->workers && k < s->threads; k++) {
      snprintf(name, sizeof name, "%s #%d", s->name, k);
      meta(w, "thread_name", PB_TRACE_PID_HOST, w->tid_base[i] + k, name);
      sort_index(w, PB_TRACE_PID_HOST, w->tid_base[i] + k, w->tid_base[i] + k);
    }
  }
  int ndev = device_tracks(rec);
  bool copies[PB_MAX_DEVICES + 1] = {0};
  for (size_t i = 0; i < rec->nsteps; i++)
    if (rec->steps[i].h2d_end_ns && rec->steps[i].device < PB_ARRAY_LEN(copies)) copies[rec->steps[i].device] = true;
  for (int d = 0; d < ndev; d++) {
    snprintf(name, sizeof name, "device %d", d);
    meta(w, "thread_name", PB_TRACE_PID_DEVICE, d + 1, name);
    sort_index(w, PB_TRACE_PID_DEVICE, d + 1, 2 * d);
    if (d < (int)PB_ARRAY_LEN(copies) && copies[d]) {
      snprintf(name, sizeof name, "device %d h2d", d);
      meta(w, "thread_name", PB_TRACE_PID_DEVICE, PB_TRACE_H2D_TID_BASE + d, name);
      sort_index(w, PB_TRACE_PID_DEVICE, PB_TRACE_H2D_TID_BASE + d, 2 * d + 1);
    }
  }
}

static void worker_events(writer *w) {
  const pb_record *rec = w->rec;
  for (int i = 0; i < rec->nstages; i++) {
    const pb_stage_rec *s = &rec->stages[i];
    for (int k = 0; s->workers && k < s->threads; k++)
      for (uint32_t j = 0; j < s->workers[k].n && !stopped(w); j++)
        worker_event(w, s, w->tid_base[i] + k, &s->workers[k].ev[j]);
  }
}

/* The device timeline: per step, the idle time before it (input_wait), its copy, its compute. */
static void device_events(writer *w) {
  const pb_record *rec = w->rec;
  FILE *f = w->f;
  for (size_t i = 0; i < rec->nsteps && !stopped(w); i++) {
    const pb_step *st = &rec->steps[i];
    int tid = st->device + 1;
    if (st->ready_ns > st->prev_end_ns) {
      x_begin(w, PB_TRACE_PID_DEVICE, tid, st->prev_end_ns, st->compute_start_ns, "idle");
      fprintf(f, "\"input_wait\",\"args\":{\"step\":%zu}}", i);
    }
    if (st->h2d_end_ns) {
      x_begin(w, PB_TRACE_PID_DEVICE, PB_TRACE_H2D_TID_BASE + st->device, st->h2d_start_ns, st->h2d_end_ns, "h2d");
      fprintf(f, "\"h2d\",\"args\":{\"step\":%zu", i);
      fput_u64(f, "bytes", st->bytes);
      fputs("}}", f);
    }
    x_begin(w, PB_TRACE_PID_DEVICE, tid, st->compute_start_ns, st->compute_end_ns, "compute");
    fprintf(f, "\"step %zu\",\"args\":{\"step\":%zu", i, i);
    key_args(f, "id", "batch", st->key);
    fprintf(f, ",\"samples\":%u,\"measured\":%s}}", (unsigned)st->samples, st->measured ? "true" : "false");
    if (st->comm_end_ns) {
      x_begin(w, PB_TRACE_PID_DEVICE, tid, st->comm_start_ns, st->comm_end_ns, "allreduce");
      fprintf(f, "\"allreduce\",\"args\":{\"step\":%zu}}", i);
    }
  }
}

/* Queue fill over time as counter tracks (Perfetto draws one graph per stage): each point's value holds
 * from the start of its interval.  Not read back: the header's queue_fill is the record. */
static void counter_events(writer *w) {
  const pb_timeline *tl = w->rec->timeline;
  char ts[32];
  for (int k = 0; tl && k < tl->nseries; k++) {
    for (size_t i = 0; i < tl->n && !stopped(w); i++) {
      uint64_t begin = i ? tl->t_ns[i - 1] : tl->t0_ns;
      sep(w);
      fputs("{\"ph\":\"C\",\"pid\":1,\"name\":", w->f);
      char name[PB_NAME_LEN + 16];
      snprintf(name, sizeof name, "queue fill %s", tl->names[k]);
      pb_json_fput_str(w->f, name);
      fprintf(w->f, ",\"ts\":%s,\"args\":{\"pct\":%.2f}}", fmt_us(ts, sizeof ts, (int64_t)(begin - w->rec->start_ns)),
              pb_timeline_fill_e4(tl->fill[k][i]) / 100.0);
    }
  }
}

/* --- the flow: one sample's journey from the source to the device --- */

typedef struct flow_pt {
  int pid, tid;
  uint64_t t_ns;
} flow_pt;

/* In row i, the PROCESS segment that handed `key` on: before the join (t0 <= before) the latest one,
 * else the earliest.  Returns the worker tid and its start, or false. */
static bool find_emit(const writer *w, int row, uint64_t key, bool latest_before, uint64_t before, flow_pt *pt) {
  const pb_stage_rec *s = &w->rec->stages[row];
  bool found = false;
  for (int k = 0; k < s->threads; k++) {
    const pb_worker_trace *t = &s->workers[k];
    for (uint32_t j = 0; j < t->n; j++) {
      const pb_event *e = &t->ev[j];
      if (e->kind != PB_EV_PROCESS || !(e->flags & PB_EVF_EMITTED) || e->out != key) continue;
      if (latest_before && e->t0_ns > before) continue;
      bool better = !found || (latest_before ? e->t0_ns > pt->t_ns : e->t0_ns < pt->t_ns);
      if (better) *pt = (flow_pt){PB_TRACE_PID_HOST, w->tid_base[row] + k, e->t0_ns};
      found = true;
    }
  }
  return found;
}

static void flow_events(writer *w) {
  const pb_record *rec = w->rec;
  if (!rec->nsteps) return;
  size_t last = rec->nsteps - 1;
  for (size_t i = rec->nsteps; i-- > 0;)
    if (rec->steps[i].measured) {
      last = i;
      break;
    }
  const pb_step *st = &rec->steps[last];
  uint64_t batch = st->key;
  if (!PB_KEY_IS_BATCH(batch)) return;
  /* the first sample that joined that batch */
  bool have = false;
  uint64_t sample = 0, join_t0 = 0;
  for (int i = 0; i < rec->nstages; i++) {
    const pb_stage_rec *s = &rec->stages[i];
    for (int k = 0; s->workers && k < s->threads; k++)
      for (uint32_t j = 0; j < s->workers[k].n; j++) {
        const pb_event *e = &s->workers[k].ev[j];
        if (e->kind != PB_EV_PROCESS || !(e->flags & PB_EVF_JOINED) || e->out != batch) continue;
        if (!have || e->t0_ns < join_t0) {
          have = true;
          sample = e->key;
          join_t0 = e->t0_ns;
        }
      }
  }
  if (!have || sample == PB_NO_KEY) return;
  flow_pt pts[PB_MAX_STAGES + 2];
  int n = 0;
  for (int i = 0; i < rec->nstages; i++) {
    if (!rec->stages[i].workers || rec->stages[i].skipped) continue;
    if (find_emit(w, i, sample, true, join_t0, &pts[n]) || find_emit(w, i, batch, false, 0, &pts[n])) n++;
  }
  if (!n) return;
  pts[n++] = (flow_pt){PB_TRACE_PID_DEVICE, st->device + 1, st->compute_start_ns};
  char ts[32], name[48];
  if (PB_KEY_IS_BATCH(sample))
    snprintf(name, sizeof name, "batch %llu", (unsigned long long)(sample & ~PB_TRACE_BATCH_BIT));
  else snprintf(name, sizeof name, "sample %llu", (unsigned long long)sample);
  for (int i = 0; i < n; i++) {
    const char *ph = i == 0 ? "s" : i == n - 1 ? "f" : "t";
    sep(w);
    fprintf(w->f, "{\"ph\":\"%s\",%s\"id\":1,\"pid\":%d,\"tid\":%d,\"ts\":%s,\"cat\":\"flow\",\"name\":\"%s\"}", ph,
            i == n - 1 ? "\"bp\":\"e\"," : "", pts[i].pid, pts[i].tid,
            fmt_us(ts, sizeof ts, (int64_t)(pts[i].t_ns - rec->start_ns)), name);
  }
}

/* The events after the header line, up to (not including) the closing line. */
int pb_trace_write_events(FILE *f, const pb_record *rec) {
  writer w = {.f = f, .rec = rec, .first = true};
  int tid = 1;
  for (int i = 0; i < rec->nstages; i++) {
    w.tid_base[i] = tid;
    if (rec->stages[i].workers) tid += rec->stages[i].threads;
  }
  metadata(&w);
  worker_events(&w);
  device_events(&w);
  counter_events(&w);
  if (!w.cancelled) flow_events(&w);
  return w.cancelled ? -ECANCELED : 0;
}
