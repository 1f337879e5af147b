/* The trace.json reader (docs/TRACE.md): the file line by line, the header line through the field tables
 * (trace_fields.c), then the host workers' events one line at a time (a trace holds up to ~1M events,
 * never parsed as one tree). */
#include "trace_json.h"
#include "trace_fields.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/* Cuts the header's "steps":[...] out of line (len bytes) in place, leaving "steps":[] for the JSON
 * parser; the text goes to l->steps_text (into *held, freed by the caller).  The writer puts only
 * numbers, booleans and keys as strings of digits in it; any other shape is left for the JSON parser
 * to judge.  Returns the line's new length. */
size_t pb_trace_cut_steps(pb_trace_loader *l, char *line, size_t len, char **held) {
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

/* The tid -> worker table for the events, once the header has said how many each worker has. */
static int index_workers(pb_trace_loader *l) {
  pb_record *rec = l->rec;
  l->by_tid = calloc((size_t)l->nworkers + 1, sizeof *l->by_tid);
  l->filled = calloc((size_t)l->nworkers + 1, sizeof *l->filled);
  if (!l->by_tid || !l->filled) return pb_err_setc(l->err, -ENOMEM, "%s: out of memory", l->path);
  int tid = 1;
  for (int i = 0; i < rec->nstages; i++)
    for (int k = 0; rec->stages[i].workers && k < rec->stages[i].threads; k++)
      l->by_tid[tid++] = &rec->stages[i].workers[k];
  return 0;
}

/* Line 2: "pipebench":{...}, ending in ','. */
static int load_header_line(pb_trace_loader *l, char *line, size_t len, bool at_eof) {
  size_t pre = strlen(pb_trace_line2);
  if (strncmp(line, "\"pipebench_job\":", 16) == 0)
    return pb_trace_bad(l, "a multi-process job's merged trace, for viewing (expected one rank's own trace: analyze "
                           "rank-N/trace.json next to it)");
  if (strncmp(line, pb_trace_line2, pre) != 0)
    return pb_trace_bad(l, "not a pipebench trace header (expected \"pipebench\":{...},)");
  if (len <= pre || line[len - 1] != ',' || at_eof)
    return pb_trace_bad(l, "the \"pipebench\" record is cut short (expected a line ending in \"},\"; is the trace "
                           "truncated?)");
  char *steps_held = NULL;
  len = pb_trace_cut_steps(l, line, len, &steps_held);
  cJSON *h = cJSON_ParseWithLength(line + pre, len - pre - 1);
  int rc = h ? pb_trace_load_table(l, &pb_trace_header_table, h, l->rec, "pipebench")
             : pb_trace_bad(l, "the \"pipebench\" record is not valid JSON (expected a JSON object)");
  cJSON_Delete(h);
  free(steps_held);
  l->steps_text = NULL;
  return rc ? rc : index_workers(l);
}

/* ---- events ---- */

/* The number text after `"key":` in the raw line, in microseconds (ts, dur), as exact signed ns. */
static int raw_us(pb_trace_loader *l, const char *line, const char *key, int64_t *ns) {
  char pat[16];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *p = strstr(line, pat);
  if (!p) return pb_trace_bad(l, "event: no \"%s\" (expected a number of microseconds)", key);
  p += strlen(pat);
  while (*p == ' ' || *p == '\t') p++;
  const char *start = p;
  bool neg = *p == '-';
  if (neg) p++;
  uint64_t whole = 0, frac = 0;
  int ndig = 0, nfrac = 0;
  bool overflow = false;
  for (; *p >= '0' && *p <= '9'; p++, ndig++)
    overflow |= __builtin_mul_overflow(whole, 10, &whole) ||
                __builtin_add_overflow(whole, (uint64_t)(*p - '0'), &whole);
  if (*p == '.')
    for (p++; *p >= '0' && *p <= '9'; p++, nfrac++)
      if (nfrac < 3) frac = frac * 10 + (uint64_t)(*p - '0');
  if (!ndig) return pb_trace_bad(l, "event: \"%s\" is not a number (expected microseconds)", key);
  if (nfrac > 3 || *p == 'e' || *p == 'E') { /* not written by pipebench: as close as a double gets */
    double d = strtod(start, NULL) * 1000.0;
    if (!(fabs(d) < 9.2e18)) return pb_trace_bad(l, "event: \"%s\" is out of range (expected microseconds)", key);
    *ns = llround(d);
    return 0;
  }
  for (; nfrac < 3; nfrac++) frac *= 10;
  uint64_t v;
  overflow |= __builtin_mul_overflow(whole, 1000, &v) || __builtin_add_overflow(v, frac, &v);
  if (overflow || v > (uint64_t)INT64_MAX)
    return pb_trace_bad(l, "event: \"%s\" is out of range (expected microseconds)", key);
  *ns = neg ? -(int64_t)v : (int64_t)v;
  return 0;
}

/* args' element key: "<sample>" (a sample id) or "<batch>" (a batch id). */
static int arg_key(pb_trace_loader *l, const cJSON *args, const char *sample, const char *batch, uint64_t *key) {
  const cJSON *s = pb_trace_member(args, sample), *b = pb_trace_member(args, batch);
  char where[48];
  int rc = 0;
  *key = PB_NO_KEY;
  if (s) {
    snprintf(where, sizeof where, "event args.%s", sample);
    rc = pb_trace_v_u64(l, s, where, key);
  } else if (b) {
    snprintf(where, sizeof where, "event args.%s", batch);
    rc = pb_trace_v_u64(l, b, where, key);
    if (!rc) *key |= PB_TRACE_BATCH_BIT;
  }
  return rc;
}

/* The event's worker: a host worker's tid, with room for one more event. */
static int event_worker(pb_trace_loader *l, const cJSON *e, int *tid) {
  int rc = pb_trace_v_int(l, pb_trace_member(e, "tid"), "event tid", 1, INT32_MAX, tid);
  if (rc) return rc;
  if (*tid > l->nworkers)
    return pb_trace_bad(l, "event tid %d: no such worker (expected a tid of pipebench.stages[].workers, 1..%d)", *tid,
                        l->nworkers);
  if (l->filled[*tid] >= l->by_tid[*tid]->n)
    return pb_trace_bad(l, "tid %d: more events than the header's %u (expected n events per worker)", *tid,
                        l->by_tid[*tid]->n);
  return 0;
}

/* "cat" as the event's kind; "other" carries the kind's number in args.k. */
static int event_kind(pb_trace_loader *l, const cJSON *cat, const cJSON *args, pb_event *ev) {
  int rc;
  if (!cJSON_IsString(cat)) return pb_trace_bad(l, "event: no \"cat\" (expected process, wait or blocked)");
  if ((rc = pb_trace_v_object(l, args, "event args"))) return rc;
  const char *c = cat->valuestring;
  if (!strcmp(c, "process")) ev->kind = PB_EV_PROCESS;
  else if (!strcmp(c, "wait")) ev->kind = PB_EV_WAIT;
  else if (!strcmp(c, "blocked")) ev->kind = PB_EV_BLOCKED;
  else if (!strcmp(c, "handoff")) ev->kind = PB_EV_HANDOFF;
  else if (!strcmp(c, "other")) {
    int k = 0;
    if ((rc = pb_trace_v_int(l, pb_trace_member(args, "k"), "event args.k", 0, UINT8_MAX, &k))) return rc;
    ev->kind = (uint8_t)k;
  } else {
    return pb_trace_bad(l, "event cat \"%.40s\" (expected process, wait or blocked)", c);
  }
  return 0;
}

/* ts and dur from the raw text (exact), then the element keys, bytes and flags from args. */
static int event_values(pb_trace_loader *l, const char *line, const cJSON *args, pb_event *ev) {
  int64_t ts = 0, dur = 0, b64 = 0;
  int flags = 0, rc;
  if ((rc = raw_us(l, line, "ts", &ts)) || (rc = raw_us(l, line, "dur", &dur))) return rc;
  if (dur < 0) return pb_trace_bad(l, "event dur: %lld ns (expected >= 0)", (long long)dur);
  ev->t0_ns = l->rec->start_ns + (uint64_t)ts;
  ev->t1_ns = ev->t0_ns + (uint64_t)dur;
  if ((rc = arg_key(l, args, "id", "batch", &ev->key)) || (rc = arg_key(l, args, "out_id", "out_batch", &ev->out)))
    return rc;
  if ((rc = pb_trace_v_i64(l, pb_trace_member(args, "bytes"), "event args.bytes", &b64))) return rc;
  if (b64 < 0 || b64 > UINT32_MAX)
    return pb_trace_bad(l, "event args.bytes: %lld (expected 0..%u)", (long long)b64, UINT32_MAX);
  if ((rc = pb_trace_v_int(l, pb_trace_member(args, "f"), "event args.f", 0, UINT8_MAX, &flags))) return rc;
  ev->bytes = (uint32_t)b64;
  ev->flags = (uint8_t)flags;
  return 0;
}

/* One event line.  Only the host workers' complete events are read: device, metadata and flow events
 * come from the header. */
static int load_event(pb_trace_loader *l, const char *line, size_t len) {
  cJSON *e = cJSON_ParseWithLength(line, len);
  if (!e || !cJSON_IsObject(e)) {
    cJSON_Delete(e);
    return pb_trace_bad(l, "not a JSON object (expected one trace event per line)");
  }
  const cJSON *ph = pb_trace_member(e, "ph"), *pid = pb_trace_member(e, "pid");
  int rc = 0, tid = 0;
  if (cJSON_IsString(ph) && strcmp(ph->valuestring, "X") == 0 && cJSON_IsNumber(pid) &&
      pid->valuedouble == PB_TRACE_PID_HOST) {
    pb_event ev = {0};
    const cJSON *args = pb_trace_member(e, "args");
    if (!(rc = event_worker(l, e, &tid)) && !(rc = event_kind(l, pb_trace_member(e, "cat"), args, &ev)) &&
        !(rc = event_values(l, line, args, &ev)))
      l->by_tid[tid]->ev[l->filled[tid]++] = ev;
  }
  cJSON_Delete(e);
  return rc;
}

/* Strips the line ending; returns the length. */
static size_t chomp(char *line, ssize_t n) {
  size_t len = (size_t)n;
  while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
  return len;
}

static int check_counts(pb_trace_loader *l) {
  for (int tid = 1; tid <= l->nworkers; tid++)
    if (l->filled[tid] != l->by_tid[tid]->n)
      return pb_trace_bad(l, "tid %d has %u events (expected %u, as pipebench.stages[].workers says)", tid,
                          l->filled[tid], l->by_tid[tid]->n);
  return 0;
}

/* ---- the lines ---- */

typedef enum { LINE1, HEADER, EVENTS_OPEN, EVENTS, AFTER } stream_state;

typedef struct stream {
  stream_state state;
  bool need_event; /* the previous event line ended with ',' */
  bool any_event;
} stream;

/* A line of the event list: an event, or its end. */
static int events_line(pb_trace_loader *l, stream *s, char *line, size_t len) {
  if (strcmp(line, pb_trace_end) == 0) {
    s->state = AFTER;
    if (s->need_event) return pb_trace_bad(l, "the event list ends after a ',' (expected another event)");
    return check_counts(l);
  }
  if (strcmp(line, "]") == 0) { /* "]}" cut short, or "]" then "}" split by an editor */
    s->state = AFTER;
    return pb_trace_bad(l, "the event list ends with ] alone (expected ]} on the last line; is the trace truncated?)");
  }
  if (!s->need_event && s->any_event)
    return pb_trace_bad(l, "an event follows one without a ',' (expected one event per line, each but the last "
                           "followed by ',')");
  s->any_event = true;
  s->need_event = len && line[len - 1] == ',';
  if (s->need_event) line[--len] = '\0';
  return load_event(l, line, len);
}

static int stream_line(pb_trace_loader *l, stream *s, char *line, size_t len, bool at_eof) {
  stream_state was = s->state;
  if (s->state < EVENTS) s->state++;
  switch (was) {
    case LINE1:
      if (strcmp(line, pb_trace_line1) == 0) return 0;
      return pb_trace_bad(l, "not a pipebench trace (expected a trace.json written by pipebench, starting with %s)",
                          pb_trace_line1);
    case HEADER: return load_header_line(l, line, len, at_eof);
    case EVENTS_OPEN:
      s->need_event = false;
      return strcmp(line, pb_trace_line3) == 0 ? 0 : pb_trace_bad(l, "no event list (expected %s)", pb_trace_line3);
    case EVENTS: return events_line(l, s, line, len);
    case AFTER:
      if (strspn(line, " \t") == len) return 0;
      return pb_trace_bad(l, "text after the end of the trace (expected nothing after ]})");
  }
  return 0;
}

static int load_stream(pb_trace_loader *l, FILE *f) {
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  int rc = 0;
  stream s = {LINE1, false, false};
  while (!rc && (n = getline(&line, &cap, f)) >= 0) {
    l->line++;
    size_t len = chomp(line, n);
    rc = stream_line(l, &s, line, len, feof(f));
  }
  if (!rc && ferror(f)) {
    rc = errno ? -errno : -EIO;
    pb_err_set(l->err, "%s: cannot read: %s (expected a readable trace.json)", l->path, strerror(-rc));
  }
  if (!rc && s.state != AFTER) {
    l->line++;
    rc = s.state == LINE1 ? pb_trace_bad(l, "empty file (expected a pipebench trace.json)")
                          : pb_trace_bad(l, "the file ends early (expected %s; is the trace truncated?)",
                                         s.state == EVENTS        ? "more events and ]}"
                                         : s.state == EVENTS_OPEN ? pb_trace_line3
                                                                  : "the record");
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
  pb_trace_loader l = {.path = path, .err = err, .rec = rec};
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
