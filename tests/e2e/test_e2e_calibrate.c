/* `pipebench calibrate` and the efficiency figures of a run (issue 10, docs/CALIBRATE.md, METRICS.md
 * "Efficiency"): the machine part and a JPEG dataset's part land in the machine's calibration.json (a
 * private cache directory here), a second call reuses them and --force measures again, a run on the same
 * machine reports each stage against its ceiling and the pipeline against the machine's best, `analyze`
 * reproduces that from the trace, and a run without a calibration (or with another machine's) says why. */
#include "e2e_util.h"

static char g_cache[400];

static const char *jpeg_config(void) {
  return write_config("calib",
                      "{'name':'calib','seed':1,'dataset':{'path':'%s/data','format':'jpeg',"
                      "'generate':{'num_files':24,'image':{'width':160,'height':120,'quality':90}}},"
                      "'stages':[{'name':'read','type':'read','block_bytes':65536},{'name':'decode','type':'decode'},"
                      "{'name':'batch','type':'batch','size':4},{'name':'h2d','type':'h2d'}],"
                      "'device':{'kind':'emulated','step_ms':2},'run':{'steps':30,'warmup_steps':2}}",
                      g_tmp);
}

static cJSON *cache_json(void) {
  char host[128] = "";
  gethostname(host, sizeof host - 1);
  char path[600];
  snprintf(path, sizeof path, "%s/calibration-%s.json", g_cache, host);
  return load_json(path);
}

static void calibrate_ok(const char **args, const char *what) {
  result *r = run_pb(args);
  if (r->status != 0) fail_msg("%s: exit %d: %s", what, r->status, r->err);
}

static void test_machine_part(void **state) {
  calibrate_ok(ARGS("calibrate", "--quiet"), "calibrate");
  cJSON *c = cache_json();
  assert_non_null(c);
  assert_int_equal((int)num(c, "cores"), (int)sysconf(_SC_NPROCESSORS_ONLN));
  assert_true(num(c, "memcpy.gb_per_s_one_core") > 0); /* measured (sanitizer builds copy slowly) */
  assert_true(num(c, "memcpy.gb_per_s_all_cores") > 0);
  assert_non_null(strstr(str(c, "machine"), "cpus"));
  /* No GPU here: null figures and the reason, never a made-up number. */
  if (!cJSON_IsString(at(c, "gpu.name"))) {
    assert_true(cJSON_IsNull(at(c, "gpu.h2d_pinned_gb_per_s")));
    assert_true(strlen(str(c, "gpu.not_measured")) > 0);
  }
  assert_int_equal(cJSON_GetArraySize(at(c, "datasets")), 0);
}

static void test_dataset_part_and_reuse(void **state) {
  const char *cfg = jpeg_config();
  calibrate_ok(ARGS("calibrate", "--config", cfg, "--quiet"), "calibrate --config");
  cJSON *c = cache_json();
  assert_int_equal(cJSON_GetArraySize(at(c, "datasets")), 1);
  cJSON *d = cJSON_GetArrayItem(at(c, "datasets"), 0);
  assert_float_equal(num(d, "files"), 24, 0);
  assert_string_equal(str(d, "decode.scale"), "auto");
  assert_true(num(d, "decode.images_per_s_per_core") > 0);
  assert_float_equal(num(d, "read.block_bytes"), 65536, 0);
  assert_true(num(d, "read.mb_per_s_one_thread.buffered_random") > 0);
  assert_true(num(d, "read.mb_per_s_one_thread.buffered_sequential") > 0);
  cJSON *direct = at(d, "read.mb_per_s_one_thread.direct_random");
  if (!cJSON_IsNumber(direct)) assert_true(strlen(str(d, "read.not_measured.direct_random")) > 0); /* e.g. tmpfs */
  char measured_at[64];
  snprintf(measured_at, sizeof measured_at, "%s", str(c, "measured_at"));
  /* Again: everything is in the cache, nothing is measured, nothing changes. */
  result *r = run_pb(ARGS("calibrate", "--config", cfg));
  assert_int_equal(r->status, 0);
  assert_non_null(strstr(r->err, "measured before"));
  assert_non_null(strstr(r->out, "decode"));
  assert_string_equal(str(cache_json(), "measured_at"), measured_at);
  /* --force measures again (and --out keeps a copy); --json prints the file's content. */
  const char *copy = out_dir("calib-copy");
  r = run_pb(ARGS("calibrate", "--config", cfg, "--force", "--json", "--out", copy));
  assert_int_equal(r->status, 0);
  assert_null(strstr(r->err, "measured before"));
  cJSON *printed = keep_json(cJSON_Parse(r->out));
  assert_non_null(printed);
  assert_int_equal(cJSON_GetArraySize(at(printed, "datasets")), 1);
  char path[600];
  snprintf(path, sizeof path, "%s/calibration.json", copy);
  assert_non_null(load_json(path));
}

static void test_run_reports_efficiency(void **state) {
  const char *cfg = jpeg_config();
  calibrate_ok(ARGS("calibrate", "--config", cfg, "--quiet"), "calibrate --config");
  cJSON *rep = run_report(cfg, "eff", ARGS("--format", "json,text,trace,csv"));
  assert_true(cJSON_IsObject(at(rep, "efficiency.calibration")));
  assert_true(cJSON_IsNull(at(rep, "efficiency.why")));
  assert_true(num(rep, "efficiency.pipeline_pct") > 0);
  assert_true(num(rep, "efficiency.best_samples_per_s") > 0);
  assert_true(cJSON_IsString(at(rep, "efficiency.limited_by")));
  cJSON *dec = stage(rep, "decode"), *rd = stage(rep, "read"), *b = stage(rep, "batch"), *h = stage(rep, "h2d");
  assert_string_equal(str(dec, "ceiling_source"), "decode_images_per_s_per_core");
  assert_true(num(dec, "ceiling_per_s") > 0);
  assert_true(num(dec, "efficiency_pct") > 0);
  /* The definition: throughput in the window over the ceiling x threads. */
  double rate = num(dec, "calls") / num(rep, "measured_s");
  assert_float_equal(num(dec, "efficiency_pct"), rate / num(dec, "ceiling_per_s") * 100, 0.05 * num(dec, "efficiency_pct") + 0.1);
  assert_string_equal(str(rd, "ceiling_source"), "read_buffered_random_mb_per_s");
  assert_string_equal(str(b, "ceiling_source"), "memcpy_gb_per_s_one_core");
  assert_true(cJSON_IsNull(at(h, "ceiling_per_s"))); /* the emulated link has no machine ceiling */
  /* best = min over stages of ceiling per thread x cores, and the device */
  double best = num(rep, "capacity_model.device_rate_per_s");
  cJSON *s;
  cJSON_ArrayForEach(s, at(rep, "stages")) {
    cJSON *one = at(s, "ceiling_per_thread_per_s");
    if (cJSON_IsNumber(one) && one->valuedouble * num(rep, "efficiency.cores") < best)
      best = one->valuedouble * num(rep, "efficiency.cores");
  }
  assert_float_equal(num(rep, "efficiency.best_samples_per_s"), best, best * 0.001 + 0.1);
  /* analyze rebuilds the same figures from the trace alone (the calibration itself may be gone). */
  const char *again = out_dir("eff-again");
  result *r = run_pb(ARGS("analyze", out_dir("eff"), "--out", again, "--format", "json", "--quiet"));
  assert_int_equal(r->status, 0);
  cJSON *re = load_report(again);
  assert_float_equal(num(re, "efficiency.pipeline_pct"), num(rep, "efficiency.pipeline_pct"), 0);
  assert_float_equal(num(stage(re, "decode"), "efficiency_pct"), num(dec, "efficiency_pct"), 0);
  /* stages.csv has the same columns */
  static char csv[1 << 16];
  char path[600];
  snprintf(path, sizeof path, "%s/stages.csv", out_dir("eff"));
  read_text(path, csv, sizeof csv);
  assert_non_null(strstr(csv, ",ceiling_per_thread_per_s,ceiling_per_s,efficiency_pct,ceiling_source,parent\n"));
  assert_non_null(strstr(csv, ",decode_images_per_s_per_core,"));
  r = run_pb(ARGS("analyze", out_dir("eff"), "--out", out_dir("eff-text"), "--format", "text"));
  assert_int_equal(r->status, 0);
  assert_non_null(strstr(r->out, "of the machine's best"));
  assert_non_null(strstr(r->out, "decode: "));
  /* emulated storage: the read stage's bandwidth cap bounds its ceiling and the machine's best (the
   * calibrated disk does not), and analyze keeps it */
  rep = run_report(cfg, "eff-emu", ARGS("--format", "json,trace", "--set", "stages.read.bandwidth_mb_per_s=1"));
  rd = stage(rep, "read");
  assert_string_equal(str(rd, "ceiling_source"), "read_emulated_storage");
  double per_sample = num(rd, "bytes_in") / (num(rd, "calls") > 0 ? num(rd, "calls") : 1);
  assert_float_equal(num(rd, "ceiling_per_s"), 1e6 / per_sample, 1e6 / per_sample * 0.01);
  assert_string_equal(str(rep, "efficiency.limited_by"), "read");
  assert_double_cmp(num(rd, "efficiency_pct"), >, 50); /* the cap binds, and holds */
  assert_double_cmp(num(rd, "efficiency_pct"), <, 110);
  again = out_dir("eff-emu-again");
  r = run_pb(ARGS("analyze", out_dir("eff-emu"), "--out", again, "--format", "json", "--quiet"));
  assert_int_equal(r->status, 0);
  assert_float_equal(num(load_report(again), "efficiency.best_samples_per_s"), num(rep, "efficiency.best_samples_per_s"),
                     0);
}

static void test_run_without_calibration(void **state) {
  char empty[500];
  snprintf(empty, sizeof empty, "%s/empty-cache", g_tmp);
  setenv("PIPEBENCH_CACHE_DIR", empty, 1);
  cJSON *rep = run_report(jpeg_config(), "no-calib", NULL);
  setenv("PIPEBENCH_CACHE_DIR", g_cache, 1);
  assert_true(cJSON_IsNull(at(rep, "efficiency.calibration")));
  assert_non_null(strstr(str(rep, "efficiency.why"), "pipebench calibrate"));
  assert_true(cJSON_IsNull(at(rep, "efficiency.pipeline_pct")));
  assert_true(cJSON_IsNull(at(stage(rep, "decode"), "efficiency_pct")));
}

static void test_other_machines_calibration_is_not_used(void **state) {
  calibrate_ok(ARGS("calibrate", "--quiet"), "calibrate");
  char host[128] = "", path[600];
  gethostname(host, sizeof host - 1);
  snprintf(path, sizeof path, "%s/calibration-%s.json", g_cache, host);
  cJSON *c = cache_json();
  cJSON_ReplaceItemInObject(c, "machine", cJSON_CreateString("elsewhere | Some CPU | 128 cpus"));
  char *text = cJSON_Print(c);
  FILE *f = fopen(path, "w");
  fputs(text, f);
  fclose(f);
  free(text);
  cJSON *rep = run_report(jpeg_config(), "other-machine", NULL);
  assert_true(cJSON_IsNull(at(rep, "efficiency.calibration")));
  assert_non_null(strstr(str(rep, "efficiency.why"), "another machine"));
  /* calibrate itself measures this machine again, with a warning, and replaces the file. */
  result *r = run_pb(ARGS("calibrate"));
  assert_int_equal(r->status, 0);
  assert_non_null(strstr(r->err, "another machine"));
  assert_null(strstr(str(cache_json(), "machine"), "elsewhere"));
}

/* A corrupt file among the sampled ones is left out with a warning naming it (a run would count it as
 * a failed sample), not a reason to measure nothing; fused_crop measures the crops' regions, under its
 * own key; a dataset of nothing but corrupt files is one error line naming the first. */
static void test_bad_files_and_fused_crop(void **state) {
  const char *cfg = write_config("calib-bad",
                                 "{'name':'calib-bad','seed':1,'dataset':{'path':'%s/bad','format':'jpeg',"
                                 "'generate':{'num_files':8,'image':{'width':160,'height':120,'quality':90}}},"
                                 "'stages':[{'name':'read','type':'read','block_bytes':65536},"
                                 "{'name':'decode','type':'decode','fused_crop':true},"
                                 "{'name':'aug','type':'map','ops':[{'op':'random_resized_crop','size':64}]},"
                                 "{'name':'batch','type':'batch','size':4}],"
                                 "'device':{'kind':'emulated','step_ms':0},'run':{'steps':10}}",
                                 g_tmp);
  calibrate_ok(ARGS("gen", "--config", cfg, "--quiet"), "gen");
  char bad[600];
  snprintf(bad, sizeof bad, "%s/bad/zz-corrupt.jpg", g_tmp);
  FILE *f = fopen(bad, "w");
  assert_non_null(f);
  fputs("this is not a JPEG", f);
  fclose(f);
  result *r = run_pb(ARGS("calibrate", "--config", cfg));
  if (r->status != 0) fail_msg("calibrate with one corrupt file: exit %d: %s", r->status, r->err);
  assert_non_null(strstr(r->err, "zz-corrupt.jpg"));
  assert_non_null(strstr(r->err, "left out"));
  assert_non_null(strstr(r->out, "fused_crop"));
  cJSON *ds = at(cache_json(), "datasets"), *d, *mine = NULL;
  cJSON_ArrayForEach(d, ds) if (strstr(str(d, "path"), "/bad")) mine = d;
  assert_non_null(mine);
  assert_true(cJSON_IsTrue(at(mine, "decode.fused_crop")));
  assert_float_equal(num(mine, "decode.min_side"), 0, 0); /* scale auto: full size before a crop */
  assert_float_equal(num(mine, "decode.files_skipped"), 1, 0);
  assert_float_equal(num(mine, "decode.files"), 8, 0);
  assert_true(num(mine, "decode.images_per_s_per_core") > 0);
  /* every file corrupt: one line, the dataset and the first file, exit 1 */
  const char *cfg2 = write_config("calib-allbad",
                                  "{'name':'calib-allbad','dataset':{'path':'%s/allbad','format':'jpeg'},"
                                  "'stages':[{'name':'read','type':'read'},{'name':'decode','type':'decode'},"
                                  "{'name':'batch','type':'batch','size':1}],'device':{'kind':'emulated'}}",
                                  g_tmp);
  char dir[600];
  snprintf(dir, sizeof dir, "%s/allbad", g_tmp);
  mkdir(dir, 0755);
  for (int i = 0; i < 2; i++) {
    snprintf(bad, sizeof bad, "%s/allbad/x%d.jpg", g_tmp, i);
    f = fopen(bad, "w");
    fputs("nope", f);
    fclose(f);
  }
  r = run_pb(ARGS("calibrate", "--config", cfg2, "--quiet"));
  assert_one_error_line(r, 1, "x0.jpg");
  assert_non_null(strstr(r->err, "none of the 2 sampled files decodes"));
}

static void test_bad_usage(void **state) {
  result *r = run_pb(ARGS("calibrate", "--budget-s", "3"));
  assert_one_error_line(r, 2, "--budget-s");
  r = run_pb(ARGS("calibrate", "--config", "/nonexistent/x.json"));
  assert_one_error_line(r, 2, "/nonexistent/x.json");
  /* run options do not apply (and are not silently ignored); --format takes text and json only */
  r = run_pb(ARGS("calibrate", "--data", "synthetic"));
  assert_one_error_line(r, 2, "--data");
  r = run_pb(ARGS("calibrate", "--seed=3"));
  assert_one_error_line(r, 2, "--seed");
  r = run_pb(ARGS("calibrate", "--format", "csv"));
  assert_one_error_line(r, 2, "csv");
  /* json only: the copy in --out, no summary on stdout */
  const char *copy = out_dir("calib-json-only");
  r = run_pb(ARGS("calibrate", "--format", "json", "--out", copy));
  assert_int_equal(r->status, 0);
  assert_int_equal(strlen(r->out), 0);
  char path[600];
  snprintf(path, sizeof path, "%s/calibration.json", copy);
  assert_non_null(load_json(path));
  /* --out naming a regular file: refused before anything is measured (one line, no progress lines) */
  r = run_pb(ARGS("calibrate", "--force", "--out", path));
  assert_one_error_line(r, 1, "Not a directory (expected a writable directory)");
  /* text only: the summary, no copy */
  copy = out_dir("calib-text-only");
  r = run_pb(ARGS("calibrate", "--format", "text", "--out", copy));
  assert_int_equal(r->status, 0);
  assert_non_null(strstr(r->out, "memcpy"));
  snprintf(path, sizeof path, "%s/calibration.json", copy);
  assert_int_equal(access(path, F_OK), -1);
}

static int setup(void **state) {
  int rc = e2e_make_tmp("pb-e2e-calibrate");
  snprintf(g_cache, sizeof g_cache, "%s/cache", g_tmp);
  setenv("PIPEBENCH_CACHE_DIR", g_cache, 1);
  setenv("PIPEBENCH_CALIBRATE_SECONDS", "0.1", 1);
  return rc;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_machine_part, free_reports),
      cmocka_unit_test_teardown(test_dataset_part_and_reuse, free_reports),
      cmocka_unit_test_teardown(test_run_reports_efficiency, free_reports),
      cmocka_unit_test_teardown(test_run_without_calibration, free_reports),
      cmocka_unit_test_teardown(test_other_machines_calibration_is_not_used, free_reports),
      cmocka_unit_test_teardown(test_bad_files_and_fused_crop, free_reports),
      cmocka_unit_test_teardown(test_bad_usage, free_reports),
  };
  return cmocka_run_group_tests(tests, setup, remove_tmp);
}
