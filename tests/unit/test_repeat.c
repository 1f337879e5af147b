/* Unit tests for src/repeat.c (the median's distribution-free interval, --repeat, the repeats object) and for
 * the verdict ab builds on it (src/ab.c: "no measurable difference", and storage not blamed while the cold
 * run's read stage sat idle).
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

#include "ab.h"
#include "repeat.h"
#include "report.h"

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
  assert_true(isnan(iv.lo) && isnan(iv.hi) && isnan(iv.coverage));
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

/* ---------- ab's verdict ---------- */

/* A side of ab measured at these rates (one value: no interval), named bottleneck and read utilization. */
static pb_ab_side side(const double *rates, int n, const char *bottleneck, double read_utilization) {
  pb_ab_side s = {.started = true, .read_utilization = read_utilization};
  pb_interval_of(rates, n, &s.rate);
  snprintf(s.bottleneck, sizeof s.bottleneck, "%s", bottleneck);
  return s;
}

static void verdict(pb_ab_numbers *x, char *v, size_t len) {
  x->cold_effective = true;
  pb_ab_compute(x);
  pb_ab_verdict(x, v, len);
}

static void expect(const char *v, const char *has, const char *lacks) {
  if (has && !strstr(v, has)) fail_msg("verdict lacks \"%s\": %s", has, v);
  if (lacks && strstr(v, lacks)) fail_msg("verdict has \"%s\": %s", lacks, v);
}

/* The cold run slower than the warm one while its read stage was 2 % busy: storage is not blamed. */
static void test_ab_idle_read_is_not_storage(void **state) {
  char v[1024];
  pb_ab_numbers x = {.side = {side((const double[]){1000}, 1, "device", NAN),
                              side((const double[]){500}, 1, "augment", 0.02),
                              side((const double[]){900}, 1, "augment", 0.02)}};
  verdict(&x, v, sizeof v);
  expect(v, "not on storage", "mostly fetch");
  expect(v, "busy only 2 %", NULL);
  expect(v, "the cold run's bottleneck is augment", NULL);
  expect(v, "for another reason", NULL); /* 44 % of a sample's time: well outside the 3 % noise */
  /* the same numbers with a busy read stage: storage it is */
  x.side[PB_AB_COLD].read_utilization = 0.9;
  verdict(&x, v, sizeof v);
  expect(v, "input-bound, mostly fetch (storage)", "not on storage");
  /* no read stage in the report: the split alone decides, as before */
  x.side[PB_AB_COLD].read_utilization = NAN;
  verdict(&x, v, sizeof v);
  expect(v, "mostly fetch (storage)", NULL);
}

static void test_ab_repeats(void **state) {
  char v[1024];
  /* real (cold) and synthetic overlap: nothing measurable to name, however the medians lie */
  pb_ab_numbers x = {.side = {side((const double[]){1000, 1100, 800}, 3, "device", NAN),
                              side((const double[]){700, 820, 900}, 3, "read", 0.9),
                              side((const double[]){950, 1000, 1050}, 3, "device", 0.1)}};
  verdict(&x, v, sizeof v);
  expect(v, "no measurable difference", "input-bound,");
  assert_true(x.s.repeated);
  assert_false(x.s.real_differs);
  /* cold measurably below synthetic, the warm run overlapping both: no split to claim */
  x.side[PB_AB_SYNTHETIC] = side((const double[]){1000, 1010, 1020}, 3, "device", NAN);
  x.side[PB_AB_COLD] = side((const double[]){500, 510, 520}, 3, "read", 0.9);
  x.side[PB_AB_WARM] = side((const double[]){515, 800, 1005}, 3, "decode", 0.1);
  verdict(&x, v, sizeof v);
  expect(v, "no measurable difference splits it", "mostly");
  /* warm measurably between them, nearer synthetic: fetch, and storage (read 90 % busy) */
  x.side[PB_AB_WARM] = side((const double[]){900, 910, 920}, 3, "decode", 0.1);
  verdict(&x, v, sizeof v);
  expect(v, "mostly fetch (storage)", NULL);
  assert_true(x.s.fetch_measurable && x.s.prep_measurable);
  /* warm overlapping cold: only the prep stall is measurable, so preprocessing it is */
  x.side[PB_AB_WARM] = side((const double[]){505, 530, 560}, 3, "decode", 0.1);
  verdict(&x, v, sizeof v);
  expect(v, "mostly preprocessing", NULL);
  expect(v, "the warm run's bottleneck is decode", NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rank_and_coverage),
      cmocka_unit_test(test_interval_of),
      cmocka_unit_test(test_overlap),
      cmocka_unit_test(test_interval_text),
      cmocka_unit_test(test_parse),
      cmocka_unit_test(test_summary),
      cmocka_unit_test(test_summary_odd_and_none),
      cmocka_unit_test(test_ab_idle_read_is_not_storage),
      cmocka_unit_test(test_ab_repeats),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
