/* pipebench twin (issue 35): the TensorFlow Profiler capture in tests/fixtures/tfdata.xplane.pb (a tf.data
 * pipeline whose map-and-batch, one 2.3 ms py_function call at a time, is the bottleneck: see
 * tests/unit/test_tfdata.c) gives a config that runs without TensorFlow, names that stage the bottleneck and
 * says where it came from; a log directory works as the file does; bad uses get one line and exit 2. */
#include "e2e_util.h"

static const char *fixture(void) {
  static char path[400];
  snprintf(path, sizeof path, "%s/tests/fixtures/tfdata.xplane.pb", PB_SOURCE_DIR);
  return path;
}

static void test_twin_runs_and_names_the_bottleneck(void **state) {
  const char *file = tmp_path("vm-twin.json");
  result *r = run_pb(ARGS("twin", fixture(), "--out", file));
  if (r->status != 0) fail_msg("twin: exit %d: %s", r->status, r->err);
  assert_non_null(strstr(r->out, "20 \"train\" steps, 46.6 % of their time waiting for input"));
  assert_non_null(strstr(r->out, "fused(MapDataset:2,BatchDatasetV2:3)"));
  assert_non_null(strstr(r->out, "MapAndBatch_2 -> map, 1 thread(s)"));
  assert_non_null(strstr(r->out, "next:  pipebench run "));
  cJSON *cfg = load_json(file);
  assert_string_equal(str(cfg, "stages.2.name"), "MapAndBatch_2");
  /* the emulated device, steps of the capture's time less the input wait; no TensorFlow and no data */
  cJSON *rep = run_report(file, "twin", ARGS("--no-trace", "-s", "run.steps=12", "-s", "run.warmup_steps=2"));
  /* the sleeping map, one call at a time, is the slowest stage by far (~430 samples/s against 10^5 and more);
   * on a machine busy with other work (a parallel test run) the verdict can be its 2 cores instead */
  const char *named = str(rep, "bottleneck.stage");
  if (strcmp(named, "MapAndBatch_2") != 0 && strcmp(named, "cores") != 0) fail_msg("bottleneck %s", named);
  cJSON *slowest = NULL, *st;
  cJSON_ArrayForEach(st, at(rep, "stages")) {
    if (!slowest || num(st, "capacity_per_s") < num(slowest, "capacity_per_s")) slowest = st;
  }
  assert_string_equal(str(slowest, "name"), "MapAndBatch_2");
  assert_true(num(slowest, "capacity_per_s") > 100 &&
              num(slowest, "capacity_per_s") < 600); /* 1 / 2.3 ms, less a busy machine's share */
  assert_true(num(rep, "input_bound_pct") > 20);     /* the device (10.4 ms steps) waits for 8 x 2.3 ms */
  assert_non_null(strstr(str(rep, "config.about"), "twin of the tf.data pipeline in tfdata.xplane.pb"));
  assert_accounting_balances(rep);
}

/* A log directory: its newest run under plugins/profile/, its one host. */
static void test_log_directory(void **state) {
  e2e_sh("mkdir -p '%s/logs/plugins/profile/2026_11_26_10_00_00' '%s/logs/plugins/profile/2026_11_27_10_00_00' && "
         "cp '%s' '%s/logs/plugins/profile/2026_11_27_10_00_00/vm.xplane.pb' && "
         "printf garbage > '%s/logs/plugins/profile/2026_11_26_10_00_00/old.xplane.pb'",
         g_tmp, g_tmp, fixture(), g_tmp, g_tmp);
  static char logs[400];
  snprintf(logs, sizeof logs, "%s/logs", g_tmp);
  const char *file = tmp_path("logs-twin.json");
  result *r = run_pb(ARGS("twin", logs, "-o", file, "-q"));
  if (r->status != 0) fail_msg("twin %s: exit %d: %s", logs, r->status, r->err);
  assert_string_equal(r->out, "");
  assert_string_equal(str(load_json(file), "name"), "twin-vm");
}

static void test_bad_uses(void **state) {
  assert_one_error_line(run_pb(ARGS("twin")), 2, "no capture (expected pipebench twin <host>.xplane.pb");
  e2e_sh("printf 'not a protobuf at all' > '%s/junk.xplane.pb' && mkdir -p '%s/empty'", g_tmp, g_tmp);
  assert_one_error_line(run_pb(ARGS("twin", tmp_path("junk.xplane.pb"))), 2, "not a TensorFlow Profiler XSpace");
  assert_one_error_line(run_pb(ARGS("twin", tmp_path("empty"))), 2, "no *.xplane.pb in it");
  assert_one_error_line(run_pb(ARGS("twin", "/nonexistent/vm.xplane.pb")), 2, "/nonexistent/vm.xplane.pb");
  assert_one_error_line(run_pb(ARGS("twin", fixture(), "--device", "gpu")), 2, "twin: option \"--device\" does not apply");
  const char *file = tmp_path("twice.json");
  result *r = run_pb(ARGS("twin", fixture(), "-o", file, "-q"));
  if (r->status != 0) fail_msg("twin: exit %d: %s", r->status, r->err);
  assert_one_error_line(run_pb(ARGS("twin", fixture(), "-o", file)), 2, "exists (expected a new file, or --force");
  r = run_pb(ARGS("twin", fixture(), "-o", file, "--force", "-q"));
  assert_int_equal(r->status, 0);
}

static int setup(void **state) { return e2e_make_tmp("pipebench-e2e-twin"); }

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_twin_runs_and_names_the_bottleneck, free_reports),
      cmocka_unit_test_teardown(test_log_directory, free_reports),
      cmocka_unit_test_teardown(test_bad_uses, free_reports),
  };
  return cmocka_run_group_tests(tests, setup, remove_tmp);
}
