/* trace.json (docs/CONTRACT.md §5, docs/TRACE.md): the Chrome Trace Event Format view of a run's record, with the
 * record itself in the header so that `pipebench analyze` reproduces the report from this file alone.
 *
 * Line layout (the loader, trace_stream.c, streams it line by line; a trace holds up to ~1M events, so
 * events are never built as one cJSON tree):
 *
 *   {"displayTimeUnit":"ns",
 *   "pipebench":{...the record without its events, one line...},
 *   "traceEvents":[
 *   {...one event...},
 *   ...
 *   {...the last event...}
 *   ]}
 *
 * This file writes the header line: the field tables (trace_fields.c) and, here, the parts of it that are
 * not plain fields; the events are trace_chrome.c's.
 *
 * Exactness: every uint64 that may exceed 2^53 is a decimal string (or a number when it is below 2^53);
 * doubles are printed with %.17g; event times are written from integer nanoseconds as "%llu.%03llu" us
 * relative to start_ns and parsed back from the text, so a reloaded record is bit-identical. */
#include "trace_json.h"
#include "trace_fields.h"
#include "json_text.h"
#include "json_util.h"

#include "timeline.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cJSON *pb_trace_write_config(const pb_record *rec, const void *base) {
  (void)base;
  return rec->cfg ? pb_config_to_json(rec->cfg) : NULL;
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
  tb_int(b, (int64_t)v, always_quoted || v >= PB_TRACE_EXACT_MAX);
}

static void tb_rel(textbuf *b, uint64_t abs_ns, uint64_t start_ns) { /* j_rel */
  int64_t d = (int64_t)(abs_ns - start_ns);
  tb_int(b, d, !(d > -(int64_t)PB_TRACE_EXACT_MAX && d < (int64_t)PB_TRACE_EXACT_MAX));
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
cJSON *pb_trace_write_steps(const pb_record *rec, const void *base) {
  (void)base;
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

/* [[index, count], ...] of the buckets that are not empty. */
cJSON *pb_trace_write_hist_buckets(const pb_record *rec, const void *base) {
  (void)rec;
  const pb_hist *h = base;
  cJSON *b = cJSON_CreateArray();
  bool ok = true;
  for (unsigned i = 0; ok && b && i < PB_HIST_BUCKETS; i++) {
    if (!h->buckets[i]) continue;
    cJSON *pair = cJSON_CreateArray();
    pb_json_push(pair, cJSON_CreateNumber(i), &ok);
    pb_json_push(pair, pb_trace_j_u64(h->buckets[i]), &ok);
    pb_json_push(b, pair, &ok);
  }
  return pb_json_finish(b, ok);
}

/* A traced row's workers: [{tid, n, dropped}], tids counting the host workers of all rows from 1. */
cJSON *pb_trace_write_workers(const pb_record *rec, const void *base) {
  const pb_stage_rec *s = base;
  int tid = 1;
  for (const pb_stage_rec *r = rec->stages; r < s; r++)
    if (r->workers) tid += r->threads;
  cJSON *w = cJSON_CreateArray();
  bool ok = true;
  for (int k = 0; ok && w && k < s->threads; k++) {
    cJSON *t = cJSON_CreateObject();
    pb_json_put(t, "tid", cJSON_CreateNumber(tid++), &ok);
    pb_json_put(t, "n", cJSON_CreateNumber(s->workers[k].n), &ok);
    pb_json_put(t, "dropped", pb_trace_j_u64(s->workers[k].dropped), &ok);
    pb_json_push(w, t, &ok);
  }
  return pb_json_finish(w, ok);
}

cJSON *pb_trace_write_stages(const pb_record *rec, const void *base) {
  (void)base;
  cJSON *stages = cJSON_CreateArray();
  bool ok = true;
  for (int i = 0; ok && stages && i < rec->nstages; i++)
    pb_json_push(stages, pb_trace_write_table(&pb_trace_stage_table, rec, &rec->stages[i]), &ok);
  return pb_json_finish(stages, ok);
}

cJSON *pb_trace_write_first_errors(const pb_record *rec, const void *base) {
  (void)base;
  cJSON *fe = cJSON_CreateArray();
  bool ok = true;
  int nfe = rec->nfirst_errors < PB_FIRST_ERRORS ? rec->nfirst_errors : PB_FIRST_ERRORS;
  for (int i = 0; ok && fe && i < nfe; i++) {
    cJSON *e = cJSON_CreateObject();
    pb_json_put(e, "file", cJSON_CreateString(rec->first_errors[i].file), &ok);
    pb_json_put(e, "message", cJSON_CreateString(rec->first_errors[i].message), &ok);
    pb_json_push(fe, e, &ok);
  }
  return pb_json_finish(fe, ok);
}

/* One stage's fill over time: integers in units of 1e-4 (how they were sampled). */
static cJSON *fill_series_json(const pb_timeline *tl, int k) {
  cJSON *sj = cJSON_CreateObject();
  bool ok = true;
  pb_json_put(sj, "stage", cJSON_CreateString(tl->names[k]), &ok);
  pb_json_put(sj, "capacity", cJSON_CreateNumber(tl->capacity[k]), &ok);
  cJSON *f = cJSON_CreateArray();
  for (size_t i = 0; ok && f && i < tl->n; i++)
    pb_json_push(f, cJSON_CreateNumber((double)pb_timeline_fill_e4(tl->fill[k][i])), &ok);
  pb_json_put(sj, "fill_e4", f, &ok);
  return pb_json_finish(sj, ok);
}

/* The queue fill over time (src/record/timeline.h). */
cJSON *pb_trace_write_queue_fill(const pb_record *rec, const void *base) {
  (void)base;
  const pb_timeline *tl = rec->timeline;
  uint64_t start = rec->start_ns;
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  pb_json_put(o, "t0_ns", pb_trace_j_rel(tl->t0_ns, start), &ok);
  pb_json_put(o, "interval_ns", pb_trace_j_u64(tl->interval_ns), &ok);
  cJSON *t = cJSON_CreateArray();
  for (size_t i = 0; ok && t && i < tl->n; i++) pb_json_push(t, pb_trace_j_rel(tl->t_ns[i], start), &ok);
  pb_json_put(o, "t_ns", t, &ok);
  cJSON *series = cJSON_CreateArray();
  for (int k = 0; ok && series && k < tl->nseries; k++) pb_json_push(series, fill_series_json(tl, k), &ok);
  pb_json_put(o, "series", series, &ok);
  return pb_json_finish(o, ok);
}

static int write_trace(FILE *f, const pb_record *rec) {
  cJSON *header = pb_trace_write_table(&pb_trace_header_table, rec, rec);
  char *text = header && !pb_signal_overdue() ? pb_json_print(header, false) : NULL;
  cJSON_Delete(header);
  if (!text) return pb_signal_overdue() ? -ECANCELED : -ENOMEM;
  fprintf(f, "%s\n%s%s,\n%s\n", pb_trace_line1, pb_trace_line2, text, pb_trace_line3);
  free(text);
  int rc = pb_trace_write_events(f, rec);
  if (rc) return rc; /* pb_write_atomic removes the partial file */
  fprintf(f, "\n%s\n", pb_trace_end);
  return 0;
}

static int trace_body(FILE *f, const void *rec) {
  setvbuf(f, NULL, _IOFBF, 1 << 20); /* ~1M events of ~140 bytes: large writes */
  return write_trace(f, rec);
}

int pb_trace_write_file(const pb_record *rec, const char *path) { return pb_write_atomic(path, trace_body, rec); }

/* An imported capture's advice and hosts: arrays of their tables. */
static cJSON *write_array(const pb_trace_table *t, const pb_record *rec, const void *first, size_t elem_bytes, int n) {
  cJSON *a = cJSON_CreateArray();
  bool ok = true;
  for (int i = 0; ok && i < n; i++)
    pb_json_push(a, pb_trace_write_table(t, rec, (const char *)first + i * elem_bytes), &ok);
  return pb_json_finish(a, ok);
}

cJSON *pb_trace_write_import_advice(const pb_record *rec, const void *base) {
  const pb_record_source *s = base;
  int n = s->nadvice < PB_MAX_IMPORT_ADVICE ? s->nadvice : PB_MAX_IMPORT_ADVICE;
  return write_array(&pb_trace_import_advice_table, rec, s->advice, sizeof s->advice[0], n);
}

cJSON *pb_trace_write_import_hosts(const pb_record *rec, const void *base) {
  const pb_record_source *s = base;
  int n = s->nhosts < PB_MAX_IMPORT_HOSTS ? s->nhosts : PB_MAX_IMPORT_HOSTS;
  return write_array(&pb_trace_import_host_table, rec, s->hosts, sizeof s->hosts[0], n);
}
