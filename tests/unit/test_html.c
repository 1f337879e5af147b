/* report.html's data and page (src/reports/html.c) and the CSV tables (src/reports/csv.c) on a hand-built record
 * whose figures are known: 1000 steps of 8 samples every 10 ms (800 samples/s), 5 of them warm-up, a 2 ms
 * input wait and 7 ms of compute each. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four headers above first */
#include <cmocka.h>

#include "unit_util.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "csv.h"
#include "html.h"
#include "metrics.h"
#include "timeline.h"

#define MS 1000000ull
#define NSTEPS 1000
#define WARMUP 5

static const char *CFG =
    "{\"name\":\"t\",\"dataset\":{\"format\":\"synthetic\",\"shape\":[4],\"dtype\":\"uint8\"},"
    "\"stages\":[{\"name\":\"slow\",\"type\":\"map\",\"ops\":[]},{\"name\":\"batch\",\"type\":\"batch\",\"size\":8}],"
    "\"device\":{\"kind\":\"emulated\",\"step_ms\":7},\"run\":{\"steps\":995,\"warmup_steps\":5}}";

typedef struct fixture {
  pb_config cfg;
  pb_record rec;
  pb_report rep;
  char dir[64];
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  pb_err err;
  if (pb_config_parse(&f->cfg, "t.json", CFG, NULL, 0, &err)) fail_msg("config: %s", err.msg);
  pb_record *r = &f->rec;
  r->cfg = &f->cfg;
  r->device_count = 1;
  r->ncpu = 2;
  r->start_ns = 1000 * MS;
  const char *types[] = {"source", "map", "batch"};
  r->nstages = 3;
  for (int i = 0; i < 3; i++) {
    pb_stage_rec *s = &r->stages[i];
    snprintf(s->name, sizeof s->name, "%s", i == 0 ? "source" : f->cfg.stages[i - 1].name);
    /* A name that would end the data's <script> element if it were not escaped, and needs CSV quotes
     * (configs allow only [A-Za-z0-9_-]; a hand-edited trace.json could hold anything). */
    if (i == 1) snprintf(s->name, sizeof s->name, "a</script><b>x,y");
    snprintf(s->type, sizeof s->type, "%s", types[i]);
    s->threads = 1;
    s->cfg_index = i - 1;
    s->is_source = i == 0;
    s->batched = i == 2;
    s->queue_capacity = i == 2 ? 1 : 256;
    pb_hist_reset(&s->hist);
  }
  r->steps = calloc(NSTEPS, sizeof *r->steps);
  r->nsteps = NSTEPS;
  for (size_t i = 0; i < NSTEPS; i++) {
    pb_step *st = &r->steps[i];
    uint64_t begin = r->start_ns + i * 10 * MS;
    *st = (pb_step){.prev_end_ns = begin, .ready_ns = begin + 2 * MS, .compute_start_ns = begin + 3 * MS,
                    .compute_end_ns = begin + 10 * MS, .samples = 8, .measured = i >= WARMUP};
  }
  r->window_start_ns = r->steps[WARMUP - 1].compute_end_ns;
  r->window_end_ns = r->steps[NSTEPS - 1].compute_end_ns;
  r->measured_count = NSTEPS - WARMUP;
  r->samples_consumed = 8 * NSTEPS;
  r->timeline = calloc(1, sizeof *r->timeline);
  pb_timeline_init(r->timeline, r->start_ns);
  r->timeline->nseries = 1;
  snprintf(r->timeline->names[0], sizeof r->timeline->names[0], "batch");
  for (int i = 1; i <= 10; i++) {
    float fill = 0.5f;
    pb_timeline_add(r->timeline, r->start_ns + (uint64_t)i * 1000 * MS, &fill);
  }
  pb_metrics_compute(&f->rep, r);
  snprintf(f->dir, sizeof f->dir, "/tmp/pb_html_XXXXXX");
  assert_non_null(mkdtemp(f->dir));
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  const char *files[] = {"report.html", "stages.csv", "steps.csv"};
  char path[128];
  for (size_t i = 0; i < 3; i++) {
    snprintf(path, sizeof path, "%s/%s", f->dir, files[i]);
    unlink(path);
  }
  rmdir(f->dir);
  pb_record_free(&f->rec);
  free(f);
  return 0;
}

static double num(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  assert_true(cJSON_IsNumber(v));
  return v->valuedouble;
}

static const cJSON *arr(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  assert_true(cJSON_IsArray(v));
  return v;
}

static void test_step_bars_are_binned_means(void **state) {
  fixture *f = *state;
  cJSON *d = pb_html_run_data(&f->rep, &f->rec);
  assert_non_null(d);
  const cJSON *s = cJSON_GetObjectItemCaseSensitive(d, "steps");
  assert_int_equal((int)num(s, "count"), NSTEPS - WARMUP);
  int bin = (int)num(s, "bin"); /* 995 steps in at most 400 bars: 3 a bar, 332 bars */
  assert_int_equal(bin, 3);
  assert_int_equal(cJSON_GetArraySize(arr(s, "input_wait_ms")), 332);
  assert_int_equal(cJSON_GetArraySize(arr(s, "first")), 332);
  assert_int_equal(cJSON_GetArrayItem(arr(s, "first"), 1)->valuedouble, 4);
  for (int i = 0; i < 332; i++) { /* the same breakdown as report.json's means */
    assert_float_equal(cJSON_GetArrayItem(arr(s, "input_wait_ms"), i)->valuedouble, f->rep.input_wait_ms, 1e-3);
    assert_float_equal(cJSON_GetArrayItem(arr(s, "compute_ms"), i)->valuedouble, f->rep.compute_ms, 1e-3);
  }
  assert_float_equal(f->rep.compute_ms, 7.0, 1e-9);
  cJSON_Delete(d);
}

static void test_throughput_and_queues_over_time(void **state) {
  fixture *f = *state;
  cJSON *d = pb_html_run_data(&f->rep, &f->rec);
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(d, "throughput");
  const cJSON *rate = arr(t, "samples_per_s");
  assert_int_cmp(cJSON_GetArraySize(rate), >, 50);
  assert_int_cmp(cJSON_GetArraySize(rate), <=, PB_HTML_MAX_RATE_BINS);
  for (int i = 0; i < cJSON_GetArraySize(rate); i++) assert_float_equal(cJSON_GetArrayItem(rate, i)->valuedouble, 800.0, 1e-6);
  assert_float_equal(num(t, "window_start_s"), 0.05, 1e-9);
  assert_float_equal(num(t, "end_s"), 10.0, 1e-9);
  const cJSON *q = cJSON_GetObjectItemCaseSensitive(d, "queues");
  assert_int_equal(cJSON_GetArraySize(arr(q, "t_s")), 10);
  assert_float_equal(cJSON_GetArrayItem(arr(q, "t_s"), 0)->valuedouble, 0.5, 1e-9); /* middle of its interval */
  const cJSON *s0 = cJSON_GetArrayItem(arr(q, "series"), 0);
  assert_float_equal(cJSON_GetArrayItem(arr(s0, "fill"), 9)->valuedouble, 0.5, 1e-9);
  cJSON_Delete(d);
}

/* A short last batch (3 samples, not 8) must not wrap the moving sum; the line ends at the last step. */
static void test_throughput_short_last_batch(void **state) {
  fixture *f = *state;
  f->rec.steps[NSTEPS - 1].samples = 3;
  cJSON *d = pb_html_run_data(&f->rep, &f->rec);
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(d, "throughput");
  const cJSON *rate = arr(t, "samples_per_s"), *ts = arr(t, "t_s");
  int n = cJSON_GetArraySize(rate);
  for (int i = 0; i < n; i++) assert_true(cJSON_GetArrayItem(rate, i)->valuedouble <= 800.0 + 1e-6);
  assert_float_equal(cJSON_GetArrayItem(ts, n - 1)->valuedouble, 10.0, 1e-9);
  assert_true(cJSON_GetArrayItem(rate, n - 1)->valuedouble < 800.0); /* the short batch shows */
  cJSON_Delete(d);
}

static int count(const char *s, const char *what) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, what)); p += strlen(what)) n++;
  return n;
}

static void test_page_is_self_contained(void **state) {
  fixture *f = *state;
  char path[128];
  snprintf(path, sizeof path, "%s/report.html", f->dir);
  snprintf(f->rep.out_dir, sizeof f->rep.out_dir, "/tmp/c-->d"); /* would end an HTML comment */
  assert_int_equal(pb_report_write_html(&f->rep, &f->rec, path), 0);
  char *page = slurp(path);
  assert_int_equal(count(page, "{\"kind\":\"run\""), 1); /* the data is there once */
  assert_null(strstr(page, "-->d"));
  assert_null(strstr(page, "@PB_DATA@"));
  assert_null(strstr(page, "@PB_TITLE@"));
  assert_non_null(strstr(page, "Content-Security-Policy"));
  assert_non_null(strstr(page, "default-src 'none'"));
  /* the stage name's "</script>" is escaped: the page's own two script elements are all there are */
  assert_int_equal(count(page, "</script>"), 2);
  assert_null(strstr(page, "<b>x"));
  /* the data element parses back to the data */
  const char *open = strstr(page, "id=\"pb-data\" type=\"application/json\">");
  assert_non_null(open);
  open = strchr(open, '>') + 1;
  const char *close = strstr(open, "</script>");
  cJSON *back = cJSON_ParseWithLength(open, (size_t)(close - open));
  assert_non_null(back);
  const cJSON *rep = cJSON_GetObjectItemCaseSensitive(back, "report");
  const cJSON *stages = cJSON_GetObjectItemCaseSensitive(rep, "stages");
  assert_string_equal(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(stages, 1), "name")->valuestring,
                      "a</script><b>x,y");
  cJSON_Delete(back);
  free(page);
}

static int lines(const char *s) { return count(s, "\n"); }

static void test_csv_tables(void **state) {
  fixture *f = *state;
  char path[128];
  snprintf(path, sizeof path, "%s/stages.csv", f->dir);
  assert_int_equal(pb_csv_write_stages(&f->rep, path), 0);
  char *csv = slurp(path);
  assert_int_equal(strncmp(csv, "name,type,threads,skipped,calls,", 32), 0);
  assert_int_equal(lines(csv), 1 + f->rep.nstages);
  assert_non_null(strstr(csv, "\n\"a</script><b>x,y\",map,1,0,")); /* quoted: it holds a comma */
  free(csv);
  /* the same columns for a skipped stage (synthetic data: every figure null) */
  f->rep.stages[1].skipped = true;
  assert_int_equal(pb_csv_write_stages(&f->rep, path), 0);
  csv = slurp(path);
  for (char *line = csv, *next; *line; line = next + 1) {
    next = strchr(line, '\n');
    int commas = 0;
    bool quoted = false;
    for (char *p = line; p < next; p++) {
      if (*p == '"') quoted = !quoted;
      commas += !quoted && *p == ',';
    }
    assert_int_equal(commas, 27); /* 28 columns */
  }
  free(csv);
  snprintf(path, sizeof path, "%s/steps.csv", f->dir);
  assert_int_equal(pb_csv_write_steps(&f->rec, path), 0);
  csv = slurp(path);
  assert_int_equal(lines(csv), 1 + NSTEPS);
  /* step 6 is the first measured: starts 50 ms in, waits 2 ms for its batch, computes 7 ms, and the 1 ms
   * between the batch's arrival and the compute is the host's lateness (the last column), not "other" */
  assert_non_null(strstr(csv, "\n6,0,1,8,0,50.000000,52.000000,,,53.000000,60.000000,,,10.000000,2.000000,0.000000,"
                              "7.000000,0.000000,0.000000,1.000000\n"));
  free(csv);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_step_bars_are_binned_means, setup, teardown),
      cmocka_unit_test_setup_teardown(test_throughput_and_queues_over_time, setup, teardown),
      cmocka_unit_test_setup_teardown(test_throughput_short_last_batch, setup, teardown),
      cmocka_unit_test_setup_teardown(test_page_is_self_contained, setup, teardown),
      cmocka_unit_test_setup_teardown(test_csv_tables, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
