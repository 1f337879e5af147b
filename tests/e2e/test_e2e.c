/* End-to-end: runs the built pipebench binary as a user would and checks exit codes, the one-line errors
 * of docs/CONTRACT.md §1 and the report.json of §3.  Configs are written into a temporary directory. */
#include <math.h>

#include "e2e_util.h"

static const char *k_small =
    "{\"name\":\"small\",\"dataset\":{\"format\":\"synthetic\",\"shape\":[32,32,3],\"num_samples\":1000},"
    "\"stages\":[{\"name\":\"aug\",\"type\":\"map\",\"threads\":2,\"ops\":[{\"op\":\"spin\",\"us\":5}]},"
    "{\"type\":\"batch\",\"size\":16},{\"type\":\"prefetch\",\"depth\":2},{\"type\":\"h2d\"}],"
    "\"device\":{\"kind\":\"emulated\",\"step_ms\":2},\"run\":{\"steps\":20,\"warmup_steps\":2}}";

/* ---------- CLI ---------- */

static void test_version_and_help(void **state) {
  const char *v[] = {"--version", NULL};
  result *r = run_pb(v);
  assert_int_equal(r->status, 0);
  assert_non_null(strstr(r->out, "pipebench "));
  const char *h[] = {"--help", NULL};
  r = run_pb(h);
  assert_int_equal(r->status, 0);
  assert_non_null(strstr(r->out, "--config"));
}

static void test_usage_errors(void **state) {
  const char *a[] = {"--bogus", NULL};
  assert_one_error_line(run_pb(a), 2, "unknown option");
  const char *b[] = {"frobnicate", NULL};
  assert_one_error_line(run_pb(b), 2, "unknown command");
  const char *c[] = {"run", NULL};
  assert_one_error_line(run_pb(c), 2, "--config");
  const char *d[] = {"--config", "/nonexistent/x.json", NULL};
  assert_one_error_line(run_pb(d), 2, "/nonexistent/x.json");
  const char *e[] = {"calibrate", "--no-trace-at-all", NULL};
  assert_one_error_line(run_pb(e), 2, "unknown option");
  const char *g[] = {"ab", "--config", "/nonexistent/x.json", NULL};
  assert_one_error_line(run_pb(g), 2, "/nonexistent/x.json");
  const char *f[] = {"--config", write_config_text("small", k_small), "--data", "fake", NULL};
  assert_one_error_line(run_pb(f), 2, "--data");
  /* a control character in an argument stays inside the one line */
  const char *h[] = {"--config", write_config_text("small", k_small), "--device", "a\nb", NULL};
  assert_one_error_line(run_pb(h), 2, "--device");
  /* a --format list too long to check is refused, not cut short */
  static char formats[400];
  for (int i = 0; i < 60; i++) strcat(formats, "text,");
  strcat(formats, "bogus");
  const char *i[] = {"--config", write_config_text("small", k_small), "--format", formats, NULL};
  assert_one_error_line(run_pb(i), 2, "--format");
  /* options about a run do not apply to gen and validate, and are refused rather than ignored */
  const char *j[] = {"validate", "--config", write_config_text("small", k_small), "--device", "gpu", NULL};
  assert_one_error_line(run_pb(j), 2, "--device");
  const char *jo[] = {"validate", "--config", write_config_text("small", k_small), "--out", "somewhere", NULL};
  assert_one_error_line(run_pb(jo), 2, "--out");
  const char *jf[] = {"validate", "--config", write_config_text("small", k_small), "--format=json", NULL};
  assert_one_error_line(run_pb(jf), 2, "--format");
  const char *k[] = {"gen", "--config", write_config_text("small", k_small), "--no-trace", NULL};
  assert_one_error_line(run_pb(k), 2, "--no-trace");
  const char *l[] = {"calibrate", "--set", "seed=1", NULL};
  assert_one_error_line(run_pb(l), 2, "without --config");
  const char *m[] = {"analyze", "/nonexistent/run", NULL}; /* like a missing --config: usage */
  assert_one_error_line(run_pb(m), 2, "/nonexistent/run");
  /* an option of another command names the commands that take it */
  const char *fo[] = {"--config", write_config_text("small", k_small), "--force", NULL};
  assert_one_error_line(run_pb(fo), 2, "run: option \"--force\" does not apply (expected it with gen or calibrate)");
  const char *bo[] = {"sweep", "--config", write_config_text("small", k_small), "--budget-s=4", NULL};
  assert_one_error_line(run_pb(bo), 2, "sweep: option \"--budget-s\" does not apply (expected it with tune)");
  const char *cl[] = {"--config", write_config_text("small", k_small), "validate", NULL};
  assert_one_error_line(run_pb(cl), 2, "\"validate\" is a command: it comes first");
  /* validate refuses what run refuses: a dataset.path that lists nothing, with nothing to generate it */
  static char nodata[600];
  snprintf(nodata, sizeof nodata,
           "{\"dataset\":{\"path\":\"%s/no-such-dataset\",\"format\":\"jpeg\"},\"stages\":[{\"type\":\"read\"},"
           "{\"type\":\"decode\"},{\"type\":\"batch\",\"size\":2}],\"device\":{\"kind\":\"emulated\"}}", g_tmp);
  const char *vd[] = {"validate", "--config", write_config_text("nodata", nodata), NULL};
  assert_one_error_line(run_pb(vd), 2, "no-such-dataset: No such file or directory");
  const char *fv[] = {"gen", "--config", write_config_text("small", k_small), "--force=yes", NULL};
  assert_one_error_line(run_pb(fv), 2, "--force takes no value");
  /* asked for a trace and for none; analyze asked for files with nowhere to write them */
  const char *nt[] = {"--config", write_config_text("small", k_small), "--no-trace", "--format", "json,trace", NULL};
  assert_one_error_line(run_pb(nt), 2, "--no-trace: --format names trace too");
  const char *an[] = {"analyze", g_tmp, "--format", "csv", NULL};
  assert_one_error_line(run_pb(an), 2, "analyze: --format csv names files, and there is no --out");
  /* --seed beyond the config's limit for seed is --seed's error, not the config file's */
  const char *n[] = {"--config", write_config_text("small", k_small), "--seed", "1000000000000001", NULL};
  assert_one_error_line(run_pb(n), 2, "--seed: 1000000000000001 is too large");
  const char *o[] = {"--config", write_config_text("small", k_small), "--seed", "99999999999999999999", NULL};
  assert_one_error_line(run_pb(o), 2, "--seed: 99999999999999999999 is too large");
  /* --budget-s over its limit says so; hex, inf and nan are not numbers of seconds */
  const char *p[] = {"tune", "--config", write_config_text("small", k_small), "--budget-s", "1e8", NULL};
  assert_one_error_line(run_pb(p), 2, "--budget-s: 1e8 is too long");
  const char *q[] = {"tune", "--config", write_config_text("small", k_small), "--budget-s", "0x10", NULL};
  assert_one_error_line(run_pb(q), 2, "--budget-s: \"0x10\" is not a positive number");
  const char *t[] = {"tune", "--config", write_config_text("small", k_small), "--budget-s", "inf", NULL};
  assert_one_error_line(run_pb(t), 2, "--budget-s: \"inf\" is not a positive number");
}

/* gen takes --json (a summary on stdout) and --out (DIR/gen.json), as the contract says; an up-to-date
 * dataset is reported as not generated, with the manifest's counts. */
/* What gen cannot write is refused before anything is written (exit 2, one line naming the key): a JPEG
 * side over 65500, an image over 2^28 pixels, raw records of another size than dataset.record_bytes. */
static void test_gen_refuses_what_it_cannot_write(void **state) {
  char json[800], data[400];
  snprintf(data, sizeof data, "%s/gen-refused", g_tmp);
  snprintf(json, sizeof json,
           "{\"name\":\"gr\",\"dataset\":{\"path\":\"%s\",\"format\":\"jpeg\",\"generate\":"
           "{\"num_files\":2,\"image\":{\"width\":65535,\"height\":1}}},\"stages\":[{\"type\":\"read\"},"
           "{\"type\":\"decode\"},{\"type\":\"batch\",\"size\":1}],\"device\":{\"kind\":\"emulated\"}}",
           data);
  const char *cfg = write_config_text("gen-refused", json);
  const char *a[] = {"gen", "--config", cfg, NULL};
  assert_one_error_line(run_pb(a), 2, "dataset.generate.image.width: 65535 pixels is more than a JPEG can hold");
  const char *b[] = {"gen", "--config", cfg, "--set", "dataset.generate.image={\"width\":20000,\"height\":20000}", NULL};
  assert_one_error_line(run_pb(b), 2, "dataset.generate.image: 20000 x 20000 is 400000000 pixels");
  const char *c[] = {"gen", "--config", cfg, "--set", "dataset.format=raw", "--set", "stages[1]=null", "--set",
                     "dataset.generate={\"num_files\":2,\"record_bytes\":64}", "--set", "dataset.record_bytes=100", NULL};
  assert_one_error_line(run_pb(c), 2, "dataset.record_bytes: 100, not the 64 bytes");
  struct stat st;
  assert_int_equal(stat(data, &st), -1); /* nothing written, not even the directory */
  /* an --out that cannot be made fails before the dataset is written */
  const char *d[] = {"gen", "--config", cfg, "--set", "dataset.generate.image.width=8", "--out", cfg, NULL};
  assert_one_error_line(run_pb(d), 1, "Not a directory (expected a writable directory)");
  assert_int_equal(stat(data, &st), -1);
}

static void test_gen_summary(void **state) {
  char json[800];
  snprintf(json, sizeof json,
           "{\"name\":\"gs\",\"dataset\":{\"path\":\"%s/gs-data\",\"format\":\"raw\",\"generate\":"
           "{\"num_files\":3,\"samples_per_file\":2,\"record_bytes\":100}},\"stages\":[{\"type\":\"read\"},"
           "{\"type\":\"batch\",\"size\":2}],\"device\":{\"kind\":\"emulated\"}}",
           g_tmp);
  const char *cfg = write_config_text("gs", json), *dir = out_dir("gs-out");
  const char *a[] = {"gen", "--config", cfg, "--json", "--out", dir, NULL};
  result *r = run_pb(a);
  assert_int_equal(r->status, 0);
  cJSON *o = keep_json(cJSON_Parse(r->out));
  assert_non_null(o);
  assert_true(cJSON_IsTrue(at(o, "generated")));
  assert_float_equal(num(o, "files"), 3, 0);
  assert_float_equal(num(o, "samples"), 6, 0);
  assert_float_equal(num(o, "bytes"), 600, 0);
  char path[600];
  snprintf(path, sizeof path, "%s/gen.json", dir);
  assert_float_equal(num(load_json(path), "samples"), 6, 0);
  r = run_pb(a); /* again: up to date */
  assert_int_equal(r->status, 0);
  o = keep_json(cJSON_Parse(r->out));
  assert_false(cJSON_IsTrue(at(o, "generated")));
  assert_float_equal(num(o, "samples"), 6, 0);
  const char *b[] = {"gen", "--config", cfg, "--format", "html", NULL};
  assert_one_error_line(run_pb(b), 2, "html");
  /* --out naming the dataset's directory (spelt otherwise): gen.json would be read as a sample */
  char data_dir[600];
  snprintf(data_dir, sizeof data_dir, "%s/./gs-data/", g_tmp);
  const char *c[] = {"gen", "--config", cfg, "--out", data_dir, NULL};
  assert_one_error_line(run_pb(c), 2, "--out is the dataset's own directory");
  snprintf(path, sizeof path, "%s/gs-data/gen.json", g_tmp);
  assert_int_equal(access(path, F_OK), -1);
}

/* ---------- bad configs: exit 2, one line naming the JSON path ---------- */

static void expect_config_error(const char *json, const char *path_and_what) {
  const char *cfg = write_config_text("bad", json);
  const char *args[] = {"--config", cfg, "--quiet", "--out", out_dir("bad"), NULL};
  result *r = run_pb(args);
  assert_one_error_line(r, 2, path_and_what);
  assert_non_null(strstr(r->err, cfg)); /* names the file */
}

#define BASE_PRE "{\"dataset\":{\"format\":\"synthetic\",\"shape\":[8]},\"stages\":["
static void test_bad_configs_exit_2(void **state) {
  expect_config_error(BASE_PRE "{\"type\":\"map\",\"threads\":0,\"ops\":[]},{\"type\":\"batch\",\"size\":4}]}",
                      "stages[0].threads");
  expect_config_error(BASE_PRE "{\"type\":\"map\",\"threads\":100000,\"ops\":[]},{\"type\":\"batch\",\"size\":4}]}",
                      "stages[0].threads");
  expect_config_error(BASE_PRE "{\"type\":\"batch\",\"size\":0}]}", "stages[0].size");
  expect_config_error(BASE_PRE "{\"type\":\"batch\",\"size\":4}],\"device\":{\"step_ms\":-1}}", "device.step_ms");
  expect_config_error(BASE_PRE "{\"type\":\"batch\",\"size\":4,\"drop_remaindr\":true}]}", "did you mean");
  expect_config_error(BASE_PRE "{\"type\":\"batch\",\"size\":\"big\"}]}", "stages[0].size");
  expect_config_error(BASE_PRE "{\"type\":\"batch\",\"size\":4}", "invalid JSON");
  expect_config_error(BASE_PRE "{\"type\":\"batch\",\"size\":4}],\"run\":{\"steps\":0}}", "run.steps");
  expect_config_error(BASE_PRE "{\"type\":\"batch\",\"size\":4},{\"type\":\"prefetch\",\"depth\":0}]}",
                      "stages[1].depth");
}

static void test_bad_set_exit_2(void **state) {
  const char *args[] = {"--config", write_config_text("small", k_small), "--set", "stages.agu.threads=2", NULL};
  assert_one_error_line(run_pb(args), 2, "did you mean \"aug\"");
  const char *args2[] = {"--config", write_config_text("small", k_small), "--set", "stages.aug.threads=0", NULL};
  assert_one_error_line(run_pb(args2), 2, "threads");
}


static void test_memory_limit_refused(void **state) {
  const char *args[] = {"--config", write_config_text("small", k_small), "--set", "stages.batch.size=100000",
                        "--set", "limits.max_memory_mb=10", NULL};
  assert_one_error_line(run_pb(args), 2, "limits.max_memory_mb");
  assert_non_null(strstr(run_pb(args)->err, "batch"));
  /* validate refuses it the same way (k_small's dataset is synthetic: nothing to generate first) */
  const char *vargs[] = {"validate", "--config", write_config_text("small", k_small), "--set",
                         "stages.batch.size=100000", "--set", "limits.max_memory_mb=10", NULL};
  result *r = run_pb(vargs);
  assert_one_error_line(r, 2, "limits.max_memory_mb");
  assert_string_equal(r->out, "");
  /* just over the limit: as many decimals as it takes to differ from it (batches of 41 3,072-byte
   * samples plan 1.01 MB) */
  const char *just[] = {"validate", "--config", write_config_text("small", k_small), "--set", "stages.batch.size=41",
                        "--set", "limits.max_memory_mb=1", NULL};
  assert_one_error_line(run_pb(just), 2, "may buffer 1.01 MB, more than the limit of 1 MB");
}

static void test_gpu_required_without_gpu(void **state) {
  const char *args[] = {"--config", write_config_text("small", k_small), "--device", "gpu", NULL};
  assert_one_error_line(run_pb(args), 1, "gpu");
}

static void test_validate_prints_resolved_config(void **state) {
  const char *args[] = {"validate", "--config", PB_SOURCE_DIR "/configs/resnet.json", "--set",
                        "stages.decode.threads=3", NULL};
  result *r = run_pb(args);
  assert_int_equal(r->status, 0);
  cJSON *cfg = cJSON_Parse(r->out);
  assert_non_null(cfg);
  keep_json(cfg);
  cJSON *decode = cJSON_GetArrayItem(at(cfg, "stages"), 1);
  assert_int_equal(num(decode, "threads"), 3);
  assert_true(cJSON_IsNumber(at(cfg, "run.warmup_steps"))); /* defaults are filled in */
  assert_non_null(strstr(r->err, "per-sample output of each stage"));
  /* --quiet: the same config on stdout, nothing on stderr */
  const char *quiet[] = {"validate", "--config", PB_SOURCE_DIR "/configs/resnet.json", "--quiet", NULL};
  r = run_pb(quiet);
  assert_int_equal(r->status, 0);
  assert_non_null(keep_json(cJSON_Parse(r->out)));
  assert_string_equal(r->err, "");
}

/* ---------- runs ---------- */

static const char *k_contract_keys[] = {
    "pipebench_version", "config", "data", "interrupted", "device.kind", "device.name", "device.count",
    "device.timing_source", "throughput.samples_per_s", "throughput.batches_per_s", "throughput.bytes_per_s",
    "steps.count", "steps.mean_ms", "steps.p50_ms", "steps.p90_ms", "steps.p99_ms",
    "step_breakdown_ms.input_wait", "step_breakdown_ms.h2d", "step_breakdown_ms.compute",
    "step_breakdown_ms.other", "device_idle_pct", "accelerator_utilization_pct", "input_bound_pct",
    "classification", "stages", "critical_path", "bottleneck", "recommendations", "ranks",
    "most_input_bound_rank", "accounting.files_read", "accounting.samples_read", "accounting.samples_decoded",
    "accounting.samples_batched", "accounting.samples_consumed", "accounting.samples_dropped",
    "accounting.errors", "accounting.first_errors"};

static void test_resnet_synthetic_report(void **state) {
  const char *dir = out_dir("resnet");
  const char *args[] = {"--config", PB_SOURCE_DIR "/configs/resnet.json", "--data", "synthetic",
                        "--set", "run.steps=6", "--set", "run.warmup_steps=2", "--set", "device.step_ms=5",
                        "--set", "stages.batch.size=8", "--out", dir, NULL};
  result *r = run_pb(args);
  if (r->status != 0) fail_msg("exit %d: %s", r->status, r->err);
  assert_non_null(strstr(r->out, "throughput")); /* the text summary */
  cJSON *rep = load_report(dir);
  for (size_t i = 0; i < sizeof k_contract_keys / sizeof *k_contract_keys; i++)
    if (!at(rep, k_contract_keys[i])) fail_msg("report.json lacks %s", k_contract_keys[i]);
  assert_string_equal(at(rep, "data")->valuestring, "synthetic");
  assert_string_equal(at(rep, "device.kind")->valuestring, "emulated");
  assert_int_equal(num(rep, "steps.count"), 6);
  assert_true(cJSON_IsFalse(at(rep, "interrupted")));
  cJSON *stages = at(rep, "stages");
  assert_int_equal(cJSON_GetArraySize(stages), 8); /* source + the 7 configured */
  cJSON *read = cJSON_GetArrayItem(stages, 1);
  assert_true(cJSON_IsTrue(at(read, "skipped")));
  assert_true(cJSON_IsNull(at(read, "calls")));
  const char *stage_keys[] = {"name", "type", "threads", "calls", "total_ms", "self_ms", "mean_us", "p50_us",
                              "p99_us", "wait_in_ms", "blocked_out_ms", "utilization", "capacity_per_s",
                              "bytes_in", "bytes_out", "queue_mean_fill", "critical_path_ms",
                              "critical_path_pct"};
  cJSON *batch = cJSON_GetArrayItem(stages, 5);
  assert_string_equal(at(batch, "name")->valuestring, "batch");
  for (size_t i = 0; i < sizeof stage_keys / sizeof *stage_keys; i++)
    if (!at(batch, stage_keys[i])) fail_msg("stage lacks %s", stage_keys[i]);
  assert_true(num(batch, "calls") > 0);
  assert_int_equal(num(batch, "bytes_in") / num(batch, "calls"), 224 * 224 * 3); /* a call per sample */
  assert_accounting_balances(rep);
}

/* Epochs over a finite in-memory dataset: every sample is consumed or dropped (the remainder). */
static void test_epochs_account_for_every_sample(void **state) {
  const char *dir = out_dir("epochs");
  const char *args[] = {"--config", write_config_text("small", k_small), "--set",
                        "run={\"epochs\":2,\"warmup_steps\":0}",
                        "--set", "stages.batch.size=24", "--quiet", "--out", dir, NULL};
  result *r = run_pb(args);
  if (r->status != 0) fail_msg("exit %d: %s", r->status, r->err);
  cJSON *rep = load_report(dir);
  assert_int_equal(num(rep, "accounting.samples_read"), 2000);
  assert_int_equal(num(rep, "accounting.samples_consumed"), 1992); /* 83 batches of 24 */
  assert_int_equal(num(rep, "accounting.samples_dropped"), 8);
  assert_int_equal(num(rep, "accounting.samples_in_flight"), 0);
  assert_int_equal(num(rep, "steps.count"), 83);
  assert_accounting_balances(rep);
}

/* A map of spin ops over samples that are not images ([16] float32): the samples go on whole, so the
 * bytes each stage hands on and the run's MB/s count them (they were 0 bytes after the map). */
static void test_map_over_non_image_keeps_bytes(void **state) {
  const char *dir = out_dir("flat");
  const char *args[] = {"--config", write_config_text("small", k_small), "--set",
                        "dataset={\"format\":\"synthetic\",\"shape\":[16],\"dtype\":\"float32\",\"num_samples\":1000}",
                        "--quiet", "--format", "json", "--out", dir, NULL};
  result *r = run_pb(args);
  if (r->status != 0) fail_msg("exit %d: %s", r->status, r->err);
  cJSON *rep = load_report(dir);
  cJSON *st;
  cJSON_ArrayForEach(st, at(rep, "stages")) {
    if (strcmp(str(st, "name"), "aug") != 0) continue;
    assert_true(num(st, "bytes_out") > 0);
    assert_int_equal((long long)num(st, "bytes_out") % 64, 0); /* whole 64-byte samples */
  }
  double per_sample = num(rep, "throughput.bytes_per_s") / num(rep, "throughput.samples_per_s");
  if (per_sample < 63.9 || per_sample > 64.1) fail_msg("throughput: %.2f bytes per sample (expected 64)", per_sample);
}

/* Without warm-up the window opens as the run starts, before the threads' first events: the walk back
 * charges that start-up to the stage it reached, so the path covers the analysed window (METRICS.md:
 * total_ms = analysed_ms when ended_at is "window start"); 38 % of it went unattributed before. */
static void test_critical_path_covers_window_without_warmup(void **state) {
  const char *dir = out_dir("nowarm");
  const char *args[] = {"--config", write_config_text("small", k_small), "--set",
                        "run={\"steps\":3,\"warmup_steps\":0}", "--quiet", "--format", "json", "--out", dir, NULL};
  result *r = run_pb(args);
  if (r->status != 0) fail_msg("exit %d: %s", r->status, r->err);
  cJSON *rep = load_report(dir);
  assert_string_equal(str(rep, "critical_path.ended_at"), "window start");
  double total = num(rep, "critical_path.total_ms"), window = num(rep, "trace.analysed_ms");
  if (fabs(total - window) > 0.002) fail_msg("critical path %.3f ms, analysed window %.3f ms", total, window);
}

static void test_json_stdout_and_duration(void **state) {
  const char *args[] = {"--config", write_config_text("small", k_small), "--set", "run={\"duration_s\":0.5}",
                        "--json", "--out", out_dir("json"), NULL};
  result *r = run_pb(args);
  if (r->status != 0) fail_msg("exit %d: %s", r->status, r->err);
  cJSON *rep = cJSON_Parse(r->out);
  assert_non_null(rep);
  keep_json(rep);
  assert_true(num(rep, "measured_s") >= 0.5);
  assert_true(num(rep, "measured_s") < 1.0);
  assert_accounting_balances(rep);
  /* a duration under a nanosecond is still a limit (it once rounded to 0, "no limit", and ran forever) */
  const char *tiny[] = {"--config", write_config_text("small", k_small), "--set", "run={\"duration_s\":1e-10}",
                        "--quiet", "--out", out_dir("tiny"), NULL};
  r = run_pb(tiny);
  if (r->status != 0) fail_msg("exit %d: %s", r->status, r->err);
  assert_true(r->wall_s < 30);
}

/* A map stage that sleeps 2 ms per sample on one thread cannot feed a device wanting 16 samples per
 * 2 ms: the run is input-bound and the map is named. */
static void test_planted_map_bottleneck(void **state) {
  const char *dir = out_dir("planted");
  const char *args[] = {"--config", write_config_text("small", k_small), "--set", "stages.aug.threads=1",
                        "--set", "stages.aug.ops=[{\"op\":\"sleep\",\"us\":2000}]", "--set", "run.steps=4",
                        "--quiet", "--out", dir, NULL};
  result *r = run_pb(args);
  if (r->status != 0) fail_msg("exit %d: %s", r->status, r->err);
  cJSON *rep = load_report(dir);
  assert_string_equal(at(rep, "classification")->valuestring, "highly_input_bound");
  assert_string_equal(at(rep, "bottleneck.stage")->valuestring, "aug");
  assert_true(num(rep, "device_idle_pct") > 80);
}

/* A slow device with a fast pipeline: not input-bound, the device is the bottleneck, idle is small. */
static void test_device_bound(void **state) {
  const char *dir = out_dir("devbound");
  const char *args[] = {"--config", write_config_text("small", k_small), "--set", "device.step_ms=20",
                        "--set", "run.steps=10", "--quiet", "--out", dir, NULL};
  result *r = run_pb(args);
  if (r->status != 0) fail_msg("exit %d: %s", r->status, r->err);
  cJSON *rep = load_report(dir);
  assert_string_equal(at(rep, "classification")->valuestring, "not_input_bound");
  assert_string_equal(at(rep, "bottleneck.stage")->valuestring, "device");
  assert_true(num(rep, "device_idle_pct") < 5);
  assert_true(num(rep, "accelerator_utilization_pct") > 95);
}

/* SIGINT and SIGTERM at every phase: test_e2e_signals.c. */

/* An output directory that cannot be made fails at once with exit 1, before running. */
static void test_bad_out_dir(void **state) {
  const char *args[] = {"--config", write_config_text("small", k_small), "--out", "/proc/no/such", NULL};
  assert_one_error_line(run_pb(args), 1, "/proc/no/such");
  const char *file_args[] = {"--config", write_config_text("small", k_small), "--out", PB_SOURCE_DIR "/README.md",
                             NULL};
  assert_one_error_line(run_pb(file_args), 1, "Not a directory");
}

/* Epochs over synthetic data need an epoch size; without one the run would never end. */
static void test_epochs_without_size_refused(void **state) {
  const char *cfg = write_config_text("raw", "{\"dataset\":{\"format\":\"raw\",\"record_bytes\":64},\"stages\":["
                                        "{\"type\":\"read\"},{\"type\":\"batch\",\"size\":4}],"
                                        "\"run\":{\"epochs\":1}}");
  const char *args[] = {"--config", cfg, "--data", "synthetic", NULL};
  assert_one_error_line(run_pb(args), 2, "run.epochs");
}

/* Records written by TensorFlow's own TFRecordWriter (tests/fixtures, see make_fixtures.py): framing,
 * CRCs and tf.train.Example parse, the JPEG payloads decode. */
static void test_tensorflow_written_tfrecord(void **state) {
  const char *dir = out_dir("tf");
  const char *cfg = write_config_text(
      "tf", "{\"dataset\":{\"path\":\"" PB_SOURCE_DIR "/tests/fixtures/images.tfrecord\",\"format\":\"tfrecord\"},"
            "\"stages\":[{\"type\":\"read\"},{\"type\":\"decode\"},"
            "{\"type\":\"map\",\"ops\":[{\"op\":\"resize\",\"size\":4}]},{\"type\":\"batch\",\"size\":3}],"
            "\"device\":{\"kind\":\"emulated\",\"step_ms\":1},\"run\":{\"epochs\":2,\"warmup_steps\":0}}");
  const char *args[] = {"--config", cfg, "--quiet", "--out", dir, NULL};
  result *r = run_pb(args);
  if (r->status != 0) fail_msg("exit %d: %s", r->status, r->err);
  cJSON *rep = load_report(dir);
  assert_int_equal(num(rep, "accounting.files_read"), 2);
  assert_int_equal(num(rep, "accounting.samples_decoded"), 6);
  assert_int_equal(num(rep, "accounting.errors"), 0);
  cJSON *batch = cJSON_GetArrayItem(at(rep, "stages"), 3);
  assert_int_equal(num(batch, "bytes_out"), 6 * 4 * 4 * 3); /* 8x8 images resized to 4x4 RGB */
  assert_accounting_balances(rep);
}

static int make_tmp(void **state) { return e2e_make_tmp("pipebench-e2e"); }

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_version_and_help, free_reports),
      cmocka_unit_test_teardown(test_usage_errors, free_reports),
      cmocka_unit_test_teardown(test_gen_refuses_what_it_cannot_write, free_reports),
      cmocka_unit_test_teardown(test_gen_summary, free_reports),
      cmocka_unit_test_teardown(test_bad_configs_exit_2, free_reports),
      cmocka_unit_test_teardown(test_bad_set_exit_2, free_reports),
      cmocka_unit_test_teardown(test_memory_limit_refused, free_reports),
      cmocka_unit_test_teardown(test_gpu_required_without_gpu, free_reports),
      cmocka_unit_test_teardown(test_validate_prints_resolved_config, free_reports),
      cmocka_unit_test_teardown(test_resnet_synthetic_report, free_reports),
      cmocka_unit_test_teardown(test_epochs_account_for_every_sample, free_reports),
      cmocka_unit_test_teardown(test_map_over_non_image_keeps_bytes, free_reports),
      cmocka_unit_test_teardown(test_critical_path_covers_window_without_warmup, free_reports),
      cmocka_unit_test_teardown(test_json_stdout_and_duration, free_reports),
      cmocka_unit_test_teardown(test_planted_map_bottleneck, free_reports),
      cmocka_unit_test_teardown(test_device_bound, free_reports),
      cmocka_unit_test_teardown(test_bad_out_dir, free_reports),
      cmocka_unit_test_teardown(test_epochs_without_size_refused, free_reports),
      cmocka_unit_test_teardown(test_tensorflow_written_tfrecord, free_reports),
  };
  return cmocka_run_group_tests(tests, make_tmp, remove_tmp);
}
