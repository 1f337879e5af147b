/* pb_tf_busy_*: how many function executions ran at once, and a run's waits between its executions less
 * their part with every core busy, on hand-made spans whose answers are worked out in the comments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tf_busy.h"

/* Three executions of other runs: [0, 10), [5, 20), [15, 30), and an empty span.  Two or more ran in
 * [5, 10) and [15, 20). */
static const pb_tf_span OTHERS[] = {{0, 10}, {5, 20}, {15, 30}, {40, 40}};

static void test_busy_steps(void **state) {
  (void)state;
  pb_tf_busy b;
  assert_int_equal(pb_tf_busy_build(OTHERS, 4, &b), 0);
  assert_int_equal(pb_tf_busy_ps(&b, 0, 30, 2), 5 + 5);
  assert_int_equal(pb_tf_busy_ps(&b, 7, 17, 2), 3 + 2); /* clipped at both ends */
  assert_int_equal(pb_tf_busy_ps(&b, 0, 30, 1), 30);
  assert_int_equal(pb_tf_busy_ps(&b, -10, 50, 1), 30); /* nothing ran before 0 or after 30 */
  assert_int_equal(pb_tf_busy_ps(&b, 0, 30, 3), 0);
  assert_int_equal(pb_tf_busy_ps(&b, 0, 30, 0), 0);  /* cores not known: nothing counts as busy */
  assert_int_equal(pb_tf_busy_ps(&b, 20, 10, 1), 0); /* an empty interval */
  pb_tf_busy_free(&b);
  pb_tf_busy none;
  assert_int_equal(pb_tf_busy_build(OTHERS + 3, 1, &none), 0); /* only an empty span */
  assert_int_equal(none.n, 0);
  assert_int_equal(pb_tf_busy_ps(&none, 0, 100, 1), 0);
  pb_tf_busy_free(&none);
}

/* A run of three executions, [2, 4), [8, 12) and [24, 26), with a done callback's empty span after: its gaps
 * are [4, 8) and [12, 24).  With 2 cores the others filled both in [5, 8) and [15, 20): 1 of the first gap's
 * 4 units and 3 + 4 of the second's 12 were waits with a core free; with 3 cores every unit was; with the cores not
 * known, every unit counts.  Nothing before its first execution or after its last counts. */
static void test_run_waits(void **state) {
  (void)state;
  pb_tf_busy b;
  assert_int_equal(pb_tf_busy_build(OTHERS, 4, &b), 0);
  const pb_tf_span run[] = {{2, 4}, {8, 12}, {24, 26}, {0, 0}};
  assert_int_equal(pb_tf_run_waits_ps(run, 4, &b, 2), 1 + 3 + 4);
  assert_int_equal(pb_tf_run_waits_ps(run, 4, &b, 3), 16);
  assert_int_equal(pb_tf_run_waits_ps(run, 4, &b, -1), 16);
  assert_int_equal(pb_tf_run_waits_ps(run, 1, &b, 2), 0);  /* one execution: no gap */
  const pb_tf_span nested[] = {{0, 10}, {2, 5}, {12, 14}}; /* overlapping executions merged: one gap, [10, 12) */
  pb_tf_busy none = {0};
  assert_int_equal(pb_tf_run_waits_ps(nested, 3, &none, 2), 2);
  pb_tf_busy_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_busy_steps), cmocka_unit_test(test_run_waits)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
