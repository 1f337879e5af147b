/* trace.json (docs/CONTRACT.md §5, docs/TRACE.md): the Chrome Trace Event Format view of a run's record, with the
 * record itself in the header so that `pipebench analyze` reproduces the report from this file alone.
 *
 * Line layout (the loader streams it line by line; a trace holds up to ~1M events, so events are never
 * built as one cJSON tree):
 *
 *   {"displayTimeUnit":"ns",
 *   "pipebench":{...the record without its events, one line...},
 *   "traceEvents":[
 *   {...one event...},
 *   ...
 *   {...the last event...}
 *   ]}
 *
 * Exactness: every uint64 that may exceed 2^53 is a decimal string (or a number when it is below 2^53);
 * doubles are printed with %.17g; event times are written from integer nanoseconds as "%llu.%03llu" us
 * relative to start_ns and parsed back from the text, so a reloaded record is bit-identical. */
#include "trace_json.h"
#include "json_text.h"

#include "timeline.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TRACE_FORMAT 1
#define EXACT_MAX (1ull << 53) /* integers below this are exact as JSON numbers (doubles) */
#define BATCH_BIT (1ull << 63)
#define PID_HOST 1
#define PID_DEVICE 2
#define H2D_TID_BASE (PB_MAX_DEVICES + 1) /* device d's copies: tid H2D_TID_BASE + d (own track) */

static const char k_line1[] = "{\"displayTimeUnit\":\"ns\",";
static const char k_line2[] = "\"pipebench\":";
static const char k_line3[] = "\"traceEvents\":[";
static const char k_end[] = "]}";

/* Every pb_counters field, by name.  The assertion catches a field added to pb_counters but not here. */
#define CTR(f) {#f, offsetof(pb_counters, f)}
static const struct {
  const char *name;
  size_t off;
} k_ctr[] = {
    CTR(calls),          CTR(samples_in),        CTR(samples_out),           CTR(busy_ns),
    CTR(wait_in_ns),     CTR(blocked_out_ns),    CTR(busy_total_ns),         CTR(bytes_in),
    CTR(bytes_out),      CTR(samples_out_total), CTR(samples_dropped_total), CTR(samples_in_flight),
    CTR(samples_error_total), CTR(files_read_total), CTR(samples_replayed_total),
};
#undef CTR
_Static_assert(sizeof k_ctr / sizeof k_ctr[0] * sizeof(uint64_t) == sizeof(pb_counters),
               "pb_counters changed: add the new field to k_ctr in reports/trace_json.c");

enum { STEP_FIELDS = 11 };

/* ====================================================================================================
 * Writer
 * ==================================================================================================== */

/* A uint64: a number below 2^53, else a decimal string. */
static cJSON *j_u64(uint64_t v) {
  if (v < EXACT_MAX) return cJSON_CreateNumber((double)v);
  char b[24];
  snprintf(b, sizeof b, "%llu", (unsigned long long)v);
  return cJSON_CreateString(b);
}

static cJSON *j_u64_str(uint64_t v) {
  char b[24];
  snprintf(b, sizeof b, "%llu", (unsigned long long)v);
  return cJSON_CreateString(b);
}

/* A time relative to start_ns, as a signed integer (wrapping arithmetic, so any value round-trips). */
static cJSON *j_rel(uint64_t abs_ns, uint64_t start_ns) {
  int64_t d = (int64_t)(abs_ns - start_ns);
  if (d > -(int64_t)EXACT_MAX && d < (int64_t)EXACT_MAX) return cJSON_CreateNumber((double)d);
  char b[24];
  snprintf(b, sizeof b, "%lld", (long long)d);
  return cJSON_CreateString(b);
}

/* A double that reads back bit-identical: %.17g, or "nan"/"inf"/"-inf" as strings. */
static cJSON *j_dbl(double v) {
  if (!isfinite(v)) return cJSON_CreateString(isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
  char b[40];
  snprintf(b, sizeof b, "%.17g", v);
  return cJSON_CreateRaw(b);
}

static void put(cJSON *obj, const char *key, cJSON *v, bool *ok) {
  if (!v || !obj || !cJSON_AddItemToObject(obj, key, v)) {
    cJSON_Delete(v);
    *ok = false;
  }
}

static void push(cJSON *arr, cJSON *v, bool *ok) {
  if (!v || !arr || !cJSON_AddItemToArray(arr, v)) {
    cJSON_Delete(v);
    *ok = false;
  }
}

static cJSON *finish(cJSON *o, bool ok) {
  if (ok && o) return o;
  cJSON_Delete(o);
  return NULL;
}

/* The steps array is the header's bulk (one entry per step: 224k in a 15 s run at 15k steps/s), so it is
 * written as text directly, not through cJSON (whose number printing costs seconds there), and put in
 * the header as a raw value.  The values are exactly what the cJSON path would give: j_rel, j_u64... */
typedef struct textbuf {
  char *p;
  size_t n, cap;
  bool oom;
} textbuf;

static void tb_need(textbuf *b, size_t more) {
  if (b->oom || b->n + more < b->cap) return;
  size_t cap = b->cap ? b->cap : 1 << 16;
  while (cap <= b->n + more) cap *= 2;
  char *p = realloc(b->p, cap);
  if (!p) b->oom = true;
  else b->p = p, b->cap = cap;
}

static void tb_char(textbuf *b, char c) {
  tb_need(b, 1);
  if (!b->oom) b->p[b->n++] = c;
}

/* v as decimal digits, quoted when a JSON number (a double) could not hold it exactly. */
static void tb_int(textbuf *b, int64_t v, bool quoted) {
  char d[24];
  int k = 0;
  uint64_t a = v < 0 ? -(uint64_t)v : (uint64_t)v;
  do d[k++] = (char)('0' + a % 10); while ((a /= 10) != 0);
  tb_need(b, (size_t)k + 3);
  if (b->oom) return;
  if (quoted) b->p[b->n++] = '"';
  if (v < 0) b->p[b->n++] = '-';
  while (k > 0) b->p[b->n++] = d[--k];
  if (quoted) b->p[b->n++] = '"';
}

static void tb_u64(textbuf *b, uint64_t v, bool always_quoted) { /* j_u64, j_u64_str */
  if (v > INT64_MAX) { /* beyond int64: only keys (PB_BATCH_KEY), always quoted */
    char s[24];
    int n = snprintf(s, sizeof s, "\"%llu\"", (unsigned long long)v);
    tb_need(b, (size_t)n);
    if (!b->oom) memcpy(b->p + b->n, s, (size_t)n), b->n += (size_t)n;
    return;
  }
  tb_int(b, (int64_t)v, always_quoted || v >= EXACT_MAX);
}

static void tb_rel(textbuf *b, uint64_t abs_ns, uint64_t start_ns) { /* j_rel */
  int64_t d = (int64_t)(abs_ns - start_ns);
  tb_int(b, d, !(d > -(int64_t)EXACT_MAX && d < (int64_t)EXACT_MAX));
}

static void step_text(textbuf *b, const pb_step *st, uint64_t start) {
  tb_char(b, '[');
  tb_rel(b, st->prev_end_ns, start), tb_char(b, ',');
  tb_rel(b, st->ready_ns, start), tb_char(b, ',');
  if (st->h2d_start_ns) tb_rel(b, st->h2d_start_ns, start); else tb_char(b, '0'); /* j_rel0 */
  tb_char(b, ',');
  if (st->h2d_end_ns) tb_rel(b, st->h2d_end_ns, start); else tb_char(b, '0');
  tb_char(b, ',');
  tb_rel(b, st->compute_start_ns, start), tb_char(b, ',');
  tb_rel(b, st->compute_end_ns, start), tb_char(b, ',');
  tb_u64(b, st->bytes, false), tb_char(b, ',');
  tb_u64(b, st->key, true), tb_char(b, ',');
  tb_int(b, st->samples, false), tb_char(b, ',');
  tb_int(b, st->device, false), tb_char(b, ',');
  tb_char(b, st->measured ? '1' : '0');
  if (st->comm_end_ns) { /* the gradient exchange (device.allreduce): two more fields */
    tb_char(b, ','), tb_rel(b, st->comm_start_ns, start);
    tb_char(b, ','), tb_rel(b, st->comm_end_ns, start);
  }
  tb_char(b, ']');
}

/* The steps array as one raw JSON value. */
static cJSON *steps_json(const pb_record *rec) {
  textbuf b = {0};
  tb_char(&b, '[');
  for (size_t i = 0; i < rec->nsteps && !b.oom; i++) {
    if (i) tb_char(&b, ',');
    step_text(&b, &rec->steps[i], rec->start_ns);
    if ((i & 4095) == 4095 && pb_signal_overdue()) b.oom = true; /* give up: write_trace says why */
  }
  tb_char(&b, ']');
  tb_char(&b, '\0');
  cJSON *raw = b.oom ? NULL : cJSON_CreateRaw(b.p);
  free(b.p);
  return raw;
}

static cJSON *hist_json(const pb_hist *h) {
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  put(o, "count", j_u64(h->count), &ok);
  put(o, "sum_ns", j_u64(h->sum_ns), &ok);
  put(o, "min_ns", j_u64(h->min_ns), &ok);
  put(o, "max_ns", j_u64(h->max_ns), &ok);
  cJSON *b = cJSON_CreateArray();
  for (unsigned i = 0; ok && b && i < PB_HIST_BUCKETS; i++) {
    if (!h->buckets[i]) continue;
    cJSON *pair = cJSON_CreateArray();
    push(pair, cJSON_CreateNumber(i), &ok);
    push(pair, j_u64(h->buckets[i]), &ok);
    push(b, ok ? pair : (cJSON_Delete(pair), NULL), &ok);
  }
  put(o, "buckets", b, &ok);
  return finish(o, ok);
}

static cJSON *ctr_json(const pb_counters *c) {
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  for (size_t i = 0; i < PB_ARRAY_LEN(k_ctr); i++)
    put(o, k_ctr[i].name, j_u64(*(const uint64_t *)((const char *)c + k_ctr[i].off)), &ok);
  return finish(o, ok);
}

static cJSON *stage_json(const pb_stage_rec *s, int *next_tid) {
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  put(o, "name", cJSON_CreateString(s->name), &ok);
  put(o, "type", cJSON_CreateString(s->type), &ok);
  put(o, "threads", cJSON_CreateNumber(s->threads), &ok);
  put(o, "cfg_index", cJSON_CreateNumber(s->cfg_index), &ok);
  put(o, "is_source", cJSON_CreateBool(s->is_source), &ok);
  put(o, "skipped", cJSON_CreateBool(s->skipped), &ok);
  put(o, "batched", cJSON_CreateBool(s->batched), &ok);
  put(o, "ctr", ctr_json(&s->ctr), &ok);
  put(o, "hist", hist_json(&s->hist), &ok);
  put(o, "cpu_ns", j_u64(s->cpu_ns), &ok);
  put(o, "cpu_delay_ns", s->cpu_delay_ns < 0 ? cJSON_CreateNull() : j_u64((uint64_t)s->cpu_delay_ns), &ok);
  put(o, "queue_mean_fill", j_dbl(s->queue_mean_fill), &ok);
  put(o, "queue_capacity", cJSON_CreateNumber(s->queue_capacity), &ok);
  if (s->workers) {
    cJSON *w = cJSON_CreateArray();
    for (int k = 0; ok && w && k < s->threads; k++) {
      cJSON *t = cJSON_CreateObject();
      put(t, "tid", cJSON_CreateNumber((*next_tid)++), &ok);
      put(t, "n", cJSON_CreateNumber(s->workers[k].n), &ok);
      put(t, "dropped", j_u64(s->workers[k].dropped), &ok);
      push(w, ok ? t : (cJSON_Delete(t), NULL), &ok);
    }
    put(o, "workers", w, &ok);
  }
  return finish(o, ok);
}


/* The GPU side of the device record (ids, names, timing source reason, step-kernel check, CUPTI
 * cross-check); optional on load, so traces from before they existed still load. */
static void device_extras(cJSON *d, const pb_record *rec, bool *ok) {
  int n = rec->device_count > 0 && rec->device_count <= PB_MAX_DEVICES ? rec->device_count : 0;
  cJSON *names = cJSON_CreateArray();
  for (int k = 0; names && k < n; k++) cJSON_AddItemToArray(names, cJSON_CreateString(rec->device_names[k]));
  put(d, "ids", cJSON_CreateIntArray(rec->device_ids, n), ok);
  put(d, "names", names, ok);
  put(d, "timing_source_reason", cJSON_CreateString(rec->timing_source_reason), ok);
  cJSON *k = cJSON_CreateObject();
  put(k, "measured", cJSON_CreateBool(rec->step_kernel.measured), ok);
  put(k, "target_ms", j_dbl(rec->step_kernel.target_ms), ok);
  put(k, "measured_ms", j_dbl(rec->step_kernel.measured_ms), ok);
  put(k, "error_pct", j_dbl(rec->step_kernel.error_pct), ok);
  put(d, "step_kernel", k, ok);
  put(d, "idle_pct_cuda_events", j_dbl(rec->idle_pct_cuda_events), ok);
  put(d, "gpu_timestamps_dropped", j_u64(rec->gpu_timestamps_dropped), ok);
}

/* The queue fill over time (src/timeline.h): fills as integers in units of 1e-4 (how they were sampled). */
static cJSON *timeline_json(const pb_timeline *tl, uint64_t start, bool *ok) {
  cJSON *o = cJSON_CreateObject();
  put(o, "t0_ns", j_rel(tl->t0_ns, start), ok);
  put(o, "interval_ns", j_u64(tl->interval_ns), ok);
  cJSON *t = cJSON_CreateArray();
  for (size_t i = 0; *ok && t && i < tl->n; i++) push(t, j_rel(tl->t_ns[i], start), ok);
  put(o, "t_ns", t, ok);
  cJSON *series = cJSON_CreateArray();
  for (int k = 0; *ok && series && k < tl->nseries; k++) {
    cJSON *sj = cJSON_CreateObject();
    put(sj, "stage", cJSON_CreateString(tl->names[k]), ok);
    put(sj, "capacity", cJSON_CreateNumber(tl->capacity[k]), ok);
    cJSON *f = cJSON_CreateArray();
    for (size_t i = 0; *ok && f && i < tl->n; i++) push(f, cJSON_CreateNumber((double)pb_timeline_fill_e4(tl->fill[k][i])), ok);
    put(sj, "fill_e4", f, ok);
    push(series, sj, ok);
  }
  put(o, "series", series, ok);
  return finish(o, *ok);
}

static cJSON *record_json(const pb_record *rec) {
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  put(o, "format", cJSON_CreateNumber(TRACE_FORMAT), &ok);
  put(o, "version", cJSON_CreateString(PB_VERSION), &ok);
  put(o, "config", rec->cfg ? pb_config_to_json(rec->cfg) : NULL, &ok);
  put(o, "synthetic", cJSON_CreateBool(rec->synthetic), &ok);
  put(o, "interrupted", cJSON_CreateBool(rec->interrupted), &ok);
  cJSON *d = cJSON_CreateObject();
  put(d, "kind", cJSON_CreateString(rec->device_kind), &ok);
  put(d, "name", cJSON_CreateString(rec->device_name), &ok);
  put(d, "count", cJSON_CreateNumber(rec->device_count), &ok);
  put(d, "timing_source", cJSON_CreateString(rec->timing_source), &ok);
  device_extras(d, rec, &ok);
  put(o, "device", ok ? d : (cJSON_Delete(d), NULL), &ok);
  put(o, "start_ns", j_u64_str(rec->start_ns), &ok);
  put(o, "start_unix_ns", j_u64_str(rec->start_unix_ns), &ok);
  put(o, "window_start_ns", j_rel(rec->window_start_ns, rec->start_ns), &ok);
  put(o, "window_end_ns", j_rel(rec->window_end_ns, rec->start_ns), &ok);
  put(o, "measured_count", j_u64(rec->measured_count), &ok);
  put(o, "samples_consumed", j_u64(rec->samples_consumed), &ok);
  put(o, "samples_failed", j_u64(rec->samples_failed), &ok);
  put(o, "steps_failed", cJSON_CreateBool(rec->steps_failed), &ok);
  put(o, "steps_failure", cJSON_CreateString(rec->steps_failure), &ok);
  if (rec->world_size > 1) { /* one rank of an mpirun job */
    cJSON *j = cJSON_CreateObject();
    put(j, "rank", cJSON_CreateNumber(rec->rank), &ok);
    put(j, "world_size", cJSON_CreateNumber(rec->world_size), &ok);
    put(j, "peer_stopped", cJSON_CreateBool(rec->peer_stopped), &ok);
    put(o, "job", ok ? j : (cJSON_Delete(j), NULL), &ok);
  }
  put(o, "steps", steps_json(rec), &ok);
  cJSON *stages = cJSON_CreateArray();
  int tid = 1;
  for (int i = 0; ok && stages && i < rec->nstages; i++) push(stages, stage_json(&rec->stages[i], &tid), &ok);
  put(o, "stages", stages, &ok);
  put(o, "queued_samples", j_u64(rec->queued_samples), &ok);
  cJSON *fe = cJSON_CreateArray();
  int nfe = rec->nfirst_errors < PB_FIRST_ERRORS ? rec->nfirst_errors : PB_FIRST_ERRORS;
  for (int i = 0; ok && fe && i < nfe; i++) {
    cJSON *e = cJSON_CreateObject();
    put(e, "file", cJSON_CreateString(rec->first_errors[i].file), &ok);
    put(e, "message", cJSON_CreateString(rec->first_errors[i].message), &ok);
    push(fe, ok ? e : (cJSON_Delete(e), NULL), &ok);
  }
  put(o, "first_errors", fe, &ok);
  put(o, "cpu_s", j_dbl(rec->cpu_s), &ok);
  put(o, "ncpu", cJSON_CreateNumber(rec->ncpu), &ok);
  cJSON *mach = cJSON_CreateObject();
  put(mach, "cores_usable", j_dbl(rec->cores_usable), &ok);
  put(mach, "cores_affinity", j_dbl(rec->cores_affinity), &ok);
  put(mach, "cores_quota", j_dbl(rec->cores_quota), &ok);
  put(mach, "cores_taken_by_others", j_dbl(rec->cores_taken_by_others), &ok);
  put(mach, "limited_by", cJSON_CreateString(rec->cores_limited_by), &ok);
  put(mach, "dataset_files", j_u64(rec->dataset_files), &ok);
  put(o, "machine", mach, &ok);
  put(o, "traced", cJSON_CreateBool(rec->traced), &ok);
  cJSON *mem = cJSON_CreateObject();
  put(mem, "planned_bytes", j_u64(rec->planned_bytes), &ok);
  put(mem, "trace_bytes", j_u64(rec->trace_bytes), &ok);
  put(mem, "peak_rss_bytes", j_u64(rec->peak_rss_bytes), &ok);
  put(o, "memory", mem, &ok);
  const pb_ceilings *cl = &rec->ceilings;
  cJSON *ce = cJSON_CreateObject();
  put(ce, "have", cJSON_CreateBool(cl->have), &ok);
  put(ce, "why", cJSON_CreateString(cl->why), &ok);
  put(ce, "source", cJSON_CreateString(cl->source), &ok);
  put(ce, "measured_at", cJSON_CreateString(cl->measured_at), &ok);
  put(ce, "cores", cJSON_CreateNumber(cl->cores), &ok);
  put(ce, "memcpy_gb_per_s", j_dbl(cl->memcpy_gb_per_s), &ok);
  put(ce, "h2d_gb_per_s", j_dbl(cl->h2d_gb_per_s), &ok);
  put(ce, "dataset", cJSON_CreateBool(cl->dataset), &ok);
  put(ce, "decode_images_per_s", j_dbl(cl->decode_images_per_s), &ok);
  put(ce, "read_mb_per_s", j_dbl(cl->read_mb_per_s), &ok);
  put(ce, "read_mode", cJSON_CreateString(cl->read_mode), &ok);
  put(ce, "read_latency_us", cJSON_CreateNumber(cl->read_latency_us), &ok);
  put(ce, "read_cap_mb_per_s", cJSON_CreateNumber(cl->read_cap_mb_per_s), &ok);
  put(ce, "read_block_bytes", cJSON_CreateNumber(cl->read_block_bytes), &ok);
  put(o, "ceilings", ce, &ok);
  if (ok && rec->timeline) put(o, "queue_fill", timeline_json(rec->timeline, rec->start_ns, &ok), &ok);
  return finish(o, ok);
}

/* --- events, written with fprintf --- */

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
  if (v < EXACT_MAX) fprintf(f, ",\"%s\":%llu", name, (unsigned long long)v);
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
  if (PB_KEY_IS_BATCH(key)) fput_u64(f, batch_name, key & ~BATCH_BIT);
  else fput_u64(f, sample_name, key);
}

static void worker_event(writer *w, const pb_stage_rec *s, int tid, const pb_event *e) {
  FILE *f = w->f;
  x_begin(w, PID_HOST, tid, e->t0_ns, e->t1_ns, kind_cat(e->kind));
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
  meta(w, "process_name", PID_HOST, 0, "pipeline (host)");
  snprintf(name, sizeof name, "device (%s)", rec->device_kind[0] ? rec->device_kind : "unknown");
  meta(w, "process_name", PID_DEVICE, 0, name);
  for (int i = 0; i < rec->nstages; i++) {
    const pb_stage_rec *s = &rec->stages[i];
    for (int k = 0; s->workers && k < s->threads; k++) {
      snprintf(name, sizeof name, "%s #%d", s->name, k);
      meta(w, "thread_name", PID_HOST, w->tid_base[i] + k, name);
      sort_index(w, PID_HOST, w->tid_base[i] + k, w->tid_base[i] + k);
    }
  }
  int ndev = device_tracks(rec);
  bool copies[PB_MAX_DEVICES + 1] = {0};
  for (size_t i = 0; i < rec->nsteps; i++)
    if (rec->steps[i].h2d_end_ns && rec->steps[i].device < PB_ARRAY_LEN(copies)) copies[rec->steps[i].device] = true;
  for (int d = 0; d < ndev; d++) {
    snprintf(name, sizeof name, "device %d", d);
    meta(w, "thread_name", PID_DEVICE, d + 1, name);
    sort_index(w, PID_DEVICE, d + 1, 2 * d);
    if (d < (int)PB_ARRAY_LEN(copies) && copies[d]) {
      snprintf(name, sizeof name, "device %d h2d", d);
      meta(w, "thread_name", PID_DEVICE, H2D_TID_BASE + d, name);
      sort_index(w, PID_DEVICE, H2D_TID_BASE + d, 2 * d + 1);
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
      x_begin(w, PID_DEVICE, tid, st->prev_end_ns, st->compute_start_ns, "idle");
      fprintf(f, "\"input_wait\",\"args\":{\"step\":%zu}}", i);
    }
    if (st->h2d_end_ns) {
      x_begin(w, PID_DEVICE, H2D_TID_BASE + st->device, st->h2d_start_ns, st->h2d_end_ns, "h2d");
      fprintf(f, "\"h2d\",\"args\":{\"step\":%zu", i);
      fput_u64(f, "bytes", st->bytes);
      fputs("}}", f);
    }
    x_begin(w, PID_DEVICE, tid, st->compute_start_ns, st->compute_end_ns, "compute");
    fprintf(f, "\"step %zu\",\"args\":{\"step\":%zu", i, i);
    key_args(f, "id", "batch", st->key);
    fprintf(f, ",\"samples\":%u,\"measured\":%s}}", (unsigned)st->samples, st->measured ? "true" : "false");
    if (st->comm_end_ns) {
      x_begin(w, PID_DEVICE, tid, st->comm_start_ns, st->comm_end_ns, "allreduce");
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
      if (better) *pt = (flow_pt){PID_HOST, w->tid_base[row] + k, e->t0_ns};
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
  pts[n++] = (flow_pt){PID_DEVICE, st->device + 1, st->compute_start_ns};
  char ts[32], name[48];
  if (PB_KEY_IS_BATCH(sample)) snprintf(name, sizeof name, "batch %llu", (unsigned long long)(sample & ~BATCH_BIT));
  else snprintf(name, sizeof name, "sample %llu", (unsigned long long)sample);
  for (int i = 0; i < n; i++) {
    const char *ph = i == 0 ? "s" : i == n - 1 ? "f" : "t";
    sep(w);
    fprintf(w->f, "{\"ph\":\"%s\",%s\"id\":1,\"pid\":%d,\"tid\":%d,\"ts\":%s,\"cat\":\"flow\",\"name\":\"%s\"}", ph,
            i == n - 1 ? "\"bp\":\"e\"," : "", pts[i].pid, pts[i].tid,
            fmt_us(ts, sizeof ts, (int64_t)(pts[i].t_ns - rec->start_ns)), name);
  }
}

static int write_trace(FILE *f, const pb_record *rec) {
  cJSON *header = record_json(rec);
  char *text = header && !pb_signal_overdue() ? pb_json_print(header, false) : NULL;
  cJSON_Delete(header);
  if (!text) return pb_signal_overdue() ? -ECANCELED : -ENOMEM;
  fprintf(f, "%s\n%s%s,\n%s\n", k_line1, k_line2, text, k_line3);
  free(text);
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
  if (w.cancelled) return -ECANCELED; /* pb_write_atomic removes the partial file */
  fprintf(f, "\n%s\n", k_end);
  return 0;
}

static int trace_body(FILE *f, const void *rec) {
  setvbuf(f, NULL, _IOFBF, 1 << 20); /* ~1M events of ~140 bytes: large writes */
  return write_trace(f, rec);
}

int pb_trace_write_file(const pb_record *rec, const char *path) { return pb_write_atomic(path, trace_body, rec); }

/* ====================================================================================================
 * Loader
 * ==================================================================================================== */

typedef struct loader {
  const char *path;
  long line;
  pb_err *err;
  pb_record *rec;
  /* tid -> worker, and how many events each has received */
  int nworkers;
  pb_worker_trace **by_tid;     /* [1..nworkers] */
  uint32_t *filled;
  /* the header's "steps" array, cut out of the line before it is parsed (NULL: parse it as JSON) */
  const char *steps_text;
  size_t steps_len;
  long steps_count; /* its elements (cut_steps counts them); -1: not an array of arrays */
} loader;

/* "<path>: line N: <what> (expected <what>)": fmt carries both parts. */
__attribute__((format(printf, 2, 3))) static int bad(loader *l, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  pb_err_set(l->err, "%s: line %ld: %s", l->path, l->line, msg);
  return -EINVAL;
}

/* --- values --- */

static int v_u64(loader *l, const cJSON *v, const char *where, uint64_t *out) {
  *out = 0;
  if (cJSON_IsNumber(v)) {
    double d = v->valuedouble;
    if (d >= 0 && d < 18446744073709551616.0 && d == floor(d)) {
      *out = (uint64_t)d;
      return 0;
    }
  } else if (cJSON_IsString(v) && v->valuestring[0] >= '0' && v->valuestring[0] <= '9') {
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v->valuestring, &end, 10);
    if (!*end && !errno) {
      *out = x;
      return 0;
    }
  }
  if (!v) return bad(l, "%s: missing (expected an unsigned integer)", where);
  return bad(l, "%s: not an unsigned integer (expected an unsigned integer or a decimal string)", where);
}

static int v_i64(loader *l, const cJSON *v, const char *where, int64_t *out) {
  *out = 0;
  if (cJSON_IsNumber(v)) {
    double d = v->valuedouble;
    if (d >= -9223372036854775808.0 && d < 9223372036854775808.0 && d == floor(d)) {
      *out = (int64_t)d;
      return 0;
    }
  } else if (cJSON_IsString(v) && v->valuestring[0]) {
    char *end;
    errno = 0;
    long long x = strtoll(v->valuestring, &end, 10);
    if (!*end && !errno) {
      *out = x;
      return 0;
    }
  }
  if (!v) return bad(l, "%s: missing (expected an integer)", where);
  return bad(l, "%s: not an integer (expected an integer or a decimal string)", where);
}

static int v_int(loader *l, const cJSON *v, const char *where, int lo, int hi, int *out) {
  int64_t x = 0;
  *out = 0;
  int rc = v_i64(l, v, where, &x);
  if (rc) return rc;
  if (x < lo || x > hi) return bad(l, "%s: %lld is out of range (expected %d..%d)", where, (long long)x, lo, hi);
  *out = (int)x;
  return 0;
}

static int v_dbl(loader *l, const cJSON *v, const char *where, double *out) {
  *out = 0;
  if (cJSON_IsNumber(v)) {
    *out = v->valuedouble;
    return 0;
  }
  if (cJSON_IsString(v)) {
    const char *s = v->valuestring;
    if (!strcmp(s, "nan") || !strcmp(s, "inf") || !strcmp(s, "-inf")) {
      *out = strtod(s, NULL);
      return 0;
    }
  }
  if (!v) return bad(l, "%s: missing (expected a number)", where);
  return bad(l, "%s: not a number (expected a number, \"nan\" or \"inf\")", where);
}

static int v_bool(loader *l, const cJSON *v, const char *where, bool *out) {
  if (cJSON_IsBool(v)) {
    *out = cJSON_IsTrue(v);
    return 0;
  }
  if (cJSON_IsNumber(v) && (v->valuedouble == 0 || v->valuedouble == 1)) {
    *out = v->valuedouble == 1;
    return 0;
  }
  if (!v) return bad(l, "%s: missing (expected true or false)", where);
  return bad(l, "%s: not a boolean (expected true or false)", where);
}

static int v_str(loader *l, const cJSON *v, const char *where, char *buf, size_t len) {
  if (!v) return bad(l, "%s: missing (expected a string)", where);
  if (!cJSON_IsString(v)) return bad(l, "%s: not a string (expected a string)", where);
  if (strlen(v->valuestring) >= len)
    return bad(l, "%s: too long (expected at most %zu bytes)", where, len - 1);
  memcpy(buf, v->valuestring, strlen(v->valuestring) + 1);
  return 0;
}

static const cJSON *member(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key); }

/* Optional: traces written before issue 9 have no "memory" (the report then says peak_rss_bytes null). */
static int load_memory(loader *l, const cJSON *m) {
  if (!m) return 0;
  pb_record *rec = l->rec;
  int rc = 0;
  if (!cJSON_IsObject(m)) return bad(l, "pipebench.memory: not an object (expected {planned_bytes, ...})");
  if (!rc) rc = v_u64(l, member(m, "planned_bytes"), "pipebench.memory.planned_bytes", &rec->planned_bytes);
  if (!rc) rc = v_u64(l, member(m, "trace_bytes"), "pipebench.memory.trace_bytes", &rec->trace_bytes);
  if (!rc) rc = v_u64(l, member(m, "peak_rss_bytes"), "pipebench.memory.peak_rss_bytes", &rec->peak_rss_bytes);
  return rc;
}

/* Optional: traces written before issue 31 have no "machine" (then: every online CPU, nothing taken by
 * others, no file count). */
static int load_machine(loader *l, const cJSON *m) {
  pb_record *rec = l->rec;
  rec->cores_usable = rec->cores_affinity = rec->ncpu;
  rec->cores_quota = NAN;
  if (!m) return 0;
  if (!cJSON_IsObject(m)) return bad(l, "pipebench.machine: not an object (expected {cores_usable, ...})");
  int rc = v_dbl(l, member(m, "cores_usable"), "pipebench.machine.cores_usable", &rec->cores_usable);
  if (!rc && !(rec->cores_usable >= 0 && rec->cores_usable <= 1 << 20)) /* 0: not probed */
    return bad(l, "pipebench.machine.cores_usable: %g (expected >= 0)", rec->cores_usable);
  if (!rc && member(m, "cores_affinity")) { /* both written since the quota was kept apart */
    rc = v_dbl(l, member(m, "cores_affinity"), "pipebench.machine.cores_affinity", &rec->cores_affinity);
    if (!rc) rc = v_dbl(l, member(m, "cores_quota"), "pipebench.machine.cores_quota", &rec->cores_quota);
    if (!rc && !(rec->cores_affinity >= 0 && rec->cores_affinity <= 1 << 20))
      return bad(l, "pipebench.machine.cores_affinity: %g (expected >= 0)", rec->cores_affinity);
    if (!rc && !(isnan(rec->cores_quota) || (rec->cores_quota >= 0 && rec->cores_quota <= 1 << 20)))
      return bad(l, "pipebench.machine.cores_quota: %g (expected >= 0, or \"nan\" for none)", rec->cores_quota);
  }
  if (!rc) rc = v_dbl(l, member(m, "cores_taken_by_others"), "pipebench.machine.cores_taken_by_others",
                      &rec->cores_taken_by_others);
  if (!rc && !(rec->cores_taken_by_others >= 0 && rec->cores_taken_by_others <= 1 << 20))
    return bad(l, "pipebench.machine.cores_taken_by_others: %g (expected >= 0)", rec->cores_taken_by_others);
  if (!rc) rc = v_str(l, member(m, "limited_by"), "pipebench.machine.limited_by", rec->cores_limited_by,
                      sizeof rec->cores_limited_by);
  if (!rc) rc = v_u64(l, member(m, "dataset_files"), "pipebench.machine.dataset_files", &rec->dataset_files);
  return rc;
}

/* Optional: traces written before issue 10 have no "ceilings" (the report then has no efficiency). */
static int load_ceilings(loader *l, const cJSON *m) {
  pb_ceilings *c = &l->rec->ceilings;
  pb_ceilings_none(c, "a trace written before calibration existed");
  if (!m) return 0;
  if (!cJSON_IsObject(m)) return bad(l, "pipebench.ceilings: not an object (expected {have, why, ...})");
  int rc = v_bool(l, member(m, "have"), "pipebench.ceilings.have", &c->have);
  if (!rc) rc = v_str(l, member(m, "why"), "pipebench.ceilings.why", c->why, sizeof c->why);
  if (!rc) rc = v_str(l, member(m, "source"), "pipebench.ceilings.source", c->source, sizeof c->source);
  if (!rc) rc = v_str(l, member(m, "measured_at"), "pipebench.ceilings.measured_at", c->measured_at, sizeof c->measured_at);
  if (!rc) rc = v_int(l, member(m, "cores"), "pipebench.ceilings.cores", 0, 1 << 20, &c->cores);
  if (!rc) rc = v_dbl(l, member(m, "memcpy_gb_per_s"), "pipebench.ceilings.memcpy_gb_per_s", &c->memcpy_gb_per_s);
  if (!rc) rc = v_dbl(l, member(m, "h2d_gb_per_s"), "pipebench.ceilings.h2d_gb_per_s", &c->h2d_gb_per_s);
  if (!rc) rc = v_bool(l, member(m, "dataset"), "pipebench.ceilings.dataset", &c->dataset);
  if (!rc) rc = v_dbl(l, member(m, "decode_images_per_s"), "pipebench.ceilings.decode_images_per_s", &c->decode_images_per_s);
  if (!rc) rc = v_dbl(l, member(m, "read_mb_per_s"), "pipebench.ceilings.read_mb_per_s", &c->read_mb_per_s);
  if (!rc) rc = v_str(l, member(m, "read_mode"), "pipebench.ceilings.read_mode", c->read_mode, sizeof c->read_mode);
  /* the read stage's emulation: optional (older traces), never negative */
  const char *emu[] = {"read_latency_us", "read_cap_mb_per_s"};
  double *emu_out[] = {&c->read_latency_us, &c->read_cap_mb_per_s};
  for (int k = 0; k < 2 && !rc; k++) {
    char where[64];
    snprintf(where, sizeof where, "pipebench.ceilings.%s", emu[k]);
    if (member(m, emu[k]) && !(rc = v_dbl(l, member(m, emu[k]), where, emu_out[k])) &&
        !(*emu_out[k] >= 0 && isfinite(*emu_out[k])))
      rc = bad(l, "%s: %g (expected a finite number >= 0)", where, *emu_out[k]);
  }
  if (!rc && member(m, "read_block_bytes"))
    rc = v_int(l, member(m, "read_block_bytes"), "pipebench.ceilings.read_block_bytes", 0, INT32_MAX,
               &c->read_block_bytes);
  /* with a calibration, a hand-edited rate of 0 or less is "not measured", as in calibration.json */
  double *rates[] = {&c->memcpy_gb_per_s, &c->h2d_gb_per_s, &c->decode_images_per_s, &c->read_mb_per_s};
  for (int k = 0; k < 4 && c->have; k++)
    if (!(*rates[k] > 0) || isinf(*rates[k])) *rates[k] = NAN;
  return rc;
}

static int v_array(loader *l, const cJSON *v, const char *where, int max, int *n) {
  *n = 0;
  if (!v) return bad(l, "%s: missing (expected an array)", where);
  if (!cJSON_IsArray(v)) return bad(l, "%s: not an array (expected an array)", where);
  *n = cJSON_GetArraySize(v);
  if (max >= 0 && *n > max) return bad(l, "%s: %d entries (expected at most %d)", where, *n, max);
  return 0;
}

static int v_object(loader *l, const cJSON *v, const char *where) {
  if (!v) return bad(l, "%s: missing (expected an object)", where);
  if (!cJSON_IsObject(v)) return bad(l, "%s: not an object (expected an object)", where);
  return 0;
}

/* --- the header (line 2) --- */

static int load_config(loader *l, const cJSON *v) {
  int rc = v_object(l, v, "pipebench.config");
  if (rc) return rc;
  char *text = cJSON_PrintUnformatted(v);
  pb_config *cfg = calloc(1, sizeof *cfg);
  if (!text || !cfg) {
    free(text);
    free(cfg);
    return pb_err_setc(l->err, -ENOMEM, "%s: out of memory for the config", l->path);
  }
  l->rec->owned_cfg = cfg;
  l->rec->cfg = cfg;
  pb_err cerr;
  rc = pb_config_parse(cfg, l->path, text, NULL, 0, &cerr);
  free(text);
  if (rc) {
    size_t plen = strlen(l->path);
    const char *m = cerr.msg;
    if (strncmp(m, l->path, plen) == 0 && strncmp(m + plen, ": ", 2) == 0) m += plen + 2;
    return bad(l, "pipebench.config: %s", m);
  }
  return 0;
}

static int load_step(loader *l, const cJSON *a, size_t i, pb_step *st) {
  char where[96];
  snprintf(where, sizeof where, "pipebench.steps[%zu]", i);
  int n = 0, rc = v_array(l, a, where, -1, &n);
  if (rc) return rc;
  if (n != STEP_FIELDS && n != STEP_FIELDS + 2)
    return bad(l, "%s: %d fields (expected %d: prev_end, ready, h2d_start, h2d_end, compute_start, compute_end, "
                  "bytes, key, samples, device, measured, and with a gradient exchange comm_start, comm_end)",
               where, n, STEP_FIELDS);
  uint64_t *times[6] = {&st->prev_end_ns,  &st->ready_ns,         &st->h2d_start_ns,
                        &st->h2d_end_ns,   &st->compute_start_ns, &st->compute_end_ns};
  const cJSON *f = a->child;
  for (int k = 0; k < 6; k++, f = f->next) {
    snprintf(where, sizeof where, "pipebench.steps[%zu][%d]", i, k);
    int64_t rel = 0;
    if ((rc = v_i64(l, f, where, &rel))) return rc;
    *times[k] = (k == 2 || k == 3) && rel == 0 ? 0 : l->rec->start_ns + (uint64_t)rel;
  }
  int samples = 0, device = 0;
  snprintf(where, sizeof where, "pipebench.steps[%zu][6] (bytes)", i);
  if ((rc = v_u64(l, f, where, &st->bytes))) return rc;
  f = f->next;
  snprintf(where, sizeof where, "pipebench.steps[%zu][7] (key)", i);
  if ((rc = v_u64(l, f, where, &st->key))) return rc;
  f = f->next;
  snprintf(where, sizeof where, "pipebench.steps[%zu][8] (samples)", i);
  if ((rc = v_int(l, f, where, 0, INT32_MAX, &samples))) return rc;
  f = f->next;
  snprintf(where, sizeof where, "pipebench.steps[%zu][9] (device)", i);
  if ((rc = v_int(l, f, where, 0, UINT16_MAX, &device))) return rc;
  f = f->next;
  snprintf(where, sizeof where, "pipebench.steps[%zu][10] (measured)", i);
  if ((rc = v_bool(l, f, where, &st->measured))) return rc;
  uint64_t *comm[2] = {&st->comm_start_ns, &st->comm_end_ns};
  for (int k = 0; n > STEP_FIELDS && k < 2; k++) {
    f = f->next;
    snprintf(where, sizeof where, "pipebench.steps[%zu][%d] (%s)", i, STEP_FIELDS + k, k ? "comm_end" : "comm_start");
    int64_t rel = 0;
    if ((rc = v_i64(l, f, where, &rel))) return rc;
    *comm[k] = l->rec->start_ns + (uint64_t)rel;
  }
  if (st->comm_end_ns < st->comm_start_ns || (st->comm_end_ns && st->comm_start_ns < st->compute_end_ns))
    return bad(l, "pipebench.steps[%zu]: the exchange runs from %lld to %lld ns (expected compute_end <= comm_start "
                  "<= comm_end)", i, (long long)(st->comm_start_ns - l->rec->start_ns),
               (long long)(st->comm_end_ns - l->rec->start_ns));
  if (st->compute_end_ns < st->compute_start_ns || (st->h2d_start_ns && st->h2d_end_ns < st->h2d_start_ns))
    return bad(l, "pipebench.steps[%zu]: an interval that ends before it starts (expected compute_start <= "
                  "compute_end and h2d_start <= h2d_end)", i);
  /* a device runs one step at a time, on a batch it has: the step's span and its input wait are measured
   * from these, and a later one would wrap around */
  if (st->prev_end_ns > st->compute_start_ns || st->ready_ns > st->compute_end_ns)
    return bad(l, "pipebench.steps[%zu]: prev_end after compute_start, or ready after compute_end (expected the "
                  "previous step to end before this one starts, and the batch's hand-off before it ends)", i);
  if (l->rec->device_count > 0 && device >= l->rec->device_count)
    return bad(l, "pipebench.steps[%zu][9] (device): %d (expected below device.count %d)", i, device,
               l->rec->device_count);
  st->samples = (uint32_t)samples;
  st->device = (uint16_t)device;
  return 0;
}

/* Optional: which rank of a job the trace is (absent: a single process). */
static int load_job(loader *l, const cJSON *v) {
  pb_record *rec = l->rec;
  rec->rank = 0;
  rec->world_size = 1;
  if (!v) return 0;
  int rc = v_object(l, v, "pipebench.job");
  if (!rc) rc = v_int(l, member(v, "world_size"), "pipebench.job.world_size", 1, INT32_MAX, &rec->world_size);
  if (!rc) rc = v_int(l, member(v, "rank"), "pipebench.job.rank", 0, rec->world_size - 1, &rec->rank);
  if (!rc) rc = v_bool(l, member(v, "peer_stopped"), "pipebench.job.peer_stopped", &rec->peer_stopped);
  return rc;
}

/* One step at a time from the cut-out text (cut_steps counted them): a run of hours writes millions of steps, and a parsed tree
 * of them all would take ~1.2 KB each; one small tree per step keeps analyze's memory flat. */
static int load_steps_text(loader *l) {
  long n = l->steps_count;
  if (n < 0) return bad(l, "pipebench.steps: not an array of arrays (expected [[...], ...])");
  pb_record *rec = l->rec;
  rec->steps = calloc(n ? (size_t)n : 1, sizeof *rec->steps);
  if (!rec->steps) return pb_err_setc(l->err, -ENOMEM, "%s: out of memory for %ld steps", l->path, n);
  const char *p = l->steps_text + 1, *end = l->steps_text + l->steps_len;
  for (long i = 0; i < n; i++) {
    while (p < end && (*p == ',' || *p == ' ')) p++;
    const char *after = NULL;
    cJSON *a = cJSON_ParseWithLengthOpts(p, (size_t)(end - p), &after, false);
    if (!a || !after) {
      cJSON_Delete(a);
      return bad(l, "pipebench.steps[%ld]: not valid JSON (expected an array of numbers)", i);
    }
    int rc = load_step(l, a, (size_t)i, &rec->steps[i]);
    cJSON_Delete(a);
    if (rc) return rc;
    p = after;
  }
  rec->nsteps = (size_t)n;
  return 0;
}

static int load_steps(loader *l, const cJSON *v) {
  if (l->steps_text) return load_steps_text(l);
  int n = 0, rc = v_array(l, v, "pipebench.steps", -1, &n);
  if (rc) return rc;
  pb_record *rec = l->rec;
  rec->steps = calloc(n ? (size_t)n : 1, sizeof *rec->steps);
  if (!rec->steps) return pb_err_setc(l->err, -ENOMEM, "%s: out of memory for %d steps", l->path, n);
  size_t i = 0;
  for (const cJSON *a = v->child; a; a = a->next, i++)
    if ((rc = load_step(l, a, i, &rec->steps[i]))) return rc;
  rec->nsteps = (size_t)n;
  return 0;
}

/* Cuts the header's "steps":[...] out of line (len bytes) in place, leaving "steps":[] for the JSON
 * parser; the text goes to l->steps_text (into *held, freed by the caller).  The writer puts only
 * numbers, booleans and keys as strings of digits in it; any other shape is left for the JSON parser
 * to judge.  Returns the line's new length. */
static size_t cut_steps(loader *l, char *line, size_t len, char **held) {
  char *k = strstr(line, "\"steps\":[");
  while (k && k > line && k[-1] == '\\') k = strstr(k + 1, "\"steps\":["); /* inside a string */
  if (!k) return len;
  char *open = k + 8, *q = open;
  int depth = 0;
  long count = 0;
  bool arrays = true; /* only arrays (and separators) directly inside: [1,2] is not steps */
  for (; q < line + len; q++) {
    if (*q == '"') { /* a 64-bit key as a string of digits; anything else is left to the JSON parser */
      while (++q < line + len && *q != '"')
        if (*q < '0' || *q > '9') return len;
      arrays &= depth > 1;
      continue;
    }
    if (*q == '[' && ++depth == 2) count++;
    else if (*q == ']' && --depth == 0) break;
    else if (depth == 1 && *q != '[' && *q != ']' && *q != ',' && *q != ' ') arrays = false;
  }
  if (q >= line + len) return len;
  size_t n = (size_t)(q - open) + 1;
  if (!(*held = malloc(n + 1))) return len;
  memcpy(*held, open, n);
  (*held)[n] = '\0';
  l->steps_text = *held;
  l->steps_len = n;
  l->steps_count = arrays ? count : -1;
  memmove(open + 2, q + 1, (size_t)(line + len - (q + 1)) + 1); /* with the NUL */
  open[0] = '[';
  open[1] = ']';
  return len - n + 2;
}

static int load_hist(loader *l, const cJSON *v, const char *at, pb_hist *h) {
  char where[128];
  snprintf(where, sizeof where, "%s.hist", at);
  int rc = v_object(l, v, where);
  if (rc) return rc;
  pb_hist_reset(h);
  static const char *names[] = {"count", "sum_ns", "min_ns", "max_ns"};
  uint64_t *dst[] = {&h->count, &h->sum_ns, &h->min_ns, &h->max_ns};
  for (int k = 0; k < 4; k++) {
    snprintf(where, sizeof where, "%s.hist.%s", at, names[k]);
    if ((rc = v_u64(l, member(v, names[k]), where, dst[k]))) return rc;
  }
  snprintf(where, sizeof where, "%s.hist.buckets", at);
  const cJSON *b = member(v, "buckets");
  int n;
  if ((rc = v_array(l, b, where, PB_HIST_BUCKETS, &n))) return rc;
  int j = 0;
  for (const cJSON *p = b->child; p; p = p->next, j++) {
    snprintf(where, sizeof where, "%s.hist.buckets[%d]", at, j);
    int m = 0, idx = 0;
    if ((rc = v_array(l, p, where, -1, &m))) return rc;
    if (m != 2) return bad(l, "%s: %d entries (expected [index, count])", where, m);
    if ((rc = v_int(l, p->child, where, 0, PB_HIST_BUCKETS - 1, &idx))) return rc;
    if ((rc = v_u64(l, p->child->next, where, &h->buckets[idx]))) return rc;
  }
  return 0;
}

static int load_workers(loader *l, const cJSON *v, const char *at, pb_stage_rec *s) {
  char where[128];
  snprintf(where, sizeof where, "%s.workers", at);
  int n = 0, rc = v_array(l, v, where, -1, &n);
  if (rc) return rc;
  if (n != s->threads) return bad(l, "%s: %d entries (expected one per thread: %d)", where, n, s->threads);
  s->workers = calloc(n ? (size_t)n : 1, sizeof *s->workers);
  if (!s->workers) return pb_err_setc(l->err, -ENOMEM, "%s: out of memory", l->path);
  int k = 0;
  for (const cJSON *w = v->child; w; w = w->next, k++) {
    snprintf(where, sizeof where, "%s.workers[%d]", at, k);
    if ((rc = v_object(l, w, where))) return rc;
    int tid = 0;
    uint64_t ev_n = 0;
    pb_worker_trace *t = &s->workers[k];
    snprintf(where, sizeof where, "%s.workers[%d].tid", at, k);
    if ((rc = v_int(l, member(w, "tid"), where, 0, INT32_MAX, &tid))) return rc;
    if (tid != l->nworkers + 1) return bad(l, "%s: %d (expected %d: tids count host workers from 1)", where, tid,
                                           l->nworkers + 1);
    snprintf(where, sizeof where, "%s.workers[%d].n", at, k);
    if ((rc = v_u64(l, member(w, "n"), where, &ev_n))) return rc;
    /* a ring holds at most PB_TRACE_MAX_RING events: more is not a trace pipebench wrote (and would
     * reserve memory for events the file cannot hold) */
    if (ev_n > PB_TRACE_MAX_RING)
      return bad(l, "%s: %llu (expected at most %u, a ring's capacity)", where, (unsigned long long)ev_n,
                 (unsigned)PB_TRACE_MAX_RING);
    snprintf(where, sizeof where, "%s.workers[%d].dropped", at, k);
    if ((rc = v_u64(l, member(w, "dropped"), where, &t->dropped))) return rc;
    t->ev = calloc(ev_n ? (size_t)ev_n : 1, sizeof *t->ev);
    if (!t->ev)
      return pb_err_setc(l->err, -ENOMEM, "%s: out of memory for %llu events", l->path, (unsigned long long)ev_n);
    t->n = (uint32_t)ev_n;
    l->nworkers++;
  }
  return 0;
}

static int load_stage(loader *l, const cJSON *v, int i, pb_stage_rec *s) {
  char at[64], where[128];
  snprintf(at, sizeof at, "pipebench.stages[%d]", i);
  int rc = v_object(l, v, at);
  if (rc) return rc;
#define AT(key) (snprintf(where, sizeof where, "%s.%s", at, key), where)
  if ((rc = v_str(l, member(v, "name"), AT("name"), s->name, sizeof s->name))) return rc;
  if ((rc = v_str(l, member(v, "type"), AT("type"), s->type, sizeof s->type))) return rc;
  if ((rc = v_int(l, member(v, "threads"), AT("threads"), 0, PB_MAX_THREADS, &s->threads))) return rc;
  int ncfg = l->rec->cfg->nstages;
  if ((rc = v_int(l, member(v, "cfg_index"), AT("cfg_index"), -1, ncfg - 1, &s->cfg_index))) return rc;
  if ((rc = v_bool(l, member(v, "is_source"), AT("is_source"), &s->is_source))) return rc;
  /* a row is its config stage (the analysis reads that stage's settings through cfg_index), or the
   * in-memory source, which has none */
  const char *cfg_type = s->cfg_index >= 0 ? pb_stage_type_name(l->rec->cfg->stages[s->cfg_index].type) : "source";
  if (strcmp(cfg_type, s->type) != 0)
    return bad(l, "%s: a %s row whose cfg_index %d is %s %s (expected the index of its own config stage, or -1 "
                  "for the source)", at, s->type, s->cfg_index, s->cfg_index >= 0 ? "a" : "the", cfg_type);
  if ((rc = v_bool(l, member(v, "skipped"), AT("skipped"), &s->skipped))) return rc;
  if ((rc = v_bool(l, member(v, "batched"), AT("batched"), &s->batched))) return rc;
  const cJSON *c = member(v, "ctr");
  if ((rc = v_object(l, c, AT("ctr")))) return rc;
  for (size_t k = 0; k < PB_ARRAY_LEN(k_ctr); k++) {
    snprintf(where, sizeof where, "%s.ctr.%s", at, k_ctr[k].name);
    if ((rc = v_u64(l, member(c, k_ctr[k].name), where, (uint64_t *)((char *)&s->ctr + k_ctr[k].off)))) return rc;
  }
  if ((rc = load_hist(l, member(v, "hist"), at, &s->hist))) return rc;
  if ((rc = v_u64(l, member(v, "cpu_ns"), AT("cpu_ns"), &s->cpu_ns))) return rc;
  const cJSON *delay = member(v, "cpu_delay_ns"); /* optional: traces from before it have none */
  uint64_t delay_ns = 0;
  s->cpu_delay_ns = -1;
  if (delay && !cJSON_IsNull(delay)) {
    if ((rc = v_u64(l, delay, AT("cpu_delay_ns"), &delay_ns))) return rc;
    s->cpu_delay_ns = delay_ns > INT64_MAX ? -1 : (int64_t)delay_ns;
  }
  if ((rc = v_dbl(l, member(v, "queue_mean_fill"), AT("queue_mean_fill"), &s->queue_mean_fill))) return rc;
  if ((rc = v_int(l, member(v, "queue_capacity"), AT("queue_capacity"), 0, INT32_MAX, &s->queue_capacity)))
    return rc;
#undef AT
  const cJSON *w = member(v, "workers");
  if (w && !cJSON_IsNull(w)) return load_workers(l, w, at, s);
  return 0;
}

static int load_stages(loader *l, const cJSON *v) {
  int n = 0, rc = v_array(l, v, "pipebench.stages", PB_MAX_STAGES + 1, &n);
  if (rc) return rc;
  l->rec->nstages = n; /* rows are zeroed: pb_record_free copes with a partly loaded one */
  int i = 0;
  for (const cJSON *s = v->child; s; s = s->next, i++)
    if ((rc = load_stage(l, s, i, &l->rec->stages[i]))) return rc;
  return 0;
}

static int load_first_errors(loader *l, const cJSON *v) {
  int n = 0, rc = v_array(l, v, "pipebench.first_errors", PB_FIRST_ERRORS, &n);
  if (rc) return rc;
  int i = 0;
  char where[96];
  for (const cJSON *e = v->child; e; e = e->next, i++) {
    pb_error_record *fe = &l->rec->first_errors[i];
    snprintf(where, sizeof where, "pipebench.first_errors[%d].file", i);
    if ((rc = v_str(l, member(e, "file"), where, fe->file, sizeof fe->file))) return rc;
    snprintf(where, sizeof where, "pipebench.first_errors[%d].message", i);
    if ((rc = v_str(l, member(e, "message"), where, fe->message, sizeof fe->message))) return rc;
  }
  l->rec->nfirst_errors = n;
  return 0;
}

/* Optional keys (see device_extras). */
static int load_step_kernel(loader *l, const cJSON *k) {
  pb_step_kernel_check *c = &l->rec->step_kernel;
  int rc = v_object(l, k, "pipebench.device.step_kernel");
  if (!rc) rc = v_bool(l, member(k, "measured"), "pipebench.device.step_kernel.measured", &c->measured);
  if (!rc) rc = v_dbl(l, member(k, "target_ms"), "pipebench.device.step_kernel.target_ms", &c->target_ms);
  if (!rc) rc = v_dbl(l, member(k, "measured_ms"), "pipebench.device.step_kernel.measured_ms", &c->measured_ms);
  if (!rc) rc = v_dbl(l, member(k, "error_pct"), "pipebench.device.step_kernel.error_pct", &c->error_pct);
  return rc;
}

static int load_device_lists(loader *l, const cJSON *d) {
  pb_record *rec = l->rec;
  int n = 0, rc = 0;
  const cJSON *ids = member(d, "ids"), *names = member(d, "names");
  if (ids && !(rc = v_array(l, ids, "pipebench.device.ids", PB_MAX_DEVICES, &n)))
    for (int k = 0; !rc && k < n; k++)
      rc = v_int(l, cJSON_GetArrayItem(ids, k), "pipebench.device.ids[]", 0, 1 << 20, &rec->device_ids[k]);
  if (!rc && names && !(rc = v_array(l, names, "pipebench.device.names", PB_MAX_DEVICES, &n)))
    for (int k = 0; !rc && k < n; k++)
      rc = v_str(l, cJSON_GetArrayItem(names, k), "pipebench.device.names[]", rec->device_names[k],
                 sizeof rec->device_names[k]);
  return rc;
}

static int load_device_extras(loader *l, const cJSON *d) {
  pb_record *rec = l->rec;
  const cJSON *v;
  int rc = load_device_lists(l, d);
  rec->idle_pct_cuda_events = NAN;
  if (!rc && (v = member(d, "timing_source_reason")))
    rc = v_str(l, v, "pipebench.device.timing_source_reason", rec->timing_source_reason,
               sizeof rec->timing_source_reason);
  if (!rc && (v = member(d, "step_kernel"))) rc = load_step_kernel(l, v);
  if (!rc && (v = member(d, "idle_pct_cuda_events")))
    rc = v_dbl(l, v, "pipebench.device.idle_pct_cuda_events", &rec->idle_pct_cuda_events);
  if (!rc && (v = member(d, "gpu_timestamps_dropped")))
    rc = v_u64(l, v, "pipebench.device.gpu_timestamps_dropped", &rec->gpu_timestamps_dropped);
  return rc;
}

static int load_device(loader *l, const cJSON *d) {
  pb_record *rec = l->rec;
  int rc = v_object(l, d, "pipebench.device");
  if (!rc) rc = v_str(l, member(d, "kind"), "pipebench.device.kind", rec->device_kind, sizeof rec->device_kind);
  if (!rc) rc = v_str(l, member(d, "name"), "pipebench.device.name", rec->device_name, sizeof rec->device_name);
  if (!rc) rc = v_int(l, member(d, "count"), "pipebench.device.count", 1, PB_MAX_DEVICES, &rec->device_count);
  if (!rc)
    rc = v_str(l, member(d, "timing_source"), "pipebench.device.timing_source", rec->timing_source,
               sizeof rec->timing_source);
  if (!rc) rc = load_device_extras(l, d);
  return rc;
}

/* queue_fill (optional: traces written before it have none, and then the report has no such chart). */
static int load_timeline(loader *l, const cJSON *v) {
  if (!v) return 0;
  int rc = v_object(l, v, "pipebench.queue_fill");
  if (rc) return rc;
  pb_timeline *tl = calloc(1, sizeof *tl);
  if (!tl) return pb_err_setc(l->err, -ENOMEM, "%s: out of memory", l->path);
  l->rec->timeline = tl;
  uint64_t start = l->rec->start_ns;
  int64_t t0 = 0;
  if ((rc = v_i64(l, member(v, "t0_ns"), "pipebench.queue_fill.t0_ns", &t0))) return rc;
  if (t0 < 0) return bad(l, "pipebench.queue_fill.t0_ns: %lld (expected a time at or after start_ns, >= 0)", (long long)t0);
  tl->t0_ns = start + (uint64_t)t0;
  if ((rc = v_u64(l, member(v, "interval_ns"), "pipebench.queue_fill.interval_ns", &tl->interval_ns))) return rc;
  if (!tl->interval_ns) return bad(l, "pipebench.queue_fill.interval_ns: 0 (expected at least 1)");
  const cJSON *t = member(v, "t_ns"), *series = member(v, "series");
  int n = 0, ns = 0;
  if ((rc = v_array(l, t, "pipebench.queue_fill.t_ns", PB_TIMELINE_POINTS, &n))) return rc;
  if ((rc = v_array(l, series, "pipebench.queue_fill.series", PB_MAX_STAGES + 1, &ns))) return rc;
  tl->n = (size_t)n;
  tl->nseries = ns;
  int64_t prev = t0;
  for (int i = 0; i < n; i++) { /* each point's interval runs from the previous end: strictly increasing */
    int64_t ti = 0;
    if ((rc = v_i64(l, cJSON_GetArrayItem(t, i), "pipebench.queue_fill.t_ns[]", &ti))) return rc;
    if (ti <= prev)
      return bad(l, "pipebench.queue_fill.t_ns[%d]: %lld is not after %lld (expected times after t0_ns, increasing)",
                 i, (long long)ti, (long long)prev);
    tl->t_ns[i] = start + (uint64_t)ti;
    prev = ti;
  }
  for (int k = 0; k < ns; k++) {
    const cJSON *sj = cJSON_GetArrayItem(series, k), *f = member(sj, "fill_e4");
    int nf = 0;
    if ((rc = v_object(l, sj, "pipebench.queue_fill.series[]"))) return rc;
    if ((rc = v_str(l, member(sj, "stage"), "pipebench.queue_fill.series[].stage", tl->names[k], sizeof tl->names[k])) ||
        (rc = v_int(l, member(sj, "capacity"), "pipebench.queue_fill.series[].capacity", 1, INT32_MAX, &tl->capacity[k])) ||
        (rc = v_array(l, f, "pipebench.queue_fill.series[].fill_e4", PB_TIMELINE_POINTS, &nf)))
      return rc;
    if (nf != n) return bad(l, "pipebench.queue_fill.series[%d].fill_e4: %d values (expected %d, one per t_ns)", k, nf, n);
    for (int i = 0; i < n; i++) {
      int e4 = 0;
      if ((rc = v_int(l, cJSON_GetArrayItem(f, i), "pipebench.queue_fill.series[].fill_e4[]", 0, 10000, &e4))) return rc;
      tl->fill[k][i] = pb_timeline_fill_from_e4(e4);
    }
  }
  return 0;
}

static int load_header(loader *l, const cJSON *h) {
  pb_record *rec = l->rec;
  int rc = v_object(l, h, "pipebench");
  if (rc) return rc;
  int format = 0;
  if ((rc = v_int(l, member(h, "format"), "pipebench.format", INT32_MIN, INT32_MAX, &format))) return rc;
  if (format != TRACE_FORMAT)
    return bad(l, "pipebench.format: %d is not supported by pipebench %s (expected %d)", format, PB_VERSION,
               TRACE_FORMAT);
  if ((rc = load_config(l, member(h, "config")))) return rc;
  if ((rc = v_bool(l, member(h, "synthetic"), "pipebench.synthetic", &rec->synthetic))) return rc;
  if ((rc = v_bool(l, member(h, "interrupted"), "pipebench.interrupted", &rec->interrupted))) return rc;
  if ((rc = load_device(l, member(h, "device")))) return rc;
  if ((rc = v_u64(l, member(h, "start_ns"), "pipebench.start_ns", &rec->start_ns))) return rc;
  const cJSON *unix_ns = member(h, "start_unix_ns"); /* optional: traces before issue 8 lack it */
  if (unix_ns && (rc = v_u64(l, unix_ns, "pipebench.start_unix_ns", &rec->start_unix_ns))) return rc;
  int64_t ws = 0, we = 0;
  if ((rc = v_i64(l, member(h, "window_start_ns"), "pipebench.window_start_ns", &ws))) return rc;
  if ((rc = v_i64(l, member(h, "window_end_ns"), "pipebench.window_end_ns", &we))) return rc;
  if (we < ws) return bad(l, "pipebench.window_end_ns: %lld (expected >= window_start_ns %lld)", (long long)we,
                          (long long)ws);
  rec->window_start_ns = rec->start_ns + (uint64_t)ws;
  rec->window_end_ns = rec->start_ns + (uint64_t)we;
  if ((rc = v_u64(l, member(h, "measured_count"), "pipebench.measured_count", &rec->measured_count))) return rc;
  if ((rc = v_u64(l, member(h, "samples_consumed"), "pipebench.samples_consumed", &rec->samples_consumed))) return rc;
  if ((rc = v_u64(l, member(h, "samples_failed"), "pipebench.samples_failed", &rec->samples_failed))) return rc;
  if ((rc = v_bool(l, member(h, "steps_failed"), "pipebench.steps_failed", &rec->steps_failed))) return rc;
  if ((rc = v_str(l, member(h, "steps_failure"), "pipebench.steps_failure", rec->steps_failure,
                  sizeof rec->steps_failure)))
    return rc;
  if ((rc = load_job(l, member(h, "job")))) return rc;
  if ((rc = load_steps(l, member(h, "steps")))) return rc;
  if ((rc = load_stages(l, member(h, "stages")))) return rc;
  if ((rc = v_u64(l, member(h, "queued_samples"), "pipebench.queued_samples", &rec->queued_samples))) return rc;
  if ((rc = load_first_errors(l, member(h, "first_errors")))) return rc;
  if ((rc = v_dbl(l, member(h, "cpu_s"), "pipebench.cpu_s", &rec->cpu_s))) return rc;
  if (!(rec->cpu_s >= 0)) return bad(l, "pipebench.cpu_s: %g (expected >= 0)", rec->cpu_s);
  if ((rc = v_int(l, member(h, "ncpu"), "pipebench.ncpu", 0, INT32_MAX, &rec->ncpu))) return rc;
  if ((rc = v_bool(l, member(h, "traced"), "pipebench.traced", &rec->traced))) return rc;
  if ((rc = load_memory(l, member(h, "memory")))) return rc;
  if ((rc = load_machine(l, member(h, "machine")))) return rc;
  if ((rc = load_ceilings(l, member(h, "ceilings")))) return rc;
  if ((rc = load_timeline(l, member(h, "queue_fill")))) return rc;
  /* the tid -> worker table for the events */
  l->by_tid = calloc((size_t)l->nworkers + 1, sizeof *l->by_tid);
  l->filled = calloc((size_t)l->nworkers + 1, sizeof *l->filled);
  if (!l->by_tid || !l->filled) return pb_err_setc(l->err, -ENOMEM, "%s: out of memory", l->path);
  int tid = 1;
  for (int i = 0; i < rec->nstages; i++)
    for (int k = 0; rec->stages[i].workers && k < rec->stages[i].threads; k++)
      l->by_tid[tid++] = &rec->stages[i].workers[k];
  return 0;
}

/* --- events --- */

/* The number text after `"key":` in the raw line, in microseconds (ts, dur), as exact signed ns. */
static int raw_us(loader *l, const char *line, const char *key, int64_t *ns) {
  char pat[16];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *p = strstr(line, pat);
  if (!p) return bad(l, "event: no \"%s\" (expected a number of microseconds)", key);
  p += strlen(pat);
  while (*p == ' ' || *p == '\t') p++;
  const char *start = p;
  bool neg = *p == '-';
  if (neg) p++;
  uint64_t whole = 0, frac = 0;
  int ndig = 0, nfrac = 0;
  bool overflow = false;
  for (; *p >= '0' && *p <= '9'; p++, ndig++)
    overflow |= __builtin_mul_overflow(whole, 10, &whole) || __builtin_add_overflow(whole, (uint64_t)(*p - '0'), &whole);
  if (*p == '.')
    for (p++; *p >= '0' && *p <= '9'; p++, nfrac++)
      if (nfrac < 3) frac = frac * 10 + (uint64_t)(*p - '0');
  if (!ndig) return bad(l, "event: \"%s\" is not a number (expected microseconds)", key);
  if (nfrac > 3 || *p == 'e' || *p == 'E') { /* not written by pipebench: as close as a double gets */
    double d = strtod(start, NULL) * 1000.0;
    if (!(fabs(d) < 9.2e18)) return bad(l, "event: \"%s\" is out of range (expected microseconds)", key);
    *ns = llround(d);
    return 0;
  }
  for (; nfrac < 3; nfrac++) frac *= 10;
  uint64_t v;
  overflow |= __builtin_mul_overflow(whole, 1000, &v) || __builtin_add_overflow(v, frac, &v);
  if (overflow || v > (uint64_t)INT64_MAX) return bad(l, "event: \"%s\" is out of range (expected microseconds)", key);
  *ns = neg ? -(int64_t)v : (int64_t)v;
  return 0;
}

/* args' element key: "<sample>" (a sample id) or "<batch>" (a batch id). */
static int arg_key(loader *l, const cJSON *args, const char *sample, const char *batch, uint64_t *key) {
  const cJSON *s = member(args, sample), *b = member(args, batch);
  char where[48];
  int rc = 0;
  *key = PB_NO_KEY;
  if (s) {
    snprintf(where, sizeof where, "event args.%s", sample);
    rc = v_u64(l, s, where, key);
  } else if (b) {
    snprintf(where, sizeof where, "event args.%s", batch);
    rc = v_u64(l, b, where, key);
    if (!rc) *key |= BATCH_BIT;
  }
  return rc;
}

static int load_event(loader *l, const char *line, size_t len) {
  cJSON *e = cJSON_ParseWithLength(line, len);
  if (!e || !cJSON_IsObject(e)) {
    cJSON_Delete(e);
    return bad(l, "not a JSON object (expected one trace event per line)");
  }
  int rc = 0;
  const cJSON *ph = member(e, "ph"), *pid = member(e, "pid");
  /* only the host workers' complete events: device, metadata and flow events come from the header */
  if (!cJSON_IsString(ph) || strcmp(ph->valuestring, "X") != 0 || !cJSON_IsNumber(pid) ||
      pid->valuedouble != PID_HOST)
    goto out;
  int tid = 0;
  if ((rc = v_int(l, member(e, "tid"), "event tid", 1, INT32_MAX, &tid))) goto out;
  if (tid > l->nworkers) {
    rc = bad(l, "event tid %d: no such worker (expected a tid of pipebench.stages[].workers, 1..%d)", tid,
             l->nworkers);
    goto out;
  }
  pb_worker_trace *w = l->by_tid[tid];
  if (l->filled[tid] >= w->n) {
    rc = bad(l, "tid %d: more events than the header's %u (expected n events per worker)", tid, w->n);
    goto out;
  }
  pb_event ev = {0};
  const cJSON *cat = member(e, "cat"), *args = member(e, "args");
  if (!cJSON_IsString(cat)) {
    rc = bad(l, "event: no \"cat\" (expected process, wait or blocked)");
    goto out;
  }
  if ((rc = v_object(l, args, "event args"))) goto out;
  if (!strcmp(cat->valuestring, "process")) ev.kind = PB_EV_PROCESS;
  else if (!strcmp(cat->valuestring, "wait")) ev.kind = PB_EV_WAIT;
  else if (!strcmp(cat->valuestring, "blocked")) ev.kind = PB_EV_BLOCKED;
  else if (!strcmp(cat->valuestring, "handoff")) ev.kind = PB_EV_HANDOFF;
  else if (!strcmp(cat->valuestring, "other")) {
    int k = 0;
    if ((rc = v_int(l, member(args, "k"), "event args.k", 0, UINT8_MAX, &k))) goto out;
    ev.kind = (uint8_t)k;
  } else {
    rc = bad(l, "event cat \"%.40s\" (expected process, wait or blocked)", cat->valuestring);
    goto out;
  }
  int64_t ts = 0, dur = 0;
  if ((rc = raw_us(l, line, "ts", &ts)) || (rc = raw_us(l, line, "dur", &dur))) goto out;
  if (dur < 0) {
    rc = bad(l, "event dur: %lld ns (expected >= 0)", (long long)dur);
    goto out;
  }
  ev.t0_ns = l->rec->start_ns + (uint64_t)ts;
  ev.t1_ns = ev.t0_ns + (uint64_t)dur;
  int flags = 0;
  if ((rc = arg_key(l, args, "id", "batch", &ev.key)) || (rc = arg_key(l, args, "out_id", "out_batch", &ev.out)))
    goto out;
  int64_t b64 = 0;
  if ((rc = v_i64(l, member(args, "bytes"), "event args.bytes", &b64))) goto out;
  if (b64 < 0 || b64 > UINT32_MAX) {
    rc = bad(l, "event args.bytes: %lld (expected 0..%u)", (long long)b64, UINT32_MAX);
    goto out;
  }
  if ((rc = v_int(l, member(args, "f"), "event args.f", 0, UINT8_MAX, &flags))) goto out;
  ev.bytes = (uint32_t)b64;
  ev.flags = (uint8_t)flags;
  w->ev[l->filled[tid]++] = ev;
out:
  cJSON_Delete(e);
  return rc;
}

/* Strips the line ending; returns the length. */
static size_t chomp(char *line, ssize_t n) {
  size_t len = (size_t)n;
  while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
  return len;
}

static int check_counts(loader *l) {
  for (int tid = 1; tid <= l->nworkers; tid++)
    if (l->filled[tid] != l->by_tid[tid]->n)
      return bad(l, "tid %d has %u events (expected %u, as pipebench.stages[].workers says)", tid, l->filled[tid],
                 l->by_tid[tid]->n);
  return 0;
}

static int load_stream(loader *l, FILE *f) {
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  int rc = 0;
  enum { LINE1, HEADER, EVENTS_OPEN, EVENTS, AFTER } state = LINE1;
  bool need_event = false; /* the previous event line ended with ',' */
  bool any_event = false;
  while (!rc && (n = getline(&line, &cap, f)) >= 0) {
    l->line++;
    size_t len = chomp(line, n);
    switch (state) {
      case LINE1:
        if (strcmp(line, k_line1) != 0)
          rc = bad(l, "not a pipebench trace (expected a trace.json written by pipebench, starting with %s)", k_line1);
        state = HEADER;
        break;
      case HEADER: {
        size_t pre = sizeof k_line2 - 1;
        if (strncmp(line, "\"pipebench_job\":", 16) == 0) {
          rc = bad(l, "a multi-process job's merged trace, for viewing (expected one rank's own trace: analyze "
                      "rank-N/trace.json next to it)");
          break;
        }
        if (strncmp(line, k_line2, pre) != 0) {
          rc = bad(l, "not a pipebench trace header (expected \"pipebench\":{...},)");
          break;
        }
        if (len <= pre || line[len - 1] != ',' || feof(f)) {
          rc = bad(l, "the \"pipebench\" record is cut short (expected a line ending in \"},\"; is the trace "
                      "truncated?)");
          break;
        }
        char *steps_held = NULL;
        len = cut_steps(l, line, len, &steps_held);
        cJSON *h = cJSON_ParseWithLength(line + pre, len - pre - 1);
        if (!h) rc = bad(l, "the \"pipebench\" record is not valid JSON (expected a JSON object)");
        else rc = load_header(l, h);
        cJSON_Delete(h);
        free(steps_held);
        l->steps_text = NULL;
        state = EVENTS_OPEN;
        break;
      }
      case EVENTS_OPEN:
        if (strcmp(line, k_line3) != 0) rc = bad(l, "no event list (expected %s)", k_line3);
        state = EVENTS;
        need_event = false;
        break;
      case EVENTS:
        if (strcmp(line, k_end) == 0) {
          if (need_event) rc = bad(l, "the event list ends after a ',' (expected another event)");
          else rc = check_counts(l);
          state = AFTER;
          break;
        }
        if (strcmp(line, "]") == 0) { /* "]}" cut short, or "]" then "}" split by an editor */
          rc = bad(l, "the event list ends with ] alone (expected ]} on the last line; is the trace truncated?)");
          state = AFTER;
          break;
        }
        if (!need_event && any_event) {
          rc = bad(l, "an event follows one without a ',' (expected one event per line, each but the last "
                      "followed by ',')");
          break;
        }
        any_event = true;
        need_event = len && line[len - 1] == ',';
        if (need_event) line[--len] = '\0';
        rc = load_event(l, line, len);
        break;
      case AFTER:
        if (strspn(line, " \t") != len) rc = bad(l, "text after the end of the trace (expected nothing after ]})");
        break;
    }
  }
  if (!rc && ferror(f)) {
    rc = errno ? -errno : -EIO;
    pb_err_set(l->err, "%s: cannot read: %s (expected a readable trace.json)", l->path, strerror(-rc));
  }
  if (!rc && state != AFTER) {
    l->line++;
    rc = state == LINE1 ? bad(l, "empty file (expected a pipebench trace.json)")
                        : bad(l, "the file ends early (expected %s; is the trace truncated?)",
                              state == EVENTS ? "more events and ]}" : state == EVENTS_OPEN ? k_line3 : "the record");
  }
  free(line);
  return rc;
}

int pb_trace_load_file(pb_record *rec, const char *path, pb_err *err) {
  memset(rec, 0, sizeof *rec);
  FILE *f = fopen(path, "r");
  if (!f) {
    int rc = -errno;
    pb_err_set(err, "%s: cannot read: %s (expected a readable trace.json)", path, strerror(errno));
    return rc;
  }
  loader l = {.path = path, .err = err, .rec = rec};
  int rc = load_stream(&l, f);
  fclose(f);
  free(l.by_tid);
  free(l.filled);
  if (rc) {
    pb_record_free(rec);
    memset(rec, 0, sizeof *rec);
  }
  return rc;
}
