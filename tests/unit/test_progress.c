/* The live progress line's text (src/progress.c): phase, steps done / total, samples/s and device idle %
 * of the measured window so far, and an ETA from steps, duration or the files an epochs run has taken. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four headers above first */
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "progress.h"

#define SEC 1000000000ull

static void test_eta_format(void **state) {
  (void)state;
  char b[24];
  pb_progress_eta(b, sizeof b, 0);
  assert_string_equal(b, "0:00");
  pb_progress_eta(b, sizeof b, 65.4);
  assert_string_equal(b, "1:05");
  pb_progress_eta(b, sizeof b, 3725);
  assert_string_equal(b, "1:02:05");
  pb_progress_eta(b, sizeof b, NAN);
  assert_string_equal(b, "?");
  pb_progress_eta(b, sizeof b, -3);
  assert_string_equal(b, "?");
}

static void test_warmup(void **state) {
  (void)state;
  pb_steps_live l = {.done = 2, .warmup = 5, .target = 100, .devices = 1};
  char b[256];
  pb_progress_run_text(b, sizeof b, &l, 1500000000ull, 0, -1);
  assert_string_equal(b, "warm-up  step 2/5  1.5 s");
}

/* 40 of 100 steps in 4 s of window, 8 samples each, device busy 3 s: 80 samples/s, idle 25 %, 6 s left. */
static void test_measuring_steps(void **state) {
  (void)state;
  pb_steps_live l = {.done = 45, .warmup = 5, .target = 100, .measuring = true, .window_start_ns = 10 * SEC,
                     .measured = 40, .measured_samples = 320, .measured_compute_ns = 3 * SEC, .devices = 1};
  char b[256];
  pb_progress_run_text(b, sizeof b, &l, 14 * SEC, 0, -1);
  assert_string_equal(b, "measuring  step 40/100  80.0 samples/s  device idle 25.0%  ETA 0:06");
  l.devices = 2; /* two devices: 3 s busy of 8 device-seconds */
  pb_progress_run_text(b, sizeof b, &l, 14 * SEC, 0, -1);
  assert_non_null(strstr(b, "device idle 62.5%"));
}

static void test_measuring_duration_and_epochs(void **state) {
  (void)state;
  pb_steps_live l = {.done = 10, .duration_ns = 30 * SEC, .measuring = true, .window_start_ns = SEC, .measured = 10,
                     .measured_samples = 100, .measured_compute_ns = SEC, .devices = 1};
  char b[256];
  pb_progress_run_text(b, sizeof b, &l, 11 * SEC, 0, -1);
  assert_string_equal(b, "measuring  step 10  10/30 s  10.0 samples/s  device idle 90.0%  ETA 0:20");
  l.duration_ns = 0; /* epochs: a quarter of the files taken in 11 s since the start leaves 33 s */
  pb_progress_run_text(b, sizeof b, &l, 11 * SEC, 0, 0.25);
  assert_non_null(strstr(b, "ETA 0:33"));
  pb_progress_run_text(b, sizeof b, &l, 11 * SEC, 0, -1); /* nothing to go by */
  assert_non_null(strstr(b, "ETA ?"));
}

static void test_off_when_not_wanted(void **state) {
  (void)state;
  assert_false(pb_progress_wanted(true, false));
  assert_false(pb_progress_wanted(false, true));
  pb_progress p;
  pb_progress_init(&p, false, "x");
  assert_false(pb_progress_due(&p, UINT64_MAX));
  pb_progress_draw(&p, "nothing"); /* prints nothing, draws nothing */
  assert_false(p.drawn);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_eta_format),
      cmocka_unit_test(test_warmup),
      cmocka_unit_test(test_measuring_steps),
      cmocka_unit_test(test_measuring_duration_and_epochs),
      cmocka_unit_test(test_off_when_not_wanted),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
