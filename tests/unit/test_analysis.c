/* The trace analysis on hand-built records, where the right answer is known by construction: the
 * stage graph from lineage, the critical path through data / worker-order / backpressure / device-order
 * edges, and the keymap under it. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "analysis.h"
#include "keymap.h"
#include "trace.h"

#define US 1000ull /* ns */

static const char *CFG =
    "{\"name\":\"t\",\"dataset\":{\"format\":\"synthetic\",\"shape\":[4],\"dtype\":\"uint8\"},"
    "\"stages\":[{\"name\":\"slow\",\"type\":\"map\",\"ops\":[]},{\"name\":\"batch\",\"type\":\"batch\",\"size\":4}],"
    "\"device\":{\"kind\":\"emulated\",\"step_ms\":1},\"run\":{\"steps\":2,\"warmup_steps\":0}}";

typedef struct fixture {
  pb_config cfg;
  pb_record rec;
  pb_report rep;
  uint32_t cap[PB_MAX_STAGES + 1];
} fixture;

/* Rows: 0 source (in-memory), 1 "slow" (map), 2 "batch"; one worker each. */
static fixture *make_fixture(void) {
  fixture *f = calloc(1, sizeof *f);
  pb_err err;
  assert_int_equal(pb_config_parse(&f->cfg, "t.json", CFG, NULL, 0, &err), 0);
  pb_record *r = &f->rec;
  r->cfg = &f->cfg;
  r->traced = true;
  r->device_count = 1;
  r->ncpu = 2;
  const char *names[] = {"source", "slow", "batch"}, *types[] = {"source", "map", "batch"};
  r->nstages = 3;
  for (int i = 0; i < 3; i++) {
    pb_stage_rec *s = &r->stages[i];
    snprintf(s->name, sizeof s->name, "%s", names[i]);
    snprintf(s->type, sizeof s->type, "%s", types[i]);
    s->threads = 1;
    s->cfg_index = i - 1;
    s->is_source = i == 0;
    s->batched = i == 2;
    s->workers = calloc(1, sizeof *s->workers);
    s->workers[0].ev = calloc(256, sizeof(pb_event));
    f->cap[i] = 256;
    snprintf(f->rep.stages[i].name, sizeof f->rep.stages[i].name, "%s", names[i]);
    f->rep.stages[i].type = s->type;
  }
  f->rep.nstages = 3;
  r->steps = calloc(16, sizeof *r->steps);
  return f;
}

static void free_fixture(fixture *f) {
  pb_record_free(&f->rec);
  free(f);
}

static void ev(fixture *f, int row, uint8_t kind, uint8_t flags, uint64_t t0, uint64_t t1, uint64_t key,
               uint64_t out) {
  pb_worker_trace *t = &f->rec.stages[row].workers[0];
  assert_true(t->n < f->cap[row]);
  t->ev[t->n++] = (pb_event){.t0_ns = t0, .t1_ns = t1, .key = key, .out = out, .kind = kind, .flags = flags};
}

static void step(fixture *f, uint64_t batch, uint64_t prev_end, uint64_t ready, uint64_t c0, uint64_t c1) {
  pb_step *s = &f->rec.steps[f->rec.nsteps++];
  *s = (pb_step){.prev_end_ns = prev_end, .ready_ns = ready, .compute_start_ns = c0, .compute_end_ns = c1,
                 .key = PB_BATCH_KEY(batch), .samples = 4, .measured = true};
}

static double seg_ms(const pb_report *r, const char *stage, bool self) {
  for (int i = 0; i < r->npath_segments; i++)
    if (strcmp(r->path_segments[i].stage, stage) == 0) return self ? r->path_segments[i].self_ms : r->path_segments[i].ms;
  return 0;
}

/* The source emits 8 samples at once; "slow" takes 100 us each; batch takes 2 us each as they come
 * and emits batch i/4 with its 4th sample; the device computes 50 us per batch. */
static void build_map_bound(fixture *f) {
  for (uint64_t i = 0; i < 8; i++)
    ev(f, 0, PB_EV_PROCESS, PB_EVF_PRODUCE | PB_EVF_EMITTED, i * US, (i + 1) * US, PB_NO_KEY, i);
  for (uint64_t i = 0; i < 8; i++) {
    uint64_t t0 = 10 * US + i * 100 * US;
    ev(f, 1, PB_EV_PROCESS, PB_EVF_CALL_START | PB_EVF_EMITTED, t0, t0 + 100 * US, i, i);
  }
  for (uint64_t i = 0; i < 8; i++) {
    uint64_t ready = 10 * US + (i + 1) * 100 * US, b = PB_BATCH_KEY(i / 4);
    ev(f, 2, PB_EV_WAIT, 0, ready - 98 * US, ready + 1 * US, PB_NO_KEY, PB_NO_KEY);
    uint8_t fl = PB_EVF_CALL_START | PB_EVF_JOINED | (i % 4 == 3 ? PB_EVF_EMITTED : 0);
    ev(f, 2, PB_EV_PROCESS, fl, ready + 1 * US, ready + 3 * US, i, b);
  }
  /* batch 0 handed on at 413 us, batch 1 at 813 us */
  step(f, 0, 0, 413 * US, 415 * US, 465 * US);
  step(f, 1, 465 * US, 813 * US, 815 * US, 865 * US);
  f->rec.window_start_ns = 0;
  f->rec.window_end_ns = 865 * US;
  f->rec.measured_count = 2;
}

static void test_graph_from_lineage(void **state) {
  fixture *f = make_fixture();
  build_map_bound(f);
  pb_analysis a;
  assert_int_equal(pb_analysis_init(&a, &f->rec), 0);
  assert_int_equal(a.parent[0], PB_NO_ROW);
  assert_int_equal(a.parent[1], 0);
  assert_int_equal(a.parent[2], 1);
  assert_int_equal(a.device_parent, 2);
  assert_true(a.complete);
  pb_graph_fill(&f->rep, &a);
  assert_string_equal(f->rep.stages[2].parent, "slow");
  assert_int_equal(f->rep.stages[1].graph_calls, 8);
  assert_float_equal(f->rep.stages[1].graph_self_ms, 0.8, 1e-9);
  pb_analysis_free(&a);
  free_fixture(f);
}

/* Regression (issue 31): a 1-thread batch stage whose events repeat with period 4 (wait, call, the
 * call's continuation, hand-off) over 8,000 events.  The old vote took every 2nd event once a row had
 * more than 4,096 and never saw a call start: batch lost its parent, and on real runs of 1,000+ steps
 * every stage after it did too (the bottleneck became h2d with ~0 self time on the path). */
static void test_graph_long_trace_lineage(void **state) {
  fixture *f = make_fixture();
  enum { N = 2000 };
  for (int i = 0; i < 3; i++) {
    f->rec.stages[i].workers[0].ev = realloc(f->rec.stages[i].workers[0].ev, 4 * N * sizeof(pb_event));
    f->cap[i] = 4 * N;
  }
  for (uint64_t i = 0; i < N; i++) {
    uint64_t t = 10 * US * i;
    ev(f, 0, PB_EV_PROCESS, PB_EVF_PRODUCE | PB_EVF_EMITTED, t, t + 1 * US, PB_NO_KEY, i);
    ev(f, 1, PB_EV_PROCESS, PB_EVF_CALL_START | PB_EVF_EMITTED, t + 2 * US, t + 4 * US, i, i);
    uint8_t fl = PB_EVF_CALL_START | PB_EVF_JOINED | (i % 4 == 3 ? PB_EVF_EMITTED : 0);
    ev(f, 2, PB_EV_WAIT, 0, t + 4 * US, t + 5 * US, PB_NO_KEY, PB_NO_KEY);
    ev(f, 2, PB_EV_PROCESS, fl, t + 5 * US, t + 6 * US, i, PB_BATCH_KEY(i / 4));
    ev(f, 2, PB_EV_PROCESS, 0, t + 6 * US, t + 7 * US, i, PB_NO_KEY);
    ev(f, 2, PB_EV_HANDOFF, 0, t + 7 * US, t + 7 * US, PB_NO_KEY, PB_NO_KEY);
  }
  f->rec.window_start_ns = 0;
  f->rec.window_end_ns = 10 * US * N;
  pb_analysis a;
  assert_int_equal(pb_analysis_init(&a, &f->rec), 0);
  assert_int_equal(a.parent[1], 0);
  assert_int_equal(a.parent[2], 1);
  pb_analysis_free(&a);
  free_fixture(f);
}

static void test_path_map_bound(void **state) {
  fixture *f = make_fixture();
  build_map_bound(f);
  pb_analysis a;
  assert_int_equal(pb_analysis_init(&a, &f->rec), 0);
  pb_critical_path(&f->rep, &a);
  const pb_report *r = &f->rep;
  assert_true(r->critical_path_available);
  /* The whole window is on the path. */
  assert_float_equal(r->critical_path_total_ms, 0.865, 1e-9);
  /* slow: 8 x 100 us of self time; the device: 2 x 50 us of compute. */
  assert_float_equal(seg_ms(r, "slow", true), 0.8, 1e-9);
  assert_float_equal(seg_ms(r, "device", true), 0.05, 1e-9); /* only the last step: the first overlapped */
  assert_true(r->stages[1].critical_path_pct > 90);
  pb_analysis_free(&a);
  free_fixture(f);
}

/* Batches are ready long before the device wants them: the path is the chain of steps. */
static void test_path_device_bound(void **state) {
  fixture *f = make_fixture();
  for (uint64_t i = 0; i < 8; i++) {
    ev(f, 0, PB_EV_PROCESS, PB_EVF_PRODUCE | PB_EVF_EMITTED, i * US, (i + 1) * US, PB_NO_KEY, i);
    ev(f, 1, PB_EV_PROCESS, PB_EVF_CALL_START | PB_EVF_EMITTED, 10 * US + i * US, 11 * US + i * US, i, i);
    uint8_t fl = PB_EVF_CALL_START | PB_EVF_JOINED | (i % 4 == 3 ? PB_EVF_EMITTED : 0);
    ev(f, 2, PB_EV_PROCESS, fl, 20 * US + i * US, 21 * US + i * US, i, PB_BATCH_KEY(i / 4));
  }
  step(f, 0, 0, 24 * US, 30 * US, 1030 * US);
  step(f, 1, 1030 * US, 1030 * US, 1031 * US, 2031 * US);
  f->rec.window_start_ns = 1030 * US;
  f->rec.window_end_ns = 2031 * US;
  f->rec.measured_count = 1;
  f->rec.steps[0].measured = false;
  pb_analysis a;
  assert_int_equal(pb_analysis_init(&a, &f->rec), 0);
  pb_critical_path(&f->rep, &a);
  assert_float_equal(f->rep.critical_path_total_ms, 1.001, 1e-9);
  assert_float_equal(seg_ms(&f->rep, "device", false), 1.001, 1e-9);
  assert_float_equal(seg_ms(&f->rep, "device", true), 1.0, 1e-9);
  assert_string_equal(f->rep.critical_path_stop, "window start");
  pb_analysis_free(&a);
  free_fixture(f);
}

/* "slow" is blocked on a full queue for most of its time because batch is slower: backpressure edges
 * must carry the path to batch, not charge slow's blocked time to slow. */
static void test_path_backpressure(void **state) {
  fixture *f = make_fixture();
  for (uint64_t i = 0; i < 8; i++)
    ev(f, 0, PB_EV_PROCESS, PB_EVF_PRODUCE | PB_EVF_EMITTED, i * US, (i + 1) * US, PB_NO_KEY, i);
  /* batch: sample i processed over [100 + 100 i, 200 + 100 i) us; slow emits i + 1 right after batch
   * takes i (10 us of work), then blocks until batch finishes i. */
  for (uint64_t i = 0; i < 8; i++) {
    uint64_t b0 = 100 * US + i * 100 * US;
    uint8_t fl = PB_EVF_CALL_START | PB_EVF_JOINED | (i % 4 == 3 ? PB_EVF_EMITTED : 0);
    ev(f, 2, PB_EV_PROCESS, fl, b0, b0 + 100 * US, i, PB_BATCH_KEY(i / 4));
  }
  ev(f, 1, PB_EV_PROCESS, PB_EVF_CALL_START | PB_EVF_EMITTED, 10 * US, 20 * US, 0, 0);
  for (uint64_t i = 1; i < 8; i++) {
    uint64_t t0 = 100 * US + (i - 1) * 100 * US; /* batch took i - 1: room for one more */
    ev(f, 1, PB_EV_PROCESS, PB_EVF_CALL_START | PB_EVF_EMITTED, t0, t0 + 10 * US, i, i);
    if (i < 7) ev(f, 1, PB_EV_BLOCKED, 0, t0 + 10 * US, t0 + 100 * US, PB_NO_KEY, PB_NO_KEY);
  }
  step(f, 0, 0, 500 * US, 500 * US, 510 * US);
  step(f, 1, 510 * US, 900 * US, 900 * US, 910 * US);
  f->rec.window_start_ns = 0;
  f->rec.window_end_ns = 910 * US;
  f->rec.measured_count = 2;
  pb_analysis a;
  assert_int_equal(pb_analysis_init(&a, &f->rec), 0);
  pb_critical_path(&f->rep, &a);
  double batch_self = seg_ms(&f->rep, "batch", true), slow_self = seg_ms(&f->rep, "slow", true);
  assert_true(batch_self >= 0.7);  /* 8 x 100 us, less what falls before the path reaches it */
  assert_true(slow_self <= 0.02);
  pb_analysis_free(&a);
  free_fixture(f);
}

/* Regression: a hand-off is stamped after its push returns, so a fast consumer can start on the element
 * before the producer's recorded hand-off (and before the end of the block that preceded it).  Looking
 * for who made room up to the block's end found the consumer's call the walk had come from, and the walk
 * went round until the hop limit ("hop limit (malformed trace)"), covering only part of the window. */
static void test_path_handoff_stamped_after_consumer_start(void **state) {
  fixture *f = make_fixture();
  for (uint64_t i = 0; i < 8; i++) {
    ev(f, 0, PB_EV_PROCESS, PB_EVF_PRODUCE | PB_EVF_EMITTED, i * US, (i + 1) * US, PB_NO_KEY, i);
    /* slow: 10 us on sample i, blocked until 100 (i + 1) us, the hand-off stamped then */
    uint64_t s0 = 100 * US * i, h = 100 * US * (i + 1);
    ev(f, 1, PB_EV_PROCESS, PB_EVF_CALL_START | PB_EVF_EMITTED, s0 + 8 * US, s0 + 18 * US, i, i);
    ev(f, 1, PB_EV_BLOCKED, 0, s0 + 18 * US, h, PB_NO_KEY, PB_NO_KEY);
    ev(f, 1, PB_EV_HANDOFF, 0, h, h, PB_NO_KEY, PB_NO_KEY);
    /* batch took sample i 2 us before that stamp, for 1 us */
    uint8_t fl = PB_EVF_CALL_START | PB_EVF_JOINED | (i % 4 == 3 ? PB_EVF_EMITTED : 0);
    ev(f, 2, PB_EV_PROCESS, fl, h - 2 * US, h - 1 * US, i, PB_BATCH_KEY(i / 4));
  }
  step(f, 0, 0, 399 * US, 400 * US, 410 * US);
  step(f, 1, 410 * US, 799 * US, 800 * US, 810 * US);
  f->rec.window_start_ns = 0;
  f->rec.window_end_ns = 810 * US;
  f->rec.measured_count = 2;
  pb_analysis a;
  assert_int_equal(pb_analysis_init(&a, &f->rec), 0);
  pb_critical_path(&f->rep, &a);
  assert_string_equal(f->rep.critical_path_stop, "window start");
  assert_float_equal(f->rep.critical_path_total_ms, 0.81, 1e-9); /* the whole window */
  assert_true(f->rep.critical_path_hops < 200);
  pb_analysis_free(&a);
  free_fixture(f);
}

/* Regression (issue 31, a bursty device with zero-length steps): the device took batch 1 and ran a
 * zero-length step at 500 us, before batch's hand-off of it was stamped (at 503 us, after its push
 * returned, the push having blocked since 490 us).  From the step the walk went to that hand-off (after the
 * cursor), back to the block, and the block's "who made room" found the same zero-length step ending
 * exactly at the cursor: round and round to the hop limit. */
static void test_path_zero_length_step_does_not_loop(void **state) {
  fixture *f = make_fixture();
  for (uint64_t i = 0; i < 8; i++) {
    ev(f, 0, PB_EV_PROCESS, PB_EVF_PRODUCE | PB_EVF_EMITTED, i * US, (i + 1) * US, PB_NO_KEY, i);
    ev(f, 1, PB_EV_PROCESS, PB_EVF_CALL_START | PB_EVF_EMITTED, 10 * US + i * US, 11 * US + i * US, i, i);
  }
  /* batch 0 collated and handed on at 30 us; batch 1 collated, blocked 490-503 us, handed on at 503 us */
  for (uint64_t i = 0; i < 4; i++)
    ev(f, 2, PB_EV_PROCESS, PB_EVF_CALL_START | PB_EVF_JOINED | (i == 3 ? PB_EVF_EMITTED : 0), 20 * US + i * US,
       21 * US + i * US, i, PB_BATCH_KEY(0));
  ev(f, 2, PB_EV_HANDOFF, 0, 30 * US, 30 * US, PB_NO_KEY, PB_NO_KEY);
  for (uint64_t i = 4; i < 8; i++)
    ev(f, 2, PB_EV_PROCESS, PB_EVF_CALL_START | PB_EVF_JOINED | (i == 7 ? PB_EVF_EMITTED : 0), 480 * US + i * US,
       481 * US + i * US, i, PB_BATCH_KEY(1));
  ev(f, 2, PB_EV_BLOCKED, 0, 490 * US, 503 * US, PB_NO_KEY, PB_NO_KEY);
  ev(f, 2, PB_EV_PROCESS, 0, 503 * US, 503 * US, 7, PB_NO_KEY);
  ev(f, 2, PB_EV_HANDOFF, 0, 503 * US, 503 * US, PB_NO_KEY, PB_NO_KEY);
  step(f, 0, 0, 30 * US, 30 * US, 470 * US);
  step(f, 1, 470 * US, 500 * US, 500 * US, 500 * US); /* zero length, at 500 us */
  f->rec.window_start_ns = 0;
  f->rec.window_end_ns = 500 * US;
  f->rec.measured_count = 2;
  pb_analysis a;
  assert_int_equal(pb_analysis_init(&a, &f->rec), 0);
  pb_critical_path(&f->rep, &a);
  assert_string_not_equal(f->rep.critical_path_stop, "hop limit (malformed trace)");
  assert_true(f->rep.critical_path_hops < 100);
  pb_analysis_free(&a);
  free_fixture(f);
}

/* A ring that overwrote events: the analysed window starts where every ring still has events. */
static void test_window_when_rings_dropped(void **state) {
  fixture *f = make_fixture();
  build_map_bound(f);
  f->rec.stages[1].workers[0].dropped = 100;
  /* drop slow's first 2 events (as a ring would) */
  pb_worker_trace *t = &f->rec.stages[1].workers[0];
  memmove(t->ev, t->ev + 2, (t->n - 2) * sizeof *t->ev);
  t->n -= 2;
  pb_analysis a;
  assert_int_equal(pb_analysis_init(&a, &f->rec), 0);
  assert_false(a.complete);
  assert_int_equal(a.t_stop, 210 * US);
  pb_critical_path(&f->rep, &a);
  assert_float_equal(f->rep.critical_path_total_ms, 0.655, 1e-9);
  pb_analysis_free(&a);
  free_fixture(f);
}

static void test_keymap(void **state) {
  pb_keymap m;
  assert_int_equal(pb_keymap_init(&m, 1000), 0);
  for (uint64_t k = 0; k < 1000; k++) pb_keymap_put(&m, k * 7, k);
  pb_keymap_put(&m, PB_BATCH_KEY(5), 42);
  pb_keymap_put(&m, 7, 99); /* replaces */
  uint64_t v;
  assert_true(pb_keymap_get(&m, 7, &v));
  assert_int_equal(v, 99);
  assert_true(pb_keymap_get(&m, 6993, &v));
  assert_int_equal(v, 999);
  assert_true(pb_keymap_get(&m, PB_BATCH_KEY(5), &v));
  assert_int_equal(v, 42);
  assert_false(pb_keymap_get(&m, 8, &v));
  assert_false(pb_keymap_get(&m, UINT64_MAX, &v));
  pb_keymap_free(&m);
}

static void test_trace_ring(void **state) {
  pb_trace_ring r;
  assert_int_equal(pb_trace_ring_init(&r, 8), 0);
  for (uint64_t i = 0; i < 13; i++) pb_trace_add(&r, PB_EV_PROCESS, 0, i, i + 1, i, PB_NO_KEY, 1);
  pb_event *v;
  uint32_t n;
  uint64_t dropped;
  assert_int_equal(pb_trace_ring_linearize(&r, &v, &n, &dropped), 0);
  assert_int_equal(n, 8);
  assert_int_equal(dropped, 5);
  for (uint32_t i = 0; i < n; i++) assert_int_equal(v[i].key, 5 + i); /* oldest first */
  free(v);
  pb_trace_ring_free(&r);
  assert_true(pb_trace_ring_capacity(1) == PB_TRACE_MAX_RING);
  assert_true(pb_trace_ring_capacity(100000) == PB_TRACE_MIN_RING);
}

/* CPU-bound is decided on the stage's own time, without the time it queued for a core: figures from
 * a 2-core run with 8 read threads on 2 ms latency and one batch thread copying 2.8 MB samples. */
static void test_cpu_bound_net_of_run_queue_delay(void **state) {
  pb_stage_report read = {.cpu_fraction = 0.19, .cpu_delay_fraction = 0.45};
  pb_stage_report batch = {.cpu_fraction = 0.42, .cpu_delay_fraction = 0.58};
  assert_false(pb_stage_cpu_bound(&read)); /* 0.19 / 0.55 = 0.35: it waits on latency */
  assert_true(fabs(pb_stage_cpu_share(&read) - 0.19 / 0.55) < 1e-12);
  assert_true(pb_stage_cpu_bound(&batch)); /* 0.42 / 0.42: it computes, however little CPU it got */
  assert_true(fabs(pb_stage_cpu_share(&batch) - 1.0) < 1e-12);
  /* The kernel did not say: the busy time is all there is. */
  pb_stage_report unknown = {.cpu_fraction = 0.42, .cpu_delay_fraction = NAN};
  assert_false(pb_stage_cpu_bound(&unknown));
  unknown.cpu_fraction = 0.5;
  assert_true(pb_stage_cpu_bound(&unknown));
  pb_stage_report none = {.cpu_fraction = NAN, .cpu_delay_fraction = 0.2};
  assert_false(pb_stage_cpu_bound(&none));
}

/* The model's fit (model_fit.c) on a hand-built record: a map whose calls take 100 or 300 us (mean 200),
 * a device at 1 ms a step.  The mean is kept exactly, the quantiles keep the two modes, the CPU share is of
 * the whole service while the cores have room, and the run-queue delay comes off only when the stages
 * kept the cores busy (then the share is of what is left). */
static void test_model_fit(void **state) {
  fixture *f = make_fixture();
  build_map_bound(f);
  pb_report *r = &f->rep;
  pb_hist_reset(&f->rec.stages[1].hist);
  for (int i = 0; i < 500; i++) {
    pb_hist_add(&f->rec.stages[1].hist, 100 * US);
    pb_hist_add(&f->rec.stages[1].hist, 300 * US);
  }
  for (int i = 0; i < 3; i++) {
    f->rec.stages[i].queue_capacity = 8;
    r->stages[i].threads = 1;
    r->stages[i].utilization = 0.1;
    r->stages[i].cpu_fraction = 0.25;
    r->stages[i].cpu_delay_fraction = 0.5;
    r->stages[i].calls = 1000;
  }
  pb_hist_add(&f->rec.stages[0].hist, 1 * US);
  pb_hist_add(&f->rec.stages[2].hist, 2 * US);
  for (size_t i = 0; i < f->rec.nsteps; i++) f->rec.steps[i].compute_end_ns = f->rec.steps[i].compute_start_ns + 1000 * US;
  r->step_count = 2;
  r->measured_s = 0.865e-3;
  r->samples_per_s = 8 / r->measured_s;
  r->classification = "highly_input_bound";
  f->rec.cores_usable = 2;
  pb_model m;
  pb_model_fit(&m, &f->rec, r);
  assert_true(m.valid);
  assert_int_equal(m.nstages, 3);
  assert_int_equal(m.batch_size, 4);
  assert_float_equal(m.device_mean_s, 1e-3, 1e-9);
  const pb_model_stage *slow = &m.stages[1];
  assert_string_equal(slow->name, "slow");
  assert_float_equal(slow->mean_s, 200e-6, 200e-6 * 1e-9);
  assert_true(fabs(slow->service_s[PB_MODEL_QUANTILES / 4] - 100e-6) < 3e-6); /* within the histogram's 1.6 % */
  assert_true(fabs(slow->service_s[3 * PB_MODEL_QUANTILES / 4] - 300e-6) < 6e-6);
  assert_float_equal(slow->cpu_share, 0.25, 1e-12); /* cores to spare: of the whole service */
  /* cores kept busy (1.9 of 2): the delay is the pipeline's own contention, and comes off */
  r->stages[1].utilization = 1;
  r->stages[1].cpu_fraction = 0.5;
  r->stages[1].cpu_delay_fraction = 0.5;
  r->stages[1].threads = 4; /* the report's figures say how many cores were in use */
  pb_model_fit(&m, &f->rec, r);
  assert_float_equal(m.stages[1].mean_s, 100e-6, 100e-6 * 1e-9);
  assert_float_equal(m.stages[1].cpu_share, 1.0, 1e-12);
  assert_true(m.stages[1].saturated);
  free_fixture(f);
}

/* Upstream of a cache a stage handles one epoch while the pipeline delivers many: its capacity in the
 * pipeline's samples is its capacity x delivered / its samples (a read of 321 samples/s that fed a 1487
 * samples/s run was once the model's "lowest capacity", and recommendations predicted 321). */
static void test_cache_scales_upstream_capacity(void **state) {
  fixture *f = make_fixture();
  pb_report *r = &f->rep;
  r->stages[0].skipped = true;
  r->stages[1].capacity_per_s = 200;
  r->stages[1].samples = 100;  /* the first epoch, before the cache */
  r->stages[2].capacity_per_s = 2300;
  r->stages[2].type = "cache"; /* replays it: every sample the run delivered */
  r->stages[2].samples = 1000;
  r->samples_per_s = 1000;
  r->measured_s = 1;
  pb_pipeline_capacities(r);
  assert_true(fabs(r->stages[1].pipeline_capacity_per_s - 2000) < 1e-6);
  assert_true(fabs(r->stages[2].pipeline_capacity_per_s - 2300) < 1e-6);
  assert_true(r->stages[1].capacity_per_s == 200); /* the stage's own figure is unchanged */
  /* without a cache after it, a stage's count short of the delivered one (the window's edges) is not
   * scaled */
  r->stages[2].type = "batch";
  pb_pipeline_capacities(r);
  assert_true(fabs(r->stages[1].pipeline_capacity_per_s - 200) < 1e-6);
  free_fixture(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_graph_from_lineage), cmocka_unit_test(test_graph_long_trace_lineage), cmocka_unit_test(test_path_map_bound),
      cmocka_unit_test(test_path_device_bound),  cmocka_unit_test(test_path_backpressure),
      cmocka_unit_test(test_path_handoff_stamped_after_consumer_start),
      cmocka_unit_test(test_path_zero_length_step_does_not_loop),
      cmocka_unit_test(test_window_when_rings_dropped), cmocka_unit_test(test_keymap),
      cmocka_unit_test(test_trace_ring),        cmocka_unit_test(test_cpu_bound_net_of_run_queue_delay),
      cmocka_unit_test(test_cache_scales_upstream_capacity), cmocka_unit_test(test_model_fit),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
