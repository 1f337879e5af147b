/* tune's result and its judgments (tune_result.h). */
#include "tune_result.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

#define CEILING_NOISE_MAX 0.05 /* the run's noise widens the "reached" tolerance up to 5 %, no further */

double pb_tune_ceiling_tolerance(double noise_pct) {
  double noise = isfinite(noise_pct) && noise_pct > 0 ? noise_pct / 100 : 0;
  return fmax(PB_TUNE_CEILING_MATCH, fmin(noise, CEILING_NOISE_MAX));
}

bool pb_tune_reached_ceiling(bool up_to, double predicted, double measured_per_s, double noise_pct) {
  return up_to && isfinite(predicted) && !isnan(measured_per_s) &&
         measured_per_s >= predicted * (1 - pb_tune_ceiling_tolerance(noise_pct));
}

double pb_tune_trial_measured(const pb_tune_trial *tr) {
  if (tr->status != 0 || !tr->rep || !tr->rep->version || !tr->runs || tr->sum.n == 0) return NAN;
  return tr->sum.samples_per_s.median;
}

double pb_tune_trial_noise_pct(const pb_tune_trial *tr) { return tr->rep ? tr->rep->noise_pct : NAN; }

bool pb_tune_trial_reached_ceiling(const pb_tune_trial *tr) {
  return pb_tune_reached_ceiling(tr->up_to, tr->predicted, pb_tune_trial_measured(tr), pb_tune_trial_noise_pct(tr));
}

double pb_tune_trial_error_pct(const pb_tune_trial *tr) {
  double m = pb_tune_trial_measured(tr);
  if (isnan(tr->predicted) || isnan(m) || m <= 0 || pb_tune_trial_reached_ceiling(tr)) return NAN;
  return (tr->predicted - m) / m * 100;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void pb_tune_abs_median_max(double *v, int n, double *median, double *max) {
  for (int i = 0; i < n; i++) v[i] = fabs(v[i]);
  qsort(v, (size_t)n, sizeof v[0], cmp_double);
  *median = n ? (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : NAN;
  *max = n ? v[n - 1] : NAN;
}

int pb_tune_error_summary(const pb_tune_trial *trials, int ntrials, double *median, double *max) {
  double *v = malloc((size_t)(ntrials > 0 ? ntrials : 1) * sizeof *v);
  int n = 0;
  for (int i = 0; v && i < ntrials; i++)
    if (!isnan(pb_tune_trial_error_pct(&trials[i]))) v[n++] = pb_tune_trial_error_pct(&trials[i]);
  pb_tune_abs_median_max(v, n, median, max);
  free(v);
  return n;
}

void pb_tune_point_text(const pb_tune_knob *knobs, int nknobs, const pb_tune_point *p, char *out, size_t len) {
  size_t n = 0;
  out[0] = '\0';
  for (int k = 0; k < nknobs && n < len; k++)
    n += (size_t)snprintf(out + n, len - n, "%s%s=%d", k ? " " : "", knobs[k].path, p->v[k]);
}

pb_tune_outcome pb_tune_remeasure_outcome(bool needed, bool skipped, bool interrupted, const pb_interval *base,
                                          const pb_interval *best) {
  if (!needed) return PB_TUNE_NOT_NEEDED;
  if (interrupted) return PB_TUNE_INTERRUPTED;
  if (skipped) return PB_TUNE_NOT_REMEASURED;
  switch (pb_interval_compare(best, base)) {
    case PB_DIFF_ABOVE:
      return PB_TUNE_GAIN;
    case PB_DIFF_BELOW:
      return PB_TUNE_BASE_FASTER;
    case PB_DIFF_OVERLAP:
      return PB_TUNE_NO_DIFFERENCE;
    default:
      return PB_TUNE_TOO_FEW;
  }
}

const char *pb_tune_outcome_name(pb_tune_outcome o) {
  static const char *const names[] = {[PB_TUNE_NOT_NEEDED] = NULL,
                                      [PB_TUNE_NOT_REMEASURED] = "not_remeasured",
                                      [PB_TUNE_INTERRUPTED] = "interrupted",
                                      [PB_TUNE_TOO_FEW] = "too_few_repeats",
                                      [PB_TUNE_GAIN] = "gain",
                                      [PB_TUNE_NO_DIFFERENCE] = "no_measurable_difference",
                                      [PB_TUNE_BASE_FASTER] = "base_faster"};
  return (unsigned)o < PB_ARRAY_LEN(names) ? names[o] : NULL;
}

double pb_tune_remeasured_gain_pct(const pb_tune_remeasure *re) {
  double base = re->sum[PB_TUNE_RE_BASE].samples_per_s.median, best = re->sum[PB_TUNE_RE_BEST].samples_per_s.median;
  return base > 0 ? (best - base) / base * 100 : NAN;
}

int pb_tune_written_trial(const pb_tune_result *r) { return r->re->outcome == PB_TUNE_BASE_FASTER ? 0 : r->best; }
