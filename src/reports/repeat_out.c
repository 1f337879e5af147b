/* What a repeated measurement writes (repeat_out.h): the intervals as JSON, the "repeats" object, the
 * summary lines, repeats.csv, and the measurement's report.json and report.html made from its median
 * repeat's (read back here because this layer writes both formats: html.c's page data, json.c's report). */
#include "repeat_out.h"
#include "json_text.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "html.h"

/* v rounded to `decimals` (as report.json rounds), or null when not finite. */
static void add_rounded(cJSON *o, const char *key, double v, int decimals) {
  if (!isfinite(v)) {
    cJSON_AddNullToObject(o, key);
    return;
  }
  double scale = pow(10.0, decimals);
  cJSON_AddNumberToObject(o, key, round(v * scale) / scale);
}

cJSON *pb_interval_json(const pb_interval *iv, int decimals, const double *values, int n) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  add_rounded(o, "median", iv->median, decimals);
  add_rounded(o, "lo", iv->lo, decimals);
  add_rounded(o, "hi", iv->hi, decimals);
  if (!values) return o;
  cJSON *a = cJSON_AddArrayToObject(o, "values");
  for (int i = 0; a && i < n; i++) {
    double scale = pow(10.0, decimals);
    cJSON_AddItemToArray(a, isfinite(values[i]) ? cJSON_CreateNumber(round(values[i] * scale) / scale)
                                                : cJSON_CreateNull());
  }
  return o;
}

/* The bottlenecks the measured repeats named, each with how many named it, in order of first appearance. */
typedef struct tally {
  int n;
  char stage[PB_REPEAT_MAX][PB_NAME_LEN];
  int count[PB_REPEAT_MAX];
} tally;

static void count_bottlenecks(const pb_run_figures *runs, int nruns, tally *t) {
  t->n = 0;
  for (int i = 0; i < nruns; i++) {
    if (!pb_run_figures_measured(&runs[i]) || !runs[i].bottleneck[0]) continue;
    int j = 0;
    while (j < t->n && strcmp(t->stage[j], runs[i].bottleneck) != 0) j++;
    if (j == t->n) {
      snprintf(t->stage[j], sizeof t->stage[j], "%s", runs[i].bottleneck);
      t->count[t->n++] = 0;
    }
    t->count[j]++;
  }
}

static cJSON *figure_json(const pb_run_figures *runs, int nruns, size_t offset, const pb_interval *iv, int decimals) {
  double v[PB_REPEAT_MAX];
  pb_repeat_column(runs, nruns, offset, v);
  return pb_interval_json(iv, decimals, v, nruns);
}

cJSON *pb_repeat_json(const pb_run_figures *runs, int nruns, const pb_repeat_summary *s) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  nruns = PB_MIN(nruns, PB_REPEAT_MAX);
  cJSON_AddNumberToObject(o, "n", s->n);
  cJSON_AddNumberToObject(o, "runs", s->runs);
  add_rounded(o, "coverage_pct", 100 * s->samples_per_s.coverage, 2);
  if (s->median_repeat >= 0) cJSON_AddNumberToObject(o, "median_repeat", s->median_repeat + 1);
  else cJSON_AddNullToObject(o, "median_repeat");
  cJSON_AddItemToObject(o, "samples_per_s",
                        figure_json(runs, nruns, offsetof(pb_run_figures, samples_per_s), &s->samples_per_s, 1));
  cJSON_AddItemToObject(o, "device_idle_pct",
                        figure_json(runs, nruns, offsetof(pb_run_figures, device_idle_pct), &s->device_idle_pct, 2));
  cJSON_AddItemToObject(o, "accelerator_utilization_pct",
                        figure_json(runs, nruns, offsetof(pb_run_figures, accelerator_utilization_pct),
                                    &s->accelerator_utilization_pct, 2));
  cJSON_AddItemToObject(o, "input_bound_pct",
                        figure_json(runs, nruns, offsetof(pb_run_figures, input_bound_pct), &s->input_bound_pct, 2));
  tally *t = malloc(sizeof *t);
  cJSON *b = cJSON_AddObjectToObject(o, "bottleneck");
  if (t) count_bottlenecks(runs, nruns, t);
  for (int i = 0; t && b && i < t->n; i++) cJSON_AddNumberToObject(b, t->stage[i], t->count[i]);
  free(t);
  return o;
}

/* ---------- text ---------- */

#define LABEL 14 /* as the run's summary (src/reports/text.c) */

static void print_bottlenecks(FILE *out, const pb_run_figures *runs, int nruns, int measured) {
  tally *t = malloc(sizeof *t);
  if (!t) return;
  count_bottlenecks(runs, nruns, t);
  fprintf(out, "%-*s", LABEL, "bottlenecks");
  for (int i = 0; i < t->n; i++)
    fprintf(out, "%s%s in %d of %d repeats", i ? ", " : "", t->stage[i], t->count[i], measured);
  fprintf(out, "%s\n", t->n ? "" : "n/a");
  free(t);
}

void pb_repeat_print_text(FILE *out, const pb_run_figures *runs, int nruns, const pb_repeat_summary *s) {
  char buf[160];
  if (s->n == 0) {
    fprintf(out, "\n%-*snone of %d completed and measured a rate: no median, no interval\n", LABEL, "repeats",
            s->runs);
    return;
  }
  if (s->n % 2)
    fprintf(out, "\n%-*s%d of %d counted; the summary above is repeat %d's, the median samples/s\n", LABEL,
            "repeats", s->n, s->runs, s->median_repeat + 1);
  else
    fprintf(out, "\n%-*s%d of %d counted; the summary above is repeat %d's, the lower of the two middle\n%-*ssamples/s "
            "(the median is their mean)\n", LABEL, "repeats", s->n, s->runs, s->median_repeat + 1, LABEL, "");
  static const char *const labels[] = {"samples/s", "device idle %", "AU %", "input-bound %"};
  const pb_interval *iv[] = {&s->samples_per_s, &s->device_idle_pct, &s->accelerator_utilization_pct,
                             &s->input_bound_pct};
  for (size_t i = 0; i < PB_ARRAY_LEN(labels); i++)
    fprintf(out, "%-*s%s\n", LABEL, labels[i], pb_interval_text(iv[i], 1, buf, sizeof buf));
  print_bottlenecks(out, runs, nruns, s->n);
}

/* After an interrupt, the line a plain run prints, for the repeats: what was stopped and what the figures
 * are of. */
void pb_repeat_print_stopped(FILE *out, int nrun, int nasked, int ncounted) {
  fprintf(out, "%-14sINTERRUPTED: the repeats were stopped, %d of %d run; the figures are of the %d that "
          "completed\n", "status", nrun, nasked, ncounted);
}

/* ---------- the configuration's report.json ---------- */

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  char *text = NULL;
  long n = f && fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (text = malloc((size_t)n + 1)) &&
      fread(text, 1, (size_t)n, f) == (size_t)n) {
    text[n] = '\0';
    *len = (size_t)n;
  } else {
    free(text);
    text = NULL;
  }
  if (f) fclose(f);
  return text;
}

/* Written whole or not at all: to path.tmp, then renamed (as the run's own files). */
typedef struct bytes_arg {
  const char *data;
  size_t len;
} bytes_arg;

static int write_bytes(FILE *f, const void *arg) {
  const bytes_arg *b = arg;
  return fwrite(b->data, 1, b->len, f) == b->len ? 0 : -(errno ? errno : EIO);
}

/* Through pb_write_atomic: its temporary file never outlives the process, even on a second signal. */
static int write_file(const char *path, const char *data, size_t len) {
  bytes_arg b = {data, len};
  return pb_write_atomic(path, write_bytes, &b);
}

cJSON *pb_repeat_report(const char *median_dir, cJSON *repeats, bool interrupted, pb_err *err) {
  char from[PB_PATH_LEN + 32];
  snprintf(from, sizeof from, "%s/report.json", median_dir);
  size_t len = 0;
  char *text = read_file(from, &len);
  cJSON *report = text ? cJSON_Parse(text) : NULL;
  free(text);
  if (cJSON_IsObject(report) && repeats && cJSON_AddItemToObject(report, "repeats", repeats)) {
    /* a signal that cut the repeats short interrupted the measurement, whichever repeat this is a copy of */
    if (interrupted) cJSON_ReplaceItemInObject(report, "interrupted", cJSON_CreateTrue());
    return report;
  }
  cJSON_Delete(repeats); /* not taken over */
  cJSON_Delete(report);
  pb_err_set(err, "%s: cannot read the median repeat's report (expected the report.json it wrote)", from);
  return NULL;
}

/* The page data of a run's report.html: the JSON between the pb-data script's tags (src/reports/html.c writes
 * "<" and ">" inside it as \\u003c and \\u003e, which JSON reads back as they were). */
static cJSON *page_data(const char *html) {
  static const char open_tag[] = "<script id=\"pb-data\" type=\"application/json\">";
  const char *start = strstr(html, open_tag);
  const char *end = start ? strstr(start + sizeof open_tag - 1, "</script>") : NULL;
  if (!end) return NULL;
  start += sizeof open_tag - 1;
  return cJSON_ParseWithLength(start, (size_t)(end - start));
}

/* <dir>/report.html: the median repeat's page with `report` as its report, so that the page and
 * <dir>/report.json agree (interrupted, repeats). */
static int write_html(const char *dir, const char *median_dir, const cJSON *report, const char *title, pb_err *err) {
  char from[PB_PATH_LEN + 32], to[PB_PATH_LEN + 32];
  snprintf(from, sizeof from, "%s/report.html", median_dir);
  snprintf(to, sizeof to, "%s/report.html", dir);
  size_t len = 0;
  char *html = read_file(from, &len);
  if (!html) return 0; /* not asked for (--format), or left out after a signal */
  cJSON *data = page_data(html);
  free(html);
  cJSON *copy = data && report ? cJSON_Duplicate(report, true) : NULL;
  int rc = -EINVAL;
  if (copy && cJSON_ReplaceItemInObject(data, "report", copy)) {
    cJSON_ReplaceItemInObject(data, "out_dir", cJSON_CreateString(dir));
    rc = pb_html_write(to, title, data);
  } else {
    cJSON_Delete(copy);
  }
  cJSON_Delete(data);
  return rc ? pb_err_setc(err, rc, "%s: cannot write the HTML report: %s", to, strerror(-rc)) : 0;
}

int pb_repeat_write_report(const char *dir, const char *median_dir, const cJSON *report, bool json, const char *title,
                           pb_err *err) {
  char to[PB_PATH_LEN + 32];
  snprintf(to, sizeof to, "%s/report.json", dir);
  char *text = report && json ? pb_json_print((cJSON *)report, true) : NULL;
  size_t n = text ? strlen(text) : 0;
  char *line = text ? realloc(text, n + 2) : NULL; /* a final newline, as the run's report.json has */
  if (line) memcpy(line + n, "\n", 2);
  int rc = !(report && json) ? 0 : line ? write_file(to, line, n + 1) : -ENOMEM;
  free(line ? line : text);
  if (rc) return pb_err_setc(err, rc, "%s: cannot write the report: %s", to, strerror(-rc));
  return report ? write_html(dir, median_dir, report, title, err) : 0;
}

int pb_repeat_write_csv(const char *path, const pb_repeat_summary *s, pb_err *err) {
  static const char *const names[] = {"samples_per_s", "device_idle_pct", "accelerator_utilization_pct",
                                      "input_bound_pct"};
  const pb_interval *iv[] = {&s->samples_per_s, &s->device_idle_pct, &s->accelerator_utilization_pct,
                             &s->input_bound_pct};
  static const int decimals[] = {1, 2, 2, 2};
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return pb_err_setc(err, -ENOMEM, "%s: out of memory", path);
  fprintf(f, "figure,median,lo,hi,coverage_pct,n,runs\n");
  for (size_t i = 0; i < PB_ARRAY_LEN(names); i++) {
    fprintf(f, "%s", names[i]);
    const double v[] = {iv[i]->median, iv[i]->lo, iv[i]->hi};
    for (size_t j = 0; j < PB_ARRAY_LEN(v); j++) { /* an empty cell: not available, as the other CSV tables */
      if (isfinite(v[j])) fprintf(f, ",%.*f", decimals[i], v[j]);
      else fputc(',', f);
    }
    if (isfinite(iv[i]->coverage)) fprintf(f, ",%.2f", 100 * iv[i]->coverage);
    else fputc(',', f);
    fprintf(f, ",%d,%d\n", iv[i]->n, s->runs);
  }
  int rc = fclose(f) == 0 && text ? write_file(path, text, len) : -ENOMEM;
  free(text);
  return rc ? pb_err_setc(err, rc, "%s: cannot write the table: %s", path, strerror(-rc)) : 0;
}
