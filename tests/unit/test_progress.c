/* The live progress line's text (src/cli/progress.c): phase, steps done / total, samples/s and device idle %
 * of the measured window so far, and an ETA from steps, duration or the files an epochs run has taken;
 * and how it is drawn: no escape codes under TERM=dumb, cut to the terminal's width. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four headers above first */
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "progress.h"
#include "unit_util.h"

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

/* What pb_progress_draw (and, with `end`, pb_progress_end) write to stderr, caught in a file (not a
 * terminal: the width then comes from $COLUMNS). */
static const char *drawn(pb_progress *p, const char *text, bool end) {
  static char got[2048];
  FILE *f = tmpfile();
  assert_non_null(f);
  fflush(stderr);
  int saved = dup(STDERR_FILENO);
  assert_int_cmp(saved, >=, 0);
  assert_int_cmp(dup2(fileno(f), STDERR_FILENO), >=, 0);
  pb_progress_draw(p, text);
  if (end) pb_progress_end(p);
  fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  rewind(f);
  size_t n = fread(got, 1, sizeof got - 1, f);
  got[n] = '\0';
  fclose(f);
  return got;
}

static pb_progress on_terminal(const char *term, const char *columns, const char *label) {
  if (term) setenv("TERM", term, 1);
  else unsetenv("TERM");
  if (columns) setenv("COLUMNS", columns, 1);
  else unsetenv("COLUMNS");
  pb_progress p;
  pb_progress_init(&p, true, label);
  return p;
}

/* Issue 32: the line wrote \033[K under TERM=dumb (Emacs' shell shows it as text).  A dumb terminal, or
 * none named, gets \r and spaces over what the longer last line left. */
static void test_dumb_terminal_no_escapes(void **state) {
  (void)state;
  pb_progress p = on_terminal("dumb", "200", "");
  assert_string_equal(drawn(&p, "measuring  step 40/100", false), "\rpipebench: measuring  step 40/100");
  assert_string_equal(drawn(&p, "warm-up", false), "\rpipebench: warm-up               "); /* 15 blanked */
  assert_string_equal(drawn(&p, "warm-up 2", true), "\rpipebench: warm-up 2\r                    \r");
  p = on_terminal(NULL, "200", "");
  assert_null(strchr(drawn(&p, "step 1", true), '\033'));
  p = on_terminal("", "200", "");
  assert_null(strchr(drawn(&p, "step 1", true), '\033'));
  p = on_terminal("xterm-256color", "200", ""); /* a real terminal still clears with the escape */
  assert_string_equal(drawn(&p, "step 1", true), "\rpipebench: step 1\033[K\r\033[K");
  unsetenv("COLUMNS");
}

/* Issue 32: a terminal narrower than the line got it whole (it wraps, and \r cannot redraw a wrapped line):
 * the width came only from the ioctl, and a terminal of 10 columns or fewer was ignored.  The line is cut
 * to width - 1 characters, from $COLUMNS when the ioctl has none, never inside a UTF-8 character. */
static void test_cut_to_terminal_width(void **state) {
  (void)state;
  pb_progress p = on_terminal("xterm", "20", "");
  assert_string_equal(drawn(&p, "measuring  step 40/100", false), "\rpipebench: measurin\033[K");
  p = on_terminal("xterm", "8", "");
  assert_string_equal(drawn(&p, "measuring", false), "\rpipeben\033[K");
  p = on_terminal("dumb", "1", "");
  assert_string_equal(drawn(&p, "measuring", false), "\r");
  p = on_terminal("xterm", "80x", ""); /* not a width: no cut */
  assert_string_equal(drawn(&p, "measuring", false), "\rpipebench: measuring\033[K");
  char out[256];
  int shown;
  p = on_terminal("dumb", NULL, "\xc3\xa9\xc3\xa9\xc3\xa9"); /* "ééé": 3 characters in 6 bytes */
  pb_progress_render(&p, "x", 14, out, sizeof out, &shown);
  assert_string_equal(out, "\rpipebench: \xc3\xa9\xc3\xa9");
  assert_int_equal(shown, 13);
  pb_progress_render(&p, "x", 0, out, sizeof out, &shown); /* width unknown: whole */
  assert_string_equal(out, "\rpipebench: \xc3\xa9\xc3\xa9\xc3\xa9  x");
  assert_int_equal(shown, 17);
  unsetenv("COLUMNS");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_eta_format),
      cmocka_unit_test(test_warmup),
      cmocka_unit_test(test_measuring_steps),
      cmocka_unit_test(test_measuring_duration_and_epochs),
      cmocka_unit_test(test_off_when_not_wanted),
      cmocka_unit_test(test_dumb_terminal_no_escapes),
      cmocka_unit_test(test_cut_to_terminal_width),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
