#include "trace_merge.h"
#include "json_text.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The lines of a run's trace (trace_json.c writes them). */
static const char k_line1[] = "{\"displayTimeUnit\":\"ns\",";
static const char k_header[] = "\"pipebench\":";
static const char k_line3[] = "\"traceEvents\":[";
static const char k_end[] = "]}";

int pb_trace_merged_pid(int rank, int role) { return (rank + 1) * 100 + role; }

/* What one rank's trace holds, found by scanning it once. */
typedef struct part_scan {
  bool ok;
  char why[200];              /* why it is left out */
  uint64_t start_unix_ns;     /* 0: unknown (a trace from before issue 8) */
  const char *events, *end;   /* the event lines */
  uint64_t nevents;
  int64_t offset_ns;
} part_scan;

/* The next line of [*p, end) without its newline; false at the end. */
static bool next_line(const char **p, const char *end, const char **line, size_t *len) {
  if (*p >= end) return false;
  const char *nl = memchr(*p, '\n', (size_t)(end - *p));
  *line = *p;
  *len = (size_t)((nl ? nl : end) - *p);
  *p = nl ? nl + 1 : end;
  return true;
}

static bool line_is(const char *line, size_t len, const char *want) {
  return len == strlen(want) && memcmp(line, want, len) == 0;
}

/* The header's start_unix_ns (a decimal string), 0 when absent. */
static uint64_t header_start(const char *line, size_t len) {
  size_t pre = sizeof k_header - 1;
  cJSON *h = len > pre + 1 ? cJSON_ParseWithLength(line + pre, len - pre - 1) : NULL;
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(h, "start_unix_ns");
  uint64_t t = cJSON_IsString(v) ? strtoull(v->valuestring, NULL, 10) : 0;
  cJSON_Delete(h);
  return t;
}

static void scan(const pb_trace_part *pt, part_scan *s) {
  *s = (part_scan){0};
  if (!pt->text || !pt->len) {
    snprintf(s->why, sizeof s->why, "%s", pt->why_missing && pt->why_missing[0] ? pt->why_missing : "no trace");
    return;
  }
  const char *p = pt->text, *end = pt->text + pt->len, *line;
  size_t len;
  if (!next_line(&p, end, &line, &len) || !line_is(line, len, k_line1) || !next_line(&p, end, &line, &len) ||
      len < sizeof k_header || memcmp(line, k_header, sizeof k_header - 1) != 0) {
    snprintf(s->why, sizeof s->why, "not a pipebench trace");
    return;
  }
  s->start_unix_ns = header_start(line, len);
  if (!next_line(&p, end, &line, &len) || !line_is(line, len, k_line3)) {
    snprintf(s->why, sizeof s->why, "no traceEvents line");
    return;
  }
  s->events = p;
  while (next_line(&p, end, &line, &len)) {
    if (line_is(line, len, k_end)) {
      s->end = line;
      s->ok = true;
      return;
    }
    s->nevents += len > 0;
  }
  snprintf(s->why, sizeof s->why, "the trace ends early (no closing ]})");
}

/* A JSON number of microseconds with up to 3 decimals ("-12.345") as exact ns; *used: its length. */
static bool parse_us(const char *p, const char *end, int64_t *ns, size_t *used) {
  const char *q = p;
  bool neg = q < end && *q == '-';
  q += neg;
  int64_t whole = 0, frac = 0;
  int digits = 0, fdigits = 0;
  for (; q < end && *q >= '0' && *q <= '9'; q++, digits++) whole = whole * 10 + (*q - '0');
  if (q < end && *q == '.')
    for (q++; q < end && *q >= '0' && *q <= '9'; q++, fdigits++)
      if (fdigits < 3) frac = frac * 10 + (*q - '0');
  if (!digits) return false;
  for (int k = fdigits; k < 3; k++) frac *= 10;
  *ns = (neg ? -1 : 1) * (whole * 1000 + frac);
  *used = (size_t)(q - p);
  return true;
}

static void put_us(FILE *f, int64_t ns) {
  uint64_t a = ns < 0 ? -(uint64_t)ns : (uint64_t)ns;
  fprintf(f, "%s%" PRIu64 ".%03" PRIu64, ns < 0 ? "-" : "", a / 1000, a % 1000);
}

/* Where `"key":` first occurs in [line, end), pointing at its value; NULL when it does not. */
static const char *value_of(const char *line, const char *end, const char *key) {
  size_t k = strlen(key);
  for (const char *p = line; p + k <= end; p++) {
    p = memchr(p, '"', (size_t)(end - p));
    if (!p || p + k > end) return NULL;
    if (memcmp(p, key, k) == 0) return p + k;
  }
  return NULL;
}

typedef struct merge_ctx {
  const pb_trace_part *parts;
  const part_scan *scans;
  int n;
  bool first;
} merge_ctx;

static void sep(FILE *f, merge_ctx *m) {
  if (!m->first) fputs(",\n", f);
  m->first = false;
}

/* One event line of rank `r`, its pid, ts and flow id rewritten, its process names prefixed. */
static void put_event(FILE *f, merge_ctx *m, int r, const char *line, size_t len) {
  const char *end = line + len;
  if (len && end[-1] == ',') end--;
  const part_scan *s = &m->scans[r];
  int rank = m->parts[r].rank;
  char ph = len > 8 ? line[7] : 0; /* {"ph":"X" */
  const char *at[3] = {value_of(line, end, "\"pid\":"), value_of(line, end, "\"ts\":"),
                       ph == 's' || ph == 't' || ph == 'f' ? value_of(line, end, "\"id\":") : NULL};
  sep(f, m);
  const char *p = line;
  for (;;) { /* the earliest rewrite left, in line order */
    int k = -1;
    for (int i = 0; i < 3; i++)
      if (at[i] && at[i] >= p && (k < 0 || at[i] < at[k])) k = i;
    if (k < 0) break;
    fwrite(p, 1, (size_t)(at[k] - p), f);
    int64_t v = 0;
    size_t used = 0;
    if (k == 1 && parse_us(at[k], end, &v, &used)) {
      put_us(f, v + s->offset_ns);
    } else if (k != 1) {
      char *q;
      long long x = strtoll(at[k], &q, 10);
      used = (size_t)(q - at[k]);
      if (k == 0) fprintf(f, "%d", pb_trace_merged_pid(rank, (int)x));
      else fprintf(f, "%lld", x * m->n + r); /* a flow id unique across ranks */
    }
    p = at[k] + used;
    at[k] = NULL;
  }
  static const char pname[] = "\"name\":\"process_name\",\"args\":{\"name\":\"";
  const char *name = ph == 'M' ? value_of(p, end, pname) : NULL;
  if (name) { /* "rank 1 pipeline (host)" */
    fwrite(p, 1, (size_t)(name - p), f);
    fprintf(f, "rank %d ", rank);
    p = name;
  }
  fwrite(p, 1, (size_t)(end - p), f);
}

/* Perfetto orders processes by sort index: rank 0's pipeline, its device, rank 1's ... */
static void put_rank_meta(FILE *f, merge_ctx *m, int rank) {
  for (int role = 1; role <= 2; role++) {
    sep(f, m);
    fprintf(f, "{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_sort_index\",\"args\":{\"sort_index\":%d}}",
            pb_trace_merged_pid(rank, role), pb_trace_merged_pid(rank, role));
  }
}

static cJSON *job_header(const merge_ctx *m) {
  cJSON *h = cJSON_CreateObject(), *ranks = cJSON_CreateArray();
  cJSON_AddNumberToObject(h, "format", 1);
  cJSON_AddStringToObject(h, "version", PB_VERSION);
  cJSON_AddNumberToObject(h, "world_size", m->n);
  cJSON_AddStringToObject(h, "note", "a job's merged trace, for viewing; pipebench analyze reads each rank's "
                                     "own trace (the \"trace\" of each rank)");
  for (int r = 0; r < m->n; r++) {
    const pb_trace_part *pt = &m->parts[r];
    const part_scan *s = &m->scans[r];
    cJSON *o = cJSON_CreateObject();
    char path[64];
    snprintf(path, sizeof path, "rank-%d/trace.json", pt->rank);
    cJSON_AddNumberToObject(o, "rank", pt->rank);
    cJSON_AddStringToObject(o, "host", pt->host ? pt->host : "");
    cJSON_AddStringToObject(o, "trace", path);
    cJSON_AddBoolToObject(o, "merged", s->ok);
    if (s->ok) {
      cJSON_AddNumberToObject(o, "pid_pipeline", pb_trace_merged_pid(pt->rank, 1));
      cJSON_AddNumberToObject(o, "pid_device", pb_trace_merged_pid(pt->rank, 2));
      cJSON_AddNumberToObject(o, "start_offset_ns", (double)s->offset_ns);
      cJSON_AddNumberToObject(o, "events", (double)s->nevents);
    } else {
      cJSON_AddStringToObject(o, "why_not", s->why);
    }
    cJSON_AddItemToArray(ranks, o);
  }
  cJSON_AddItemToObject(h, "ranks", ranks);
  return h;
}

static int merge_body(FILE *f, const void *arg) {
  merge_ctx *m = (merge_ctx *)arg;
  cJSON *h = job_header(m);
  char *text = h ? pb_json_print(h, false) : NULL;
  cJSON_Delete(h);
  if (!text) return -ENOMEM;
  fprintf(f, "%s\n\"pipebench_job\":%s,\n%s\n", k_line1, text, k_line3);
  free(text);
  m->first = true;
  for (int r = 0; r < m->n; r++) {
    const part_scan *s = &m->scans[r];
    if (!s->ok) continue;
    put_rank_meta(f, m, m->parts[r].rank);
    const char *p = s->events, *line;
    size_t len;
    while (p < s->end && next_line(&p, s->end, &line, &len))
      if (len) put_event(f, m, r, line, len);
  }
  fprintf(f, "\n%s\n", k_end);
  return 0;
}

int pb_trace_merge(const char *path, const pb_trace_part *parts, int n, pb_err *err) {
  part_scan *scans = calloc(n > 0 ? (size_t)n : 1, sizeof *scans);
  if (!scans) return pb_err_setc(err, -ENOMEM, "%s: out of memory", path);
  uint64_t t0 = 0;
  int merged = 0;
  for (int r = 0; r < n; r++) {
    scan(&parts[r], &scans[r]);
    if (scans[r].ok && scans[r].start_unix_ns && (!t0 || scans[r].start_unix_ns < t0)) t0 = scans[r].start_unix_ns;
    merged += scans[r].ok;
  }
  for (int r = 0; r < n; r++) /* every rank on the earliest rank's clock */
    if (scans[r].ok && scans[r].start_unix_ns) scans[r].offset_ns = (int64_t)(scans[r].start_unix_ns - t0);
  merge_ctx m = {.parts = parts, .scans = scans, .n = n};
  int rc = pb_write_atomic(path, merge_body, &m);
  free(scans);
  if (rc) return pb_err_set(err, "%s: cannot write the job's trace: %s", path, strerror(-rc)), rc;
  return merged;
}
