/* Repeats and confidence: the median of n measurements and its distribution-free interval, which repeats
 * count and the figures of a repeated measurement (repeat_stats.h).  Pure arithmetic: no I/O. */
#include "repeat_stats.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

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

void pb_repeat_column(const pb_run_figures *runs, int nruns, size_t offset, double *v) {
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
    pb_repeat_column(runs, nruns, offsets[f], v);
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
