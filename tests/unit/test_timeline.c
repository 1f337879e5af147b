/* Queue fill over time (src/record/timeline.c): points are interval means, kept to 1e-4; when the points run
 * out, neighbouring pairs merge (duration-weighted) and the interval doubles, so the whole run stays
 * covered; the sampler reads a queue's integrated occupancy, so a queue held half full reads 0.5. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four headers above first */
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "queue.h"
#include "timeline.h"
#include "unit_util.h"

static void test_quantize_round_trip(void **state) {
  (void)state;
  for (int e4 = 0; e4 <= 10000; e4++) assert_int_equal(pb_timeline_fill_e4(pb_timeline_fill_from_e4(e4)), e4);
  assert_int_equal(pb_timeline_fill_e4(0.12345f), 1235);
}

static void test_halve_weights_by_duration(void **state) {
  (void)state;
  static pb_timeline tl;
  pb_timeline_init(&tl, 1000);
  tl.nseries = 1;
  float a = 1.0f, b = 0.0f, c = 0.5f;
  pb_timeline_add(&tl, 1000 + 300, &a); /* 300 ns full */
  pb_timeline_add(&tl, 1000 + 400, &b); /* 100 ns empty */
  pb_timeline_add(&tl, 1000 + 500, &c); /* odd one out stays */
  pb_timeline_halve(&tl);
  assert_int_equal(tl.n, 2);
  assert_int_equal(tl.t_ns[0], 1400);
  assert_float_equal(tl.fill[0][0], 0.75f, 1e-4);
  assert_int_equal(tl.t_ns[1], 1500);
  assert_float_equal(tl.fill[0][1], 0.5f, 1e-4);
  assert_int_equal(tl.interval_ns, 2 * PB_TIMELINE_FIRST_INTERVAL_NS);
}

static void test_stays_bounded_and_covers_the_run(void **state) {
  (void)state;
  static pb_timeline tl;
  pb_timeline_init(&tl, 0);
  tl.nseries = 2;
  size_t total = 5 * PB_TIMELINE_POINTS + 3;
  for (size_t i = 1; i <= total; i++) {
    float fill[2] = {i % 2 ? 1.0f : 0.0f, 0.25f};
    pb_timeline_add(&tl, i * 10, fill);
    assert_true(tl.n <= PB_TIMELINE_POINTS);
  }
  assert_int_equal(tl.t_ns[tl.n - 1], total * 10); /* the last point is the run's end */
  for (size_t i = 1; i < tl.n; i++) assert_true(tl.t_ns[i] > tl.t_ns[i - 1]);
  /* merging keeps the time-weighted mean: alternating full/empty intervals average to one half over the
   * run (one more full interval than empty ones: 1282/2563), the constant series stays itself */
  double sum = 0, begin = 0;
  for (size_t i = 0; i < tl.n; i++) {
    sum += tl.fill[0][i] * ((double)tl.t_ns[i] - begin);
    begin = (double)tl.t_ns[i];
    assert_float_equal(tl.fill[1][i], 0.25f, 1e-4);
  }
  assert_float_equal(sum / (double)(total * 10), 1282.0 / 2563.0, 1e-3);
}

static void test_integral_reads_half_full(void **state) {
  (void)state;
  pb_queue q;
  assert_int_equal(pb_queue_init(&q, 4, 1, 1), 0);
  pb_elem two[2];
  memset(two, 0, sizeof two);
  int pushed = 0;
  uint64_t v0 = pb_queue_fill_integral(&q);
  uint64_t t0 = pb_now_ns();
  assert_int_equal(pb_queue_push_many(&q, two, 2, &pushed, NULL, 0), 0);
  pb_sleep_until_ns(pb_now_ns() + 20000000ull);
  uint64_t v1 = pb_queue_fill_integral(&q), t1 = pb_now_ns();
  double fill = (double)(v1 - v0) / ((double)(t1 - t0) * 4);
  assert_double_cmp(fill, >, 0.45);
  assert_double_cmp(fill, <=, 0.5 + 1e-9);
  pb_queue_drain(&q);
  pb_queue_close(&q);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_quantize_round_trip),
      cmocka_unit_test(test_halve_weights_by_duration),
      cmocka_unit_test(test_stays_bounded_and_covers_the_run),
      cmocka_unit_test(test_integral_reads_half_full),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
