/* The command-line habits a new user brings (issue 34): bare `pipebench` prints the usage, `help [CMD]` and
 * `CMD --help` print that command's own page, the config may come as a plain argument, short options for the
 * common ones, "did you mean" for a mistyped command or option, analyze on a directory of runs names them,
 * and --quiet (or a --format without text) still prints the one-line result. */
#include "e2e_util.h"

static const char *k_small =
    "{\"name\":\"cli-small\",\"dataset\":{\"format\":\"synthetic\",\"shape\":[16],\"dtype\":\"uint8\"},"
    "\"stages\":[{\"name\":\"augment\",\"type\":\"map\",\"threads\":1,\"ops\":[{\"op\":\"spin\",\"us\":5}]},"
    "{\"name\":\"batch\",\"type\":\"batch\",\"size\":8},{\"name\":\"h2d\",\"type\":\"h2d\"}],"
    "\"device\":{\"kind\":\"emulated\",\"step_ms\":1},\"run\":{\"steps\":5,\"warmup_steps\":1}}";

static void test_bare_command_prints_usage(void **state) {
  result *r = run_pb(ARGS(NULL));
  assert_int_equal(r->status, 2);
  assert_non_null(strstr(r->err, "usage:"));
  assert_non_null(strstr(r->err, "pipebench help [COMMAND]"));
  assert_string_equal(r->out, "");
}

/* Each command's page is its own: its usage line first, its options, nothing of another command's. */
static void expect_page(result *r, const char *usage, const char *has, const char *lacks) {
  if (r->status != 0) fail_msg("exit %d: %s", r->status, r->err);
  if (strncmp(r->out, usage, strlen(usage)) != 0) fail_msg("page starts \"%.60s\", expected \"%s\"", r->out, usage);
  if (has && !strstr(r->out, has)) fail_msg("page lacks \"%s\": %s", has, r->out);
  if (lacks && strstr(r->out, lacks)) fail_msg("page has \"%s\": %s", lacks, r->out);
}

static void test_help_pages(void **state) {
  expect_page(run_pb(ARGS("help")), "usage:", "pipebench help [COMMAND]", NULL);
  expect_page(run_pb(ARGS("help", "tune")), "usage: pipebench tune", "--budget-s N", "--force");
  expect_page(run_pb(ARGS("tune", "--help")), "usage: pipebench tune", "--write FILE", NULL);
  expect_page(run_pb(ARGS("ab", "--help")), "usage: pipebench ab", "cold page cache", "--budget-s");
  expect_page(run_pb(ARGS("sweep", "-h")), "usage: pipebench sweep", "trial-NNN", "--budget-s");
  expect_page(run_pb(ARGS("help", "analyze")), "usage: pipebench analyze", "--out DIR", "--device");
  expect_page(run_pb(ARGS("calibrate", "--help")), "usage: pipebench calibrate", "--force", "--repeat");
  expect_page(run_pb(ARGS("--help")), "usage:", "-c, --config FILE", NULL);
  assert_one_error_line(run_pb(ARGS("help", "tnue")), 2, "unknown command \"tnue\"; did you mean \"tune\"?");
}

static void test_did_you_mean(void **state) {
  assert_one_error_line(run_pb(ARGS("rnu", "--config", "x.json")), 2, "did you mean \"run\"?");
  assert_one_error_line(run_pb(ARGS("--cofig", "x.json")), 2, "unknown option \"--cofig\"; did you mean \"--config\"?");
  assert_one_error_line(run_pb(ARGS("tune", "--budget=5")), 2, "did you mean \"--budget-s\"?");
  /* nothing near: no suggestion */
  result *r = run_pb(ARGS("--zzzzzzzzzzzz"));
  assert_one_error_line(r, 2, "unknown option");
  assert_null(strstr(r->err, "did you mean"));
}

/* `pipebench run my.json`, `pipebench my.json`, and the short options, give the run --config gives. */
static void test_positional_config_and_short_options(void **state) {
  const char *cfg = write_config_text("small", k_small);
  result *r = run_pb(ARGS("run", cfg, "-q", "-o", out_dir("pos1"), "-s", "run.steps=4"));
  if (r->status != 0) fail_msg("exit %d: %s", r->status, r->err);
  assert_int_equal((int)num(load_report(out_dir("pos1")), "steps.count"), 4);
  r = run_pb(ARGS(cfg, "-j", "-o", out_dir("pos2")));
  if (r->status != 0) fail_msg("exit %d: %s", r->status, r->err);
  cJSON *j = keep_json(cJSON_Parse(r->out)); /* -j: the report on stdout */
  assert_non_null(j);
  assert_string_equal(str(j, "config.name"), "cli-small");
  r = run_pb(ARGS("validate", cfg, "-q"));
  if (r->status != 0) fail_msg("exit %d: %s", r->status, r->err);
  assert_string_equal(r->err, "");
  assert_one_error_line(run_pb(ARGS("run", cfg, cfg)), 2, "more than one config");
  assert_one_error_line(run_pb(ARGS("run", "-c", cfg, cfg)), 2, "more than one config");
}

/* --quiet hides the summary but keeps the result in one line; so does a --format without text. */
static void test_quiet_keeps_one_line(void **state) {
  const char *cfg = write_config_text("small", k_small);
  result *r = run_pb(ARGS("run", cfg, "--quiet", "--out", out_dir("quiet")));
  if (r->status != 0) fail_msg("exit %d: %s", r->status, r->err);
  assert_string_equal(r->err, "");
  const char *nl = strchr(r->out, '\n');
  if (!nl || nl[1] != '\0') fail_msg("expected one line on stdout: %s", r->out);
  assert_int_equal(strncmp(r->out, "cli-small: ", 11), 0);
  assert_non_null(strstr(r->out, " samples/s  device idle "));
  assert_non_null(strstr(r->out, out_dir("quiet")));
  r = run_pb(ARGS("analyze", out_dir("quiet"), "--format", "csv", "--out", out_dir("quiet-csv")));
  if (r->status != 0) fail_msg("exit %d: %s", r->status, r->err);
  assert_int_equal(strncmp(r->out, "cli-small: ", 11), 0);
  assert_null(strstr(r->out, "throughput")); /* not the whole summary */
}

/* analyze on a directory of runs (here two trial-NNN of one trace) names the runs instead of failing bare. */
static void test_analyze_lists_runs(void **state) {
  const char *cfg = write_config_text("small", k_small);
  result *r = run_pb(ARGS("run", cfg, "--quiet", "--out", out_dir("runs/trial-001")));
  if (r->status != 0) fail_msg("exit %d: %s", r->status, r->err);
  r = run_pb(ARGS("run", cfg, "--quiet", "--out", out_dir("runs/trial-002")));
  if (r->status != 0) fail_msg("exit %d: %s", r->status, r->err);
  r = run_pb(ARGS("analyze", out_dir("runs")));
  assert_one_error_line(r, 2, "a directory of 2 runs (ab, sweep or tune) with no trace.json of its own");
  assert_non_null(strstr(r->err, "its runs: trial-001, trial-002)"));
}

/* DLIO / MLPerf Storage's pass/fail (issue 34): a spin-bound pipeline keeps AU far below 99 %: FAIL in the
 * summary, the one-line result and report.json; a 1 % target passes. */
static void test_au_target_pass_fail(void **state) {
  const char *cfg = write_config_text("small", k_small);
  result *r = run_pb(ARGS("run", cfg, "-o", out_dir("au-fail"), "-s", "run.au_target_pct=99", "-s",
                          "device.step_ms=0.01", "--no-progress"));
  if (r->status != 0) fail_msg("exit %d: %s", r->status, r->err); /* a verdict, not an exit status */
  assert_non_null(strstr(r->out, "AU target     AU "));
  assert_non_null(strstr(r->out, " % < 99 %: FAIL\n"));
  cJSON *rep = load_report(out_dir("au-fail"));
  assert_true(num(rep, "au_target.target_pct") == 99);
  assert_true(cJSON_IsFalse(at(rep, "au_target.passed")));
  r = run_pb(ARGS("run", cfg, "-q", "-o", out_dir("au-pass"), "-s", "run.au_target_pct=1", "-s", "device.step_ms=5"));
  if (r->status != 0) fail_msg("exit %d: %s", r->status, r->err);
  assert_non_null(strstr(r->out, "  AU target 1 %: PASS"));
  assert_true(cJSON_IsTrue(at(load_report(out_dir("au-pass")), "au_target.passed")));
  assert_one_error_line(run_pb(ARGS("validate", cfg, "-s", "run.au_target_pct=101")), 2, "run.au_target_pct");
}

static int setup(void **state) { return e2e_make_tmp("pipebench-e2e-cli"); }

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bare_command_prints_usage),
      cmocka_unit_test(test_help_pages),
      cmocka_unit_test(test_did_you_mean),
      cmocka_unit_test_teardown(test_positional_config_and_short_options, free_reports),
      cmocka_unit_test(test_quiet_keeps_one_line),
      cmocka_unit_test(test_analyze_lists_runs),
      cmocka_unit_test_teardown(test_au_target_pass_fail, free_reports),
  };
  return cmocka_run_group_tests(tests, setup, remove_tmp);
}
