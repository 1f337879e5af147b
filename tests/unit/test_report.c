/* Unit tests for src/reports/json.c and src/reports/text.c, on a pb_report built by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four headers above first */
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../assert_values.h" /* unit_util.h would clash with the slurp below */
#include "ranks_out.h"
#include "report.h"

/* Stage 0: the in-memory source; 1: a skipped decode; 2: batch; 3: prefetch with NAN figures. */
static void fill_stages(pb_report *r) {
  r->nstages = 4;
  pb_stage_report *s = &r->stages[0];
  snprintf(s->name, sizeof s->name, "source");
  s->type = "source";
  s->threads = 1;
  s->calls = 30720;
  s->self_ms = 1.23456789;
  s->total_ms = 2.5;
  s->mean_us = 0.0501234;
  s->p50_us = 0.05;
  s->p99_us = 0.0912345;
  s->wait_in_ms = 1.26543211;
  s->blocked_out_ms = 20000.123456;
  s->utilization = 0.000053456;
  s->capacity_per_s = 21000000.04;
  s->bytes_in = 0;
  s->bytes_out = 30720ull * 150528;
  s->queue_mean_fill = 0.87654321;
  s->queue_capacity = 64;
  s->critical_path_ms = NAN;
  s->critical_path_pct = NAN;
  s->graph_self_ms = NAN;
  s = &r->stages[1];
  snprintf(s->name, sizeof s->name, "decode");
  s->type = "decode";
  s->threads = 2;
  s->skipped = true;
  s->calls = 99; /* must not leak into the report of a skipped stage */
  s->self_ms = 1;
  s = &r->stages[2];
  snprintf(s->name, sizeof s->name, "batch");
  s->type = "batch";
  s->threads = 1;
  s->calls = 100;
  s = &r->stages[3];
  snprintf(s->name, sizeof s->name, "prefetch");
  s->type = "prefetch";
  s->threads = 1;
  s->mean_us = s->p50_us = s->p99_us = NAN;
  s->critical_path_ms = s->critical_path_pct = NAN;
}

static void fill_accounting(pb_report *r) {
  r->files_read = 30720;
  r->samples_read = 30720;
  r->samples_decoded = 0;
  r->samples_batched = 30720;
  r->samples_consumed = 25600;
  r->samples_dropped = 0;
  r->errors = 1;
  r->samples_in_flight = 5119;
  r->balanced = true;
  r->nfirst_errors = 1;
  snprintf(r->first_errors[0].file, sizeof r->first_errors[0].file, "data/x/0001.jpg");
  snprintf(r->first_errors[0].message, sizeof r->first_errors[0].message, "not a JPEG file");
}

static pb_report *make_report(void) {
  pb_report *r = calloc(1, sizeof *r);
  assert_non_null(r);
  r->version = "0.1.0";
  r->config = cJSON_Parse("{\"name\":\"resnet50\",\"run\":{\"steps\":100}}");
  assert_non_null(r->config);
  snprintf(r->out_dir, sizeof r->out_dir, "pipebench-out/resnet50-20250101-000000");
  snprintf(r->config_name, sizeof r->config_name, "resnet50");
  r->synthetic = true;
  r->device_kind = "emulated";
  snprintf(r->device_name, sizeof r->device_name, "emulated H2D 25 GB/s");
  r->device_count = 1;
  r->timing_source = "emulated";
  r->measured_s = 23.10449;
  r->warmup_steps = 5;
  r->samples_per_s = 1108.2461;
  r->batches_per_s = 4.3291;
  r->bytes_per_s = 166812345.678;
  r->storage_bytes_per_s = 52300000.04, r->read_ops_per_s = 412.46; /* the read stage's: fio's figures */
  r->step_count = 100;
  r->step_mean_ms = 230.90999999;
  r->step_p50_ms = 230.1;
  r->step_p90_ms = 232.4;
  r->step_p99_ms = NAN;
  r->input_wait_ms = 0.12;
  r->h2d_ms = 1.54;
  r->compute_ms = 224.01;
  r->other_ms = 5.24;
  r->device_idle_pct = 3.004999;
  r->accelerator_utilization_pct = 96.995001;
  r->input_bound_pct = 0.7249;
  r->classification = "not_input_bound";
  fill_stages(r);
  snprintf(r->bottleneck_stage, sizeof r->bottleneck_stage, "device");
  snprintf(r->bottleneck_reason, sizeof r->bottleneck_reason,
           "the device computes 97.00 %% of the time; the input pipeline keeps up (capacity model only, "
           "the critical path analysis is not available yet), so a faster pipeline would not help");
  r->bottleneck_capacity_per_s = NAN;
  r->bottleneck_required_per_s = 1142.857142;
  fill_accounting(r);
  r->cpu_s = 1.23449;
  r->cpu_ns_per_sample = 40.18555;
  return r;
}

static void free_report(pb_report *r) {
  cJSON_Delete(r->config);
  free(r);
}

/* "a.b.0.c": object keys, or array indexes where the node is an array. */
static const cJSON *at(const cJSON *j, const char *path) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", path);
  char *save = NULL;
  for (char *tok = strtok_r(buf, ".", &save); j && tok; tok = strtok_r(NULL, ".", &save))
    j = cJSON_IsArray(j) ? cJSON_GetArrayItem(j, atoi(tok)) : cJSON_GetObjectItemCaseSensitive(j, tok);
  return j;
}

static double num_at(const cJSON *j, const char *path) {
  const cJSON *v = at(j, path);
  if (!cJSON_IsNumber(v)) fail_msg("%s is not a number", path);
  return v->valuedouble;
}

static void assert_null_at(const cJSON *j, const char *path) {
  if (!cJSON_IsNull(at(j, path))) fail_msg("%s is not null", path);
}

/* Every key of docs/CONTRACT.md §3 (plus the ones the brief adds), as dotted paths. */
static const char *const contract_paths[] = {
    "pipebench_version",
    "config",
    "data",
    "interrupted",
    "device.kind",
    "device.name",
    "device.count",
    "device.timing_source",
    "measured_s",
    "warmup_steps",
    "throughput.samples_per_s",
    "throughput.batches_per_s",
    "throughput.bytes_per_s",
    "throughput.storage_bytes_per_s",
    "throughput.read_ops_per_s",
    "steps.count",
    "steps.mean_ms",
    "steps.p50_ms",
    "steps.p90_ms",
    "steps.p99_ms",
    "step_breakdown_ms.input_wait",
    "step_breakdown_ms.h2d",
    "step_breakdown_ms.compute",
    "step_breakdown_ms.other",
    "device_idle_pct",
    "accelerator_utilization_pct",
    "input_bound_pct",
    "classification",
    "stages.0.name",
    "stages.0.type",
    "stages.0.threads",
    "stages.0.skipped",
    "stages.0.calls",
    "stages.0.total_ms",
    "stages.0.self_ms",
    "stages.0.mean_us",
    "stages.0.p50_us",
    "stages.0.p99_us",
    "stages.0.wait_in_ms",
    "stages.0.blocked_out_ms",
    "stages.0.utilization",
    "stages.0.capacity_per_s",
    "stages.0.bytes_in",
    "stages.0.bytes_out",
    "stages.0.queue_mean_fill",
    "stages.0.queue_capacity",
    "stages.0.critical_path_ms",
    "stages.0.critical_path_pct",
    "critical_path",
    "bottleneck.stage",
    "bottleneck.reason",
    "bottleneck.capacity_per_s",
    "bottleneck.required_per_s",
    "recommendations",
    "ranks",
    "most_input_bound_rank",
    "accounting.files_read",
    "accounting.samples_read",
    "accounting.samples_decoded",
    "accounting.samples_batched",
    "accounting.samples_consumed",
    "accounting.samples_dropped",
    "accounting.errors",
    "accounting.samples_in_flight",
    "accounting.balanced",
    "accounting.first_errors.0.file",
    "accounting.first_errors.0.message",
    "engine.cpu_s",
    "engine.cpu_ns_per_sample",
};

static void test_json_has_contract_keys(void **state) {
  pb_report *r = make_report();
  cJSON *j = pb_report_to_json(r);
  assert_non_null(j);
  for (size_t i = 0; i < sizeof contract_paths / sizeof contract_paths[0]; i++)
    if (!at(j, contract_paths[i])) fail_msg("missing key %s", contract_paths[i]);
  assert_int_equal(cJSON_GetArraySize(at(j, "stages")), 4);
  cJSON_Delete(j);
  free_report(r);
}

static void test_json_key_order(void **state) {
  static const char *const top[] = {"pipebench_version",
                                    "config",
                                    "source",
                                    "data",
                                    "interrupted",
                                    "device",
                                    "measured_s",
                                    "warmup_steps",
                                    "throughput",
                                    "steps",
                                    "step_breakdown_ms",
                                    "allreduce",
                                    "device_idle_pct",
                                    "accelerator_utilization_pct",
                                    "au_target",
                                    "input_bound_pct",
                                    "classification",
                                    "stages",
                                    "critical_path",
                                    "bottleneck",
                                    "capacity_model",
                                    "model",
                                    "machine",
                                    "recommendations",
                                    "trace",
                                    "ranks",
                                    "most_input_bound_rank",
                                    "accounting",
                                    "engine",
                                    "memory",
                                    "efficiency"};
  pb_report *r = make_report();
  cJSON *j = pb_report_to_json(r);
  const cJSON *c = j->child;
  for (size_t i = 0; i < sizeof top / sizeof top[0]; i++, c = c->next) {
    assert_non_null(c);
    assert_string_equal(c->string, top[i]);
  }
  assert_null(c);
  cJSON_Delete(j);
  free_report(r);
}

static void test_json_values(void **state) {
  pb_report *r = make_report();
  cJSON *j = pb_report_to_json(r);
  assert_string_equal(at(j, "pipebench_version")->valuestring, "0.1.0");
  assert_string_equal(at(j, "data")->valuestring, "synthetic");
  assert_true(cJSON_IsFalse(at(j, "interrupted")));
  assert_string_equal(at(j, "device.name")->valuestring, "emulated H2D 25 GB/s");
  assert_string_equal(at(j, "classification")->valuestring, "not_input_bound");
  assert_true(num_at(j, "steps.count") == 100);
  assert_true(num_at(j, "accounting.samples_in_flight") == 5119);
  assert_true(num_at(j, "stages.0.bytes_out") == 30720.0 * 150528);
  assert_true(num_at(j, "stages.0.queue_capacity") == 64);
  assert_true(cJSON_IsTrue(at(j, "accounting.balanced")));
  assert_string_equal(at(j, "accounting.first_errors.0.message")->valuestring, "not a JPEG file");
  assert_int_equal(cJSON_GetArraySize(at(j, "accounting.first_errors")), 1);
  /* the config is a deep copy: the report's own tree can be freed independently */
  assert_true(at(j, "config") != r->config);
  assert_true(num_at(j, "config.run.steps") == 100);
  cJSON_Delete(j);
  free_report(r);
}

static void test_json_rounding(void **state) {
  pb_report *r = make_report();
  cJSON *j = pb_report_to_json(r);
  assert_true(num_at(j, "measured_s") == 23.104);
  assert_true(num_at(j, "throughput.samples_per_s") == 1108.2);
  assert_true(num_at(j, "throughput.batches_per_s") == 4.329);
  assert_true(num_at(j, "throughput.bytes_per_s") == 166812345.7);
  assert_true(num_at(j, "throughput.storage_bytes_per_s") == 52300000.0);
  assert_true(num_at(j, "throughput.read_ops_per_s") == 412.5);
  assert_true(num_at(j, "steps.mean_ms") == 230.91);
  assert_true(num_at(j, "device_idle_pct") == 3.0);
  assert_true(num_at(j, "accelerator_utilization_pct") == 97.0);
  assert_true(num_at(j, "input_bound_pct") == 0.72);
  assert_true(num_at(j, "stages.0.self_ms") == 1.235);
  assert_true(num_at(j, "stages.0.wait_in_ms") == 1.265);
  assert_true(num_at(j, "stages.0.mean_us") == 0.05);
  assert_true(num_at(j, "stages.0.p99_us") == 0.091);
  assert_true(num_at(j, "stages.0.blocked_out_ms") == 20000.123);
  assert_true(num_at(j, "stages.0.utilization") == 0.0001);
  assert_true(num_at(j, "stages.0.queue_mean_fill") == 0.8765);
  assert_true(num_at(j, "stages.0.capacity_per_s") == 21000000.0);
  assert_true(num_at(j, "bottleneck.required_per_s") == 1142.9);
  assert_true(num_at(j, "engine.cpu_s") == 1.234);
  /* and the printed text is short, not %.17g noise */
  char *text = cJSON_PrintUnformatted(j);
  assert_non_null(strstr(text, "\"mean_ms\":230.91,"));
  assert_non_null(strstr(text, "\"samples_per_s\":1108.2,"));
  cJSON_free(text);
  cJSON_Delete(j);
  free_report(r);
}

static void test_json_nan_is_null(void **state) {
  pb_report *r = make_report();
  cJSON *j = pb_report_to_json(r);
  assert_null_at(j, "steps.p99_ms");
  assert_null_at(j, "stages.0.critical_path_ms");
  assert_null_at(j, "stages.0.critical_path_pct");
  assert_null_at(j, "stages.3.mean_us");
  assert_null_at(j, "bottleneck.capacity_per_s");
  assert_null_at(j, "critical_path"); /* no trace analysis in this report */
  assert_true(cJSON_IsArray(at(j, "recommendations")));
  assert_int_equal(cJSON_GetArraySize(at(j, "recommendations")), 0);
  assert_null_at(j, "stages.0.graph");
  assert_null_at(j, "trace.complete");
  assert_null_at(j, "ranks");
  assert_null_at(j, "most_input_bound_rank");
  cJSON_Delete(j);
  free_report(r);
}

static void test_json_critical_path_and_recommendations(void **state) {
  pb_report *r = make_report();
  r->critical_path_available = true;
  r->critical_path_total_ms = 1000.0004;
  r->npath_segments = 2;
  snprintf(r->path_segments[0].stage, sizeof r->path_segments[0].stage, "decode");
  r->path_segments[0].ms = 900;
  r->path_segments[0].self_ms = 880;
  snprintf(r->path_segments[1].stage, sizeof r->path_segments[1].stage, "device");
  r->path_segments[1].ms = 100;
  snprintf(r->critical_path_stop, sizeof r->critical_path_stop, "window start");
  r->nrecommendations = 1;
  snprintf(r->recommendations[0].action, sizeof r->recommendations[0].action, "--set stages.decode.threads=3");
  snprintf(r->recommendations[0].reason, sizeof r->recommendations[0].reason, "decode is the bottleneck");
  r->recommendations[0].predicted_samples_per_s = 1500.04;
  cJSON *j = pb_report_to_json(r);
  assert_float_equal(num_at(j, "critical_path.total_ms"), 1000.0, 1e-9);
  assert_string_equal(at(j, "critical_path.segments.0.stage")->valuestring, "decode");
  assert_float_equal(num_at(j, "critical_path.segments.0.self_ms"), 880, 1e-9);
  assert_string_equal(at(j, "critical_path.segments.1.stage")->valuestring, "device");
  assert_string_equal(at(j, "recommendations.0.action")->valuestring, "--set stages.decode.threads=3");
  assert_float_equal(num_at(j, "recommendations.0.predicted_samples_per_s"), 1500.0, 1e-9);
  cJSON_Delete(j);
  free_report(r);
}

static void test_json_skipped_stage(void **state) {
  static const char *const measured[] = {
      "calls",          "total_ms",    "self_ms",        "mean_us",  "p50_us",
      "p99_us",         "wait_in_ms",  "blocked_out_ms", "utilization", "capacity_per_s",
      "bytes_in",       "bytes_out",   "queue_mean_fill", "queue_capacity", "critical_path_ms",
      "critical_path_pct"};
  pb_report *r = make_report();
  cJSON *j = pb_report_to_json(r);
  const cJSON *s = at(j, "stages.1");
  assert_string_equal(at(s, "name")->valuestring, "decode");
  assert_string_equal(at(s, "type")->valuestring, "decode");
  assert_true(num_at(s, "threads") == 2);
  assert_true(cJSON_IsTrue(at(s, "skipped")));
  for (size_t i = 0; i < sizeof measured / sizeof measured[0]; i++) assert_null_at(s, measured[i]);
  assert_true(cJSON_IsFalse(at(j, "stages.0.skipped")));
  cJSON_Delete(j);
  free_report(r);
}

static void test_json_nulls_when_absent(void **state) {
  pb_report *r = make_report();
  cJSON_Delete(r->config);
  r->config = NULL;
  r->classification = NULL;
  r->bottleneck_stage[0] = '\0';
  r->nfirst_errors = 0;
  r->synthetic = false;
  r->interrupted = true;
  cJSON *j = pb_report_to_json(r);
  assert_null_at(j, "config");
  assert_null_at(j, "classification");
  assert_null_at(j, "bottleneck");
  assert_string_equal(at(j, "data")->valuestring, "real");
  assert_true(cJSON_IsTrue(at(j, "interrupted")));
  assert_int_equal(cJSON_GetArraySize(at(j, "accounting.first_errors")), 0);
  cJSON_Delete(j);
  free_report(r);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return buf;
}

static void test_write_json_round_trip(void **state) {
  char dir[] = "/tmp/pb_test_report_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[256], tmp[300];
  snprintf(path, sizeof path, "%s/report.json", dir);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  pb_report *r = make_report();
  assert_int_equal(pb_report_write_json(r, path), 0);
  assert_int_equal(access(tmp, F_OK), -1); /* renamed away */
  const char *text = slurp(path);
  size_t len = strlen(text);
  assert_uint_cmp(len, >, 2);
  assert_int_equal(text[len - 1], '\n');
  assert_int_equal(text[len - 2], '}');
  assert_non_null(strchr(text, '\t')); /* pretty printed */
  cJSON *back = cJSON_Parse(text);
  assert_non_null(back);
  cJSON *direct = pb_report_to_json(r);
  assert_true(cJSON_Compare(back, direct, true));
  cJSON_Delete(back);
  cJSON_Delete(direct);
  /* overwriting works; a missing directory is an errno */
  assert_int_equal(pb_report_write_json(r, path), 0);
  snprintf(path, sizeof path, "%s/no/such/dir/report.json", dir);
  assert_int_equal(pb_report_write_json(r, path), -ENOENT);
  snprintf(path, sizeof path, "%s/report.json", dir);
  unlink(path);
  rmdir(dir);
  free_report(r);
}

/* Runs the text printer into a memory buffer. */
static char *print_text(const pb_report *r) {
  static char buf[1 << 16];
  FILE *f = fmemopen(buf, sizeof buf, "w");
  assert_non_null(f);
  pb_report_print_text(r, f);
  fclose(f);
  return buf;
}

static void assert_contains(const char *hay, const char *needle) {
  if (!strstr(hay, needle)) fail_msg("text lacks \"%s\" in:\n%s", needle, hay);
}

static void assert_lines_under_100(const char *text) {
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    if (n >= 100) fail_msg("line of %zu columns: %.*s", n, (int)n, p);
    p += n + (nl ? 1 : 0);
  }
}

static void test_text_summary(void **state) {
  pb_report *r = make_report();
  const char *t = print_text(r);
  assert_contains(t, "pipebench 0.1.0  resnet50  data=synthetic  device=emulated (emulated H2D 25 GB/s)\n");
  assert_contains(t, "measured      100 steps in 23.104 s (5 warm-up steps excluded)\n");
  assert_contains(t,
                  "throughput    1108.2 samples/s   4.33 batches/s   166.8 MB/s of batches\n"
                  "storage       52.3 MB/s, 412 IOPS: what the read stage read from dataset.path\n");
  assert_contains(t, "step time     mean 230.91 ms   p50 230.10   p90 232.40   p99 n/a\n");
  assert_contains(t, "breakdown     input_wait 0.12 ms  h2d 1.54 ms  compute 224.01 ms  other 5.24 ms");
  assert_contains(t, "device        idle 3.00 %   AU 97.00 %   input-bound 0.72 %  -> not_input_bound\n");
  assert_contains(t, "bottleneck    device: the device computes");
  assert_contains(t, "capacity n/a samples/s   required 1142.9 samples/s");
  assert_contains(t, "stage        type     thr");
  assert_contains(t, "decode       decode     2  skipped (synthetic data)\n");
  assert_contains(t, "2.1e+07");
  assert_contains(t, "accounting    read 30720 = consumed 25600 + dropped 0 + errors 1 + in flight 5119"
                     "  (balanced)\n");
  assert_contains(t, "first errors  data/x/0001.jpg: not a JPEG file\n");
  /* errors near the top too, right after the measured line (issue 34) */
  assert_contains(t, " warm-up steps excluded)\nerrors        1 samples failed (0.0 % of those read)\n"
                     "              data/x/0001.jpg: not a JPEG file\nthroughput");
  assert_contains(t,
                  "process       cpu 1.234 s (40.2 ns per sample, every thread: the stages' work and the engine's)\n");
  assert_contains(t, "output        pipebench-out/resnet50-20250101-000000\n");
  assert_null(strstr(t, "NOT BALANCED"));
  assert_null(strstr(t, "INTERRUPTED"));
  assert_lines_under_100(t);
  free_report(r);
}

/* Labels that mean what they say (issue 34): the critical path names the stages that matter and counts the
 * rest; a calibrated stage that does not bind is "not limiting", the one that does gets its share. */
static void test_text_labels_that_matter(void **state) {
  pb_report *r = make_report();
  r->critical_path_available = true;
  r->critical_path_total_ms = 2000;
  r->trace_complete = true;
  r->npath_segments = 3;
  r->path_segments[0] = (pb_path_segment){.stage = "device", .ms = 1990, .self_ms = 1990};
  r->path_segments[1] = (pb_path_segment){.stage = "decode", .ms = 8, .self_ms = 8};
  r->path_segments[2] = (pb_path_segment){.stage = "batch", .ms = 2, .self_ms = 2};
  r->efficiency.have = true;
  r->efficiency.best_samples_per_s = 2000, r->efficiency.pipeline_pct = 55;
  snprintf(r->efficiency.limited_by, sizeof r->efficiency.limited_by, "decode");
  snprintf(r->bottleneck_stage, sizeof r->bottleneck_stage, "decode");
  for (int i = 1; i <= 2; i++) {
    r->stages[i].ceiling_per_thread_per_s = 500 * i, r->stages[i].ceiling_per_s = 1000 * i;
    r->stages[i].efficiency_pct = 40 / i;
  }
  const char *t = print_text(r);
  assert_contains(t, "critical path 2000.0 ms: device 99.5 % (self 99.5 %); 2 more under 1 % each\n");
  assert_contains(t, "              decode: 40% of 1000.0 samples/s (500.0 per thread x 2)\n");
  assert_contains(t, "              batch: not limiting (its ceiling 2000.0 samples/s: 1000.0 per thread x 1)\n");
  snprintf(r->efficiency.source, sizeof r->efficiency.source, "/home/u/.cache/pipebench/calibration-vm.json");
  assert_contains(print_text(r), "\n              figures from /home/u/.cache/pipebench/calibration-vm.json\n");
  free_report(r);
}

/* DLIO / MLPerf Storage's pass/fail (issue 34): the line, the JSON and the one-line result; AU is judged as
 * shown, so 89.996 % passes a 90 % target; no target, no line and null. */
static void test_au_target(void **state) {
  pb_report *r = make_report();
  r->accelerator_utilization_pct = 85.8, r->au_target_pct = 90, r->au_passed = 0;
  const char *t = print_text(r);
  assert_contains(t, "AU target     AU 85.80 % < 90 %: FAIL\n");
  cJSON *j = pb_report_to_json(r);
  assert_true(num_at(j, "au_target.target_pct") == 90);
  assert_true(cJSON_IsFalse(at(j, "au_target.passed")));
  cJSON_Delete(j);
  char *line = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&line, &len);
  pb_report_print_line(r, f);
  fclose(f);
  assert_non_null(strstr(line, "  AU target 90 %: FAIL"));
  free(line);
  r->accelerator_utilization_pct = 96.25, r->au_passed = 1;
  assert_contains(print_text(r), "AU target     AU 96.25 % >= 90 %: PASS\n");
  r->au_target_pct = 0, r->au_passed = -1;
  assert_null(strstr(print_text(r), "AU target"));
  j = pb_report_to_json(r);
  assert_true(cJSON_IsNull(at(j, "au_target")));
  cJSON_Delete(j);
  free_report(r);
}

/* A long error message is wrapped whole, never cut mid-word (it was clipped at 99 columns); no errors, no
 * errors line. */
static void test_text_errors_whole(void **state) {
  pb_report *r = make_report();
  snprintf(r->first_errors[0].message, sizeof r->first_errors[0].message,
           "decoding: bad JPEG: Premature end of JPEG file (no end-of-image marker after the scan data; expected a "
           "file starting FF D8 and ending FF D9)");
  const char *t = print_text(r);
  assert_contains(t, "ending FF D9)\n");
  assert_lines_under_100(t);
  r->errors = 0;
  r->samples_consumed += 1; /* balanced again */
  t = print_text(r);
  assert_null(strstr(t, "errors        "));
  free_report(r);
}

static void test_text_not_balanced_and_long_text(void **state) {
  pb_report *r = make_report();
  r->balanced = false;
  r->samples_in_flight = 5000; /* 119 samples lost */
  memset(r->device_name, 'x', sizeof r->device_name - 1);
  memset(r->bottleneck_reason, 'y', 300); /* one unbreakable word, longer than a line */
  r->interrupted = true;
  snprintf(r->stages[0].name, sizeof r->stages[0].name, "a_stage_name_much_longer_than_the_column");
  r->stages[0].calls = 12345678901ull;
  const char *t = print_text(r);
  assert_contains(t, "NOT BALANCED");
  assert_contains(t, "= 119 ***");
  assert_contains(t, "status        INTERRUPTED: partial report");
  assert_contains(t, "a_stage_name source     1 1.235e+10 ");
  assert_lines_under_100(t);
  free_report(r);
}

/* A job report sums the ranks' accounting; a rank that sent none (it wrote no report) leaves what it
 * read unknown: the job is then not balanced, and says which rank. */
static void test_job_accounting_with_a_silent_rank(void **state) {
  (void)state;
  cJSON *r[2];
  r[0] = cJSON_Parse("{\"rank\":0,\"status\":0,\"throughput\":{\"samples_per_s\":10},\"accounting\":{"
                     "\"samples_read\":8,\"samples_consumed\":8,\"balanced\":true,\"first_errors\":[]}}");
  r[1] = cJSON_Parse("{\"rank\":1,\"status\":1}");
  cJSON *job = pb_ranks_aggregate(r, 2);
  assert_non_null(job);
  const cJSON *acc = cJSON_GetObjectItemCaseSensitive(job, "accounting");
  assert_false(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(acc, "balanced")));
  const cJSON *who = cJSON_GetObjectItemCaseSensitive(acc, "unaccounted_ranks");
  assert_int_equal(cJSON_GetArraySize(who), 1);
  assert_int_equal(cJSON_GetArrayItem(who, 0)->valueint, 1);
  cJSON_Delete(job);
  cJSON_Delete(r[1]);
  r[1] = cJSON_Duplicate(r[0], true); /* both accounted and balanced: balanced, no list */
  cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(r[1], "rank"), 1);
  job = pb_ranks_aggregate(r, 2);
  acc = cJSON_GetObjectItemCaseSensitive(job, "accounting");
  assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(acc, "balanced")));
  assert_null(cJSON_GetObjectItemCaseSensitive(acc, "unaccounted_ranks"));
  cJSON_Delete(job);
  cJSON_Delete(r[0]);
  cJSON_Delete(r[1]);
}

/* Two ranks that wrote reports; rank 1 the more input-bound, so the job's figures are its. */
static void job_ranks(cJSON *r[2]) {
  r[0] = cJSON_Parse(
      "{\"rank\":0,\"host\":\"h0\",\"status\":0,\"throughput\":{\"samples_per_s\":10},\"input_bound_pct\":2.5,"
      "\"device_idle_pct\":1,\"classification\":\"not_input_bound\",\"bottleneck\":{\"stage\":\"device\"},"
      "\"step_breakdown_ms\":{\"comm\":0.5},\"shard\":{\"files\":4},\"accounting\":{\"samples_read\":8,"
      "\"samples_consumed\":8,\"balanced\":true,\"first_errors\":[]}}");
  r[1] = cJSON_Parse(
      "{\"rank\":1,\"host\":\"h1\",\"status\":0,\"throughput\":{\"samples_per_s\":20},\"input_bound_pct\":7.5,"
      "\"device_idle_pct\":5,\"classification\":\"input_bound\",\"bottleneck\":{\"stage\":\"decode\"},"
      "\"step_breakdown_ms\":{\"comm\":1.25},\"shard\":{\"files\":3},\"accounting\":{\"samples_read\":16,"
      "\"samples_consumed\":15,\"errors\":1,\"balanced\":true,\"first_errors\":[]}}");
  assert_non_null(r[0]);
  assert_non_null(r[1]);
}

/* The job's summary names every rank and the most input-bound one's bottleneck; its report.json is the
 * tree as printed, and a directory that is not there is an error line naming the file. */
static void test_job_summary_and_write(void **state) {
  cJSON *r[2];
  job_ranks(r);
  cJSON *job = pb_ranks_aggregate(r, 2);
  assert_non_null(job);
  assert_int_equal(cJSON_GetObjectItemCaseSensitive(job, "figures_from_rank")->valueint, 1);
  char dir[] = "/tmp/pb_test_job_XXXXXX", path[300];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/trace.json", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fclose(f);
  static char t[1 << 14];
  f = fmemopen(t, sizeof t, "w");
  assert_non_null(f);
  pb_ranks_print_text(f, job, dir, "job");
  fclose(f);
  assert_contains(t, "pipebench 0.1.0  job  2 ranks\nthroughput    30.0 samples/s over all ranks\n");
  assert_contains(t,
                  "\n0     h0                       10.0     1.00     2.50     0.500 not_input_bound          device   "
                  "          4\n1     h1                       20.0     5.00     7.50     1.250 input_bound         "
                  "     decode             3\n");
  assert_contains(t, "most input-bound rank 1: bottleneck decode\n");
  assert_contains(t, "skew          samples/s min 10.0 max 20.0 (max/min 2.000)\n");
  assert_contains(t, "accounting    read 24 = consumed 23 + dropped 0 + errors 1 + in flight 0  (balanced)\n");
  assert_contains(t, "trace         ");
  assert_contains(t, "/trace.json (every rank, one process per rank: open in https://ui.perfetto.dev)\n");
  unlink(path);

  char *text = NULL;
  pb_err err;
  assert_int_equal(pb_ranks_write_json(job, dir, &text, &err), 0);
  assert_non_null(text);
  snprintf(path, sizeof path, "%s/report.json", dir);
  const char *written = slurp(path);
  assert_int_equal(strlen(written), strlen(text) + 1);
  assert_memory_equal(written, text, strlen(text));
  assert_int_equal(written[strlen(text)], '\n');
  free(text);
  unlink(path);
  snprintf(path, sizeof path, "%s/no", dir);
  assert_int_equal(pb_ranks_write_json(job, path, &text, &err), -ENOENT);
  assert_non_null(text); /* for --json, written or not */
  free(text);
  assert_contains(err.msg,
                  "/no/report.json: cannot write the job's report: No such file or directory (expected a "
                  "writable directory)");
  rmdir(dir);
  cJSON_Delete(job);
  cJSON_Delete(r[0]);
  cJSON_Delete(r[1]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_json_has_contract_keys),
      cmocka_unit_test(test_json_key_order),
      cmocka_unit_test(test_json_values),
      cmocka_unit_test(test_json_rounding),
      cmocka_unit_test(test_json_nan_is_null),
      cmocka_unit_test(test_json_critical_path_and_recommendations),
      cmocka_unit_test(test_json_skipped_stage),
      cmocka_unit_test(test_json_nulls_when_absent),
      cmocka_unit_test(test_write_json_round_trip),
      cmocka_unit_test(test_text_summary),
      cmocka_unit_test(test_text_errors_whole),
      cmocka_unit_test(test_text_labels_that_matter),
      cmocka_unit_test(test_au_target),
      cmocka_unit_test(test_text_not_balanced_and_long_text),
      cmocka_unit_test(test_job_accounting_with_a_silent_rank),
      cmocka_unit_test(test_job_summary_and_write),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
