/* The trace.json header's parts that are not plain fields, read back (their keys are in the tables of
 * trace_fields.c), and the checks between fields.  Each gets the value at `where` (NULL when absent) and
 * base + off of its table entry. */
#include "trace_fields.h"

#include "timeline.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int pb_trace_load_format(pb_trace_loader *l, const cJSON *v, void *base, const char *where) {
  (void)base;
  int format = 0, rc = pb_trace_v_int(l, v, where, INT32_MIN, INT32_MAX, &format);
  if (!rc && format != PB_TRACE_FORMAT)
    return pb_trace_bad(l, "%s: %d is not supported by pipebench %s (expected %d)", where, format, PB_VERSION,
                        PB_TRACE_FORMAT);
  return rc;
}

int pb_trace_load_config(pb_trace_loader *l, const cJSON *v, void *base, const char *where) {
  (void)base;
  int rc = pb_trace_v_object(l, v, where);
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
  if (!rc) return 0;
  /* the config's own message names the file first: the trace's line says that already */
  size_t plen = strlen(l->path);
  const char *m = cerr.msg;
  if (strncmp(m, l->path, plen) == 0 && strncmp(m + plen, ": ", 2) == 0) m += plen + 2;
  return pb_trace_bad(l, "%s: %s", where, m);
}

/* device.ids and device.names: at most PB_MAX_DEVICES entries, each checked under the name where[]. */
static int load_device_list(pb_trace_loader *l, const cJSON *v, pb_record *rec, const char *where, bool names) {
  char at[96];
  snprintf(at, sizeof at, "%s[]", where);
  int n = 0, rc = pb_trace_v_array(l, v, where, PB_MAX_DEVICES, &n);
  for (int k = 0; !rc && k < n; k++) {
    const cJSON *e = cJSON_GetArrayItem(v, k);
    rc = names ? pb_trace_v_str(l, e, at, rec->device_names[k], sizeof rec->device_names[k])
               : pb_trace_v_int(l, e, at, 0, 1 << 20, &rec->device_ids[k]);
  }
  return rc;
}

int pb_trace_load_device_ids(pb_trace_loader *l, const cJSON *v, void *base, const char *where) {
  return load_device_list(l, v, base, where, false);
}

int pb_trace_load_device_names(pb_trace_loader *l, const cJSON *v, void *base, const char *where) {
  return load_device_list(l, v, base, where, true);
}

/* null (or a value beyond int64) is unknown: -1, the default. */
int pb_trace_load_cpu_delay(pb_trace_loader *l, const cJSON *v, void *base, const char *where) {
  if (cJSON_IsNull(v)) return 0;
  uint64_t delay_ns = 0;
  int rc = pb_trace_v_u64(l, v, where, &delay_ns);
  if (!rc) *(int64_t *)base = delay_ns > INT64_MAX ? -1 : (int64_t)delay_ns;
  return rc;
}

int pb_trace_load_hist_buckets(pb_trace_loader *l, const cJSON *v, void *base, const char *where) {
  pb_hist *h = base;
  char at[160];
  int n, rc = pb_trace_v_array(l, v, where, PB_HIST_BUCKETS, &n);
  int j = 0;
  for (const cJSON *p = rc ? NULL : v->child; p; p = p->next, j++) {
    snprintf(at, sizeof at, "%s[%d]", where, j);
    int m = 0, idx = 0;
    if ((rc = pb_trace_v_array(l, p, at, -1, &m))) return rc;
    if (m != 2) return pb_trace_bad(l, "%s: %d entries (expected [index, count])", at, m);
    if ((rc = pb_trace_v_int(l, p->child, at, 0, PB_HIST_BUCKETS - 1, &idx))) return rc;
    if ((rc = pb_trace_v_u64(l, p->child->next, at, &h->buckets[idx]))) return rc;
  }
  return rc;
}

/* One worker's {tid, n, dropped}: its events are reserved here and filled from traceEvents. */
static int load_worker(pb_trace_loader *l, const cJSON *w, const char *at, pb_worker_trace *t) {
  char where[192];
  int tid = 0, rc = pb_trace_v_object(l, w, at);
  uint64_t ev_n = 0;
  snprintf(where, sizeof where, "%s.tid", at);
  if (rc || (rc = pb_trace_v_int(l, pb_trace_member(w, "tid"), where, 0, INT32_MAX, &tid))) return rc;
  if (tid != l->nworkers + 1)
    return pb_trace_bad(l, "%s: %d (expected %d: tids count host workers from 1)", where, tid, l->nworkers + 1);
  snprintf(where, sizeof where, "%s.n", at);
  if ((rc = pb_trace_v_u64(l, pb_trace_member(w, "n"), where, &ev_n))) return rc;
  /* a ring holds at most PB_TRACE_MAX_RING events: more is not a trace pipebench wrote (and would
   * reserve memory for events the file cannot hold) */
  if (ev_n > PB_TRACE_MAX_RING)
    return pb_trace_bad(l, "%s: %llu (expected at most %u, a ring's capacity)", where, (unsigned long long)ev_n,
                        (unsigned)PB_TRACE_MAX_RING);
  snprintf(where, sizeof where, "%s.dropped", at);
  if ((rc = pb_trace_v_u64(l, pb_trace_member(w, "dropped"), where, &t->dropped))) return rc;
  t->ev = calloc(ev_n ? (size_t)ev_n : 1, sizeof *t->ev);
  if (!t->ev)
    return pb_err_setc(l->err, -ENOMEM, "%s: out of memory for %llu events", l->path, (unsigned long long)ev_n);
  t->n = (uint32_t)ev_n;
  l->nworkers++;
  return 0;
}

int pb_trace_load_workers(pb_trace_loader *l, const cJSON *v, void *base, const char *where) {
  pb_stage_rec *s = base;
  if (cJSON_IsNull(v)) return 0;
  int n = 0, rc = pb_trace_v_array(l, v, where, -1, &n);
  if (rc) return rc;
  if (n != s->threads) return pb_trace_bad(l, "%s: %d entries (expected one per thread: %d)", where, n, s->threads);
  s->workers = calloc(n ? (size_t)n : 1, sizeof *s->workers);
  if (!s->workers) return pb_err_setc(l->err, -ENOMEM, "%s: out of memory", l->path);
  int k = 0;
  char at[160];
  for (const cJSON *w = v->child; w; w = w->next, k++) {
    snprintf(at, sizeof at, "%s[%d]", where, k);
    if ((rc = load_worker(l, w, at, &s->workers[k]))) return rc;
  }
  return 0;
}

int pb_trace_load_stages(pb_trace_loader *l, const cJSON *v, void *base, const char *where) {
  pb_record *rec = base;
  int n = 0, rc = pb_trace_v_array(l, v, where, PB_MAX_STAGES + 1, &n);
  if (rc) return rc;
  rec->nstages = n; /* rows are zeroed: pb_record_free copes with a partly loaded one */
  int i = 0;
  char at[64];
  for (const cJSON *s = v->child; s; s = s->next, i++) {
    snprintf(at, sizeof at, "%s[%d]", where, i);
    if ((rc = pb_trace_v_object(l, s, at)) ||
        (rc = pb_trace_load_table(l, &pb_trace_stage_table, s, &rec->stages[i], at)))
      return rc;
  }
  return 0;
}

int pb_trace_load_first_errors(pb_trace_loader *l, const cJSON *v, void *base, const char *where) {
  pb_record *rec = base;
  int n = 0, rc = pb_trace_v_array(l, v, where, PB_FIRST_ERRORS, &n);
  if (rc) return rc;
  int i = 0;
  char at[96];
  for (const cJSON *e = v->child; e; e = e->next, i++) {
    pb_error_record *fe = &rec->first_errors[i];
    snprintf(at, sizeof at, "%s[%d].file", where, i);
    if ((rc = pb_trace_v_str(l, pb_trace_member(e, "file"), at, fe->file, sizeof fe->file))) return rc;
    snprintf(at, sizeof at, "%s[%d].message", where, i);
    if ((rc = pb_trace_v_str(l, pb_trace_member(e, "message"), at, fe->message, sizeof fe->message))) return rc;
  }
  rec->nfirst_errors = n;
  return 0;
}

/* An array of a table's objects into v[0..max), *n of them. */
static int load_array(pb_trace_loader *l, const cJSON *v, const char *where, const pb_trace_table *t, void *first,
                      size_t elem_bytes, int max, int *n) {
  int rc = pb_trace_v_array(l, v, where, max, n);
  int i = 0;
  char at[96];
  for (const cJSON *e = rc ? NULL : v->child; e; e = e->next, i++) {
    snprintf(at, sizeof at, "%s[%d]", where, i);
    if ((rc = pb_trace_v_object(l, e, at)) || (rc = pb_trace_load_table(l, t, e, (char *)first + i * elem_bytes, at)))
      return rc;
  }
  return rc;
}

int pb_trace_load_import_advice(pb_trace_loader *l, const cJSON *v, void *base, const char *where) {
  pb_record_source *s = base;
  return load_array(l, v, where, &pb_trace_import_advice_table, s->advice, sizeof s->advice[0], PB_MAX_IMPORT_ADVICE,
                    &s->nadvice);
}

/* host_count (read before) may be more than the hosts the table keeps. */
int pb_trace_load_import_hosts(pb_trace_loader *l, const cJSON *v, void *base, const char *where) {
  pb_record_source *s = base;
  int n = 0,
      rc = load_array(l, v, where, &pb_trace_import_host_table, s->hosts, sizeof s->hosts[0], PB_MAX_IMPORT_HOSTS, &n);
  if (!rc && n > s->nhosts) return pb_trace_bad(l, "%s: %d hosts, more than host_count %d", where, n, s->nhosts);
  return rc;
}

/* ---- checks between fields ---- */

int pb_trace_check_window(pb_trace_loader *l, const pb_trace_field *f, void *base, const char *where) {
  (void)f;
  const pb_record *rec = base;
  int64_t ws = (int64_t)(rec->window_start_ns - rec->start_ns), we = (int64_t)(rec->window_end_ns - rec->start_ns);
  if (we < ws)
    return pb_trace_bad(l, "%s: %lld (expected >= window_start_ns %lld)", where, (long long)we, (long long)ws);
  return 0;
}

int pb_trace_check_cpu_s(pb_trace_loader *l, const pb_trace_field *f, void *base, const char *where) {
  (void)f;
  double cpu_s = ((const pb_record *)base)->cpu_s;
  return cpu_s >= 0 ? 0 : pb_trace_bad(l, "%s: %g (expected >= 0)", where, cpu_s);
}

/* A core count: 0 (not probed) up to 2^20. */
int pb_trace_check_cores(pb_trace_loader *l, const pb_trace_field *f, void *base, const char *where) {
  double v = *(const double *)((const char *)base + f->off);
  return v >= 0 && v <= 1 << 20 ? 0 : pb_trace_bad(l, "%s: %g (expected >= 0)", where, v);
}

int pb_trace_check_quota(pb_trace_loader *l, const pb_trace_field *f, void *base, const char *where) {
  double v = *(const double *)((const char *)base + f->off);
  if (isnan(v) || (v >= 0 && v <= 1 << 20)) return 0;
  return pb_trace_bad(l, "%s: %g (expected >= 0, or \"nan\" for none)", where, v);
}

/* A row is its config stage (the analysis reads that stage's settings through cfg_index), or the
 * in-memory source, which has none.  `where` names is_source; the message names the row. */
int pb_trace_check_stage_type(pb_trace_loader *l, const pb_trace_field *f, void *base, const char *where) {
  (void)f;
  const pb_stage_rec *s = base;
  const char *cfg_type = s->cfg_index >= 0 ? pb_stage_type_name(l->rec->cfg->stages[s->cfg_index].type) : "source";
  if (strcmp(cfg_type, s->type) == 0) return 0;
  int row = (int)strlen(where) - (int)strlen(".is_source");
  return pb_trace_bad(l, "%.*s: a %s row whose cfg_index %d is %s %s (expected the index of its own config stage, "
                         "or -1 for the source)", row, where, s->type, s->cfg_index, s->cfg_index >= 0 ? "a" : "the",
                      cfg_type);
}

/* With a calibration, a hand-edited rate of 0 or less is "not measured", as in calibration.json. */
int pb_trace_ceilings_finish(pb_trace_loader *l, void *base, const char *where) {
  (void)l, (void)where;
  pb_ceilings *c = base;
  double *rates[] = {&c->memcpy_gb_per_s, &c->h2d_gb_per_s, &c->decode_images_per_s, &c->read_mb_per_s};
  for (int k = 0; k < 4 && c->have; k++)
    if (!(*rates[k] > 0) || isinf(*rates[k])) *rates[k] = NAN;
  return 0;
}

/* ---- steps: [prev_end, ready, h2d_start, h2d_end, compute_start, compute_end, bytes, key, samples, device,
 * measured] and with a gradient exchange comm_start, comm_end; times relative to start_ns ---- */

/* The six times (f: the first element). */
static int load_step_times(pb_trace_loader *l, const cJSON *f, size_t i, pb_step *st) {
  uint64_t *times[6] = {&st->prev_end_ns, &st->ready_ns,         &st->h2d_start_ns,
                        &st->h2d_end_ns,  &st->compute_start_ns, &st->compute_end_ns};
  char where[96];
  for (int k = 0; k < 6; k++, f = f->next) {
    snprintf(where, sizeof where, "pipebench.steps[%zu][%d]", i, k);
    int64_t rel = 0;
    int rc = pb_trace_v_i64(l, f, where, &rel);
    if (rc) return rc;
    *times[k] = (k == 2 || k == 3) && rel == 0 ? 0 : l->rec->start_ns + (uint64_t)rel;
  }
  return 0;
}

/* The gradient exchange's comm_start, comm_end (f: the element after measured). */
static int load_step_comm(pb_trace_loader *l, const cJSON *f, size_t i, pb_step *st) {
  uint64_t *comm[2] = {&st->comm_start_ns, &st->comm_end_ns};
  char where[96];
  for (int k = 0; k < 2; k++, f = f->next) {
    snprintf(where, sizeof where, "pipebench.steps[%zu][%d] (%s)", i, PB_TRACE_STEP_FIELDS + k,
             k ? "comm_end" : "comm_start");
    int64_t rel = 0;
    int rc = pb_trace_v_i64(l, f, where, &rel);
    if (rc) return rc;
    *comm[k] = l->rec->start_ns + (uint64_t)rel;
  }
  return 0;
}

/* bytes, key, samples, device, measured (f: the element after the six times). */
static int load_step_values(pb_trace_loader *l, const cJSON *f, size_t i, int *samples, int *device, pb_step *st) {
  char where[96];
  int rc;
  snprintf(where, sizeof where, "pipebench.steps[%zu][6] (bytes)", i);
  if ((rc = pb_trace_v_u64(l, f, where, &st->bytes))) return rc;
  snprintf(where, sizeof where, "pipebench.steps[%zu][7] (key)", i);
  if ((rc = pb_trace_v_u64(l, f = f->next, where, &st->key))) return rc;
  snprintf(where, sizeof where, "pipebench.steps[%zu][8] (samples)", i);
  if ((rc = pb_trace_v_int(l, f = f->next, where, 0, INT32_MAX, samples))) return rc;
  snprintf(where, sizeof where, "pipebench.steps[%zu][9] (device)", i);
  if ((rc = pb_trace_v_int(l, f = f->next, where, 0, UINT16_MAX, device))) return rc;
  snprintf(where, sizeof where, "pipebench.steps[%zu][10] (measured)", i);
  return pb_trace_v_bool(l, f->next, where, &st->measured);
}

/* The step's intervals in order: a device runs one step at a time, on a batch it has (the step's span and
 * its input wait are measured from these, and a later one would wrap around). */
static int check_step(pb_trace_loader *l, size_t i, int device, const pb_step *st) {
  uint64_t start = l->rec->start_ns;
  if (st->comm_end_ns < st->comm_start_ns || (st->comm_end_ns && st->comm_start_ns < st->compute_end_ns))
    return pb_trace_bad(l, "pipebench.steps[%zu]: the exchange runs from %lld to %lld ns (expected compute_end <= "
                           "comm_start <= comm_end)", i, (long long)(st->comm_start_ns - start),
                        (long long)(st->comm_end_ns - start));
  if (st->compute_end_ns < st->compute_start_ns || (st->h2d_start_ns && st->h2d_end_ns < st->h2d_start_ns))
    return pb_trace_bad(l, "pipebench.steps[%zu]: an interval that ends before it starts (expected compute_start <= "
                           "compute_end and h2d_start <= h2d_end)", i);
  if (st->prev_end_ns > st->compute_start_ns || st->ready_ns > st->compute_end_ns)
    return pb_trace_bad(l, "pipebench.steps[%zu]: prev_end after compute_start, or ready after compute_end (expected "
                           "the previous step to end before this one starts, and the batch's hand-off before it "
                           "ends)", i);
  if (l->rec->device_count > 0 && device >= l->rec->device_count)
    return pb_trace_bad(l, "pipebench.steps[%zu][9] (device): %d (expected below device.count %d)", i, device,
                        l->rec->device_count);
  return 0;
}

static int load_step(pb_trace_loader *l, const cJSON *a, size_t i, pb_step *st) {
  char where[96];
  snprintf(where, sizeof where, "pipebench.steps[%zu]", i);
  int n = 0, rc = pb_trace_v_array(l, a, where, -1, &n);
  if (rc) return rc;
  if (n != PB_TRACE_STEP_FIELDS && n != PB_TRACE_STEP_FIELDS + 2)
    return pb_trace_bad(l, "%s: %d fields (expected %d: prev_end, ready, h2d_start, h2d_end, compute_start, "
                           "compute_end, bytes, key, samples, device, measured, and with a gradient exchange "
                           "comm_start, comm_end)", where, n, PB_TRACE_STEP_FIELDS);
  const cJSON *values = cJSON_GetArrayItem(a, 6), *comm = cJSON_GetArrayItem(a, PB_TRACE_STEP_FIELDS);
  int samples = 0, device = 0;
  if ((rc = load_step_times(l, a->child, i, st)) || (rc = load_step_values(l, values, i, &samples, &device, st)) ||
      (comm && (rc = load_step_comm(l, comm, i, st))) || (rc = check_step(l, i, device, st)))
    return rc;
  st->samples = (uint32_t)samples;
  st->device = (uint16_t)device;
  return 0;
}

/* One step at a time from the cut-out text (pb_trace_cut_steps counted them): a run of hours writes
 * millions of steps, and a parsed tree of them all would take ~1.2 KB each; one small tree per step keeps
 * analyze's memory flat. */
static int load_steps_text(pb_trace_loader *l) {
  long n = l->steps_count;
  if (n < 0) return pb_trace_bad(l, "pipebench.steps: not an array of arrays (expected [[...], ...])");
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
      return pb_trace_bad(l, "pipebench.steps[%ld]: not valid JSON (expected an array of numbers)", i);
    }
    int rc = load_step(l, a, (size_t)i, &rec->steps[i]);
    cJSON_Delete(a);
    if (rc) return rc;
    p = after;
  }
  rec->nsteps = (size_t)n;
  return 0;
}

int pb_trace_load_steps(pb_trace_loader *l, const cJSON *v, void *base, const char *where) {
  if (l->steps_text) return load_steps_text(l);
  int n = 0, rc = pb_trace_v_array(l, v, where, -1, &n);
  if (rc) return rc;
  pb_record *rec = base;
  rec->steps = calloc(n ? (size_t)n : 1, sizeof *rec->steps);
  if (!rec->steps) return pb_err_setc(l->err, -ENOMEM, "%s: out of memory for %d steps", l->path, n);
  size_t i = 0;
  for (const cJSON *a = v->child; a; a = a->next, i++)
    if ((rc = load_step(l, a, i, &rec->steps[i]))) return rc;
  rec->nsteps = (size_t)n;
  return 0;
}

/* ---- queue_fill: times relative to start_ns, fills in units of 1e-4 ---- */

/* t_ns: each point's interval runs from the previous end, so the times strictly increase from t0. */
static int load_fill_times(pb_trace_loader *l, const cJSON *t, int64_t t0, pb_timeline *tl) {
  int64_t prev = t0;
  for (size_t i = 0; i < tl->n; i++) {
    int64_t ti = 0;
    int rc = pb_trace_v_i64(l, cJSON_GetArrayItem(t, (int)i), "pipebench.queue_fill.t_ns[]", &ti);
    if (rc) return rc;
    if (ti <= prev)
      return pb_trace_bad(l, "pipebench.queue_fill.t_ns[%zu]: %lld is not after %lld (expected times after t0_ns, "
                             "increasing)", i, (long long)ti, (long long)prev);
    tl->t_ns[i] = l->rec->start_ns + (uint64_t)ti;
    prev = ti;
  }
  return 0;
}

static int load_fill_series(pb_trace_loader *l, const cJSON *sj, int k, pb_timeline *tl) {
  const cJSON *f = pb_trace_member(sj, "fill_e4");
  int nf = 0, rc;
  if ((rc = pb_trace_v_object(l, sj, "pipebench.queue_fill.series[]")) ||
      (rc = pb_trace_v_str(l, pb_trace_member(sj, "stage"), "pipebench.queue_fill.series[].stage", tl->names[k],
                           sizeof tl->names[k])) ||
      (rc = pb_trace_v_int(l, pb_trace_member(sj, "capacity"), "pipebench.queue_fill.series[].capacity", 1,
                           INT32_MAX, &tl->capacity[k])) ||
      (rc = pb_trace_v_array(l, f, "pipebench.queue_fill.series[].fill_e4", PB_TIMELINE_POINTS, &nf)))
    return rc;
  if (nf != (int)tl->n)
    return pb_trace_bad(l, "pipebench.queue_fill.series[%d].fill_e4: %d values (expected %zu, one per t_ns)", k, nf,
                        tl->n);
  for (size_t i = 0; i < tl->n; i++) {
    int e4 = 0;
    if ((rc = pb_trace_v_int(l, cJSON_GetArrayItem(f, (int)i), "pipebench.queue_fill.series[].fill_e4[]", 0, 10000,
                             &e4)))
      return rc;
    tl->fill[k][i] = pb_timeline_fill_from_e4(e4);
  }
  return 0;
}

int pb_trace_load_queue_fill(pb_trace_loader *l, const cJSON *v, void *base, const char *where) {
  (void)base;
  int rc = pb_trace_v_object(l, v, where);
  if (rc) return rc;
  pb_timeline *tl = calloc(1, sizeof *tl);
  if (!tl) return pb_err_setc(l->err, -ENOMEM, "%s: out of memory", l->path);
  l->rec->timeline = tl;
  int64_t t0 = 0;
  if ((rc = pb_trace_v_i64(l, pb_trace_member(v, "t0_ns"), "pipebench.queue_fill.t0_ns", &t0))) return rc;
  if (t0 < 0)
    return pb_trace_bad(l, "pipebench.queue_fill.t0_ns: %lld (expected a time at or after start_ns, >= 0)",
                        (long long)t0);
  tl->t0_ns = l->rec->start_ns + (uint64_t)t0;
  if ((rc = pb_trace_v_u64(l, pb_trace_member(v, "interval_ns"), "pipebench.queue_fill.interval_ns", &tl->interval_ns)))
    return rc;
  if (!tl->interval_ns) return pb_trace_bad(l, "pipebench.queue_fill.interval_ns: 0 (expected at least 1)");
  const cJSON *t = pb_trace_member(v, "t_ns"), *series = pb_trace_member(v, "series");
  int n = 0, ns = 0;
  if ((rc = pb_trace_v_array(l, t, "pipebench.queue_fill.t_ns", PB_TIMELINE_POINTS, &n)) ||
      (rc = pb_trace_v_array(l, series, "pipebench.queue_fill.series", PB_MAX_STAGES + 1, &ns)))
    return rc;
  tl->n = (size_t)n;
  tl->nseries = ns;
  if ((rc = load_fill_times(l, t, t0, tl))) return rc;
  for (int k = 0; k < ns; k++)
    if ((rc = load_fill_series(l, cJSON_GetArrayItem(series, k), k, tl))) return rc;
  return 0;
}
