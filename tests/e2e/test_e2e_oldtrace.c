/* A trace written by an earlier pipebench (tests/fixtures/trace-2026-11-27.json: the unet3d preset, 6 steps,
 * by the build of 2026-11-27) still loads: fields added since are optional on load and keep their defaults.
 * Catches a new required field that would make every earlier trace.json unreadable by `analyze`. */
#include "e2e_util.h"

static void test_earlier_trace_loads(void **state) {
  const char *dir = out_dir("old");
  result *r = run_pb(ARGS("analyze", PB_SOURCE_DIR "/tests/fixtures/trace-2026-11-27.json", "--out", dir, "--format",
                          "json", "-q"));
  if (r->status != 0) fail_msg("analyze: exit %d: %s", r->status, r->err);
  cJSON *rep = load_report(dir);
  assert_string_equal(str(rep, "config.name"), "unet3d");
  assert_int_equal((int)num(rep, "steps.count"), 6);
  assert_int_equal((int)num(rep, "accounting.files_skipped"), 0); /* since issue 34: absent, so 0 */
  assert_accounting_balances(rep);
}

static int setup(void **state) { return e2e_make_tmp("pipebench-e2e-oldtrace"); }

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_earlier_trace_loads, free_reports),
  };
  return cmocka_run_group_tests(tests, setup, remove_tmp);
}
