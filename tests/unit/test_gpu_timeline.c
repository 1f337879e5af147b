/* The GPU timeline merger on hand-built activity records: records arrive in any order, several kernels
 * or copy chunks make one step's interval, invalid and foreign records are counted and left out, and
 * steps without GPU records stay exactly as the host measured them. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpu_timeline.h"
#include "steps.h"

#define US 1000ull /* ns */
#define BASE_NS (1000000ull * US) /* a clock value far from 0, like pb_now_ns */

/* A step as the host saw it: window [prev_end, compute_end], h2d then compute, each 100 us. */
static pb_step host_step(uint64_t key, uint16_t device, uint64_t t0_ns) {
  return (pb_step){.prev_end_ns = t0_ns, .ready_ns = t0_ns + 10 * US,
                   .h2d_start_ns = t0_ns + 20 * US, .h2d_end_ns = t0_ns + 120 * US,
                   .compute_start_ns = t0_ns + 130 * US, .compute_end_ns = t0_ns + 230 * US,
                   .bytes = 4096, .key = key, .samples = 4, .device = device, .measured = true};
}

static pb_gpu_timeline *new_tl(void) {
  pb_gpu_timeline *tl = malloc(sizeof *tl);
  assert_non_null(tl);
  pb_gpu_timeline_init(tl);
  return tl;
}

static void free_tl(pb_gpu_timeline *tl) {
  pb_gpu_timeline_free(tl);
  free(tl);
}

static void kernel(pb_gpu_timeline *tl, uint32_t corr, uint32_t dev, uint64_t s, uint64_t e) {
  assert_int_equal(pb_gpu_timeline_add_kernel(tl, corr, dev, s, e), 0);
}

static void h2d(pb_gpu_timeline *tl, uint32_t corr, uint32_t dev, uint64_t s, uint64_t e, uint64_t bytes) {
  assert_int_equal(pb_gpu_timeline_add_memcpy(tl, corr, dev, s, e, bytes, true), 0);
}

static void ext(pb_gpu_timeline *tl, uint32_t corr, int kind, uint64_t id) {
  assert_int_equal(pb_gpu_timeline_add_external(tl, corr, kind, id), 0);
}

static void apply(pb_gpu_timeline *tl, pb_step *steps, size_t n, pb_gpu_apply_stats *st) {
  assert_int_equal(pb_gpu_timeline_apply(tl, steps, n, st), 0);
}

/* The external record can come before or after its kernel (CUPTI delivers by buffer, not by time). */
static void test_out_of_order(void **state) {
  pb_gpu_timeline *tl = new_tl();
  pb_step s[2] = {host_step(7, 0, BASE_NS), host_step(8, 0, BASE_NS + 1000 * US)};
  kernel(tl, 11, 0, BASE_NS + 140 * US, BASE_NS + 200 * US); /* kernel first */
  ext(tl, 12, PB_GPU_EXT_COMPUTE, 8);                        /* external first */
  ext(tl, 11, PB_GPU_EXT_COMPUTE, 7);
  kernel(tl, 12, 0, BASE_NS + 1150 * US, BASE_NS + 1190 * US);
  pb_gpu_apply_stats st;
  apply(tl, s, 2, &st);
  assert_int_equal(s[0].compute_start_ns, BASE_NS + 140 * US);
  assert_int_equal(s[0].compute_end_ns, BASE_NS + 200 * US);
  assert_int_equal(s[1].compute_start_ns, BASE_NS + 1150 * US);
  assert_int_equal(s[1].compute_end_ns, BASE_NS + 1190 * US);
  /* no copy records: the host's h2d stays */
  assert_int_equal(s[0].h2d_start_ns, BASE_NS + 20 * US);
  assert_int_equal(s[0].h2d_end_ns, BASE_NS + 120 * US);
  assert_int_equal(st.compute_rewritten, 2);
  assert_int_equal(st.h2d_rewritten, 0);
  assert_int_equal(st.no_record, 0);
  assert_int_equal(st.unmatched, 0);
  assert_int_equal(st.uncorrelated, 0);
  free_tl(tl);
}

/* A step launches several kernels (normalize, then the step): compute spans all of them. */
static void test_several_kernels_per_step(void **state) {
  pb_gpu_timeline *tl = new_tl();
  pb_step s = host_step(42, 0, BASE_NS);
  kernel(tl, 21, 0, BASE_NS + 170 * US, BASE_NS + 225 * US); /* step kernel delivered first */
  kernel(tl, 20, 0, BASE_NS + 135 * US, BASE_NS + 150 * US); /* normalize */
  kernel(tl, 22, 0, BASE_NS + 160 * US, BASE_NS + 165 * US);
  for (uint32_t c = 20; c <= 22; c++) ext(tl, c, PB_GPU_EXT_COMPUTE, 42);
  pb_gpu_apply_stats st;
  apply(tl, &s, 1, &st);
  assert_int_equal(s.compute_start_ns, BASE_NS + 135 * US);
  assert_int_equal(s.compute_end_ns, BASE_NS + 225 * US);
  assert_int_equal(st.compute_rewritten, 1);
  free_tl(tl);
}

/* A batch copied in chunks: h2d spans the chunks and their bytes add up. */
static void test_copy_in_chunks(void **state) {
  pb_gpu_timeline *tl = new_tl();
  pb_step s = host_step(5, 0, BASE_NS);
  h2d(tl, 32, 0, BASE_NS + 60 * US, BASE_NS + 90 * US, 1024);
  h2d(tl, 30, 0, BASE_NS + 25 * US, BASE_NS + 40 * US, 2048);
  h2d(tl, 31, 0, BASE_NS + 40 * US, BASE_NS + 60 * US, 1024);
  ext(tl, 31, PB_GPU_EXT_COPY, 5);
  ext(tl, 30, PB_GPU_EXT_COPY, 5);
  ext(tl, 32, PB_GPU_EXT_COPY, 5);
  pb_gpu_apply_stats st;
  apply(tl, &s, 1, &st);
  assert_int_equal(s.h2d_start_ns, BASE_NS + 25 * US);
  assert_int_equal(s.h2d_end_ns, BASE_NS + 90 * US);
  assert_int_equal(s.compute_start_ns, BASE_NS + 130 * US); /* no kernels: host compute stays */
  assert_int_equal(s.bytes, 4096);                          /* the step's own count is not touched */
  assert_int_equal(st.h2d_rewritten, 1);
  assert_int_equal(st.compute_rewritten, 0);
  assert_int_equal(st.h2d_bytes, 4096);
  free_tl(tl);
}

/* Zero or inverted timestamps (CUPTI could not time the work) are dropped and counted. */
static void test_invalid_dropped(void **state) {
  pb_gpu_timeline *tl = new_tl();
  pb_step s = host_step(9, 0, BASE_NS), orig = s;
  kernel(tl, 1, 0, 0, 0);
  kernel(tl, 2, 0, 0, BASE_NS + 150 * US);
  kernel(tl, 3, 0, BASE_NS + 150 * US, 0);
  kernel(tl, 4, 0, BASE_NS + 150 * US, BASE_NS + 140 * US);
  h2d(tl, 5, 0, BASE_NS + 50 * US, BASE_NS + 40 * US, 64);
  h2d(tl, 6, 0, 0, 0, 64);
  for (uint32_t c = 1; c <= 4; c++) ext(tl, c, PB_GPU_EXT_COMPUTE, 9);
  ext(tl, 5, PB_GPU_EXT_COPY, 9);
  ext(tl, 6, PB_GPU_EXT_COPY, 9);
  assert_int_equal(tl->dropped_invalid, 6);
  assert_int_equal(tl->nact, 0);
  pb_gpu_apply_stats st;
  apply(tl, &s, 1, &st);
  assert_memory_equal(&s, &orig, sizeof s);
  assert_int_equal(st.no_record, 1);
  /* a zero-length kernel is a real (tiny) kernel, not an invalid one */
  kernel(tl, 7, 0, BASE_NS + 150 * US, BASE_NS + 150 * US);
  assert_int_equal(tl->dropped_invalid, 6);
  assert_int_equal(tl->nact, 1);
  free_tl(tl);
}

/* Device-to-host (and other) copies are not part of feeding the GPU: ignored, even when correlated. */
static void test_d2h_ignored(void **state) {
  pb_gpu_timeline *tl = new_tl();
  pb_step s = host_step(3, 0, BASE_NS), orig = s;
  assert_int_equal(pb_gpu_timeline_add_memcpy(tl, 40, 0, BASE_NS + 250 * US, BASE_NS + 260 * US, 16, false), 0);
  ext(tl, 40, PB_GPU_EXT_COPY, 3);
  assert_int_equal(tl->ignored_memcpy, 1);
  assert_int_equal(tl->nact, 0);
  pb_gpu_apply_stats st;
  apply(tl, &s, 1, &st);
  assert_memory_equal(&s, &orig, sizeof s);
  assert_int_equal(st.h2d_rewritten, 0);
  assert_int_equal(st.no_record, 1);
  free_tl(tl);
}

/* Records whose external id is no step's key (warm-up work outside the record, another batch) count as
 * unmatched; those that never got an external record (outside any push) as uncorrelated. */
static void test_unmatched_and_uncorrelated(void **state) {
  pb_gpu_timeline *tl = new_tl();
  pb_step s = host_step(1, 0, BASE_NS);
  kernel(tl, 50, 0, BASE_NS + 140 * US, BASE_NS + 150 * US);
  ext(tl, 50, PB_GPU_EXT_COMPUTE, 1);
  kernel(tl, 51, 0, BASE_NS + 300 * US, BASE_NS + 310 * US);
  ext(tl, 51, PB_GPU_EXT_COMPUTE, 999); /* no such step */
  h2d(tl, 52, 0, BASE_NS + 30 * US, BASE_NS + 35 * US, 8);
  ext(tl, 52, PB_GPU_EXT_COPY, 998);
  kernel(tl, 53, 0, BASE_NS + 400 * US, BASE_NS + 410 * US); /* no external at all */
  ext(tl, 54, PB_GPU_EXT_COMPUTE, 1); /* an API call without GPU work (a sync): harmless */
  pb_gpu_apply_stats st;
  apply(tl, &s, 1, &st);
  assert_int_equal(s.compute_start_ns, BASE_NS + 140 * US);
  assert_int_equal(s.compute_end_ns, BASE_NS + 150 * US);
  assert_int_equal(st.unmatched, 2);
  assert_int_equal(st.uncorrelated, 1);
  assert_int_equal(st.compute_rewritten, 1);
  assert_int_equal(st.h2d_rewritten, 0);
  free_tl(tl);
}

/* A kernel joins only a COMPUTE external record, a copy only a COPY one, even on one correlation id
 * (a thread with both kinds pushed gets one external record of each kind per API call). */
static void test_kinds_do_not_mix(void **state) {
  pb_gpu_timeline *tl = new_tl();
  pb_step s[2] = {host_step(100, 0, BASE_NS), host_step(101, 0, BASE_NS + 1000 * US)};
  /* in each pair the record of the other kind comes first, so a join that ignored kinds would take it */
  ext(tl, 60, PB_GPU_EXT_COMPUTE, 100); /* this step is pushed while... */
  ext(tl, 60, PB_GPU_EXT_COPY, 101);    /* ...the next batch's copy is issued */
  h2d(tl, 60, 0, BASE_NS + 1030 * US, BASE_NS + 1100 * US, 4096);
  kernel(tl, 61, 0, BASE_NS + 140 * US, BASE_NS + 210 * US);
  ext(tl, 61, PB_GPU_EXT_COPY, 101);
  ext(tl, 61, PB_GPU_EXT_COMPUTE, 100);
  pb_gpu_apply_stats st;
  apply(tl, s, 2, &st);
  assert_int_equal(s[0].compute_start_ns, BASE_NS + 140 * US);
  assert_int_equal(s[0].compute_end_ns, BASE_NS + 210 * US);
  assert_int_equal(s[0].h2d_end_ns, BASE_NS + 120 * US); /* host value: the copy is not step 0's */
  assert_int_equal(s[1].h2d_start_ns, BASE_NS + 1030 * US);
  assert_int_equal(s[1].h2d_end_ns, BASE_NS + 1100 * US);
  assert_int_equal(s[1].compute_start_ns, BASE_NS + 1130 * US);
  assert_int_equal(st.compute_rewritten, 1);
  assert_int_equal(st.h2d_rewritten, 1);
  assert_int_equal(st.unmatched, 0);
  free_tl(tl);
}

/* Steps without records stay bit for bit what the host measured. */
static void test_steps_without_records_untouched(void **state) {
  pb_gpu_timeline *tl = new_tl();
  pb_step s[3] = {host_step(1, 0, BASE_NS), host_step(2, 0, BASE_NS + 1000 * US),
                  host_step(3, 0, BASE_NS + 2000 * US)};
  pb_step orig[3];
  memcpy(orig, s, sizeof s);
  kernel(tl, 70, 0, BASE_NS + 1140 * US, BASE_NS + 1220 * US);
  ext(tl, 70, PB_GPU_EXT_COMPUTE, 2);
  pb_gpu_apply_stats st;
  apply(tl, s, 3, &st);
  assert_memory_equal(&s[0], &orig[0], sizeof s[0]);
  assert_memory_equal(&s[2], &orig[2], sizeof s[2]);
  assert_int_equal(s[1].compute_start_ns, BASE_NS + 1140 * US);
  assert_int_equal(st.no_record, 2);
  assert_int_equal(st.compute_rewritten, 1);
  free_tl(tl);
}

/* Two devices running at the same time: each step gets its own device's records. */
static void test_two_devices(void **state) {
  pb_gpu_timeline *tl = new_tl();
  pb_step s[2] = {host_step(10, 0, BASE_NS), host_step(11, 1, BASE_NS)};
  h2d(tl, 80, 0, BASE_NS + 25 * US, BASE_NS + 100 * US, 4096);
  h2d(tl, 81, 1, BASE_NS + 30 * US, BASE_NS + 110 * US, 4096);
  kernel(tl, 83, 1, BASE_NS + 135 * US, BASE_NS + 215 * US);
  kernel(tl, 82, 0, BASE_NS + 132 * US, BASE_NS + 205 * US);
  ext(tl, 83, PB_GPU_EXT_COMPUTE, 11);
  ext(tl, 80, PB_GPU_EXT_COPY, 10);
  ext(tl, 82, PB_GPU_EXT_COMPUTE, 10);
  ext(tl, 81, PB_GPU_EXT_COPY, 11);
  pb_gpu_apply_stats st;
  apply(tl, s, 2, &st);
  assert_int_equal(s[0].h2d_start_ns, BASE_NS + 25 * US);
  assert_int_equal(s[0].h2d_end_ns, BASE_NS + 100 * US);
  assert_int_equal(s[0].compute_start_ns, BASE_NS + 132 * US);
  assert_int_equal(s[0].compute_end_ns, BASE_NS + 205 * US);
  assert_int_equal(s[1].h2d_start_ns, BASE_NS + 30 * US);
  assert_int_equal(s[1].h2d_end_ns, BASE_NS + 110 * US);
  assert_int_equal(s[1].compute_start_ns, BASE_NS + 135 * US);
  assert_int_equal(s[1].compute_end_ns, BASE_NS + 215 * US);
  assert_int_equal(st.compute_rewritten, 2);
  assert_int_equal(st.h2d_rewritten, 2);
  assert_int_equal(st.unmatched, 0);
  /* the key decides, not the CUDA device id (step.device is an index; device.ids may map it to GPU 3) */
  pb_step on_gpu3 = host_step(12, 0, BASE_NS);
  kernel(tl, 84, 3, BASE_NS + 140 * US, BASE_NS + 207 * US);
  ext(tl, 84, PB_GPU_EXT_COMPUTE, 12);
  apply(tl, &on_gpu3, 1, &st);
  assert_int_equal(on_gpu3.compute_start_ns, BASE_NS + 140 * US);
  assert_int_equal(on_gpu3.compute_end_ns, BASE_NS + 207 * US);
  free_tl(tl);
}

/* Compute before the end of the same batch's copy cannot happen: the step keeps the host's intervals. */
static void test_inconsistent_step_rejected(void **state) {
  pb_gpu_timeline *tl = new_tl();
  pb_step s = host_step(4, 0, BASE_NS), orig = s;
  h2d(tl, 90, 0, BASE_NS + 20 * US, BASE_NS + 150 * US, 4096);
  kernel(tl, 91, 0, BASE_NS + 140 * US, BASE_NS + 200 * US);
  ext(tl, 90, PB_GPU_EXT_COPY, 4);
  ext(tl, 91, PB_GPU_EXT_COMPUTE, 4);
  pb_gpu_apply_stats st;
  apply(tl, &s, 1, &st);
  assert_memory_equal(&s, &orig, sizeof s);
  assert_int_equal(st.rejected, 1);
  assert_int_equal(st.compute_rewritten, 0);
  assert_int_equal(st.h2d_rewritten, 0);
  assert_int_equal(st.unmatched, 0);
  free_tl(tl);
}

/* GPU work queued before the host call returned may start before ready/prev_end: those stay (the
 * caller re-derives the window). */
static void test_window_fields_untouched(void **state) {
  pb_gpu_timeline *tl = new_tl();
  pb_step s = host_step(6, 0, BASE_NS);
  h2d(tl, 95, 0, BASE_NS - 5 * US, BASE_NS + 80 * US, 4096);
  ext(tl, 95, PB_GPU_EXT_COPY, 6);
  pb_gpu_apply_stats st;
  apply(tl, &s, 1, &st);
  assert_int_equal(s.h2d_start_ns, BASE_NS - 5 * US);
  assert_int_equal(s.prev_end_ns, BASE_NS);
  assert_int_equal(s.ready_ns, BASE_NS + 10 * US);
  assert_int_equal(st.h2d_rewritten, 1);
  free_tl(tl);
}

/* Empty timelines, no steps, a NULL stats pointer, a bad kind, and applying twice. */
static void test_edges(void **state) {
  pb_gpu_timeline *tl = new_tl();
  pb_step s = host_step(1, 0, BASE_NS), orig = s;
  pb_gpu_apply_stats st;
  apply(tl, &s, 1, &st);
  assert_memory_equal(&s, &orig, sizeof s);
  assert_int_equal(st.no_record, 1);
  apply(tl, NULL, 0, NULL);
  assert_int_equal(pb_gpu_timeline_add_external(tl, 1, 2, 1), -EINVAL);
  assert_int_equal(pb_gpu_timeline_add_external(tl, 1, -1, 1), -EINVAL);
  kernel(tl, 1, 0, BASE_NS + 140 * US, BASE_NS + 160 * US);
  ext(tl, 1, PB_GPU_EXT_COMPUTE, 1);
  apply(tl, NULL, 0, &st);
  assert_int_equal(st.unmatched, 1);
  apply(tl, &s, 1, &st);
  pb_step once = s;
  apply(tl, &s, 1, &st);
  assert_memory_equal(&s, &once, sizeof s);
  assert_int_equal(st.compute_rewritten, 1);
  pb_gpu_timeline_free(tl); /* free then reuse: init state */
  assert_int_equal(tl->nact, 0);
  kernel(tl, 2, 0, 1, 2);
  free_tl(tl);
}

static uint64_t rng_next(uint64_t *x) { /* splitmix64: a reproducible shuffle */
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

typedef struct rec {
  int type; /* 0 kernel, 1 copy, 2 external compute, 3 external copy */
  uint32_t corr, dev;
  uint64_t s, e, key;
} rec;

/* Thousands of steps on four devices, three kernels and two copy chunks each, plus one external per
 * sync call, delivered in a random order: every step gets exactly its own intervals (grows the arrays
 * past their first capacity and exercises the sorted join). */
static void test_many_shuffled(void **state) {
  enum { NSTEPS = 5000, PER_STEP = 11 };
  pb_step *s = calloc(NSTEPS, sizeof *s);
  rec *r = calloc((size_t)NSTEPS * PER_STEP, sizeof *r);
  assert_non_null(s);
  assert_non_null(r);
  size_t n = 0;
  uint32_t corr = 1;
  for (int i = 0; i < NSTEPS; i++) {
    uint64_t t0 = BASE_NS + (uint64_t)(i / 4) * 1000 * US, key = 0xab00000000ull + (uint64_t)i * 7;
    uint16_t dev = (uint16_t)(i % 4);
    s[i] = host_step(key, dev, t0);
    for (int c = 0; c < 2; c++, corr++) { /* copy chunks [22, 60) and [60, 98) us */
      r[n++] = (rec){1, corr, dev, t0 + (22 + 38 * (uint64_t)c) * US, t0 + (60 + 38 * (uint64_t)c) * US, 0};
      r[n++] = (rec){3, corr, 0, 0, 0, key};
    }
    for (int k = 0; k < 3; k++, corr++) { /* kernels [135, 155), [155, 175), [175, 195) us */
      r[n++] = (rec){0, corr, dev, t0 + (135 + 20 * (uint64_t)k) * US, t0 + (155 + 20 * (uint64_t)k) * US, 0};
      r[n++] = (rec){2, corr, 0, 0, 0, key};
    }
    r[n++] = (rec){2, corr++, 0, 0, 0, key}; /* cudaStreamSynchronize: an external, no GPU work */
  }
  uint64_t seed = 12345;
  for (size_t i = n - 1; i > 0; i--) {
    size_t j = (size_t)(rng_next(&seed) % (i + 1));
    rec t = r[i];
    r[i] = r[j];
    r[j] = t;
  }
  pb_gpu_timeline *tl = new_tl();
  for (size_t i = 0; i < n; i++) {
    if (r[i].type == 0) kernel(tl, r[i].corr, r[i].dev, r[i].s, r[i].e);
    if (r[i].type == 1) h2d(tl, r[i].corr, r[i].dev, r[i].s, r[i].e, 2048);
    if (r[i].type == 2) ext(tl, r[i].corr, PB_GPU_EXT_COMPUTE, r[i].key);
    if (r[i].type == 3) ext(tl, r[i].corr, PB_GPU_EXT_COPY, r[i].key);
  }
  pb_gpu_apply_stats st;
  apply(tl, s, NSTEPS, &st);
  for (int i = 0; i < NSTEPS; i++) {
    uint64_t t0 = BASE_NS + (uint64_t)(i / 4) * 1000 * US;
    assert_int_equal(s[i].h2d_start_ns, t0 + 22 * US);
    assert_int_equal(s[i].h2d_end_ns, t0 + 98 * US);
    assert_int_equal(s[i].compute_start_ns, t0 + 135 * US);
    assert_int_equal(s[i].compute_end_ns, t0 + 195 * US);
    assert_int_equal(s[i].prev_end_ns, t0);
  }
  assert_int_equal(st.compute_rewritten, NSTEPS);
  assert_int_equal(st.h2d_rewritten, NSTEPS);
  assert_int_equal(st.no_record, 0);
  assert_int_equal(st.unmatched, 0);
  assert_int_equal(st.uncorrelated, 0);
  assert_int_equal(st.h2d_bytes, (uint64_t)NSTEPS * 2 * 2048);
  free_tl(tl);
  free(r);
  free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_out_of_order),
      cmocka_unit_test(test_several_kernels_per_step),
      cmocka_unit_test(test_copy_in_chunks),
      cmocka_unit_test(test_invalid_dropped),
      cmocka_unit_test(test_d2h_ignored),
      cmocka_unit_test(test_unmatched_and_uncorrelated),
      cmocka_unit_test(test_kinds_do_not_mix),
      cmocka_unit_test(test_steps_without_records_untouched),
      cmocka_unit_test(test_two_devices),
      cmocka_unit_test(test_inconsistent_step_rejected),
      cmocka_unit_test(test_window_fields_untouched),
      cmocka_unit_test(test_edges),
      cmocka_unit_test(test_many_shuffled),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
