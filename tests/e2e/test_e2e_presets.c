/* Accounting balances in every run (issue 9): every preset (every file in configs/) and example, with real data
 * (a small generated copy of its dataset) and --data synthetic, limited by steps and by epochs.  Every
 * sample the source yields ends consumed, dropped, an error or in flight, and the counts add up to what the
 * dataset holds or the steps took. */
#include "e2e_util.h"

typedef struct preset {
  const char *name, *file;
  const char *sets[8]; /* a small dataset of the same format, NULL-terminated */
  int samples;         /* samples in that dataset (0: a synthetic-format preset) */
} preset;

static const preset k_presets[] = {
    {"resnet", "configs/resnet.json",
     {"dataset.generate.num_files=40", "dataset.generate.image.width=160", "dataset.generate.image.height=120",
      "stages.augment.ops[0].size=64", "stages.shuffle.buffer=16", NULL},
     40},
    {"bert", "configs/bert.json",
     {"dataset.generate.num_files=2", "dataset.generate.samples_per_file=150", "stages.shuffle.buffer=32", NULL},
     300},
    {"cosmoflow", "configs/cosmoflow.json",
     {"dataset.generate.num_files=20", "dataset.generate.record_bytes=40000", "dataset.generate.record_bytes_stdev=1000",
      NULL},
     20},
    {"unet3d", "configs/unet3d.json",
     {"dataset.generate.num_files=12", "dataset.generate.record_bytes=60000", "dataset.generate.record_bytes_stdev=20000",
      NULL},
     12},
    {"engine_bench", "configs/examples/engine_bench.json", {NULL}, 0},
    {"planted_map", "configs/examples/planted_map.json", {"stages.augment.ops[0].us=100", NULL}, 0},
};

/* args for `run` on preset p: its small dataset, batch 4, a fast emulated device, then `extra`. */
static cJSON *run_preset(const preset *p, const char *mode, const char *limit, const char *warmup) {
  char cfg[400], data[400], out[64], batch[64] = "stages.batch.size=4";
  snprintf(cfg, sizeof cfg, "%s/%s", PB_SOURCE_DIR, p->file);
  snprintf(data, sizeof data, "dataset.path=%s/data-%s", g_tmp, p->name);
  snprintf(out, sizeof out, "%s-%s-%s", p->name, mode, limit[4] == 'e' ? "epochs" : "steps");
  const char *args[40] = {"--data", mode, "--device", "emulated", "--set", "device.step_ms=1", "--set", batch,
                          "--set", limit, "--set", warmup, "--set", data, "--no-progress"};
  int n = 15;
  for (int i = 0; p->sets[i]; i++) args[n++] = "--set", args[n++] = p->sets[i];
  args[n] = NULL;
  print_message("%s --data %s --set %s\n", p->file, mode, limit);
  return run_report(cfg, out, args);
}

static void check(cJSON *rep, const preset *p, bool real, bool epochs, int steps) {
  assert_accounting_balances(rep);
  expect_count(rep, "errors", 0);
  assert_true(cJSON_IsFalse(at(rep, "interrupted")));
  /* the memory plan that was checked, and what the process used */
  assert_true(num(rep, "memory.planned_bytes") > 0);
  /* the plan with the queues empty: less than full (every preset has queues), more than nothing */
  assert_true(num(rep, "memory.planned_queues_empty_bytes") > 0);
  assert_true(num(rep, "memory.planned_queues_empty_bytes") < num(rep, "memory.planned_bytes"));
  assert_true(num(rep, "memory.peak_rss_bytes") > 0);
  assert_true(num(rep, "memory.limit_bytes") == num(rep, "config.limits.max_memory_mb") * 1e6);
  if (epochs && real && p->samples) { /* the whole dataset, once: nothing left in flight */
    expect_count(rep, "samples_read", p->samples);
    expect_count(rep, "samples_in_flight", 0);
    double consumed = num(rep, "accounting.samples_consumed"), dropped = num(rep, "accounting.samples_dropped");
    assert_true(consumed + dropped == p->samples);
    assert_true(dropped < 4); /* at most a remainder batch */
  }
  if (!epochs) /* every step consumed one batch of 4: run.steps measured ones after 2 warm-up steps */
    expect_count(rep, "samples_consumed", 4.0 * (steps + 2));
}

static void test_presets(void **state) {
  for (size_t i = 0; i < sizeof k_presets / sizeof *k_presets; i++) {
    const preset *p = &k_presets[i];
    check(run_preset(p, "real", "run.steps=6", "run.warmup_steps=2"), p, true, false, 6);
    check(run_preset(p, "synthetic", "run.steps=6", "run.warmup_steps=2"), p, false, false, 6);
    if (p->samples) /* epochs need a dataset of known size */
      check(run_preset(p, "real", "run.epochs=1", "run.warmup_steps=0"), p, true, true, 0);
    free_reports(state);
  }
}

static int make_tmp(void **state) { return e2e_make_tmp("pipebench-e2e-presets"); }

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_presets, free_reports),
  };
  return cmocka_run_group_tests(tests, make_tmp, remove_tmp);
}
