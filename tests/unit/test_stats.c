/* Unit tests for src/core/stats.c: the log-linear histogram and exact percentiles. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four headers above first */
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"
#include "unit_util.h"

/* The tests must not depend on common.c (libuv), so they carry their own seeded generator. */
static uint64_t rng_state;
static uint64_t rng_next(void) {
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
static double rng_uniform(void) { return (double)(rng_next() >> 11) * 0x1.0p-53; }

static pb_hist *new_hist(void) {
  pb_hist *h = malloc(sizeof *h);
  assert_non_null(h);
  pb_hist_reset(h);
  return h;
}

static void test_empty(void **state) {
  pb_hist *h = new_hist();
  assert_int_equal(h->count, 0);
  assert_int_equal(pb_hist_percentile(h, 50), 0);
  assert_int_equal(pb_hist_percentile(h, 0), 0);
  assert_int_equal(pb_hist_percentile(h, 100), 0);
  assert_true(pb_hist_mean(h) == 0.0);
  /* merging an empty histogram changes nothing, into empty or not */
  pb_hist *g = new_hist();
  pb_hist_merge(g, h);
  assert_int_equal(g->count, 0);
  pb_hist_add(g, 7);
  pb_hist_merge(g, h);
  assert_int_equal(g->count, 1);
  assert_int_equal(g->min_ns, 7);
  assert_true(isnan(pb_percentile(NULL, 0, 50)));
  assert_true(isnan(pb_mean(NULL, 0)));
  free(h);
  free(g);
}

/* A zeroed struct (calloc, static) must behave as an empty histogram without pb_hist_reset. */
static void test_zeroed_is_empty(void **state) {
  pb_hist *h = calloc(1, sizeof *h);
  assert_non_null(h);
  pb_hist_add(h, 500);
  pb_hist_add(h, 300);
  assert_int_equal(h->min_ns, 300);
  assert_int_equal(h->max_ns, 500);
  free(h);
}

/* Below 2 x PB_HIST_SUB every bucket has width 1, so percentiles are exact. */
static void test_small_values_exact(void **state) {
  pb_hist *h = new_hist();
  for (uint64_t v = 0; v < 2 * PB_HIST_SUB; v++) pb_hist_add(h, v);
  uint64_t n = 2 * PB_HIST_SUB;
  assert_int_equal(h->count, n);
  assert_int_equal(h->min_ns, 0);
  assert_int_equal(h->max_ns, n - 1);
  assert_int_equal(h->sum_ns, n * (n - 1) / 2);
  assert_true(pb_hist_mean(h) == (double)(n - 1) / 2);
  for (uint64_t k = 1; k <= n; k++) {
    double p = 100.0 * (double)k / (double)n;
    /* rank ceil(p/100 x n) = k; the k-th smallest value is k-1 */
    assert_int_equal(pb_hist_percentile(h, p), k - 1);
  }
  assert_int_equal(pb_hist_percentile(h, 0), 0);
  assert_int_equal(pb_hist_percentile(h, 100), n - 1);
  free(h);
}

static void test_single_value(void **state) {
  pb_hist *h = new_hist();
  pb_hist_add(h, 123456789);
  /* clamping to [min,max] makes a single sample exact at every p */
  assert_int_equal(pb_hist_percentile(h, 0), 123456789);
  assert_int_equal(pb_hist_percentile(h, 50), 123456789);
  assert_int_equal(pb_hist_percentile(h, 99.9), 123456789);
  assert_int_equal(pb_hist_percentile(h, 100), 123456789);
  free(h);
}

static double rel_err(double got, double want) { return fabs(got - want) / fabs(want); }

/* Every percentile of `vals` from a histogram is within 1/PB_HIST_SUB of numpy's exact value. */
static void check_accuracy(const double *vals, size_t n) {
  pb_hist *h = new_hist();
  for (size_t i = 0; i < n; i++) pb_hist_add(h, (uint64_t)vals[i]);
  static const double ps[] = {1, 5, 10, 25, 50, 75, 90, 95, 99, 99.9};
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
    double want = pb_percentile(vals, n, ps[i]);
    double got = (double)pb_hist_percentile(h, ps[i]);
    if (rel_err(got, want) > 1.0 / PB_HIST_SUB) fail_msg("p%g: hist %g vs exact %g", ps[i], got, want);
  }
  free(h);
}

enum { N_RANDOM = 200000 };

static void test_accuracy_uniform(void **state) {
  double *v = malloc(N_RANDOM * sizeof *v);
  assert_non_null(v);
  rng_state = 1;
  for (size_t i = 0; i < N_RANDOM; i++) v[i] = floor(1000 + rng_uniform() * 9e6); /* 1 us .. 9 ms */
  check_accuracy(v, N_RANDOM);
  free(v);
}

static void test_accuracy_exponential(void **state) {
  double *v = malloc(N_RANDOM * sizeof *v);
  assert_non_null(v);
  rng_state = 2;
  for (size_t i = 0; i < N_RANDOM; i++) v[i] = floor(100 - 50000.0 * log(1.0 - rng_uniform()));
  check_accuracy(v, N_RANDOM);
  free(v);
}

/* Two modes three decades apart (a cache hit vs a disk read). */
static void test_accuracy_bimodal(void **state) {
  double *v = malloc(N_RANDOM * sizeof *v);
  assert_non_null(v);
  rng_state = 3;
  for (size_t i = 0; i < N_RANDOM; i++) {
    double base = rng_uniform() < 0.7 ? 20000 : 20000000;
    v[i] = floor(base * (0.8 + 0.4 * rng_uniform()));
  }
  check_accuracy(v, N_RANDOM);
  free(v);
}

static void test_merge_equals_single(void **state) {
  pb_hist *a = new_hist(), *b = new_hist(), *all = new_hist();
  rng_state = 4;
  for (int i = 0; i < 50000; i++) {
    uint64_t v = rng_next() >> (rng_next() % 64);
    pb_hist_add(i % 3 ? a : b, v);
    pb_hist_add(all, v);
  }
  pb_hist_merge(a, b);
  assert_int_equal(a->count, all->count);
  assert_int_equal(a->sum_ns, all->sum_ns);
  assert_int_equal(a->min_ns, all->min_ns);
  assert_int_equal(a->max_ns, all->max_ns);
  assert_memory_equal(a->buckets, all->buckets, sizeof a->buckets);
  /* into an empty destination */
  pb_hist *c = new_hist();
  pb_hist_merge(c, all);
  assert_memory_equal(c, all, sizeof *c);
  free(a);
  free(b);
  free(all);
  free(c);
}

/* Beyond the top group values share the last bucket; min/max/count stay exact, the sum saturates. */
static void test_huge_values_clamp(void **state) {
  pb_hist *h = new_hist();
  pb_hist_add(h, UINT64_MAX);
  pb_hist_add(h, UINT64_MAX - 1);
  pb_hist_add(h, 1ull << PB_HIST_GROUPS);
  assert_int_equal(h->count, 3);
  assert_int_equal(h->buckets[PB_HIST_BUCKETS - 1], 3);
  assert_true(h->sum_ns == UINT64_MAX);
  assert_true(h->max_ns == UINT64_MAX);
  assert_true(h->min_ns == 1ull << PB_HIST_GROUPS);
  assert_true(pb_hist_percentile(h, 100) == UINT64_MAX);
  uint64_t p50 = pb_hist_percentile(h, 50);
  assert_in_range(p50, h->min_ns, h->max_ns);
  /* the largest value below the clamp still has its own bucket */
  pb_hist *g = new_hist();
  pb_hist_add(g, (1ull << PB_HIST_GROUPS) - 1);
  assert_int_equal(g->buckets[PB_HIST_BUCKETS - 1], 1);
  pb_hist_add(g, 1ull << (PB_HIST_GROUPS - 1));
  assert_int_equal(g->buckets[PB_HIST_BUCKETS - PB_HIST_SUB], 1);
  free(h);
  free(g);
}

static void test_percentile_out_of_range_p(void **state) {
  pb_hist *h = new_hist();
  for (uint64_t v = 1000; v <= 2000; v += 10) pb_hist_add(h, v);
  assert_int_equal(pb_hist_percentile(h, -5), 1000);
  assert_int_equal(pb_hist_percentile(h, NAN), 1000);
  assert_int_equal(pb_hist_percentile(h, 250), 2000);
  free(h);
}

/* Expected values computed by hand with numpy.percentile's default (linear) definition. */
static void test_exact_percentile(void **state) {
  const double a[] = {15, 20, 35, 40, 50}; /* deliberately given unsorted below */
  const double u[] = {40, 15, 50, 35, 20};
  assert_true(pb_percentile(u, 5, 0) == 15);
  assert_true(pb_percentile(u, 5, 100) == 50);
  assert_true(pb_percentile(u, 5, 50) == 35);
  assert_true(fabs(pb_percentile(u, 5, 40) - 29.0) < 1e-12);  /* pos 1.6: 20 + 0.6 x 15 */
  assert_true(fabs(pb_percentile(u, 5, 90) - 46.0) < 1e-12);  /* pos 3.6: 40 + 0.6 x 10 */
  assert_true(fabs(pb_percentile(u, 5, 99) - 49.6) < 1e-12);  /* pos 3.96 */
  assert_true(fabs(pb_percentile(a, 5, 25) - 20.0) < 1e-12);  /* pos 1.0 */
  const double four[] = {1, 2, 3, 4};
  assert_true(fabs(pb_percentile(four, 4, 50) - 2.5) < 1e-12);
  assert_true(fabs(pb_percentile(four, 4, 90) - 3.7) < 1e-12);
  const double one[] = {7.5};
  assert_true(pb_percentile(one, 1, 99) == 7.5);
  /* the input is not modified */
  assert_double_cmp(u[0], ==, 40);
  assert_double_cmp(u[4], ==, 20);
  assert_true(fabs(pb_mean(four, 4) - 2.5) < 1e-12);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_empty),
      cmocka_unit_test(test_zeroed_is_empty),
      cmocka_unit_test(test_small_values_exact),
      cmocka_unit_test(test_single_value),
      cmocka_unit_test(test_accuracy_uniform),
      cmocka_unit_test(test_accuracy_exponential),
      cmocka_unit_test(test_accuracy_bimodal),
      cmocka_unit_test(test_merge_equals_single),
      cmocka_unit_test(test_huge_values_clamp),
      cmocka_unit_test(test_percentile_out_of_range_p),
      cmocka_unit_test(test_exact_percentile),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
