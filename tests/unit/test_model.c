/* The model of the pipeline (src/analysis/model.h): its simulation on hand-built models whose answers
 * are known analytically, and its use by the bottleneck rule and the recommendations. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "analysis.h"
#include "model.h"
#include "unit_util.h"

#define MS 1e-3

static void stage(pb_model *m, const char *name, const char *type, pb_model_role role, int threads, double service_s,
                  double cpu_share, int queue_capacity) {
  pb_model_stage *s = &m->stages[m->nstages];
  memset(s, 0, sizeof *s);
  snprintf(s->name, sizeof s->name, "%s", name);
  snprintf(s->type, sizeof s->type, "%s", type);
  s->role = role;
  s->threads = threads;
  s->max_threads = role == PB_ROLE_SHUFFLE || role == PB_ROLE_CACHE ? 1 : 1024;
  s->queue_capacity = queue_capacity;
  for (int i = 0; i < PB_MODEL_QUANTILES; i++) s->service_s[i] = service_s;
  s->mean_s = service_s;
  s->cpu_share = cpu_share;
  s->report_row = m->nstages;
  s->valid = true;
  m->nstages++;
}

static void device(pb_model *m, double step_s) {
  for (int i = 0; i < PB_MODEL_QUANTILES; i++) m->device_s[i] = step_s;
  m->device_mean_s = step_s;
}

/* An empty valid model on 2 cores with one device: batch size, device step, warm-up and measured steps,
 * seed; the caller adds its stages. */
static pb_model *new_model(int batch, double step_s, int64_t warmup, int64_t steps, uint64_t seed) {
  pb_model *m = calloc(1, sizeof *m);
  m->batch_size = batch;
  m->devices = 1;
  device(m, step_s);
  m->cores = m->cores_usable = 2;
  m->warmup_steps = warmup;
  m->steps = steps;
  m->seed = seed;
  m->service_scale = 1;
  m->valid = true;
  return m;
}

/* source (1 ms) -> map (2 ms, 1 thread) -> batch of 4 -> device 4 ms a step: the map's 500/s bind. */
static pb_model *tandem(void) {
  pb_model *m = new_model(4, 4 * MS, 5, 300, 1);
  stage(m, "read", "read", PB_ROLE_SOURCE, 1, 1 * MS, 0, 256);
  stage(m, "map", "map", PB_ROLE_SERVER, 1, 2 * MS, 0, 256);
  stage(m, "batch", "batch", PB_ROLE_BATCH, 1, 0, 0, 1);
  m->stages[2].batched = false;
  return m;
}

static pb_model_result sim(const pb_model *m, const pb_model_change *c) {
  pb_model_result r;
  assert_true(pb_model_simulate(m, c, 1, &r));
  return r;
}

static void test_tandem_deterministic(void **state) {
  pb_model *m = tandem();
  pb_model_result r = sim(m, NULL);
  /* a batch every 8 ms, 4 ms of it computed: 500 samples/s, idle 50 % */
  assert_float_equal(r.samples_per_s, 500, 1);
  assert_float_equal(r.idle_pct, 50, 0.5);
  assert_float_equal(r.utilization[1], 1.0, 0.01);
  /* the source blocks half the time once the map's queue of 256 is full; it fills for 512 ms first, 472 of
   * them after the warm-up (5 x 8 ms): (0.472 + (2.4 - 0.472) / 2) / 2.4 = 0.598 */
  assert_float_equal(r.utilization[0], 0.598, 0.01);
  free(m);
}

/* Two map threads: 1000/s, which the source and the device (4 in 4 ms) both allow: the device never waits. */
static void test_threads_until_the_next_limit(void **state) {
  pb_model *m = tandem();
  pb_model_change c;
  pb_model_change_init(&c);
  c.threads[1] = 2;
  pb_model_result r = sim(m, &c);
  assert_float_equal(r.samples_per_s, 1000, 10);
  c.threads[1] = 8; /* more threads than the source feeds: still 1000 */
  r = sim(m, &c);
  assert_float_equal(r.samples_per_s, 1000, 10);
  free(m);
}

/* A CPU-bound map (share 1) on one core: however many threads, 1 core / 2 ms = 500 samples/s; on two
 * cores 1000/s.  The cores' limit is what the processor sharing gives. */
static void test_cores_are_shared(void **state) {
  pb_model *m = tandem();
  m->stages[0].service_s[0] = 0; /* a source that costs nothing */
  for (int i = 0; i < PB_MODEL_QUANTILES; i++) m->stages[0].service_s[i] = 0.1 * MS;
  m->stages[1].cpu_share = 1;
  m->stages[1].threads = 4;
  device(m, 1 * MS); /* the device takes 4000/s */
  m->cores = 1;
  pb_model_result r = sim(m, NULL);
  assert_float_equal(r.samples_per_s, 500, 10);
  assert_float_equal(r.cores_used, 1.0, 0.02);
  m->cores = 2;
  r = sim(m, NULL);
  assert_float_equal(r.samples_per_s, 1000, 15);
  /* half CPU, half waiting: 4 threads x 1 ms of CPU each per sample on 1 core = 1000/s; the waits overlap */
  m->cores = 1;
  m->stages[1].cpu_share = 0.5;
  r = sim(m, NULL);
  assert_float_equal(r.samples_per_s, 1000, 20);
  free(m);
}

/* A bursty device: 9 steps in 10 take 0.2 ms, the 10th 18.2 ms (mean 2 ms a batch of 16); a 1-thread map
 * 1.3x faster than the mean need, whose queue holds one batch.  Depth 1 leaves the device waiting
 * after every run of short steps; a deep buffer absorbs the bursts, and the device is then the limit
 * (idle near 0). */
static void test_variance_needs_depth(void **state) {
  pb_model *m = tandem();
  m->batch_size = 16;
  for (int i = 0; i < PB_MODEL_QUANTILES; i++) m->device_s[i] = i % 10 == 9 ? 18.2 * MS : 0.2 * MS;
  m->device_mean_s = 0;
  for (int i = 0; i < PB_MODEL_QUANTILES; i++) m->device_mean_s += m->device_s[i] / PB_MODEL_QUANTILES;
  double per_sample = m->device_mean_s / 16 / 1.3;
  for (int i = 0; i < PB_MODEL_QUANTILES; i++) m->stages[1].service_s[i] = per_sample;
  for (int i = 0; i < PB_MODEL_QUANTILES; i++) m->stages[0].service_s[i] = 0.001 * MS;
  m->stages[1].mean_s = per_sample;
  m->stages[1].queue_capacity = 16;
  m->steps = 3000;
  pb_model_change c;
  pb_model_change_init(&c);
  c.queue_capacity[2] = 1;
  pb_model_result shallow = sim(m, &c);
  c.queue_capacity[2] = 64;
  pb_model_result deep = sim(m, &c);
  print_message("bursty device: idle %.1f %% at depth 1, %.1f %% at depth 64\n", shallow.idle_pct, deep.idle_pct);
  assert_true(shallow.idle_pct > deep.idle_pct + 5);
  assert_true(deep.idle_pct < 2);
  assert_true(deep.samples_per_s > shallow.samples_per_s * 1.05);
  free(m);
}

/* The device's recorded steps, replayed in their order (model.h: device_seq_s).  Half the steps take 0 ms,
 * half 2 ms (a mean of 1 ms a batch of 1), fed by a 1-thread map of 0.9 ms; ahead of the device are the
 * batch queue (depth D), the batch thread's blocked batch, the map's queue of 1 and the map's blocked
 * sample: D + 3.  Clustered in runs of 10 (A), each run of ten 0 ms steps empties what the 2 ms run before
 * left: at depth 2 the ten and the next run's first step wait for 11 - 5 batches x 0.9 ms = 5.4 ms in every
 * 25.4 ms cycle, idle 21.3 %; at depth 64 each cycle adds 22.2 - 20 = 2.2 batches, and only the first runs
 * wait (about 7 x 0.9 ms in 1 s).
 * Alternating (B), a 2 ms step makes 2.2 batches for the 0 ms step after it: no wait at depth 2.  Drawn
 * i.i.d. from the same quantiles, A and B are one prediction: the order, which sets a buffer's idle, is
 * lost. */
static pb_model *recorded_device(bool clustered, bool replay) {
  pb_model *m = new_model(1, 1 * MS, 3, 1000, 5);
  stage(m, "read", "read", PB_ROLE_SOURCE, 1, 0.001 * MS, 0, 1);
  stage(m, "map", "map", PB_ROLE_SERVER, 1, 0.9 * MS, 0, 1);
  stage(m, "batch", "batch", PB_ROLE_BATCH, 1, 0, 0, 2);
  for (int i = 0; i < PB_MODEL_QUANTILES; i++) m->device_s[i] = i % 2 ? 2 * MS : 0;
  for (int i = 0; replay && i < 1003; i++) m->device_seq_s[i] = (float)(((clustered ? i / 10 : i) % 2) ? 2 * MS : 0);
  m->ndevice_seq = replay ? 1003 : 0;
  return m;
}

static void test_device_steps_replayed_in_order(void **state) {
  pb_model *a = recorded_device(true, true), *b = recorded_device(false, true);
  pb_model_change c;
  pb_model_change_init(&c);
  pb_model_result a2 = sim(a, &c), b2 = sim(b, &c);
  c.queue_capacity[2] = 64;
  pb_model_result a64 = sim(a, &c);
  print_message("replayed: clustered %.2f %% idle at depth 2, %.2f %% at 64; alternating %.2f %% at 2\n", a2.idle_pct,
                a64.idle_pct, b2.idle_pct);
  assert_double_between(a2.idle_pct, 19.3, 23.3); /* 21.3 % */
  assert_double_cmp(a64.idle_pct, <, 1.5);
  assert_double_cmp(b2.idle_pct, <, 1.5);
  assert_double_between(a2.samples_per_s, 20 / 25.4e-3 * 0.97, 20 / 25.4e-3 * 1.03); /* 20 in 25.4 ms */
  free(a);
  free(b);
  a = recorded_device(true, false), b = recorded_device(false, false);
  pb_model_change_init(&c);
  pb_model_result ia = sim(a, &c), ib = sim(b, &c);
  print_message("i.i.d. draws: %.2f %% and %.2f %% idle at depth 2\n", ia.idle_pct, ib.idle_pct);
  assert_double_cmp(ia.idle_pct, ==, ib.idle_pct);
  free(a);
  free(b);
}

/* A stage's pace over the run (model.h: level).  12 workers call back to back for 10 s, each call 250-300 us
 * (uniform, i.i.d.); drifting, the same calls x (1 + 0.1 sin(2 pi t / 1 s)).  The i.i.d. windows' means
 * spread by chance alone: no levels, the plain draws.  The drifting ones keep the drift: the window at
 * 0.2-0.3 s (the sine's top) near 1.098 (the sine's mean over it; the calls' mean, which the fast windows'
 * many calls pull down, and the shrinkage move it by under 1 %), the one at 0.7-0.8 s near 0.902. */
static uint64_t next_u64(uint64_t *x) { /* splitmix64 */
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static void calls(double *start_s, double *service_s, size_t *n, bool drift) {
  uint64_t rng = 7;
  *n = 0;
  for (int k = 0; k < 12; k++)
    for (double t = 0; t < 10;) {
      double u = (double)(next_u64(&rng) >> 11) / 9007199254740992.0;
      double d = (250 + 50 * u) * 1e-6 * (drift ? 1 + 0.1 * sin(2 * M_PI * t) : 1);
      start_s[*n] = t, service_s[(*n)++] = d;
      t += d;
    }
}

static void test_levels_keep_a_drift(void **state) {
  size_t cap = 12 * 10 / 200e-6 + 16, n;
  double *start_s = malloc(cap * sizeof *start_s), *service_s = malloc(cap * sizeof *service_s);
  pb_model_stage st;
  memset(&st, 0, sizeof st);
  calls(start_s, service_s, &n, false);
  pb_model_fit_levels(&st, start_s, service_s, n, 10);
  print_message("i.i.d.: %zu calls, %d levels\n", n, st.nlevels);
  assert_int_equal(st.nlevels, 0);
  calls(start_s, service_s, &n, true);
  pb_model_fit_levels(&st, start_s, service_s, n, 10);
  print_message("drifting: %d levels of %.3f s, %.4f at 0.2-0.3 s, %.4f at 0.7-0.8 s\n", st.nlevels, st.level_window_s,
                st.level[2], st.level[7]);
  assert_int_equal(st.nlevels, 100);
  assert_double_between(st.level[2], 1.085, 1.105);
  assert_double_between(st.level[7], 0.895, 0.915);
  free(start_s);
  free(service_s);
}

/* The simulation follows the levels in time: one 1 ms thread (1000/s) paced 0.5x and 1.5x in turns of
 * 100 ms makes 200 + 66.7 samples in every 200 ms, 1333/s, for a device that could take 4000/s. */
static void test_levels_simulated(void **state) {
  pb_model *m = tandem();
  for (int i = 0; i < PB_MODEL_QUANTILES; i++) m->stages[1].service_s[i] = 1 * MS;
  m->stages[1].mean_s = 1 * MS;
  for (int i = 0; i < PB_MODEL_QUANTILES; i++) m->stages[0].service_s[i] = 0.001 * MS;
  device(m, 1 * MS);
  m->steps = 1000;
  pb_model_result flat = sim(m, NULL);
  m->stages[1].nlevels = 100;
  m->stages[1].level_window_s = 0.1;
  for (int w = 0; w < 100; w++) m->stages[1].level[w] = w % 2 ? 1.5f : 0.5f;
  pb_model_result paced = sim(m, NULL);
  print_message("1 ms map: %.1f/s flat, %.1f/s paced 0.5x/1.5x\n", flat.samples_per_s, paced.samples_per_s);
  assert_double_between(flat.samples_per_s, 990, 1010);
  assert_double_between(paced.samples_per_s, 1333.3 * 0.97, 1333.3 * 1.03);
  free(m);
}

/* A cache after read: the first epoch (1000 samples) at the read's 1000/s, the rest from memory at the
 * device's rate (batch 10 in 0.1 ms: 100,000/s).  Over 100 steps (one epoch) the cache gains nothing;
 * over 1000 steps: 10,000 samples in 1 s + 9,000 / 100,000 s = 1.09 s, 9,174/s; over 10,000 steps (past
 * what is simulated step by step) 100,000 in 1 + 0.99 s = 50,251/s. */
static void test_cache_over_the_run(void **state) {
  pb_model *m = new_model(10, 0.1 * MS, 0, 0, 2);
  stage(m, "read", "read", PB_ROLE_SOURCE, 1, 1 * MS, 0, 256);
  stage(m, "batch", "batch", PB_ROLE_BATCH, 1, 0, 0, 1);
  m->epoch_samples = 1000;
  pb_model_change c;
  pb_model_change_init(&c);
  c.cache_after = 0;
  m->steps = 100;
  assert_float_equal(sim(m, &c).samples_per_s, 1000, 15);
  m->steps = 1000;
  assert_float_equal(sim(m, &c).samples_per_s, 9174, 9174 * 0.03);
  m->steps = 10000;
  assert_float_equal(sim(m, &c).samples_per_s, 50251, 50251 * 0.03);
  m->steps = 1000; /* without the cache: the read's 1000/s */
  assert_float_equal(sim(m, NULL).samples_per_s, 1000, 15);
  free(m);
}

/* A shuffle of 100 samples with no warm-up: the first batch waits for 104 samples (104 ms); 10 steps
 * take 140 ms, 286 samples/s.  With one warm-up step the fill is before the window: 1000/s. */
static void test_shuffle_fill(void **state) {
  pb_model *m = new_model(4, 0.1 * MS, 0, 10, 3);
  stage(m, "read", "read", PB_ROLE_SOURCE, 1, 1 * MS, 0, 256);
  stage(m, "shuffle", "shuffle", PB_ROLE_SHUFFLE, 1, 0, 0, 256);
  m->stages[1].buffer = 100;
  stage(m, "batch", "batch", PB_ROLE_BATCH, 1, 0, 0, 1);
  assert_float_equal(sim(m, NULL).samples_per_s, 40 / 0.140, 5);
  m->warmup_steps = 1;
  m->steps = 50;
  assert_float_equal(sim(m, NULL).samples_per_s, 1000, 15);
  free(m);
}

/* A read capped at 1000 elements/s for the whole stage: more threads stay at the cap. */
static void test_rate_cap(void **state) {
  pb_model *m = tandem();
  m->stages[0].threads = 4;
  m->stages[0].rate_cap_per_s = 1000;
  m->stages[1].threads = 8;
  device(m, 1 * MS);
  assert_float_equal(sim(m, NULL).samples_per_s, 1000, 10);
  pb_model_change c;
  pb_model_change_init(&c);
  c.threads[0] = 16;
  assert_float_equal(sim(m, &c).samples_per_s, 1000, 10);
  free(m);
}

/* Duration-limited runs simulate the window's length. */
static void test_duration(void **state) {
  pb_model *m = tandem();
  m->steps = 0;
  m->duration_s = 0.5;
  pb_model_result r = sim(m, NULL);
  assert_float_equal(r.samples_per_s, 500, 5);
  assert_double_cmp(r.window_s, >=, 0.5);
  assert_double_cmp(r.window_s, <, 0.52);
  free(m);
}

/* A report around a model, as metrics.c and pb_analysis_run would leave it, for the bottleneck rule and
 * the recommendations. */
typedef struct fixture {
  pb_config cfg;
  pb_record rec;
  pb_report rep;
} fixture;

static const char *CFG = "{\"name\":\"t\",\"dataset\":{\"format\":\"synthetic\",\"shape\":[4],\"dtype\":\"uint8\"},"
                         "\"stages\":[{\"name\":\"map\",\"type\":\"map\",\"ops\":[]},"
                         "{\"name\":\"batch\",\"type\":\"batch\",\"size\":4}],"
                         "\"device\":{\"kind\":\"emulated\",\"step_ms\":4},\"run\":{\"steps\":300,\"warmup_steps\":5}}";

static fixture *report_of(pb_model *m, double measured_per_s, double cpu_fraction) {
  fixture *f = calloc(1, sizeof *f);
  pb_err err;
  assert_int_equal(pb_config_parse(&f->cfg, "t.json", CFG, NULL, 0, &err), 0);
  f->rec.cfg = &f->cfg;
  f->rec.device_count = 1;
  f->rec.ncpu = 2;
  pb_report *r = &f->rep;
  r->model = *m;
  r->nstages = m->nstages;
  for (int i = 0; i < m->nstages; i++) {
    pb_stage_report *s = &r->stages[i];
    snprintf(s->name, sizeof s->name, "%s", m->stages[i].name);
    s->type = m->stages[i].type;
    s->threads = m->stages[i].threads;
    s->capacity_per_s = m->stages[i].threads / fmax(m->stages[i].mean_s, 1e-9);
    s->utilization = 0.5;
    s->cpu_fraction = cpu_fraction;
    s->cpu_delay_fraction = 0;
  }
  r->samples_per_s = measured_per_s;
  r->measured_s = 1;
  r->compute_ms = m->device_mean_s * 1e3;
  r->ncpu = 2;
  r->cores_usable = m->cores_usable;
  r->noise_pct = 1;
  r->classification = "highly_input_bound";
  r->input_bound_pct = 50;
  r->device_kind = "emulated";
  return f;
}

/* The planted map (500/s against the device's 1000/s): named, and its threads recommendation is the
 * fewest threads the model says reach the next limit (2: 1000/s), predicted "up to" the device's rate. */
static void test_threads_recommendation(void **state) {
  pb_model *m = tandem();
  fixture *f = report_of(m, 500, 0.05);
  pb_bottleneck(&f->rep, &f->rec);
  assert_string_equal(f->rep.bottleneck_stage, "map");
  assert_int_equal(f->rep.nco_stages, 0);
  assert_float_equal(f->rep.model_capacity_per_s, 500, 1e-6);
  pb_recommend(&f->rep, &f->rec);
  assert_true(f->rep.nrecommendations >= 1);
  const pb_recommendation *rc = &f->rep.recommendations[0];
  assert_string_equal(rc->action, "--set stages.map.threads=2");
  assert_string_equal(rc->kind, "threads");
  assert_float_equal(rc->predicted_samples_per_s, 1000, 15);
  assert_true(rc->up_to);
  free(f);
  free(m);
}

/* Two maps within 3 % of each other (500 and 515/s): both named, and the advice changes both. */
static void test_co_bottlenecks(void **state) {
  pb_model *m = tandem();
  pb_model_stage second = m->stages[1];
  memmove(&m->stages[2], &m->stages[1], sizeof m->stages[1] * 2); /* map, batch -> map, map2, batch */
  m->nstages = 4;
  second.report_row = 2;
  snprintf(second.name, sizeof second.name, "map2");
  for (int i = 0; i < PB_MODEL_QUANTILES; i++) second.service_s[i] = 2 * MS / 1.03;
  second.mean_s = 2 * MS / 1.03;
  m->stages[2] = second;
  m->stages[3].report_row = 3;
  device(m, 2 * MS);
  fixture *f = report_of(m, 480, 0.05);
  pb_bottleneck(&f->rep, &f->rec);
  assert_string_equal(f->rep.bottleneck_stage, "map");
  assert_int_equal(f->rep.nco_stages, 1);
  assert_string_equal(f->rep.co_stages[0], "map2");
  pb_recommend(&f->rep, &f->rec);
  assert_true(f->rep.nrecommendations >= 1);
  const pb_recommendation *rc = &f->rep.recommendations[0];
  assert_non_null(strstr(rc->action, "stages.map.threads="));
  assert_non_null(strstr(rc->action, "stages.map2.threads="));
  assert_true(rc->predicted_samples_per_s > 900);
  free(f);
  free(m);
}

/* CPU-bound maps saturating one core: the verdict is the cores, and no recommendation adds threads. */
static void test_cores_verdict(void **state) {
  pb_model *m = tandem();
  for (int i = 0; i < PB_MODEL_QUANTILES; i++) m->stages[0].service_s[i] = 0.1 * MS;
  m->stages[0].mean_s = 0.1 * MS;
  m->stages[1].cpu_share = 1;
  m->stages[1].threads = 4; /* capacity 2000/s alone */
  m->cores = m->cores_usable = 1;
  device(m, 1 * MS);
  fixture *f = report_of(m, 500, 1);
  f->rep.stages[1].utilization = 0.25; /* 4 threads on 1 core */
  f->rep.stages[0].cpu_fraction = 0;
  pb_bottleneck(&f->rep, &f->rec);
  assert_string_equal(f->rep.bottleneck_stage, "cores");
  assert_float_equal(f->rep.cpu_limit_per_s, 500, 1);
  pb_recommend(&f->rep, &f->rec);
  for (int i = 0; i < f->rep.nrecommendations; i++) assert_null(strstr(f->rep.recommendations[i].action, "threads"));
  assert_true(f->rep.nrecommendations >= 1);
  assert_string_equal(f->rep.recommendations[0].kind, "cores");
  assert_float_equal(f->rep.recommendations[0].predicted_samples_per_s, 1000, 25);
  free(f);
  free(m);
}

/* The cores' limit counts every stage's CPU, a waiting one's too: a 2-core run whose one "slow" thread
 * waits 75 % of 9.1 ms and computes 25 % (2.275 ms of CPU a sample), then batch 0.43 ms of CPU a sample,
 * and a device taking 1000 samples/s.  The cores allow 2 / 2.705 ms = 739 samples/s, not the device's
 * 1000; more slow threads are predicted up to that, and no further. */
static void test_cores_limit_counts_waiting_stages(void **state) {
  pb_model *m = new_model(4, 4 * MS, 5, 400, 4);
  stage(m, "source", "source", PB_ROLE_SOURCE, 1, 0.001 * MS, 0, 256);
  stage(m, "slow", "map", PB_ROLE_SERVER, 1, 9.1 * MS, 0.25, 256);
  stage(m, "batch", "batch", PB_ROLE_BATCH, 1, 0.43 * MS, 1, 1);
  fixture *f = report_of(m, 110, 0.25);
  pb_bottleneck(&f->rep, &f->rec);
  assert_float_equal(f->rep.cpu_limit_per_s, 2 / (2.275e-3 + 0.43e-3 + 0.001e-3 * 0), 2);
  assert_string_equal(f->rep.bottleneck_stage, "slow");
  pb_recommend(&f->rep, &f->rec);
  assert_true(f->rep.nrecommendations >= 1);
  const pb_recommendation *rc = &f->rep.recommendations[0];
  assert_non_null(strstr(rc->action, "--set stages.slow.threads="));
  int threads = atoi(strrchr(rc->action, '=') + 1);
  print_message("cores' limit %.1f/s: %s predicted %.1f\n", f->rep.cpu_limit_per_s, rc->action, rc->predicted_samples_per_s);
  assert_int_between(threads, 6, 9); /* 739 / (1 / 9.1 ms) = 6.7 */
  assert_double_between(rc->predicted_samples_per_s, 680, 745);
  assert_false(rc->up_to); /* the cores, not the device, cap it */
  free(f);
  free(m);
}

/* Review fixes: a stage upstream of a cache handled one epoch of the ten the run delivered, so it bounds
 * the pipeline at ten times its own rate (the inverse once named it the bottleneck at a tenth). */
static void test_cache_upstream_capacity(void **state) {
  pb_model *m = tandem();
  fixture *f = report_of(m, 500, 0.05);
  f->rep.stages[0].capacity_per_s = 1000;
  f->rep.stages[0].pipeline_capacity_per_s = 10000; /* 10 epochs delivered per epoch read */
  f->rep.stages[1].capacity_per_s = 500;
  f->rep.stages[1].pipeline_capacity_per_s = 500;
  assert_float_equal(pb_model_stage_capacity(&f->rep, 0), 10000, 1e-6);
  assert_float_equal(pb_model_stage_capacity(&f->rep, 1), 500, 1e-6);
  free(f);
  free(m);
}

/* A shuffle before a cache holds its buffer at the end of the first epoch: the cache must still start
 * replaying (the simulation used to wait for those samples for ever). */
static void test_shuffle_before_cache(void **state) {
  pb_model *m = new_model(10, 0.1 * MS, 0, 1000, 5); /* 10 epochs: the first at the read's 1000/s, then memory */
  stage(m, "read", "read", PB_ROLE_SOURCE, 1, 1 * MS, 0, 256);
  stage(m, "shuffle", "shuffle", PB_ROLE_SHUFFLE, 1, 0, 0, 256);
  m->stages[1].buffer = 100;
  stage(m, "cache", "cache", PB_ROLE_CACHE, 1, 0.001 * MS, 0, 256);
  stage(m, "batch", "batch", PB_ROLE_BATCH, 1, 0, 0, 1);
  m->epoch_samples = 1000;
  pb_model_result r = sim(m, NULL);
  assert_true(r.samples_per_s > 3000);
  free(m);
}

/* A co-bottleneck that cannot take more threads (a shuffle: the schema's 1) keeps its one thread in the
 * advice: "--set stages.shuffle.threads=2" would fail the config's validation. */
static void test_threads_advice_respects_the_schema(void **state) {
  pb_model *m = tandem();
  pb_model_stage sh = m->stages[1];
  memmove(&m->stages[2], &m->stages[1], sizeof m->stages[1] * 2); /* read, map, shuffle, batch */
  m->nstages = 4;
  snprintf(sh.name, sizeof sh.name, "shuffle");
  snprintf(sh.type, sizeof sh.type, "shuffle");
  sh.role = PB_ROLE_SERVER; /* served like one: the point is its thread limit */
  sh.max_threads = 1;
  for (int i = 0; i < PB_MODEL_QUANTILES; i++) sh.service_s[i] = 2 * MS / 1.02;
  sh.mean_s = 2 * MS / 1.02;
  sh.report_row = 2;
  m->stages[2] = sh;
  m->stages[3].report_row = 3;
  fixture *f = report_of(m, 480, 0.05);
  pb_bottleneck(&f->rep, &f->rec);
  pb_recommend(&f->rep, &f->rec);
  for (int i = 0; i < f->rep.nrecommendations; i++)
    assert_null(strstr(f->rep.recommendations[i].action, "stages.shuffle.threads"));
  free(f);
  free(m);
}

/* Ahead limits.  source (0.01 ms) -> map (0.5 ms, 1 thread, ahead 1) -> batch of 16 on demand -> device 10 ms.
 * The batch starts when the device waits: the map had one sample ahead, the other 15 take 7.5 ms, so a step
 * every 17.5 ms: 914.3 samples/s, idle 7.5 / 17.5 = 42.9 %.  Batched ahead (on_demand off), the map's 2000/s
 * keep up with the device's 1600/s: idle 0.  Unbounded but on demand, the map has the whole batch ready:
 * idle 0 too.  With 3 threads (ahead 1 each: 3 ready), the other 13 take ceil(13 / 3) = 5 rounds of 0.5 ms:
 * a step every 12.5 ms, 1280 samples/s. */
static void test_ahead_and_on_demand(void **state) {
  pb_model *m = new_model(16, 10 * MS, 5, 200, 1);
  stage(m, "read", "read", PB_ROLE_SOURCE, 1, 0.01 * MS, 0, 256);
  stage(m, "map", "map", PB_ROLE_SERVER, 1, 0.5 * MS, 0, 256);
  stage(m, "batch", "batch", PB_ROLE_BATCH, 1, 0, 0, 1);
  m->stages[1].ahead_per_thread = 1;
  m->stages[2].on_demand = true;
  pb_model_result r = sim(m, NULL);
  assert_float_equal(r.samples_per_s, 16 / 17.5e-3, 5);
  assert_float_equal(r.idle_pct, 100 * 7.5 / 17.5, 0.5);
  pb_model_change c;
  pb_model_change_init(&c);
  c.on_demand[2] = -1;
  r = sim(m, &c);
  assert_float_equal(r.idle_pct, 0, 0.5);
  pb_model_change_init(&c);
  c.ahead_per_thread[1] = -1;
  r = sim(m, &c);
  assert_float_equal(r.idle_pct, 0, 0.5);
  pb_model_change_init(&c);
  c.threads[1] = 3;
  r = sim(m, &c);
  assert_float_equal(r.samples_per_s, 16 / 12.5e-3, 5);
  free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tandem_deterministic),
      cmocka_unit_test(test_threads_until_the_next_limit),
      cmocka_unit_test(test_cores_are_shared),
      cmocka_unit_test(test_variance_needs_depth),
      cmocka_unit_test(test_cache_over_the_run),
      cmocka_unit_test(test_shuffle_fill),
      cmocka_unit_test(test_rate_cap),
      cmocka_unit_test(test_duration),
      cmocka_unit_test(test_threads_recommendation),
      cmocka_unit_test(test_co_bottlenecks),
      cmocka_unit_test(test_cores_verdict),
      cmocka_unit_test(test_cores_limit_counts_waiting_stages),
      cmocka_unit_test(test_cache_upstream_capacity),
      cmocka_unit_test(test_shuffle_before_cache),
      cmocka_unit_test(test_threads_advice_respects_the_schema),
      cmocka_unit_test(test_device_steps_replayed_in_order),
      cmocka_unit_test(test_levels_keep_a_drift),
      cmocka_unit_test(test_levels_simulated),
      cmocka_unit_test(test_ahead_and_on_demand),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
