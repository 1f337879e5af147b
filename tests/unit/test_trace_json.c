/* trace.json (src/reports/trace_json.c): a record written and loaded back is identical, field by field and
 * event by event (large timestamps, batch keys with bit 63, nonzero histograms, doubles); a real run's
 * report recomputed from its trace is the same report; a bad file gets the documented error code and a
 * message naming the line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four headers above first */
#include <cmocka.h>

#include "unit_util.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "device.h"
#include "engine.h"
#include "metrics.h"
#include "record.h"
#include "report.h"
#include "steps.h"
#include "timeline_sampler.h"
#include "trace_json.h"
#include "record_run.h"

static const char k_cfg[] =
    "{\"name\":\"tiny\",\"dataset\":{\"format\":\"synthetic\",\"shape\":[64],\"num_samples\":1000},"
    "\"stages\":[{\"name\":\"aug\",\"type\":\"map\",\"threads\":2,\"ops\":[]},{\"type\":\"batch\",\"size\":4},"
    "{\"type\":\"prefetch\"}],\"device\":{\"kind\":\"emulated\",\"step_ms\":1,\"count\":2},"
    "\"run\":{\"steps\":3,\"warmup_steps\":1}}";

#define START_NS 0xF000000000000123ull /* above 2^63: every absolute time needs all 64 bits */
#define SEC 1000000000ull

typedef struct fixture {
  pb_config cfg;
  pb_record rec;
  char dir[64], path[128];
} fixture;

static pb_event ev(uint8_t kind, uint8_t flags, uint64_t t0, uint64_t t1, uint64_t key, uint64_t out,
                   uint32_t bytes) {
  return (pb_event){.t0_ns = START_NS + t0, .t1_ns = START_NS + t1, .key = key, .out = out, .bytes = bytes,
                    .kind = kind, .flags = flags};
}

static void set_events(pb_worker_trace *t, const pb_event *v, uint32_t n, uint64_t dropped) {
  t->ev = malloc((n ? n : 1) * sizeof *t->ev);
  if (n) memcpy(t->ev, v, n * sizeof *v);
  t->n = n;
  t->dropped = dropped;
}

static void stage(pb_stage_rec *s, const char *name, const char *type, int threads, int cfg_index) {
  snprintf(s->name, sizeof s->name, "%s", name);
  snprintf(s->type, sizeof s->type, "%s", type);
  s->threads = threads;
  s->cfg_index = cfg_index;
  pb_hist_reset(&s->hist);
}

/* A record by hand: map (2 workers), batch (1), prefetch (1); 3 steps on 2 devices. */
static void build_record(fixture *f) {
  pb_err err;
  if (pb_config_parse(&f->cfg, "tiny.json", k_cfg, NULL, 0, &err)) fail_msg("config: %s", err.msg);
  pb_record *r = &f->rec;
  memset(r, 0, sizeof *r);
  r->cfg = &f->cfg;
  r->synthetic = false;
  r->interrupted = true;
  snprintf(r->device_kind, sizeof r->device_kind, "emulated");
  snprintf(r->timing_source, sizeof r->timing_source, "emulated");
  snprintf(r->device_name, sizeof r->device_name, "emulated \"device\"\twith\\odd chars");
  r->device_count = 2;
  r->rank = 1; /* one rank of a job of 2, stopped with the other */
  r->world_size = 2;
  r->peer_stopped = true;
  r->start_ns = START_NS;
  r->start_unix_ns = 1795000000123456789ull;
  r->window_start_ns = START_NS + 3600 * SEC + 1;
  r->window_end_ns = START_NS + 3700 * SEC + 999;
  r->measured_count = 2;
  r->samples_consumed = 12;
  r->samples_failed = (1ull << 60) + 1;
  r->steps_failed = true;
  snprintf(r->steps_failure, sizeof r->steps_failure, "device 1: \"failed\"\n(twice)");
  r->nsteps = 3;
  r->steps = calloc(3, sizeof *r->steps);
  r->steps[0] = (pb_step){START_NS - 5, START_NS + 5, /* a time before start_ns: negative in the header */ 0, 0, START_NS + 7, START_NS + 3600 * SEC + 1, 256,
                          PB_BATCH_KEY(0), 4, 0, false, 0, 0};
  r->steps[1] = (pb_step){START_NS + 3600 * SEC + 1, START_NS + 3600 * SEC + 900, START_NS + 3600 * SEC + 901,
                          START_NS + 3600 * SEC + 950, START_NS + 3600 * SEC + 999, START_NS + 3650 * SEC + 3,
                          (1ull << 55) + 3, PB_BATCH_KEY(1ull << 55), 4, 1, true, START_NS + 3650 * SEC + 4,
                          START_NS + 3650 * SEC + 900};
  r->steps[2] = (pb_step){START_NS + 3600 * SEC + 1, START_NS + 3600 * SEC + 2, START_NS + 3000 * SEC,
                          START_NS + 3000 * SEC + 1, START_NS + 3600 * SEC + 2, START_NS + (1ull << 54) + 999, 256,
                          PB_BATCH_KEY(2), 4, 0, true, 0, 0};
  r->nstages = 3;
  stage(&r->stages[0], "aug", "map", 2, 0);
  stage(&r->stages[1], "batch", "batch", 1, 1);
  stage(&r->stages[2], "prefetch", "prefetch", 1, 2);
  r->stages[1].batched = r->stages[2].batched = true;
  for (int i = 0; i < 3; i++) {
    pb_stage_rec *s = &r->stages[i];
    uint64_t *c = (uint64_t *)&s->ctr;
    for (size_t k = 0; k < sizeof s->ctr / sizeof *c; k++) c[k] = (k % 3 == 0 ? (1ull << 60) : 0) + k * 7 + (uint64_t)i;
    pb_hist_add(&s->hist, 17 + (uint64_t)i);
    pb_hist_add(&s->hist, 123456);
    pb_hist_add(&s->hist, 5 * SEC);
    pb_hist_add(&s->hist, 1ull << 50); /* clamps into the last bucket */
    s->cpu_ns = (1ull << 58) + (uint64_t)i;
    s->cpu_delay_ns = i == 1 ? -1 : (int64_t)(1ull << 55) + i; /* unknown (null) and known */
    s->queue_capacity = 256 >> i;
    s->workers = calloc((size_t)s->threads, sizeof *s->workers);
  }
  r->stages[0].queue_mean_fill = 0.1 + 0.2;
  r->stages[1].queue_mean_fill = NAN;
  r->stages[2].queue_mean_fill = 1.0 / 3.0;
  /* map worker 0: the sample (1<<60)+5 and sample 7 */
  const pb_event w0[] = {
      ev(PB_EV_WAIT, 0, 10, 20, PB_NO_KEY, PB_NO_KEY, 0),
      ev(PB_EV_PROCESS, PB_EVF_CALL_START, 20, 30, (1ull << 60) + 5, PB_NO_KEY, 64),
      ev(PB_EV_BLOCKED, PB_EVF_BLOCKED_POOL, 30, 40, (1ull << 60) + 5, PB_NO_KEY, 0),
      ev(PB_EV_PROCESS, PB_EVF_EMITTED, 40, 3600 * SEC + 1, (1ull << 60) + 5, (1ull << 60) + 5, UINT32_MAX),
      ev(PB_EV_PROCESS, PB_EVF_CALL_START | PB_EVF_EMITTED, 3600 * SEC + 1, 3600 * SEC + 2, 7, 7, 64),
  };
  const pb_event w1[] = {
      ev(PB_EV_PROCESS, PB_EVF_PRODUCE | PB_EVF_EMITTED, 123456789012345678ull, 123456789012345679ull, PB_NO_KEY,
         9, 1),
  };
  /* the batch: sample (1<<60)+5 joins batch 1<<55, which leaves */
  const pb_event b0[] = {
      ev(PB_EV_PROCESS, PB_EVF_CALL_START | PB_EVF_JOINED, 3600 * SEC + 10, 3600 * SEC + 11, (1ull << 60) + 5,
         PB_BATCH_KEY(1ull << 55), 64),
      ev(PB_EV_PROCESS, PB_EVF_CALL_START | PB_EVF_JOINED | PB_EVF_EMITTED, 3600 * SEC + 12, 3600 * SEC + 13, 7,
         PB_BATCH_KEY(1ull << 55), 64),
      ev(PB_EV_PROCESS, PB_EVF_PRODUCE | PB_EVF_EMITTED, 3600 * SEC + 14, 3600 * SEC + 14,
         PB_BATCH_KEY(1ull << 55), PB_BATCH_KEY(2), 0),
      ev(200, 0xff, 3600 * SEC + 15, 3600 * SEC + 16, PB_BATCH_KEY(0x7ffffffffffffffeull), PB_NO_KEY, 1),
  };
  set_events(&r->stages[0].workers[0], w0, PB_ARRAY_LEN(w0), 0);
  set_events(&r->stages[0].workers[1], w1, PB_ARRAY_LEN(w1), (1ull << 54) + 1);
  set_events(&r->stages[1].workers[0], b0, PB_ARRAY_LEN(b0), 3);
  /* before start_ns (negative ts): still exact */
  const pb_event p0[] = {ev(PB_EV_WAIT, 0, (uint64_t)-5, (uint64_t)-1, PB_NO_KEY, PB_NO_KEY, 0)};
  set_events(&r->stages[2].workers[0], p0, PB_ARRAY_LEN(p0), 0);
  r->queued_samples = 3;
  r->nfirst_errors = 2;
  snprintf(r->first_errors[0].file, sizeof r->first_errors[0].file, "/data/a \"b\".jpg");
  snprintf(r->first_errors[0].message, sizeof r->first_errors[0].message, "bad\nJPEG");
  snprintf(r->first_errors[1].file, sizeof r->first_errors[1].file, "%s", "");
  snprintf(r->first_errors[1].message, sizeof r->first_errors[1].message, "x");
  r->cpu_s = 1.0 / 7.0;
  r->ncpu = 16;
  r->planned_bytes = (1ull << 60) + 1; /* past 2^53: a decimal string */
  r->trace_bytes = 41943040;
  r->peak_rss_bytes = 123456789;
  r->traced = true;
  /* queue fill over time: fills quantized as sampled; a series that stays full */
  pb_timeline *tl = calloc(1, sizeof *tl);
  pb_timeline_init(tl, START_NS + 5);
  tl->nseries = 2;
  snprintf(tl->names[0], sizeof tl->names[0], "aug");
  snprintf(tl->names[1], sizeof tl->names[1], "batch");
  tl->capacity[0] = 256;
  tl->capacity[1] = 1;
  for (int i = 0; i < 7; i++) {
    float fill[2] = {pb_timeline_fill_from_e4(i * 1428), 1.0f};
    pb_timeline_add(tl, START_NS + 5 + (uint64_t)(i + 1) * 100000000ull, fill);
  }
  r->timeline = tl;
}

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  snprintf(f->dir, sizeof f->dir, "/tmp/pb_trace_XXXXXX");
  if (!mkdtemp(f->dir)) return -1;
  snprintf(f->path, sizeof f->path, "%s/trace.json", f->dir);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  pb_record_free(&f->rec);
  char tmp[160];
  unlink(f->path);
  snprintf(tmp, sizeof tmp, "%s.tmp", f->path);
  unlink(tmp);
  rmdir(f->dir);
  free(f);
  return 0;
}

static void assert_same_double(double a, double b) {
  assert_memory_equal(&a, &b, sizeof a); /* bit-identical, NAN included */
}

static void assert_records_equal(const pb_record *a, const pb_record *b) {
  assert_non_null(b->cfg);
  assert_ptr_equal(b->cfg, b->owned_cfg);
  assert_string_equal(a->cfg->name, b->cfg->name);
  assert_int_equal(a->cfg->nstages, b->cfg->nstages);
  cJSON *ja = pb_config_to_json(a->cfg), *jb = pb_config_to_json(b->cfg);
  assert_true(cJSON_Compare(ja, jb, 1));
  cJSON_Delete(ja);
  cJSON_Delete(jb);
  assert_int_equal(a->synthetic, b->synthetic);
  assert_int_equal(a->interrupted, b->interrupted);
  assert_string_equal(a->device_kind, b->device_kind);
  assert_string_equal(a->timing_source, b->timing_source);
  assert_string_equal(a->device_name, b->device_name);
  assert_int_equal(a->device_count, b->device_count);
  assert_int_equal(a->nsteps, b->nsteps);
  for (size_t i = 0; i < a->nsteps; i++) {
    const pb_step *x = &a->steps[i], *y = &b->steps[i];
    assert_int_equal(x->prev_end_ns, y->prev_end_ns);
    assert_int_equal(x->ready_ns, y->ready_ns);
    assert_int_equal(x->h2d_start_ns, y->h2d_start_ns);
    assert_int_equal(x->h2d_end_ns, y->h2d_end_ns);
    assert_int_equal(x->compute_start_ns, y->compute_start_ns);
    assert_int_equal(x->compute_end_ns, y->compute_end_ns);
    assert_int_equal(x->bytes, y->bytes);
    assert_int_equal(x->key, y->key);
    assert_int_equal(x->samples, y->samples);
    assert_int_equal(x->device, y->device);
    assert_int_equal(x->measured, y->measured);
    assert_int_equal(x->comm_start_ns, y->comm_start_ns);
    assert_int_equal(x->comm_end_ns, y->comm_end_ns);
  }
  assert_int_equal(a->start_unix_ns, b->start_unix_ns);
  assert_int_equal(a->rank, b->rank);
  assert_int_equal(a->world_size, b->world_size);
  assert_int_equal(a->peer_stopped, b->peer_stopped);
  assert_int_equal(a->start_ns, b->start_ns);
  assert_int_equal(a->window_start_ns, b->window_start_ns);
  assert_int_equal(a->window_end_ns, b->window_end_ns);
  assert_int_equal(a->measured_count, b->measured_count);
  assert_int_equal(a->samples_consumed, b->samples_consumed);
  assert_int_equal(a->samples_failed, b->samples_failed);
  assert_int_equal(a->steps_failed, b->steps_failed);
  assert_string_equal(a->steps_failure, b->steps_failure);
  assert_int_equal(a->nstages, b->nstages);
  for (int i = 0; i < a->nstages; i++) {
    const pb_stage_rec *x = &a->stages[i], *y = &b->stages[i];
    assert_string_equal(x->name, y->name);
    assert_string_equal(x->type, y->type);
    assert_int_equal(x->threads, y->threads);
    assert_int_equal(x->cfg_index, y->cfg_index);
    assert_int_equal(x->is_source, y->is_source);
    assert_int_equal(x->skipped, y->skipped);
    assert_int_equal(x->batched, y->batched);
    assert_memory_equal(&x->ctr, &y->ctr, sizeof x->ctr);
    assert_memory_equal(&x->hist, &y->hist, sizeof x->hist);
    assert_int_equal(x->cpu_ns, y->cpu_ns);
    assert_int_equal(x->cpu_delay_ns, y->cpu_delay_ns);
    assert_same_double(x->queue_mean_fill, y->queue_mean_fill);
    assert_int_equal(x->queue_capacity, y->queue_capacity);
    assert_int_equal(x->workers != NULL, y->workers != NULL);
    for (int k = 0; x->workers && k < x->threads; k++) {
      assert_int_equal(x->workers[k].n, y->workers[k].n);
      assert_int_equal(x->workers[k].dropped, y->workers[k].dropped);
      if (x->workers[k].n) assert_memory_equal(x->workers[k].ev, y->workers[k].ev, x->workers[k].n * sizeof(pb_event));
    }
  }
  assert_int_equal(a->queued_samples, b->queued_samples);
  assert_int_equal(a->nfirst_errors, b->nfirst_errors);
  for (int i = 0; i < a->nfirst_errors; i++) {
    assert_string_equal(a->first_errors[i].file, b->first_errors[i].file);
    assert_string_equal(a->first_errors[i].message, b->first_errors[i].message);
  }
  assert_same_double(a->cpu_s, b->cpu_s);
  assert_int_equal(a->planned_bytes, b->planned_bytes);
  assert_int_equal(a->trace_bytes, b->trace_bytes);
  assert_int_equal(a->peak_rss_bytes, b->peak_rss_bytes);
  assert_int_equal(a->ncpu, b->ncpu);
  assert_int_equal(a->traced, b->traced);
  assert_int_equal(a->timeline != NULL, b->timeline != NULL);
  if (a->timeline) {
    const pb_timeline *x = a->timeline, *y = b->timeline;
    assert_int_equal(x->t0_ns, y->t0_ns);
    assert_int_equal(x->interval_ns, y->interval_ns);
    assert_int_equal(x->n, y->n);
    assert_int_equal(x->nseries, y->nseries);
    for (int k = 0; k < x->nseries; k++) {
      assert_string_equal(x->names[k], y->names[k]);
      assert_int_equal(x->capacity[k], y->capacity[k]);
      assert_memory_equal(x->fill[k], y->fill[k], x->n * sizeof(float));
    }
    assert_memory_equal(x->t_ns, y->t_ns, x->n * sizeof(uint64_t));
  }
}

static void spit(const char *path, const char *text, size_t len) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(text, 1, len, f), len);
  fclose(f);
}

/* Every field and event comes back identical. */
static void test_round_trip(void **state) {
  fixture *f = *state;
  build_record(f);
  assert_int_equal(pb_trace_write_file(&f->rec, f->path), 0);
  pb_record *back = calloc(1, sizeof *back);
  pb_err err = {{0}};
  int rc = pb_trace_load_file(back, f->path, &err);
  if (rc) fail_msg("load: %d %s", rc, err.msg);
  assert_records_equal(&f->rec, back);
  /* and once more through the loaded record: the file is a fixed point */
  char again[160];
  snprintf(again, sizeof again, "%s/again.json", f->dir);
  assert_int_equal(pb_trace_write_file(back, again), 0);
  char *t1 = slurp(f->path), *t2 = slurp(again);
  assert_string_equal(t1, t2);
  free(t1);
  free(t2);
  unlink(again);
  pb_record_free(back);
  free(back);
}

/* The layout docs/TRACE.md promises, valid JSON as a whole, and what Perfetto needs. */
static void test_layout(void **state) {
  fixture *f = *state;
  build_record(f);
  f->rec.steps[2].measured = false; /* the last measured step is then step 1, whose batch has a flow */
  assert_int_equal(pb_trace_write_file(&f->rec, f->path), 0);
  char *text = slurp(f->path);
  cJSON *root = cJSON_Parse(text);
  assert_non_null(root);
  assert_string_equal(cJSON_GetObjectItem(root, "displayTimeUnit")->valuestring, "ns");
  assert_true(cJSON_IsString(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "pipebench"), "start_ns")));
  const cJSON *events = cJSON_GetObjectItem(root, "traceEvents");
  assert_true(cJSON_IsArray(events));
  int x = 0, flows = 0, meta = 0;
  bool saw_step = false, saw_h2d = false, saw_idle = false, saw_big = false, saw_comm = false;
  for (const cJSON *e = events->child; e; e = e->next) {
    const char *ph = cJSON_GetObjectItem(e, "ph")->valuestring;
    if (!strcmp(ph, "M")) meta++;
    if (!strcmp(ph, "s") || !strcmp(ph, "t") || !strcmp(ph, "f")) flows++;
    if (strcmp(ph, "X")) continue;
    x++;
    const char *cat = cJSON_GetObjectItem(e, "cat")->valuestring, *name = cJSON_GetObjectItem(e, "name")->valuestring;
    if (!strcmp(cat, "compute") && !strcmp(name, "step 1")) {
      saw_step = true;
      assert_int_equal(cJSON_GetObjectItem(e, "pid")->valueint, 2);
      assert_int_equal(cJSON_GetObjectItem(e, "tid")->valueint, 2); /* device 1 */
    }
    saw_h2d |= !strcmp(cat, "h2d");
    if (!strcmp(cat, "allreduce")) { /* step 1's gradient exchange, on its device's track */
      saw_comm = true;
      assert_int_equal(cJSON_GetObjectItem(e, "tid")->valueint, 2);
      assert_float_equal(cJSON_GetObjectItem(e, "dur")->valuedouble, 0.896, 1e-9); /* 896 ns in us */
    }
    saw_idle |= !strcmp(cat, "idle") && !strcmp(name, "input_wait");
    const cJSON *args = cJSON_GetObjectItem(e, "args");
    const cJSON *id = cJSON_GetObjectItem(args, "id");
    if (id && cJSON_IsString(id) && !strcmp(id->valuestring, "1152921504606846981")) saw_big = true; /* 2^60+5 */
  }
  assert_int_equal(x, 11 + 3 + 2 + 3 + 1); /* worker events, steps, h2d copies, input waits, an exchange */
  assert_int_equal(flows, 3);           /* map, batch (prefetch handed nothing on), the device */
  assert_true(meta >= 2 + 4 + 2);
  assert_true(saw_step);
  assert_true(saw_h2d);
  assert_true(saw_idle);
  assert_true(saw_big);
  assert_true(saw_comm);
  int nevents = cJSON_GetArraySize(events);
  cJSON_Delete(root);
  /* line by line: 3 header lines, events one a line each followed by ',' but the last, then ]} */
  char *save = NULL, *line = strtok_r(text, "\n", &save);
  assert_string_equal(line, "{\"displayTimeUnit\":\"ns\",");
  line = strtok_r(NULL, "\n", &save);
  assert_memory_equal(line, "\"pipebench\":{", 13);
  line = strtok_r(NULL, "\n", &save);
  assert_string_equal(line, "\"traceEvents\":[");
  int n = 0;
  char *prev = NULL;
  while ((line = strtok_r(NULL, "\n", &save))) {
    bool last = !strcmp(line, "]}");
    if (prev) assert_int_equal(prev[strlen(prev) - 1] == ',', !last);
    prev = line;
    n++;
    if (last) break;
  }
  assert_string_equal(prev, "]}");
  assert_int_equal(n, nevents + 1);
  assert_null(strtok_r(NULL, "\n", &save));
  free(text);
}

/* Flow: the first sample that joined the last measured step's batch, from the map to the device. */
static void test_flow_binds_slices(void **state) {
  fixture *f = *state;
  build_record(f);
  assert_int_equal(pb_trace_write_file(&f->rec, f->path), 0);
  char *text = slurp(f->path);
  /* step 2 (the last measured) carries batch 2, which no sample joined in the trace: no flow */
  assert_null(strstr(text, "\"ph\":\"s\""));
  assert_null(strstr(text, "\"cat\":\"flow\""));
  free(text);
  /* with batch 1<<55 last: sample 2^60+5 joined it first; the map handed it on at 40 ns */
  f->rec.steps[2].measured = false;
  assert_int_equal(pb_trace_write_file(&f->rec, f->path), 0);
  text = slurp(f->path);
  assert_non_null(strstr(text, "{\"ph\":\"s\",\"id\":1,\"pid\":1,\"tid\":1,\"ts\":0.040,\"cat\":\"flow\","
                               "\"name\":\"sample 1152921504606846981\"}"));
  assert_non_null(strstr(text, "{\"ph\":\"t\",\"id\":1,\"pid\":1,\"tid\":3,\"ts\":3600000000.012,"));
  assert_non_null(strstr(text, "{\"ph\":\"f\",\"bp\":\"e\",\"id\":1,\"pid\":2,\"tid\":2,\"ts\":3600000000.999,"));
  free(text);
}

/* An untraced record (no workers) and a window that never opened (0) round-trip too. */
static void test_untraced_round_trip(void **state) {
  fixture *f = *state;
  build_record(f);
  for (int i = 0; i < f->rec.nstages; i++) {
    pb_stage_rec *s = &f->rec.stages[i];
    for (int k = 0; k < s->threads; k++) free(s->workers[k].ev);
    free(s->workers);
    s->workers = NULL;
  }
  f->rec.stages[2].skipped = true;
  f->rec.traced = false;
  f->rec.window_start_ns = f->rec.window_end_ns = 0;
  f->rec.nsteps = 0;
  f->rec.nfirst_errors = 0;
  assert_int_equal(pb_trace_write_file(&f->rec, f->path), 0);
  pb_record *back = calloc(1, sizeof *back);
  pb_err err;
  int rc = pb_trace_load_file(back, f->path, &err);
  if (rc) fail_msg("load: %d %s", rc, err.msg);
  assert_records_equal(&f->rec, back);
  pb_record_free(back);
  free(back);
}

static int load_expect(fixture *f, const char *text, size_t len, const char *needle) {
  spit(f->path, text, len);
  pb_record *back = calloc(1, sizeof *back);
  pb_err err = {{0}};
  int rc = pb_trace_load_file(back, f->path, &err);
  if (needle && !strstr(err.msg, needle)) fail_msg("error \"%s\" lacks \"%s\"", err.msg, needle);
  if (rc) {
    assert_null(back->cfg);
    assert_null(back->steps);
  }
  pb_record_free(back);
  free(back);
  return rc;
}

/* text with the first `from` replaced by `to` (a new string). */
static char *replaced(const char *text, const char *from, const char *to) {
  const char *at = strstr(text, from);
  if (!at) fail_msg("\"%s\" is not in the trace", from);
  size_t head = (size_t)(at - text), len = strlen(text) - strlen(from) + strlen(to);
  char *out = malloc(len + 1);
  memcpy(out, text, head);
  strcpy(out + head, to);
  strcat(out, at + strlen(from));
  return out;
}

/* A malformed queue_fill (or exchange, or job) gets one error naming the key, never a record with times
 * before the run. */
static void test_bad_queue_fill(void **state) {
  fixture *f = *state;
  build_record(f);
  assert_int_equal(pb_trace_write_file(&f->rec, f->path), 0);
  char *text = slurp(f->path);
  static const struct {
    const char *from, *to, *error;
  } cases[] = {
      {"\"t0_ns\":5,", "\"t0_ns\":-5,", "queue_fill.t0_ns: -5"},
      {"\"interval_ns\":100000000,", "\"interval_ns\":0,", "queue_fill.interval_ns: 0"},
      {"\"t_ns\":[100000005,200000005,", "\"t_ns\":[200000005,100000005,", "queue_fill.t_ns[1]: 100000005 is not after"},
      {"\"t_ns\":[100000005,", "\"t_ns\":[5,", "queue_fill.t_ns[0]: 5 is not after 5"},
      {"\"capacity\":256,", "\"capacity\":0,", "queue_fill.series[].capacity: 0 is out of range"},
      {"\"fill_e4\":[0,", "\"fill_e4\":[10001,", "fill_e4[]: 10001 is out of range"},
      {"\"fill_e4\":[0,", "\"fill_e4\":[", "series[0].fill_e4: 6 values (expected 7"},
      {"\"series\":[{", "\"series\":[3,{", "queue_fill.series[]: not an object"},
      /* and the gradient exchange of a step, and the job's rank */
      {",3650000000004,3650000000900]", ",3650000000001,3650000000900]", "steps[1]: the exchange runs from 3650000000001"},
      {",3650000000004,3650000000900]", ",3650000000004]", "steps[1]: 12 fields (expected 11"},
      {"\"rank\":1,", "\"rank\":2,", "pipebench.job.rank: 2 is out of range"},
      /* a step that starts before the previous one ended, or ends before its batch came: would wrap around */
      {"[-5,5,0,0,7,", "[9,5,0,0,7,", "steps[0]: prev_end after compute_start"},
      {"[-5,5,0,0,7,3600000000001,", "[-5,3600000000002,0,0,7,3600000000001,", "or ready after compute_end"},
      /* no device, and a row that is not its config stage (the analysis reads that stage's settings) */
      {"\"count\":2,\"timing_source\"", "\"count\":0,\"timing_source\"", "device.count: 0 is out of range"},
      {"\"cfg_index\":1,", "\"cfg_index\":2,", "stages[1]: a batch row whose cfg_index 2 is a prefetch"},
      {"\"cfg_index\":2,", "\"cfg_index\":-1,", "stages[2]: a prefetch row whose cfg_index -1 is the source"},
  };
  for (size_t i = 0; i < PB_ARRAY_LEN(cases); i++) {
    char *bad = replaced(text, cases[i].from, cases[i].to);
    assert_int_equal(load_expect(f, bad, strlen(bad), cases[i].error), -EINVAL);
    free(bad);
  }
  free(text);
}

static void test_errors(void **state) {
  fixture *f = *state;
  pb_record back;
  pb_err err;
  char missing[160];
  snprintf(missing, sizeof missing, "%s/none.json", f->dir);
  assert_int_equal(pb_trace_load_file(&back, missing, &err), -ENOENT);
  assert_non_null(strstr(err.msg, "none.json: cannot read"));
  /* not JSON, empty, JSON of another kind */
  assert_int_equal(load_expect(f, "hello\n", 6, "trace.json: line 1: not a pipebench trace"), -EINVAL);
  assert_int_equal(load_expect(f, "", 0, "line 1: empty file"), -EINVAL);
  const char *other = "{\"traceEvents\":[]}\n";
  assert_int_equal(load_expect(f, other, strlen(other), "line 1:"), -EINVAL);
  /* a good file cut short, in the middle of an event line and at a line end */
  build_record(f);
  assert_int_equal(pb_trace_write_file(&f->rec, f->path), 0);
  char *text = slurp(f->path);
  size_t len = strlen(text);
  char *cut = strstr(text, "\"cat\":\"blocked\"");
  assert_non_null(cut);
  int line = 1;
  for (char *p = text; p < cut; p++) line += *p == '\n';
  char want[64];
  snprintf(want, sizeof want, "line %d: not a JSON object", line);
  assert_int_equal(load_expect(f, text, (size_t)(cut - text), want), -EINVAL);
  assert_int_equal(load_expect(f, text, len - 3, "the file ends early"), -EINVAL); /* without "]}\n" */
  assert_int_equal(load_expect(f, text, len - 2, "ends with ] alone"), -EINVAL); /* without "}\n" */
  char *nl = strchr(strchr(text, '\n') + 1, '\n'); /* header line cut */
  assert_int_equal(load_expect(f, text, (size_t)(nl - text) - 20, "line 2:"), -EINVAL);
  /* one worker event missing: the counts no longer match the header */
  char *ev = strstr(text, "\n{\"ph\":\"X\",\"pid\":1,\"tid\":2,");
  assert_non_null(ev);
  char *end = strchr(ev + 1, '\n');
  memmove(ev, end, strlen(end) + 1);
  assert_int_equal(load_expect(f, text, strlen(text), "tid 2 has 0 events (expected 1"), -EINVAL);
  /* an unsupported format */
  free(text);
  assert_int_equal(pb_trace_write_file(&f->rec, f->path), 0);
  text = slurp(f->path);
  char *fmt = strstr(text, "\"format\":1,");
  assert_non_null(fmt);
  fmt[9] = '7';
  assert_int_equal(load_expect(f, text, strlen(text), "line 2: pipebench.format: 7 is not supported"), -EINVAL);
  fmt[9] = '1';
  /* a bad field names its path */
  char *thr = strstr(text, "\"threads\":2,");
  assert_non_null(thr);
  thr[10] = 'x';
  assert_int_equal(load_expect(f, text, strlen(text), "line 2: "), -EINVAL);
  thr[10] = '2';
  /* values no run writes: refused with their path, not turned into a report */
  char *saved = strdup(text);
  text = realloc(text, strlen(text) + 2); /* room for the inserted '-' */
  char *cpu = strstr(text, "\"queued_samples\":"); /* the header's cpu_s comes after it */
  assert_non_null(cpu);
  cpu = strstr(cpu, "\"cpu_s\":");
  assert_non_null(cpu);
  memmove(cpu + 9, cpu + 8, strlen(cpu + 8) + 1);
  cpu[8] = '-'; /* "cpu_s":-<value> */
  assert_int_equal(load_expect(f, text, strlen(text), "line 2: pipebench.cpu_s:"), -EINVAL);
  strcpy(text, saved);
  char *dur = strstr(text, "\"dur\":");
  assert_non_null(dur);
  memmove(dur + 7, dur + 6, strlen(dur + 6) + 1);
  dur[6] = '-';
  assert_int_equal(load_expect(f, text, strlen(text), "event dur:"), -EINVAL);
  /* steps that are not arrays: refused, not read as no steps */
  strcpy(text, saved);
  char *steps = strstr(text, "\"steps\":[[");
  assert_non_null(steps);
  char *steps_end = strstr(steps, "]],"); /* the array's end: its last step's ']' and its own */
  assert_non_null(steps_end);
  memcpy(steps + 8, "[1,2]", 5); /* "steps":[1,2] */
  memmove(steps + 13, steps_end + 2, strlen(steps_end + 2) + 1);
  assert_int_equal(load_expect(f, text, strlen(text), "pipebench.steps"), -EINVAL);
  free(saved);
  free(text);
  /* a directory cannot be written over, nor a missing one written into */
  char bad[160];
  snprintf(bad, sizeof bad, "%s/no/such/dir/trace.json", f->dir);
  assert_int_equal(pb_trace_write_file(&f->rec, bad), -ENOENT);
}

/* A real (emulated) run: the report recomputed from the loaded trace is the live run's report. */
static char *report_text(const pb_record *rec) {
  pb_report *r = calloc(1, sizeof *r);
  pb_metrics_compute(r, rec);
  r->config = pb_config_to_json(rec->cfg);
  cJSON *j = pb_report_to_json(r);
  char *text = cJSON_Print(j);
  cJSON_Delete(j);
  cJSON_Delete(r->config);
  free(r);
  return text;
}

static void test_run_report_matches(void **state) {
  fixture *f = *state;
  static const char cfg_json[] =
      "{\"name\":\"e2e\",\"dataset\":{\"format\":\"synthetic\",\"shape\":[64],\"num_samples\":0},"
      "\"stages\":[{\"type\":\"map\",\"threads\":2,\"ops\":[{\"op\":\"spin\",\"us\":20}]},"
      "{\"type\":\"shuffle\",\"buffer\":16},{\"type\":\"batch\",\"size\":8},{\"type\":\"prefetch\",\"depth\":2},"
      "{\"type\":\"h2d\"}],\"device\":{\"kind\":\"emulated\",\"step_ms\":1},\"run\":{\"steps\":30,\"warmup_steps\":3}}";
  pb_err err;
  pb_config *cfg = calloc(1, sizeof *cfg);
  pb_engine *e = calloc(1, sizeof *e);
  pb_device *d = calloc(1, sizeof *d);
  pb_steps *s = calloc(1, sizeof *s);
  if (pb_config_parse(cfg, "e2e.json", cfg_json, NULL, 0, &err)) fail_msg("config: %s", err.msg);
  if (pb_engine_plan(e, cfg, false, cfg->device.count, &err)) fail_msg("plan: %s", err.msg);
  e->tracing = true;
  char notice[128];
  assert_int_equal(pb_device_open(d, cfg, PB_DEVICE_EMULATED, notice, sizeof notice, &err), 0);
  e->device = d;
  assert_int_equal(pb_steps_init(s, cfg, e, d, NULL), 0);
  assert_int_equal(pb_engine_start(e, &err), 0);
  assert_int_equal(pb_steps_start(s, &err), 0);
  pb_timeline *tl = calloc(1, sizeof *tl);
  pb_timeline_sampler sampler;
  pb_timeline_sampler_init(&sampler, tl, e, pb_now_ns());
  while (!pb_steps_wait(s, 10)) pb_timeline_sample(&sampler, pb_now_ns());
  pb_timeline_sample_final(&sampler, pb_now_ns());
  pb_engine_cancel(e);
  pb_steps_join(s);
  pb_engine_join(e);
  uint64_t queued = pb_engine_drain(e);
  pb_record *rec = calloc(1, sizeof *rec);
  assert_int_equal(pb_record_from_run(rec, cfg, e, s, d, false, false, queued, 0.25), 0);
  rec->timeline = tl;
  assert_int_equal(tl->nseries, e->nstages);
  assert_int_equal(pb_trace_write_file(rec, f->path), 0);
  pb_record *back = calloc(1, sizeof *back);
  int rc = pb_trace_load_file(back, f->path, &err);
  if (rc) fail_msg("load: %s", err.msg);
  assert_records_equal(rec, back);
  char *live = report_text(rec), *again = report_text(back);
  assert_string_equal(live, again);
  free(live);
  free(again);
  pb_record_free(back);
  pb_record_free(rec);
  free(back);
  free(rec);
  pb_steps_close(s);
  pb_engine_close(e);
  pb_device_close(d);
  free(s);
  free(d);
  free(e);
  free(cfg);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
      cmocka_unit_test_setup_teardown(test_layout, setup, teardown),
      cmocka_unit_test_setup_teardown(test_flow_binds_slices, setup, teardown),
      cmocka_unit_test_setup_teardown(test_untraced_round_trip, setup, teardown),
      cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bad_queue_fill, setup, teardown),
      cmocka_unit_test_setup_teardown(test_run_report_matches, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
