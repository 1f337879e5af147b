/* calibration.json (src/record/calibration.c) and the efficiency figures (src/analysis/efficiency.c): a calibration
 * survives a save and load (not-measured figures stay null), another machine's file is refused, dataset
 * entries are found by their key and replaced, a run finds the newest entry for its dataset in the mode
 * its read stage reads, and each stage's ceiling and efficiency follow docs/METRICS.md. */
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

#include "calibration.h"
#include "efficiency.h"
#include "unit_util.h"

static pb_calibration *sample(void) {
  pb_calibration *c = calloc(1, sizeof *c);
  pb_calib_machine_key(c->machine, sizeof c->machine);
  snprintf(c->measured_at, sizeof c->measured_at, "2026-11-24T00:00:00Z");
  c->cores = 4;
  c->memcpy_gb_per_s = 10;
  c->memcpy_all_gb_per_s = 30;
  c->h2d_pinned_gb_per_s = 25;
  c->h2d_pageable_gb_per_s = 8;
  c->step_kernel_target_ms = c->step_kernel_measured_ms = c->step_kernel_error_pct = NAN;
  pb_calib_dataset d = {.files = 10, .bytes = 1000, .block_bytes = 65536, .decode_images_per_s = 500,
                        .decode_mb_per_s = 50, .decode_files = 10};
  snprintf(d.path, sizeof d.path, "/data/x");
  snprintf(d.format, sizeof d.format, "jpeg");
  snprintf(d.scale, sizeof d.scale, "auto");
  double mb[PB_READ_MODES] = {100, 200, 300, NAN};
  memcpy(d.read_mb_per_s, mb, sizeof mb);
  snprintf(d.read_why[PB_READ_DIRECT_RAND], sizeof d.read_why[0], "O_DIRECT is not supported by this file system");
  pb_calib_put(c, &d);
  return c;
}

static void test_save_load_round_trip(void **state) {
  (void)state;
  char dir[] = "/tmp/pb-calib-XXXXXX", file[64];
  assert_non_null(mkdtemp(dir));
  snprintf(file, sizeof file, "%s/calibration.json", dir);
  pb_calibration *c = sample(), *back = calloc(1, sizeof *back);
  pb_err err;
  assert_int_equal(pb_calib_save(file, c, &err), 0);
  assert_int_equal(pb_calib_load(file, c->machine, back, &err), 0);
  assert_string_equal(back->machine, c->machine);
  assert_int_equal(back->cores, 4);
  assert_float_equal(back->memcpy_gb_per_s, 10, 1e-9);
  assert_true(isnan(back->step_kernel_measured_ms)); /* null stays "not measured" */
  assert_int_equal(back->ndatasets, 1);
  assert_float_equal(back->datasets[0].read_mb_per_s[PB_READ_BUFFERED_RAND], 200, 1e-9);
  assert_true(isnan(back->datasets[0].read_mb_per_s[PB_READ_DIRECT_RAND]));
  assert_string_equal(back->datasets[0].read_why[PB_READ_DIRECT_RAND], "O_DIRECT is not supported by this file system");
  assert_non_null(pb_calib_find(back, &c->datasets[0]));
  /* another machine's file: refused, saying whose */
  assert_int_equal(pb_calib_load(file, "elsewhere", back, &err), -EINVAL);
  assert_non_null(strstr(err.msg, "another machine"));
  /* not a calibration at all */
  FILE *f = fopen(file, "w");
  fputs("{\"x\": 1}", f);
  fclose(f);
  assert_int_equal(pb_calib_load(file, NULL, back, &err), -EINVAL);
  assert_non_null(strstr(err.msg, "not a calibration"));
  unlink(file);
  assert_int_equal(pb_calib_load(file, NULL, back, &err), -ENOENT);
  rmdir(dir);
  free(c);
  free(back);
}

static void test_put_replaces_and_bounds(void **state) {
  (void)state;
  pb_calibration *c = sample();
  pb_calib_dataset d = c->datasets[0];
  d.decode_images_per_s = 700;
  pb_calib_put(c, &d); /* same key: replaced */
  assert_int_equal(c->ndatasets, 1);
  assert_float_equal(c->datasets[0].decode_images_per_s, 700, 0);
  for (int i = 0; i < PB_CALIB_MAX_DATASETS + 5; i++) {
    d.files = 100 + (uint64_t)i;
    pb_calib_put(c, &d);
  }
  assert_int_equal(c->ndatasets, PB_CALIB_MAX_DATASETS);
  assert_int_equal(c->datasets[PB_CALIB_MAX_DATASETS - 1].files, 100 + PB_CALIB_MAX_DATASETS + 4); /* newest last */
  free(c);
}

/* A re-measured entry becomes the newest (a run looks from the end), whatever its place before. */
static void test_put_moves_remeasured_last(void **state) {
  (void)state;
  pb_calibration *c = sample();
  pb_calib_dataset a = c->datasets[0], b = a;
  b.files = 2000;
  pb_calib_put(c, &b);
  a.decode_images_per_s = 900;
  pb_calib_put(c, &a); /* --force on the first dataset again */
  assert_int_equal(c->ndatasets, 2);
  assert_int_equal(c->datasets[1].files, 10);
  assert_float_equal(c->datasets[1].decode_images_per_s, 900, 0);
  free(c);
}

/* A hand-edited file: a zero or negative rate is "not measured", a count out of range is 0 (never a NAN
 * cast to an integer), and a file without a positive core count is not a calibration. */
static void test_load_sanitizes(void **state) {
  (void)state;
  char dir[] = "/tmp/pb-calib-XXXXXX", file[64];
  assert_non_null(mkdtemp(dir));
  snprintf(file, sizeof file, "%s/calibration.json", dir);
  FILE *f = fopen(file, "w");
  fputs("{\"machine\":\"m\",\"cores\":2,\"memcpy\":{\"gb_per_s_one_core\":0,\"gb_per_s_all_cores\":-3},"
        "\"gpu\":{\"step_kernel\":{\"error_pct\":-1.5}},"
        "\"datasets\":[{\"path\":\"/d\",\"files\":-4,\"bytes\":\"x\",\"decode\":{\"images_per_s_per_core\":0},"
        "\"read\":{\"block_bytes\":1e300}}]}",
        f);
  fclose(f);
  pb_calibration *c = calloc(1, sizeof *c);
  pb_err err;
  assert_int_equal(pb_calib_load(file, NULL, c, &err), 0);
  assert_nan(c->memcpy_gb_per_s);
  assert_nan(c->memcpy_all_gb_per_s);
  assert_float_equal(c->step_kernel_error_pct, -1.5, 0); /* an error may be negative */
  assert_int_equal(c->ndatasets, 1);
  assert_int_equal(c->datasets[0].files, 0);
  assert_int_equal(c->datasets[0].bytes, 0);
  assert_int_equal(c->datasets[0].block_bytes, 0);
  assert_true(isnan(c->datasets[0].decode_images_per_s));
  f = fopen(file, "w");
  fputs("{\"machine\":\"m\",\"cores\":0,\"memcpy\":{}}", f);
  fclose(f);
  assert_int_equal(pb_calib_load(file, NULL, c, &err), -EINVAL);
  unlink(file);
  rmdir(dir);
  free(c);
}

/* The key holds what changes the measured work: what scale `auto` resolves against (the next resize),
 * fused_crop; and the path made absolute when it exists. */
static void test_dataset_key(void **state) {
  (void)state;
  char dir[] = "/tmp/pb-calib-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char json[1024], cwd[1024];
  assert_non_null(getcwd(cwd, sizeof cwd));
  assert_int_equal(chdir("/tmp"), 0);
  pb_calib_dataset k[4];
  const char *variants[4][3] = {{"./", "224", "false"}, {"", "224", "false"}, {"", "64", "false"}, {"", "224", "true"}};
  for (int v = 0; v < 4; v++) {
    snprintf(json, sizeof json,
             "{\"name\":\"t\",\"dataset\":{\"path\":\"%s%s\",\"format\":\"jpeg\"},\"stages\":["
             "{\"type\":\"read\"},{\"type\":\"decode\",\"fused_crop\":%s},{\"type\":\"map\",\"ops\":"
             "[{\"op\":\"%s\",\"size\":%s}]},{\"type\":\"batch\",\"size\":2}]}",
             variants[v][0], dir + 5, variants[v][2], v == 3 ? "random_resized_crop" : "resize", variants[v][1]);
    pb_config *cfg = calloc(1, sizeof *cfg);
    pb_err err;
    if (pb_config_parse(cfg, "t.json", json, NULL, 0, &err)) fail_msg("%s", err.msg);
    pb_calib_dataset_key(cfg, &k[v]);
    free(cfg);
  }
  assert_int_equal(chdir(cwd), 0);
  assert_string_equal(k[0].path, dir); /* ./pb-calib-x and pb-calib-x from /tmp: the same directory */
  assert_string_equal(k[1].path, dir);
  assert_int_equal(k[1].decode_min_side, 224);
  assert_int_equal(k[2].decode_min_side, 64);
  assert_false(k[1].fused_crop);
  assert_true(k[3].fused_crop);
  assert_int_equal(k[3].decode_min_side, 0); /* auto decodes at full size before a crop */
  pb_calibration *c = calloc(1, sizeof *c);
  pb_calib_put(c, &k[1]);
  assert_non_null(pb_calib_find(c, &k[0]));
  assert_null(pb_calib_find(c, &k[2])); /* another crop size: measured again */
  assert_null(pb_calib_find(c, &k[3]));
  free(c);
  rmdir(dir);
}

static void test_run_lookup(void **state) {
  (void)state;
  char dir[] = "/tmp/pb-calib-XXXXXX", file[PB_PATH_LEN];
  assert_non_null(mkdtemp(dir));
  setenv("PIPEBENCH_CACHE_DIR", dir, 1);
  assert_int_equal(pb_calib_cache_path(file, sizeof file), 0);
  pb_calibration *c = sample();
  pb_err err;
  assert_int_equal(pb_calib_save(file, c, &err), 0);
  pb_config *cfg = calloc(1, sizeof *cfg);
  const char *json = "{\"name\":\"t\",\"dataset\":{\"path\":\"/data/x\",\"format\":\"jpeg\"},"
                     "\"stages\":[{\"type\":\"read\",\"block_bytes\":65536},{\"type\":\"decode\"},"
                     "{\"type\":\"batch\",\"size\":2},{\"type\":\"h2d\",\"pinned\":false}]}";
  assert_int_equal(pb_config_parse(cfg, "t.json", json, NULL, 0, &err), 0);
  pb_ceilings k;
  pb_ceilings_lookup(cfg, false, true, &k);
  assert_true(k.have);
  assert_true(k.dataset);
  assert_float_equal(k.decode_images_per_s, 500, 0);
  assert_float_equal(k.read_mb_per_s, 200, 0); /* buffered, random: the read stage shuffles files */
  assert_string_equal(k.read_mode, "buffered_random");
  assert_float_equal(k.h2d_gb_per_s, 8, 0);    /* pageable, as the h2d stage copies */
  /* files of many blocks are read in order: the sequential figure is their ceiling */
  c->datasets[0].bytes = 10 * 4 * 65536;
  assert_int_equal(pb_calib_save(file, c, &err), 0);
  pb_ceilings_lookup(cfg, false, true, &k);
  assert_float_equal(k.read_mb_per_s, 100, 0);
  assert_string_equal(k.read_mode, "buffered_sequential");
  pb_ceilings_lookup(cfg, true, false, &k);    /* synthetic: no dataset part; emulated: no link */
  assert_true(k.have);
  assert_false(k.dataset);
  assert_nan(k.h2d_gb_per_s);
  assert_nan(k.decode_images_per_s);
  unlink(file);
  pb_ceilings_lookup(cfg, false, false, &k);
  assert_false(k.have);
  assert_non_null(strstr(k.why, "pipebench calibrate"));
  rmdir(dir);
  unsetenv("PIPEBENCH_CACHE_DIR");
  free(cfg);
  free(c);
}

static void test_efficiency(void **state) {
  (void)state;
  static pb_report r;
  memset(&r, 0, sizeof r);
  r.ncpu = 4;
  r.measured_s = 2;
  r.samples_per_s = 300;
  r.device_rate_per_s = 5000;
  r.nstages = 4;
  r.stages[0] = (pb_stage_report){.type = "read", .threads = 1, .samples = 800, .bytes_in = 800 * 100000};
  r.stages[1] = (pb_stage_report){.type = "decode", .threads = 2, .samples = 600};
  r.stages[2] = (pb_stage_report){.type = "map", .threads = 2, .samples = 600};
  r.stages[3] = (pb_stage_report){.type = "batch", .threads = 1, .samples = 600, .bytes_in = 600 * 150528};
  for (int i = 0; i < 4; i++) snprintf(r.stages[i].name, sizeof r.stages[i].name, "%s", r.stages[i].type);
  pb_ceilings k = {.have = true, .cores = 4, .memcpy_gb_per_s = 10, .h2d_gb_per_s = NAN, .dataset = true,
                   .decode_images_per_s = 500, .read_mb_per_s = 200};
  snprintf(k.read_mode, sizeof k.read_mode, "buffered_random");
  pb_efficiency_compute(&r, &k);
  /* read: 200 MB/s / 100 kB per sample = 2000 samples/s per thread; 400/s in the window = 20 % */
  assert_float_equal(r.stages[0].ceiling_per_thread_per_s, 2000, 1e-9);
  assert_float_equal(r.stages[0].efficiency_pct, 20, 1e-9);
  /* decode: 500/s per core x 2 threads; 300/s = 30 % */
  assert_float_equal(r.stages[1].ceiling_per_s, 1000, 1e-9);
  assert_float_equal(r.stages[1].efficiency_pct, 30, 1e-9);
  assert_true(isnan(r.stages[2].ceiling_per_s)); /* map: no machine ceiling */
  assert_null(r.stages[2].ceiling_source);
  assert_string_equal(r.stages[3].ceiling_source, "memcpy_gb_per_s_one_core");
  /* best: decode 500 x 4 cores = 2000 (read 8000, batch ~265k, device 5000) */
  assert_float_equal(r.efficiency.best_samples_per_s, 2000, 1e-9);
  assert_string_equal(r.efficiency.limited_by, "decode");
  assert_float_equal(r.efficiency.pipeline_pct, 15, 1e-9);
  /* the device's rate bounds it too */
  r.device_rate_per_s = 600;
  pb_efficiency_compute(&r, &k);
  assert_string_equal(r.efficiency.limited_by, "device");
  assert_float_equal(r.efficiency.pipeline_pct, 50, 1e-9);
  /* no calibration: nothing, and why */
  pb_ceilings none = {.have = false};
  snprintf(none.why, sizeof none.why, "no calibration of this machine (run pipebench calibrate)");
  pb_efficiency_compute(&r, &none);
  assert_false(r.efficiency.have);
  assert_true(isnan(r.efficiency.pipeline_pct));
  assert_true(isnan(r.stages[1].efficiency_pct));
}

/* A stage a cache replays past: no work in the window, no ceiling; part of the samples, a bound relaxed by
 * its share.  A read stage with emulated storage: its latency per block and bandwidth cap count. */
static void test_efficiency_cache_and_emulation(void **state) {
  (void)state;
  static pb_report r;
  memset(&r, 0, sizeof r);
  r.ncpu = 4;
  r.measured_s = 2;
  r.samples_per_s = 300; /* 600 delivered */
  r.device_rate_per_s = 5000;
  r.nstages = 4;
  r.stages[0] = (pb_stage_report){.type = "read", .threads = 1, .samples = 0};
  r.stages[1] = (pb_stage_report){.type = "decode", .threads = 2, .samples = 100}; /* a sixth of them */
  r.stages[2] = (pb_stage_report){.type = "cache", .threads = 1, .samples = 600};
  r.stages[3] = (pb_stage_report){.type = "batch", .threads = 1, .samples = 600, .bytes_in = 600 * 150528};
  for (int i = 0; i < 4; i++) snprintf(r.stages[i].name, sizeof r.stages[i].name, "%s", r.stages[i].type);
  pb_ceilings k = {.have = true, .cores = 4, .memcpy_gb_per_s = 10, .h2d_gb_per_s = NAN, .dataset = true,
                   .decode_images_per_s = 500, .read_mb_per_s = 200};
  snprintf(k.read_mode, sizeof k.read_mode, "buffered_random");
  pb_efficiency_compute(&r, &k);
  assert_nan(r.stages[0].ceiling_per_s);
  assert_nan(r.stages[0].efficiency_pct);
  assert_float_equal(r.stages[1].efficiency_pct, 5, 1e-9); /* 50/s of 1000/s: its own work */
  /* decode would bound at 500 x 4 x 6 = 12000; the device's 5000 is lower */
  assert_string_equal(r.efficiency.limited_by, "device");
  assert_float_equal(r.efficiency.best_samples_per_s, 5000, 1e-9);
  /* With no cache after it, fewer samples than delivered are the window's edges (elements in flight),
   * not replays: the bound stays decode's own 500 x 4 (a raised bound once failed an e2e check). */
  r.stages[2].type = "map";
  r.stages[1].samples = 590;
  pb_efficiency_compute(&r, &k);
  assert_string_equal(r.efficiency.limited_by, "decode");
  assert_float_equal(r.efficiency.best_samples_per_s, 2000, 1e-9);
  r.stages[2].type = "cache";
  /* emulated storage: 100 kB samples in 64 KiB blocks = 2 blocks, 1 ms each on top of 200 MB/s (0.5 ms):
   * 400/s a thread; a 20 MB/s cap on the stage = 200/s whatever its threads or the cores */
  r.samples_per_s = 150; /* 300 delivered, all read in the window */
  r.stages[0] = (pb_stage_report){.type = "read", .threads = 3, .samples = 300, .bytes_in = 300 * 100000};
  snprintf(r.stages[0].name, sizeof r.stages[0].name, "read");
  k.read_latency_us = 1000;
  k.read_block_bytes = 65536;
  pb_efficiency_compute(&r, &k);
  assert_float_equal(r.stages[0].ceiling_per_thread_per_s, 400, 1e-9);
  assert_float_equal(r.stages[0].ceiling_per_s, 1200, 1e-9);
  assert_string_equal(r.stages[0].ceiling_source, "read_emulated_storage");
  k.read_cap_mb_per_s = 20;
  pb_efficiency_compute(&r, &k);
  assert_float_equal(r.stages[0].ceiling_per_s, 200, 1e-9);
  assert_float_equal(r.stages[0].efficiency_pct, 75, 1e-9); /* 150/s of 200 */
  assert_string_equal(r.efficiency.limited_by, "read");
  assert_float_equal(r.efficiency.best_samples_per_s, 200, 1e-9);
  assert_float_equal(r.efficiency.pipeline_pct, 75, 1e-9);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_save_load_round_trip),
      cmocka_unit_test(test_put_replaces_and_bounds),
      cmocka_unit_test(test_put_moves_remeasured_last),
      cmocka_unit_test(test_load_sanitizes),
      cmocka_unit_test(test_dataset_key),
      cmocka_unit_test(test_run_lookup),
      cmocka_unit_test(test_efficiency),
      cmocka_unit_test(test_efficiency_cache_and_emulation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
