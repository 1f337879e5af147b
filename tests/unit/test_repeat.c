/* Unit tests for repeats (src/analysis/repeat_stats.c: the median's distribution-free interval, which repeats
 * count; src/cli/repeat.c: --repeat; src/reports/repeat_out.c: the repeats object) and for the decisions built on
 * it: tune's re-measure, budget reserve and "up to" ceilings (src/cli/tune.c).  ab's verdict is
 * tests/unit/test_ab.c, sweep's best tests/unit/test_sweep.c.
 *
 * The coverages are exact binomial sums: 1 - 2 P(Bin(n, 1/2) <= k - 1), e.g. n = 10, k = 2:
 * 1 - 2 (1 + 10) / 1024 = 0.978515625. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four headers above first */
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "repeat.h"
#include "report.h"
#include "tune.h"
#include "unit_util.h"

#define LEN(a) (sizeof(a) / sizeof((a)[0]))

static void assert_close(double got, double want, double tol) {
  if (!(fabs(got - want) <= tol)) fail_msg("got %.12g, expected %.12g (within %.3g)", got, want, tol);
}

/* ---------- the interval ---------- */

/* n, the rank of its interval, and that interval's exact coverage. */
static const struct {
  int n, rank;
  double coverage;
} k_known[] = {
    {2, 1, 0.5},          {3, 1, 0.75},         {4, 1, 0.875},        {5, 1, 0.9375},
    {6, 1, 0.96875},      {7, 1, 0.984375},     {8, 1, 0.9921875},    {9, 2, 0.9609375},
    {10, 2, 0.978515625}, {11, 2, 0.98828125},  {12, 3, 0.96142578125}, {15, 4, 0.96484375},
    {20, 6, 1 - 2 * 21700.0 / 1048576}, {100, 40, 0.9647997997822952},
};

static void test_rank_and_coverage(void **state) {
  for (size_t i = 0; i < LEN(k_known); i++) {
    int n = k_known[i].n;
    assert_int_equal(pb_repeat_rank(n), k_known[i].rank);
    assert_close(pb_repeat_coverage(n, k_known[i].rank), k_known[i].coverage, 1e-12);
    /* the next rank in would fall below 95 %: the interval is the narrowest that keeps it (from n = 6) */
    if (n >= 6 && 2 * (k_known[i].rank + 1) <= n) assert_true(pb_repeat_coverage(n, k_known[i].rank + 1) < 0.95);
    if (n >= 6) assert_true(k_known[i].coverage >= 0.95);
  }
  /* no rank for fewer than two values, or one past the middle */
  assert_true(isnan(pb_repeat_coverage(1, 1)));
  assert_true(isnan(pb_repeat_coverage(5, 3)));
  assert_true(isnan(pb_repeat_coverage(5, 0)));
}

static void test_interval_of(void **state) {
  pb_interval iv;
  const double ten[] = {7, 3, 10, 1, 5, 9, 2, 8, 4, 6};
  pb_interval_of(ten, 10, &iv);
  assert_int_equal(iv.n, 10);
  assert_close(iv.median, 5.5, 0);
  assert_close(iv.lo, 2, 0); /* 2nd smallest .. 2nd largest */
  assert_close(iv.hi, 9, 0);
  assert_close(iv.coverage, 0.978515625, 1e-12);
  const double five[] = {5, 1, 4, 2, 3};
  pb_interval_of(five, 5, &iv);
  assert_close(iv.median, 3, 0);
  assert_close(iv.lo, 1, 0); /* min .. max, which covers only 93.75 % */
  assert_close(iv.hi, 5, 0);
  assert_close(iv.coverage, 0.9375, 1e-12);
  /* values that are not finite are left out: a repeat that measured nothing */
  const double holes[] = {NAN, 4, INFINITY, 2};
  pb_interval_of(holes, 4, &iv);
  assert_int_equal(iv.n, 2);
  assert_close(iv.median, 3, 0);
  assert_close(iv.lo, 2, 0);
  assert_close(iv.hi, 4, 0);
  assert_close(iv.coverage, 0.5, 1e-12);
  /* one value: a median and no interval */
  pb_interval_of((const double[]){42}, 1, &iv);
  assert_close(iv.median, 42, 0);
  assert_nan(iv.lo);
  assert_nan(iv.hi);
  assert_nan(iv.coverage);
  assert_false(pb_interval_has(&iv));
  pb_interval_of(NULL, 0, &iv);
  assert_int_equal(iv.n, 0);
  assert_true(isnan(iv.median));
}

static pb_interval interval(const double *v, int n) {
  pb_interval iv;
  pb_interval_of(v, n, &iv);
  return iv;
}

static void test_overlap(void **state) {
  pb_interval a = interval((const double[]){10, 11, 12}, 3), b = interval((const double[]){12, 13, 14}, 3);
  pb_interval c = interval((const double[]){20, 21, 22}, 3), one = interval((const double[]){100}, 1);
  assert_false(pb_intervals_differ(&a, &b)); /* they touch at 12: an overlap */
  assert_true(pb_intervals_differ(&a, &c));
  assert_true(pb_interval_above(&c, &a));
  assert_false(pb_interval_above(&a, &c));
  /* without an interval nothing is measurable, however far apart the values */
  assert_false(pb_intervals_differ(&a, &one));
  assert_false(pb_interval_above(&one, &a));
}

/* A difference is decided only where both intervals cover at least 90 %: n >= 5 (93.75 %), never n <= 4. */
static void test_compare_needs_coverage(void **state) {
  char why[128];
  pb_interval lo3 = interval((const double[]){10, 11, 12}, 3), hi3 = interval((const double[]){20, 21, 22}, 3);
  assert_true(pb_intervals_differ(&lo3, &hi3)); /* apart, but at 75 % that is no claim */
  assert_false(pb_interval_decisive(&lo3));
  assert_int_equal(pb_interval_compare(&hi3, &lo3), PB_DIFF_UNDECIDED);
  assert_string_equal(pb_interval_undecided_text(&lo3, why, sizeof why), "too few repeats to tell (coverage 75.0 %)");
  pb_interval lo4 = interval((const double[]){10, 11, 12, 13}, 4);
  assert_false(pb_interval_decisive(&lo4)); /* 87.5 % */
  assert_string_equal(pb_interval_undecided_text(&lo4, why, sizeof why), "too few repeats to tell (coverage 87.5 %)");
  pb_interval one = interval((const double[]){5}, 1);
  assert_string_equal(pb_interval_undecided_text(&one, why, sizeof why), "too few repeats to tell (1 counted, no interval)");
  pb_interval lo5 = interval((const double[]){10, 11, 12, 13, 14}, 5), hi5 = interval((const double[]){20, 21, 22, 23, 24}, 5);
  pb_interval mid5 = interval((const double[]){14, 15, 16, 17, 18}, 5);
  assert_true(pb_interval_decisive(&lo5));
  assert_string_equal(pb_interval_undecided_text(&lo5, why, sizeof why), "");
  assert_int_equal(pb_interval_compare(&hi5, &lo5), PB_DIFF_ABOVE);
  assert_int_equal(pb_interval_compare(&lo5, &hi5), PB_DIFF_BELOW);
  assert_int_equal(pb_interval_compare(&lo5, &mid5), PB_DIFF_OVERLAP); /* touching at 14 */
  assert_int_equal(pb_interval_compare(&hi5, &lo3), PB_DIFF_UNDECIDED); /* one side too few */
}

static void test_interval_text(void **state) {
  char buf[128];
  pb_interval iv = interval((const double[]){1000, 1200.04, 1100}, 3);
  assert_string_equal(pb_interval_text(&iv, 1, buf, sizeof buf), "1100.0 (1000.0-1200.0, 75.0 % interval)");
  iv = interval((const double[]){1, 2, 3, 4, 5}, 5);
  assert_string_equal(pb_interval_text(&iv, 1, buf, sizeof buf), "3.0 (1.0-5.0, 93.8 % interval)");
  iv = interval((const double[]){7}, 1);
  assert_string_equal(pb_interval_text(&iv, 1, buf, sizeof buf), "7.0");
  iv = interval(NULL, 0);
  assert_string_equal(pb_interval_text(&iv, 1, buf, sizeof buf), "n/a");
}

static void test_parse(void **state) {
  static const struct {
    const char *text;
    int want; /* 0: refused */
  } cases[] = {{"1", 1}, {"3", 3}, {"100", 100}, {"0", 0},  {"101", 0}, {"-1", 0}, {"+3", 0},
               {" 3", 0}, {"3x", 0}, {"", 0},     {"abc", 0}, {"1e2", 0}, {"99999999999999999999", 0}};
  for (size_t i = 0; i < LEN(cases); i++) {
    int n = -7;
    pb_err err = {0};
    int rc = pb_repeat_parse(cases[i].text, &n, &err);
    if (cases[i].want) {
      assert_int_equal(rc, 0);
      assert_int_equal(n, cases[i].want);
    } else {
      if (rc == 0) fail_msg("--repeat \"%s\" accepted as %d", cases[i].text, n);
      assert_non_null(strstr(err.msg, "--repeat"));
      assert_non_null(strstr(err.msg, "from 1 to 100"));
      assert_null(strchr(err.msg, '\n'));
    }
  }
}

/* ---------- repeats of one configuration ---------- */

static pb_run_figures fig(int status, double rate, double idle, const char *bottleneck) {
  pb_run_figures f = {.status = status, .have = status != -1, .samples_per_s = rate, .batches_per_s = rate / 8,
                      .device_idle_pct = idle, .accelerator_utilization_pct = 100 - idle, .input_bound_pct = idle,
                      .classification = "not_input_bound"};
  snprintf(f.bottleneck, sizeof f.bottleneck, "%s", bottleneck);
  return f;
}

static void test_summary(void **state) {
  /* the failed repeat (exit 1, a report written) counts in none of the figures */
  pb_run_figures runs[] = {fig(0, 300, 30, "read"), fig(0, 100, 10, "device"), fig(1, 999, 99, "read"),
                           fig(0, 200, 20, "read"), fig(0, 400, 40, "read")};
  pb_repeat_summary s;
  pb_repeat_summarize(runs, 5, &s);
  assert_int_equal(s.runs, 5);
  assert_int_equal(s.n, 4);
  assert_close(s.samples_per_s.median, 250, 0);
  assert_close(s.samples_per_s.lo, 100, 0);
  assert_close(s.samples_per_s.hi, 400, 0);
  assert_close(s.device_idle_pct.median, 25, 0);
  assert_int_equal(s.median_repeat, 3); /* even count: the lower middle, 200 samples/s */
  pb_run_figures row;
  pb_repeat_figures(runs, 5, &s, &row);
  assert_close(row.samples_per_s, 250, 0);
  assert_close(row.device_idle_pct, 25, 0);
  assert_int_equal(row.status, 1); /* the configuration failed once */
  assert_string_equal(row.bottleneck, "read");

  cJSON *j = pb_repeat_json(runs, 5, &s);
  assert_non_null(j);
  assert_int_equal(cJSON_GetObjectItem(j, "n")->valueint, 4);
  assert_int_equal(cJSON_GetObjectItem(j, "runs")->valueint, 5);
  assert_int_equal(cJSON_GetObjectItem(j, "median_repeat")->valueint, 4);
  assert_close(cJSON_GetObjectItem(j, "coverage_pct")->valuedouble, 87.5, 0);
  cJSON *rate = cJSON_GetObjectItem(j, "samples_per_s");
  assert_close(cJSON_GetObjectItem(rate, "median")->valuedouble, 250, 0);
  cJSON *values = cJSON_GetObjectItem(rate, "values");
  assert_int_equal(cJSON_GetArraySize(values), 5);
  assert_true(cJSON_IsNull(cJSON_GetArrayItem(values, 2))); /* the failed repeat, in its place */
  assert_close(cJSON_GetArrayItem(values, 0)->valuedouble, 300, 0);
  cJSON *b = cJSON_GetObjectItem(j, "bottleneck");
  assert_int_equal(cJSON_GetObjectItem(b, "read")->valueint, 3);
  assert_int_equal(cJSON_GetObjectItem(b, "device")->valueint, 1);
  for (const char *const *k = (const char *const[]){"device_idle_pct", "accelerator_utilization_pct",
                                                    "input_bound_pct", NULL};
       *k; k++)
    assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(j, *k), "lo"));
  cJSON_Delete(j);
}

/* One rule: only repeats that completed (exit 0) with a rate count; an interrupted one is left out of every
 * figure, the configuration's status is 130 and interrupted is true. */
static void test_interrupted_repeats(void **state) {
  pb_run_figures runs[] = {fig(0, 100, 10, "read"), fig(0, 300, 30, "read"), fig(130, 900, 90, "aug")};
  runs[2].interrupted = false; /* a run whose signal came while it wrote its files: exit 130, report unmarked */
  pb_repeat_summary s;
  pb_repeat_summarize(runs, 3, &s);
  assert_int_equal(s.n, 2);
  assert_close(s.samples_per_s.median, 200, 0); /* not 300: the interrupted 900 does not count */
  pb_run_figures row;
  pb_repeat_figures(runs, 3, &s, &row);
  assert_close(row.samples_per_s, s.samples_per_s.median, 0);
  assert_int_equal(row.status, 130);
  assert_true(row.interrupted);
  assert_true(pb_repeat_any_interrupted(runs, 3));
  /* an interrupted repeat that wrote nothing: still interrupted */
  pb_run_figures f;
  pb_run_figures_of(NULL, 130, 0.5, &f);
  assert_true(f.interrupted);
  assert_false(f.have);
  /* none counts: no figures at all, not the interrupted run's partial ones */
  pb_run_figures only[] = {fig(130, 900, 90, "aug")};
  pb_repeat_summarize(only, 1, &s);
  pb_repeat_figures(only, 1, &s, &row);
  assert_nan(row.samples_per_s);
  assert_nan(row.device_idle_pct);
  assert_null(row.classification);
  assert_string_equal(row.bottleneck, "");
  assert_int_equal(row.status, 130);
  assert_true(row.interrupted);
  /* a failure and an interrupt: 130 wins, interrupted whenever the status says so */
  pb_run_figures both[] = {fig(1, NAN, NAN, ""), fig(0, 50, 5, "x"), fig(130, NAN, NAN, "")};
  pb_repeat_summarize(both, 3, &s);
  pb_repeat_figures(both, 3, &s, &row);
  assert_int_equal(row.status, 130);
  assert_close(row.samples_per_s, 50, 0);
  assert_close(row.wall_s, 0, 0);
}

static void test_summary_odd_and_none(void **state) {
  pb_run_figures runs[] = {fig(0, 5, 1, "a"), fig(0, 9, 1, "a"), fig(0, 7, 1, "b")};
  pb_repeat_summary s;
  pb_repeat_summarize(runs, 3, &s);
  assert_int_equal(s.median_repeat, 2); /* 7 samples/s */
  pb_run_figures none[] = {fig(1, NAN, NAN, ""), fig(-1, NAN, NAN, "")};
  pb_repeat_summarize(none, 2, &s);
  assert_int_equal(s.n, 0);
  assert_int_equal(s.median_repeat, -1);
  cJSON *j = pb_repeat_json(none, 2, &s);
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "coverage_pct")));
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "samples_per_s"), "median")));
  cJSON_Delete(j);
}

/* ---------- what repeats write (src/reports/repeat_out.c) ---------- */

/* Three repeats, the second failed: two count (100 and 200 samples/s), an even number. */
static void two_of_three(pb_run_figures runs[3], pb_repeat_summary *s) {
  runs[0] = (pb_run_figures){0, true, false, 100, 10, 10, 90, 5, "input_bound", "read", 1};
  runs[1] = (pb_run_figures){1, false, false, NAN, NAN, NAN, NAN, NAN, NULL, "", 1};
  runs[2] = (pb_run_figures){0, true, false, 200, 20, 20, 80, 15, "input_bound", "decode", 1};
  pb_repeat_summarize(runs, 3, s);
}

static void test_repeat_column_and_text(void **state) {
  pb_run_figures runs[3];
  pb_repeat_summary s;
  two_of_three(runs, &s);
  double v[3];
  pb_repeat_column(runs, 3, offsetof(pb_run_figures, input_bound_pct), v);
  assert_double_cmp(v[0], ==, 5);
  assert_nan(v[1]); /* a failed repeat counts in no figure */
  assert_double_cmp(v[2], ==, 15);
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  pb_repeat_print_text(f, runs, 3, &s);
  pb_repeat_print_stopped(f, 3, 5, s.n);
  fclose(f);
  assert_string_equal(text,
                      "\nrepeats       2 of 3 counted; the summary above is repeat 1's, the lower of the two middle\n"
                      "              samples/s (the median is their mean)\n"
                      "samples/s     150.0 (100.0-200.0, 50.0 % interval)\n"
                      "device idle % 15.0 (10.0-20.0, 50.0 % interval)\n"
                      "AU %          85.0 (80.0-90.0, 50.0 % interval)\n"
                      "input-bound % 10.0 (5.0-15.0, 50.0 % interval)\n"
                      "bottlenecks   read in 1 of 2 repeats, decode in 1 of 2 repeats\n"
                      "status        INTERRUPTED: the repeats were stopped, 3 of 5 run; the figures are of the 2 that "
                      "completed\n");
  free(text);
}

static void test_repeat_files(void **state) {
  pb_run_figures runs[3];
  pb_repeat_summary s;
  two_of_three(runs, &s);
  char dir[] = "/tmp/pb_test_repeat_XXXXXX", path[64];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/repeats.csv", dir);
  pb_err err;
  assert_int_equal(pb_repeat_write_csv(path, &s, &err), 0);
  char *csv = slurp(path);
  assert_string_equal(csv,
                      "figure,median,lo,hi,coverage_pct,n,runs\n"
                      "samples_per_s,150.0,100.0,200.0,50.00,2,3\n"
                      "device_idle_pct,15.00,10.00,20.00,50.00,2,3\n"
                      "accelerator_utilization_pct,85.00,80.00,90.00,50.00,2,3\n"
                      "input_bound_pct,10.00,5.00,15.00,50.00,2,3\n");
  free(csv);
  unlink(path);
  /* the median repeat wrote no report.json: NULL, saying which file */
  cJSON *tree = pb_repeat_report(dir, pb_repeat_json(runs, 3, &s), false, &err);
  assert_null(tree);
  char want[160];
  snprintf(want, sizeof want,
           "%s/report.json: cannot read the median repeat's report (expected the report.json it wrote)", dir);
  assert_string_equal(err.msg, want);
  rmdir(dir);
  assert_int_cmp(pb_repeat_write_csv("/nonexistent-pb-dir/repeats.csv", &s, &err), <, 0);
  assert_non_null(strstr(err.msg, "/nonexistent-pb-dir/repeats.csv: cannot write the table: "));
}

/* ---------- tune ---------- */

/* "Up to" the device's rate counts as reached within max(1 %, min(noise, 5 %)): never 25 % below it. */
static void test_tune_reached_ceiling(void **state) {
  assert_false(pb_tune_reached_ceiling(true, 8000, 5992, 30)); /* the reviewer's case: 25 % below, noise 30 % */
  assert_true(pb_tune_reached_ceiling(true, 8000, 7950, 0.2));  /* within 1 % */
  assert_false(pb_tune_reached_ceiling(true, 8000, 7900, 0.2)); /* 1.25 % below, noise 0.2 %: missed */
  assert_true(pb_tune_reached_ceiling(true, 8000, 7700, 4));    /* 3.75 % below, within the run's 4 % */
  assert_false(pb_tune_reached_ceiling(true, 8000, 7500, 10));  /* 6.25 % below: past the 5 % cap */
  assert_true(pb_tune_reached_ceiling(true, 8000, 7650, 10));   /* 4.4 % */
  assert_true(pb_tune_reached_ceiling(true, 8000, 8100, NAN));  /* above it */
  assert_false(pb_tune_reached_ceiling(false, 8000, 8000, 0));  /* not an "up to" prediction */
  assert_false(pb_tune_reached_ceiling(true, 8000, NAN, 0));
  assert_close(pb_tune_ceiling_tolerance(NAN), 0.01, 1e-12);
  assert_close(pb_tune_ceiling_tolerance(3), 0.03, 1e-12);
  assert_close(pb_tune_ceiling_tolerance(30), 0.05, 1e-12);
}

/* The re-measure's reserve never starves the search at --repeat 1, nor while the base is the best. */
static void test_tune_reserve(void **state) {
  /* tune --budget-s 18, a base run of 2.5 s: at --repeat 1 nothing is kept back (the search runs as it did) */
  assert_close(pb_tune_remeasure_reserve_s(1, false, 5, 2.5, 2.5), 0, 0);
  assert_close(pb_tune_remeasure_reserve_s(3, true, 5, 2.5, 2.5), 0, 0); /* the base is the best */
  /* with repeats, the pairs times the base's and the best's own runs (not twice the longest run so far) */
  assert_close(pb_tune_remeasure_reserve_s(3, false, 5, 2.5, 0.5), 15, 1e-12);
  assert_close(pb_tune_remeasure_reserve_s(7, false, 7, 1, 2), 21, 1e-12);
}

static void test_tune_outcome(void **state) {
  pb_interval base5 = interval((const double[]){100, 101, 102, 103, 104}, 5);
  pb_interval fast5 = interval((const double[]){200, 201, 202, 203, 204}, 5);
  pb_interval same5 = interval((const double[]){102, 103, 104, 105, 106}, 5);
  pb_interval slow5 = interval((const double[]){50, 51, 52, 53, 54}, 5);
  pb_interval fast3 = interval((const double[]){200, 201, 202}, 3);
  pb_interval none = interval(NULL, 0);
  assert_int_equal(pb_tune_remeasure_outcome(false, false, false, &base5, &fast5), PB_TUNE_NOT_NEEDED);
  assert_int_equal(pb_tune_remeasure_outcome(true, true, false, &none, &none), PB_TUNE_NOT_REMEASURED);
  /* interrupted: no claim, even when the runs so far would have shown a gain */
  assert_int_equal(pb_tune_remeasure_outcome(true, false, true, &base5, &fast5), PB_TUNE_INTERRUPTED);
  assert_int_equal(pb_tune_remeasure_outcome(true, false, true, &none, &none), PB_TUNE_INTERRUPTED);
  assert_int_equal(pb_tune_remeasure_outcome(true, false, false, &base5, &fast5), PB_TUNE_GAIN);
  assert_int_equal(pb_tune_remeasure_outcome(true, false, false, &base5, &same5), PB_TUNE_NO_DIFFERENCE);
  assert_int_equal(pb_tune_remeasure_outcome(true, false, false, &base5, &slow5), PB_TUNE_BASE_FASTER);
  assert_int_equal(pb_tune_remeasure_outcome(true, false, false, &base5, &fast3), PB_TUNE_TOO_FEW);
  assert_string_equal(pb_tune_outcome_name(PB_TUNE_BASE_FASTER), "base_faster");
  assert_string_equal(pb_tune_outcome_name(PB_TUNE_TOO_FEW), "too_few_repeats");
  assert_null(pb_tune_outcome_name(PB_TUNE_NOT_NEEDED));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rank_and_coverage),
      cmocka_unit_test(test_interval_of),
      cmocka_unit_test(test_overlap),
      cmocka_unit_test(test_compare_needs_coverage),
      cmocka_unit_test(test_interval_text),
      cmocka_unit_test(test_parse),
      cmocka_unit_test(test_summary),
      cmocka_unit_test(test_interrupted_repeats),
      cmocka_unit_test(test_summary_odd_and_none),
      cmocka_unit_test(test_repeat_column_and_text),
      cmocka_unit_test(test_repeat_files),
      cmocka_unit_test(test_tune_reached_ceiling),
      cmocka_unit_test(test_tune_reserve),
      cmocka_unit_test(test_tune_outcome),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
