#include "html.h"
#include "json_text.h"
#include "json_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "timeline.h"

extern const char pb_html_template[]; /* generated from src/reports/html/report.html (cmake/embed.cmake) */
extern const size_t pb_html_template_len;

/* ---------- the data ---------- */

/* v to 3 decimals (the page needs no more, and the file stays small); null when not a number. */
static cJSON *num3(double v) {
  if (!isfinite(v)) return cJSON_CreateNull();
  return cJSON_CreateNumber(round(v * 1000.0) / 1000.0);
}

/* A named array of numbers in o; returns it (NULL when anything so far failed: json_util.h). */
static cJSON *array_in(cJSON *o, const char *key, bool *ok) {
  cJSON *a = cJSON_CreateArray();
  return pb_json_put(o, key, a, ok) ? a : NULL;
}

/* The step-time graph's bars: the breakdown of every measured step (pb_step_breakdown, as the report's
 * means), `bin` consecutive steps to a bar so that a long run still draws at most PB_HTML_MAX_BARS. */
static cJSON *steps_data(const pb_record *rec) {
  size_t n = 0;
  for (size_t i = 0; i < rec->nsteps; i++) n += rec->steps[i].measured;
  size_t bin = n > PB_HTML_MAX_BARS ? (n + PB_HTML_MAX_BARS - 1) / PB_HTML_MAX_BARS : 1;
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  pb_json_put(o, "count", cJSON_CreateNumber((double)n), &ok);
  pb_json_put(o, "bin", cJSON_CreateNumber((double)bin), &ok);
  cJSON *first = array_in(o, "first", &ok), *wait = array_in(o, "input_wait_ms", &ok);
  cJSON *h2d = array_in(o, "h2d_ms", &ok), *comp = array_in(o, "compute_ms", &ok);
  cJSON *comm = array_in(o, "comm_ms", &ok), *other = array_in(o, "other_ms", &ok);
  cJSON *late = array_in(o, "host_late_ms", &ok);
  double sum[6] = {0};
  size_t k = 0, seen = 0;
  for (size_t i = 0; ok && i < rec->nsteps; i++) {
    if (!rec->steps[i].measured) continue;
    pb_step_parts p = pb_step_breakdown(&rec->steps[i]);
    sum[0] += (double)p.input_wait_ns, sum[1] += (double)p.h2d_ns, sum[2] += (double)p.compute_ns;
    sum[3] += (double)p.comm_ns, sum[4] += (double)p.other_ns, sum[5] += (double)p.host_late_ns;
    k++, seen++;
    if (k < bin && seen < n) continue;
    double d = (double)k * 1e6; /* mean, ns to ms */
    pb_json_push(first, cJSON_CreateNumber((double)(seen - k + 1)), &ok);
    pb_json_push(wait, num3(sum[0] / d), &ok), pb_json_push(h2d, num3(sum[1] / d), &ok);
    pb_json_push(comp, num3(sum[2] / d), &ok), pb_json_push(comm, num3(sum[3] / d), &ok);
    pb_json_push(other, num3(sum[4] / d), &ok), pb_json_push(late, num3(sum[5] / d), &ok);
    memset(sum, 0, sizeof sum);
    k = 0;
  }
  return pb_json_finish(o, ok);
}

/* Samples/s the device consumed over time: at the end of each step, the samples of the last `k` steps over
 * the time since the step k before it ended (a moving window over completions, in completion order, all
 * devices together: smooth where equal bins would jump by a whole step), thinned to at most
 * PB_HTML_MAX_RATE_BINS points.  Warm-up included; the page shades it. */
static cJSON *throughput_data(const pb_record *rec) {
  uint64_t end_ns = rec->start_ns;
  for (size_t i = 0; i < rec->nsteps; i++)
    if (pb_step_end_ns(&rec->steps[i]) > end_ns) end_ns = pb_step_end_ns(&rec->steps[i]);
  if (rec->timeline && rec->timeline->n && rec->timeline->t_ns[rec->timeline->n - 1] > end_ns)
    end_ns = rec->timeline->t_ns[rec->timeline->n - 1];
  cJSON *o = cJSON_CreateObject();
  double end_s = (double)(end_ns - rec->start_ns) / 1e9;
  double ws = rec->window_start_ns > rec->start_ns ? (double)(rec->window_start_ns - rec->start_ns) / 1e9 : 0;
  double we = rec->window_end_ns > rec->start_ns ? (double)(rec->window_end_ns - rec->start_ns) / 1e9 : 0;
  if (!rec->measured_count) ws = we = end_s; /* the window never opened: all of it was warm-up */
  bool ok = true;
  pb_json_put(o, "window_start_s", num3(ws), &ok);
  pb_json_put(o, "window_end_s", num3(we), &ok);
  pb_json_put(o, "end_s", num3(end_s), &ok);
  size_t n = rec->nsteps, k = n / 30;
  k = k < 4 ? 4 : k > 64 ? 64 : k;
  pb_json_put(o, "window_steps", cJSON_CreateNumber((double)k), &ok);
  cJSON *t = array_in(o, "t_s", &ok), *rate = array_in(o, "samples_per_s", &ok);
  if (!ok || n <= k) return pb_json_finish(o, ok);
  size_t every = (n - k + PB_HTML_MAX_RATE_BINS - 1) / PB_HTML_MAX_RATE_BINS;
  uint64_t samples = 0;
  for (size_t i = 1; i <= k; i++) samples += rec->steps[i].samples;
  for (size_t i = k; ok && i < n; i++) { /* samples holds steps (i-k, i] */
    if (i > k) { /* add before subtracting: the sum never goes below zero (batches differ in size) */
      samples += rec->steps[i].samples;
      samples -= rec->steps[i - k].samples;
    }
    uint64_t t1 = pb_step_end_ns(&rec->steps[i]), t0 = pb_step_end_ns(&rec->steps[i - k]);
    bool last = i + 1 == n; /* the line always reaches the run's last step */
    if (((i - k) % every && !last) || t1 <= t0) continue;
    pb_json_push(t, num3((double)(t1 - rec->start_ns) / 1e9), &ok);
    pb_json_push(rate, num3((double)samples / ((double)(t1 - t0) / 1e9)), &ok);
  }
  return pb_json_finish(o, ok);
}

/* Queue fill over time (src/record/timeline.h), each point at the middle of its interval. */
static cJSON *queues_data(const pb_record *rec) {
  const pb_timeline *tl = rec->timeline;
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  pb_json_put(o, "interval_ms", num3((double)tl->interval_ns / 1e6), &ok);
  cJSON *t = array_in(o, "t_s", &ok), *series = array_in(o, "series", &ok);
  for (size_t i = 0; ok && i < tl->n; i++) {
    uint64_t begin = i ? tl->t_ns[i - 1] : tl->t0_ns;
    double mid_ns = ((double)(begin - rec->start_ns) + (double)(tl->t_ns[i] - rec->start_ns)) / 2;
    pb_json_push(t, num3(mid_ns / 1e9), &ok);
  }
  for (int k = 0; ok && k < tl->nseries; k++) {
    cJSON *s = cJSON_CreateObject();
    pb_json_push(series, s, &ok);
    pb_json_put(s, "stage", cJSON_CreateString(tl->names[k]), &ok);
    pb_json_put(s, "capacity", cJSON_CreateNumber(tl->capacity[k]), &ok);
    cJSON *f = array_in(s, "fill", &ok);
    for (size_t i = 0; ok && i < tl->n; i++)
      pb_json_push(f, cJSON_CreateNumber(pb_timeline_fill_e4(tl->fill[k][i]) / 1e4), &ok);
  }
  return pb_json_finish(o, ok);
}

cJSON *pb_html_run_data(const pb_report *r, const pb_record *rec) {
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  pb_json_put(o, "kind", cJSON_CreateString("run"), &ok);
  pb_json_put(o, "name", cJSON_CreateString(r->config_name), &ok);
  pb_json_put(o, "out_dir", cJSON_CreateString(r->out_dir), &ok);
  if (ok) pb_json_put(o, "report", pb_report_to_json(r), &ok); /* the big parts only while it can succeed */
  if (ok) pb_json_put(o, "steps", steps_data(rec), &ok);
  if (ok) pb_json_put(o, "throughput", throughput_data(rec), &ok);
  if (ok && rec->timeline && rec->timeline->n) pb_json_put(o, "queues", queues_data(rec), &ok);
  return pb_json_finish(o, ok);
}

/* ---------- the page ---------- */

/* The JSON inside <script type="application/json">: "<" and ">" (only ever inside a JSON string) are
 * written as \u003c and \u003e, so no "</script>", "<!--" or "-->" in a name or a path can end the element
 * (or anything around it) early. */
static int put_json(FILE *f, const char *text) {
  for (const char *p = text; *p; p++) {
    const char *e = *p == '<' ? "\\u003c" : *p == '>' ? "\\u003e" : NULL;
    if (e) {
      if (fputs(e, f) < 0) return -1;
    } else if (fputc(*p, f) == EOF) {
      return -1;
    }
  }
  return 0;
}

static int put_escaped(FILE *f, const char *text) {
  for (const char *p = text; *p; p++) {
    const char *e = *p == '<' ? "&lt;" : *p == '>' ? "&gt;" : *p == '&' ? "&amp;" : NULL;
    if (e ? fputs(e, f) < 0 : fputc(*p, f) == EOF) return -1;
  }
  return 0;
}

/* The template with its title and data markers filled in, each once (the first of each; the template has
 * exactly one of each, which test_html checks). */
static int put_page(FILE *f, const char *title, const char *json) {
  static const char k_title[] = "@PB_TITLE@", k_data[] = "@PB_DATA@";
  bool title_done = false, data_done = false;
  const char *p = pb_html_template, *end = pb_html_template + pb_html_template_len;
  while (p < end) {
    const char *at = strchr(p, '@');
    if (!at || at >= end) at = end;
    if (fwrite(p, 1, (size_t)(at - p), f) != (size_t)(at - p)) return -1;
    if (at == end) break;
    if (!title_done && !strncmp(at, k_title, sizeof k_title - 1)) {
      if (put_escaped(f, title)) return -1;
      p = at + sizeof k_title - 1;
      title_done = true;
    } else if (!data_done && !strncmp(at, k_data, sizeof k_data - 1)) {
      if (put_json(f, json)) return -1;
      p = at + sizeof k_data - 1;
      data_done = true;
    } else {
      if (fputc('@', f) == EOF) return -1;
      p = at + 1;
    }
  }
  return 0;
}

typedef struct page {
  const char *title, *json;
} page;

static int page_body(FILE *f, const void *arg) {
  const page *p = arg;
  return put_page(f, p->title, p->json) ? (errno ? -errno : -EIO) : 0;
}

int pb_html_write(const char *path, const char *title, const cJSON *data) {
  cJSON *copy = data ? cJSON_Duplicate(data, true) : NULL; /* made valid UTF-8 without touching data */
  char *json = copy ? pb_json_print(copy, false) : NULL;
  cJSON_Delete(copy);
  if (!json) return -ENOMEM;
  page p = {.title = title, .json = json};
  int rc = pb_write_atomic(path, page_body, &p);
  free(json);
  return rc;
}

int pb_report_write_html(const pb_report *r, const pb_record *rec, const char *path) {
  cJSON *data = pb_html_run_data(r, rec);
  if (!data) return -ENOMEM;
  char title[192];
  snprintf(title, sizeof title, "pipebench report: %s", r->config_name);
  int rc = pb_html_write(path, title, data);
  cJSON_Delete(data);
  return rc;
}

int pb_html_write_command(const char *kind, const char *name, const char *config, const char *out_dir,
                          bool run_reports, const cJSON *result, const char *path) {
  cJSON *data = cJSON_CreateObject();
  cJSON *copy = result ? cJSON_Duplicate(result, true) : NULL;
  bool ok = true;
  pb_json_put(data, "kind", cJSON_CreateString(kind), &ok);
  pb_json_put(data, "name", cJSON_CreateString(name), &ok);
  pb_json_put(data, "config", cJSON_CreateString(config), &ok);
  pb_json_put(data, "out_dir", cJSON_CreateString(out_dir), &ok);
  pb_json_put(data, "run_reports", cJSON_CreateBool(run_reports), &ok);
  pb_json_put(data, "result", copy, &ok); /* frees copy when it cannot be added */
  int rc = -ENOMEM;
  if (ok) {
    char title[192];
    snprintf(title, sizeof title, "pipebench %s: %s", kind, name);
    rc = pb_html_write(path, title, data);
  }
  cJSON_Delete(data);
  return rc;
}
