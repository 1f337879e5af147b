/* Repeats and confidence: the median of n measurements and its distribution-free interval (repeat.h). */
#include "repeat.h"
#include "json_text.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "html.h"
#include "report.h"

/* ---------- --repeat ---------- */

int pb_repeat_parse(const char *text, int *n, pb_err *err) {
  char clean[96];
  char *end;
  errno = 0;
  long v = strtol(text, &end, 10);
  /* digits only: strtol would also take " 3", "+3" and "-0" */
  bool digits = *text && strspn(text, "0123456789") == strlen(text);
  if (!digits || *end || errno || v < 1 || v > PB_REPEAT_MAX)
    return pb_err_set(err, "--repeat: \"%s\" is not a count of repeats (expected an integer from 1 to %d)",
                      pb_cfg_clean(text, 60, clean, sizeof clean), PB_REPEAT_MAX);
  *n = (int)v;
  return 0;
}

/* ---------- the interval ---------- */

/* P(Bin(n, 1/2) <= j), summed from C(n, i) / 2^n; 2^-100 is still a normal double. */
static double binomial_cdf_half(int n, int j) {
  double term = ldexp(1.0, -n), sum = 0; /* C(n, 0) / 2^n */
  for (int i = 0; i <= j && i <= n; i++) {
    sum += term;
    term = term * (n - i) / (i + 1);
  }
  return sum;
}

double pb_repeat_coverage(int n, int k) {
  if (n < 2 || k < 1 || 2 * k > n) return NAN;
  return 1.0 - 2.0 * binomial_cdf_half(n, k - 1);
}

int pb_repeat_rank(int n) {
  int k = 1;
  /* coverage falls as k grows: the last k still at the target is the narrowest pair that keeps it */
  while (2 * (k + 1) <= n && pb_repeat_coverage(n, k + 1) >= PB_REPEAT_TARGET_COVERAGE - 1e-12) k++;
  return k;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void pb_interval_of(const double *values, int n, pb_interval *iv) {
  double v[PB_REPEAT_MAX];
  int m = 0;
  for (int i = 0; i < n && m < PB_REPEAT_MAX; i++)
    if (isfinite(values[i])) v[m++] = values[i];
  qsort(v, (size_t)m, sizeof v[0], cmp_double);
  *iv = (pb_interval){.n = m, .median = NAN, .lo = NAN, .hi = NAN, .coverage = NAN};
  if (m == 0) return;
  iv->median = m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2;
  if (m < 2) return;
  iv->rank = pb_repeat_rank(m);
  iv->lo = v[iv->rank - 1];
  iv->hi = v[m - iv->rank];
  iv->coverage = pb_repeat_coverage(m, iv->rank);
}

bool pb_interval_has(const pb_interval *iv) { return iv->n >= 2 && !isnan(iv->lo) && !isnan(iv->hi); }

bool pb_interval_above(const pb_interval *a, const pb_interval *b) {
  return pb_interval_has(a) && pb_interval_has(b) && a->lo > b->hi;
}

bool pb_intervals_differ(const pb_interval *a, const pb_interval *b) {
  return pb_interval_above(a, b) || pb_interval_above(b, a);
}

bool pb_interval_decisive(const pb_interval *iv) {
  return pb_interval_has(iv) && iv->coverage >= PB_REPEAT_MIN_COVERAGE - 1e-12;
}

pb_diff pb_interval_compare(const pb_interval *a, const pb_interval *b) {
  if (!pb_interval_decisive(a) || !pb_interval_decisive(b)) return PB_DIFF_UNDECIDED;
  return pb_interval_above(a, b) ? PB_DIFF_ABOVE : pb_interval_above(b, a) ? PB_DIFF_BELOW : PB_DIFF_OVERLAP;
}

const char *pb_interval_undecided_text(const pb_interval *iv, char *out, size_t len) {
  if (pb_interval_decisive(iv)) snprintf(out, len, "%s", "");
  else if (pb_interval_has(iv)) snprintf(out, len, "too few repeats to tell (coverage %.1f %%)", 100 * iv->coverage);
  else snprintf(out, len, "too few repeats to tell (%d counted, no interval)", iv->n);
  return out;
}

const char *pb_interval_text(const pb_interval *iv, int decimals, char *out, size_t len) {
  if (iv->n == 0) snprintf(out, len, "n/a");
  else if (!pb_interval_has(iv)) snprintf(out, len, "%.*f", decimals, iv->median);
  else
    snprintf(out, len, "%.*f (%.*f-%.*f, %.1f %% interval)", decimals, iv->median, decimals, iv->lo, decimals,
             iv->hi, 100 * iv->coverage);
  return out;
}

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

/* ---------- repeats of one configuration ---------- */

void pb_run_figures_of(const pb_report *r, int status, double wall_s, pb_run_figures *f) {
  bool have = r && r->version; /* the run got as far as writing its report */
  *f = (pb_run_figures){.status = status, .have = have, .wall_s = wall_s};
  f->samples_per_s = have ? r->samples_per_s : NAN;
  f->batches_per_s = have ? r->batches_per_s : NAN;
  f->device_idle_pct = have ? r->device_idle_pct : NAN;
  f->accelerator_utilization_pct = have ? r->accelerator_utilization_pct : NAN;
  f->input_bound_pct = have ? r->input_bound_pct : NAN;
  f->classification = have ? r->classification : NULL;
  /* a run that exits 130 was interrupted, whether or not the signal came before its report said so */
  f->interrupted = (have && r->interrupted) || status == PB_EXIT_INTERRUPTED;
  if (have) snprintf(f->bottleneck, sizeof f->bottleneck, "%s", r->bottleneck_stage);
}

bool pb_run_figures_measured(const pb_run_figures *f) {
  return f->status == 0 && f->have && isfinite(f->samples_per_s) && f->samples_per_s > 0;
}

/* One figure of every measured repeat (NAN for the others) into v[0..nruns). */
static void column(const pb_run_figures *runs, int nruns, size_t offset, double *v) {
  for (int i = 0; i < nruns; i++)
    v[i] = pb_run_figures_measured(&runs[i]) ? *(const double *)((const char *)&runs[i] + offset) : NAN;
}

/* The measured repeat whose samples/s is the median; the lower middle one for an even count, the first of
 * equal rates. */
static int median_repeat(const pb_run_figures *runs, int nruns) {
  int idx[PB_REPEAT_MAX], m = 0;
  for (int i = 0; i < nruns && m < PB_REPEAT_MAX; i++)
    if (pb_run_figures_measured(&runs[i])) idx[m++] = i;
  for (int i = 1; i < m; i++) /* insertion sort: stable, so equal rates keep the earlier repeat first */
    for (int j = i; j > 0 && runs[idx[j]].samples_per_s < runs[idx[j - 1]].samples_per_s; j--) {
      int t = idx[j];
      idx[j] = idx[j - 1];
      idx[j - 1] = t;
    }
  return m ? idx[(m - 1) / 2] : -1;
}

void pb_repeat_summarize(const pb_run_figures *runs, int nruns, pb_repeat_summary *s) {
  static const size_t offsets[] = {
      offsetof(pb_run_figures, samples_per_s), offsetof(pb_run_figures, batches_per_s),
      offsetof(pb_run_figures, device_idle_pct), offsetof(pb_run_figures, accelerator_utilization_pct),
      offsetof(pb_run_figures, input_bound_pct)};
  pb_interval *out[] = {&s->samples_per_s, &s->batches_per_s, &s->device_idle_pct,
                        &s->accelerator_utilization_pct, &s->input_bound_pct};
  double v[PB_REPEAT_MAX];
  nruns = PB_MIN(nruns, PB_REPEAT_MAX);
  s->runs = nruns;
  for (size_t f = 0; f < PB_ARRAY_LEN(offsets); f++) {
    column(runs, nruns, offsets[f], v);
    pb_interval_of(v, nruns, out[f]);
  }
  s->n = s->samples_per_s.n;
  s->median_repeat = median_repeat(runs, nruns);
}

bool pb_repeat_any_interrupted(const pb_run_figures *runs, int nruns) {
  for (int i = 0; i < nruns; i++)
    if (runs[i].interrupted || runs[i].status == PB_EXIT_INTERRUPTED) return true;
  return false;
}

/* The repeat whose figures stand for the measurement: the median one, else the last that wrote a report,
 * else the first. */
static int stand_in(const pb_run_figures *runs, int nruns, const pb_repeat_summary *s) {
  if (s->median_repeat >= 0) return s->median_repeat;
  for (int r = nruns - 1; r >= 0; r--)
    if (runs[r].have) return r;
  return 0;
}

void pb_repeat_figures(const pb_run_figures *runs, int nruns, const pb_repeat_summary *s, pb_run_figures *out) {
  if (nruns <= 0) {
    pb_run_figures_of(NULL, -1, 0, out);
    return;
  }
  *out = runs[stand_in(runs, nruns, s)];
  out->samples_per_s = s->samples_per_s.median; /* NAN when none counts: only counted repeats make figures */
  out->batches_per_s = s->batches_per_s.median;
  out->device_idle_pct = s->device_idle_pct.median;
  out->accelerator_utilization_pct = s->accelerator_utilization_pct.median;
  out->input_bound_pct = s->input_bound_pct.median;
  if (s->n == 0) { /* the stand-in's classification and bottleneck are of a run that does not count */
    out->classification = NULL;
    out->bottleneck[0] = '\0';
  }
  out->wall_s = 0;
  int failure = 0;
  for (int i = 0; i < nruns; i++) {
    out->wall_s += runs[i].wall_s;
    if (runs[i].status > 0 && !failure) failure = runs[i].status; /* the first failure */
  }
  if (failure) out->status = failure;
  out->interrupted = pb_repeat_any_interrupted(runs, nruns);
  if (out->interrupted) out->status = PB_EXIT_INTERRUPTED;
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
  column(runs, nruns, offset, v);
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

#define LABEL 14 /* as the run's summary (reports/text.c) */

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

cJSON *pb_repeat_report(const char *median_dir, cJSON *repeats, bool interrupted) {
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
  fprintf(stderr, "pipebench: %s: cannot read the median repeat's report (expected the report.json it wrote)\n",
          from);
  return NULL;
}

/* The page data of a run's report.html: the JSON between the pb-data script's tags (reports/html.c writes
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
static int write_html(const char *dir, const char *median_dir, const cJSON *report, const char *title) {
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
  if (rc) fprintf(stderr, "pipebench: %s: cannot write the HTML report: %s\n", to, strerror(-rc));
  return rc ? PB_EXIT_RUNTIME : 0;
}

int pb_repeat_write_report(const char *dir, const char *median_dir, const cJSON *report, bool json, const char *title) {
  char to[PB_PATH_LEN + 32];
  snprintf(to, sizeof to, "%s/report.json", dir);
  char *text = report && json ? pb_json_print((cJSON *)report, true) : NULL;
  size_t n = text ? strlen(text) : 0;
  char *line = text ? realloc(text, n + 2) : NULL; /* a final newline, as the run's report.json has */
  if (line) memcpy(line + n, "\n", 2);
  int rc = !(report && json) ? 0 : line ? write_file(to, line, n + 1) : -ENOMEM;
  free(line ? line : text);
  if (rc) {
    fprintf(stderr, "pipebench: %s: cannot write the report: %s\n", to, strerror(-rc));
    return PB_EXIT_RUNTIME;
  }
  return report ? write_html(dir, median_dir, report, title) : 0;
}

int pb_repeat_write_csv(const char *path, const pb_repeat_summary *s) {
  static const char *const names[] = {"samples_per_s", "device_idle_pct", "accelerator_utilization_pct",
                                      "input_bound_pct"};
  const pb_interval *iv[] = {&s->samples_per_s, &s->device_idle_pct, &s->accelerator_utilization_pct,
                             &s->input_bound_pct};
  static const int decimals[] = {1, 2, 2, 2};
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return fprintf(stderr, "pipebench: %s: out of memory\n", path), PB_EXIT_RUNTIME;
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
  if (rc) fprintf(stderr, "pipebench: %s: cannot write the table: %s\n", path, strerror(-rc));
  return rc ? PB_EXIT_RUNTIME : 0;
}
