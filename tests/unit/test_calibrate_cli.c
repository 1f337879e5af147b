/* Unit tests for `pipebench calibrate`'s arithmetic (src/cli/calibrate_fit.c: its time budget, the decode
 * sample's stride, the shuffled file order, the scattered walk over a file's blocks, O_DIRECT's block) and
 * its summary (src/reports/calibrate_out.c: which cached dataset entries it shows, and the lines).  Worked by
 * hand, e.g. the walk over 10 blocks from draws (3, 0): start 3, step 10/2 + 1 + 0 = 6, not coprime to 10,
 * so 7: blocks 3 0 7 4 1 8 5 2 9 6. */
#include <math.h>
#include <string.h>

#include "calibrate_fit.h"
#include "calibrate_out.h"
#include "unit_util.h"

static void budget(void **state) {
  (void)state;
  assert_double_cmp(pb_calib_budget_s(NULL), ==, 1.0);
  assert_double_cmp(pb_calib_budget_s("2.5"), ==, 2.5);
  assert_double_cmp(pb_calib_budget_s("0.25s"), ==, 0.25); /* strtod's prefix */
  assert_double_cmp(pb_calib_budget_s("0"), ==, 1.0);      /* not positive: the default */
  assert_double_cmp(pb_calib_budget_s("-3"), ==, 1.0);
  assert_double_cmp(pb_calib_budget_s("abc"), ==, 1.0);
}

static void decode_sample_stride(void **state) {
  (void)state;
  assert_int_equal(pb_calib_sample_stride(0, 64), 1);
  assert_int_equal(pb_calib_sample_stride(10, 64), 1);
  assert_int_equal(pb_calib_sample_stride(64, 64), 1);
  assert_int_equal(pb_calib_sample_stride(65, 64), 1); /* 65 / 64: every file, the first 64 taken */
  assert_int_equal(pb_calib_sample_stride(128, 64), 2);
  assert_int_equal(pb_calib_sample_stride(1000, 64), 15);
}

static void shuffled_order(void **state) {
  (void)state;
  size_t a[50], b[50], c[50];
  pb_calib_shuffled_order(a, 50, 7);
  pb_calib_shuffled_order(b, 50, 7);
  pb_calib_shuffled_order(c, 50, 8);
  int seen[50] = {0}, moved = 0;
  for (size_t i = 0; i < 50; i++) {
    assert_int_cmp(a[i], <, 50);
    seen[a[i]]++;
    moved += a[i] != i;
  }
  for (int i = 0; i < 50; i++) assert_int_equal(seen[i], 1); /* a permutation */
  assert_memory_equal(a, b, sizeof a);                       /* seeded */
  assert_memory_not_equal(a, c, sizeof a);
  assert_int_cmp(moved, >, 25);
  size_t one[1] = {99};
  pb_calib_shuffled_order(one, 1, 7);
  assert_int_equal(one[0], 0);
  pb_calib_shuffled_order(NULL, 0, 7); /* nothing to order: touches nothing */
}

static void gcd(void **state) {
  (void)state;
  assert_int_equal(pb_calib_gcd(12, 18), 6);
  assert_int_equal(pb_calib_gcd(7, 0), 7);
  assert_int_equal(pb_calib_gcd(0, 5), 5);
  assert_int_equal(pb_calib_gcd(17, 5), 1);
}

static void walk_of(uint64_t n, uint64_t draw_start, uint64_t draw_step, uint64_t want_start, uint64_t want_step) {
  uint64_t start, step;
  pb_calib_block_walk(n, draw_start, draw_step, &start, &step);
  if (start != want_start || step != want_step)
    fail_msg("%llu blocks, draws (%llu, %llu): start %llu step %llu, expected %llu and %llu", (unsigned long long)n,
             (unsigned long long)draw_start, (unsigned long long)draw_step, (unsigned long long)start,
             (unsigned long long)step, (unsigned long long)want_start, (unsigned long long)want_step);
}

static void block_walk_by_hand(void **state) {
  (void)state;
  walk_of(1, 5, 5, 0, 1); /* two blocks or fewer: in order */
  walk_of(2, 5, 5, 0, 1);
  walk_of(10, 3, 0, 3, 7);  /* 6 shares 2 with 10: 7 */
  walk_of(10, 23, 4, 3, 7); /* 6 + 4 mod 4 = 6: 7 */
  walk_of(10, 0, 3, 0, 9);  /* 6 + 3 = 9, coprime */
  walk_of(4, 1, 1, 1, 1);   /* 2 + 1 + 1 = 4 wraps to 0, which shares 4 with 4: 1 */
  walk_of(3, 2, 1, 2, 1);   /* 1 + 1 + 1 = 3 wraps to 0: 1 */
}

/* Every walk is a permutation of the blocks, with its step in the far half. */
static void block_walk_visits_each_once(void **state) {
  (void)state;
  static unsigned char seen[400];
  for (uint64_t n = 3; n <= 400; n++)
    for (uint64_t d = 0; d < 8; d++) {
      uint64_t start, step;
      pb_calib_block_walk(n, d * 7919, d * 104729 + 1, &start, &step);
      assert_int_cmp(start, <, n);
      assert_int_equal(pb_calib_gcd(step, n), 1);
      memset(seen, 0, n);
      for (uint64_t k = 0, b = start; k < n; k++, b = (b + step) % n) seen[b]++;
      for (uint64_t b = 0; b < n; b++)
        if (seen[b] != 1)
          fail_msg("%llu blocks, draw %llu: block %llu read %d times", (unsigned long long)n, (unsigned long long)d,
                   (unsigned long long)b, seen[b]);
    }
}

static void direct_block(void **state) {
  (void)state;
  assert_int_equal(pb_calib_direct_block(1), 4096);
  assert_int_equal(pb_calib_direct_block(4096), 4096);
  assert_int_equal(pb_calib_direct_block(4097), 8192);
  assert_int_equal(pb_calib_direct_block(1048576), 1048576);
}

/* A calibration of a machine without a GPU and two entries of one dataset: its 1 MiB blocks at scale 1/2,
 * and the same path at another block size. */
static void calibration(pb_calibration *c, pb_calib_dataset *key) {
  memset(c, 0, sizeof *c);
  snprintf(c->machine, sizeof c->machine, "host|cpu|8");
  snprintf(c->measured_at, sizeof c->measured_at, "2026-11-27T00:00:00Z");
  c->cores = 8, c->memcpy_gb_per_s = 10.5, c->memcpy_all_gb_per_s = 40.25;
  c->h2d_pinned_gb_per_s = NAN;
  snprintf(c->gpu_why, sizeof c->gpu_why, "no CUDA device");
  c->ndatasets = 2;
  for (int i = 0; i < 2; i++) {
    pb_calib_dataset *d = &c->datasets[i];
    snprintf(d->path, sizeof d->path, "data/imgs");
    snprintf(d->scale, sizeof d->scale, "1/2");
    d->files = 96, d->bytes = 2500000, d->block_bytes = i ? 4096 : 1048576;
    d->decode_images_per_s = 812.25, d->decode_mb_per_s = 21.5;
    for (int m = 0; m < PB_READ_MODES; m++) d->read_mb_per_s[m] = 100.0 * (m + 1);
  }
  c->datasets[0].read_mb_per_s[PB_READ_DIRECT_RAND] = NAN;
  snprintf(c->datasets[0].read_why[PB_READ_DIRECT_RAND], 128, "O_DIRECT is not supported by this file system");
  *key = c->datasets[0];
  key->files = 1; /* the counts are not part of the match */
}

static char *summary(const pb_calibration *c, const pb_calib_dataset *key, const char *cache) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  assert_non_null(f);
  pb_calibrate_out_text(f, c, key, cache);
  fclose(f);
  return text;
}

static const char k_machine[] =
    "calibration: host|cpu|8 (2026-11-27T00:00:00Z)\n"
    "  cores            8\n"
    "  memcpy           10.50 GB/s one core, 40.25 GB/s all cores\n"
    "  h2d              not measured: no CUDA device\n";

static void summary_machine_only(void **state) {
  (void)state;
  static pb_calibration c;
  pb_calib_dataset key;
  calibration(&c, &key);
  char *text = summary(&c, NULL, NULL);
  assert_string_equal(text, k_machine);
  free(text);
}

/* All cores together slower than one alone is flagged (issue 34: figures measured on a busy machine); one core
 * is never flagged. */
static void summary_flags_implausible_memcpy(void **state) {
  (void)state;
  static pb_calibration c;
  pb_calib_dataset key;
  calibration(&c, &key);
  c.memcpy_all_gb_per_s = 9.75;
  char *text = summary(&c, NULL, NULL);
  assert_non_null(strstr(text,
                         "  memcpy           10.50 GB/s one core, 9.75 GB/s all cores\n"
                         "  IMPLAUSIBLE      one core copied faster than all 8 together"));
  free(text);
  c.cores = 1;
  text = summary(&c, NULL, NULL);
  assert_null(strstr(text, "IMPLAUSIBLE"));
  free(text);
}

static void summary_with_dataset(void **state) {
  (void)state;
  static pb_calibration c;
  pb_calib_dataset key;
  calibration(&c, &key);
  char *text = summary(&c, &key, "/cache/calibration.json");
  char want[2048];
  snprintf(want, sizeof want,
           "%s"
           "  dataset          data/imgs (96 files, 2.5 MB)\n"
           "  decode           812.2 images/s per core (21.5 MB/s compressed; scale 1/2)\n"
           "  read buffered_sequential 100.0 MB/s one thread (1048576-byte blocks)\n"
           "  read buffered_random     200.0 MB/s one thread (1048576-byte blocks)\n"
           "  read direct_sequential   300.0 MB/s one thread (1048576-byte blocks)\n"
           "  read direct_random       not measured: O_DIRECT is not supported by this file system\n"
           "  saved in         /cache/calibration.json\n",
           k_machine);
  assert_string_equal(text, want); /* the 4096-byte entry is another measurement: not shown */
  free(text);
}

static void dataset_match(void **state) {
  (void)state;
  static pb_calibration c;
  pb_calib_dataset key;
  calibration(&c, &key);
  assert_true(pb_calibrate_out_same_dataset(&c.datasets[0], &key));
  assert_false(pb_calibrate_out_same_dataset(&c.datasets[1], &key)); /* block size */
  pb_calib_dataset d = c.datasets[0];
  d.fused_crop = true;
  assert_false(pb_calibrate_out_same_dataset(&d, &key));
  d = c.datasets[0], d.decode_min_side = 224;
  assert_false(pb_calibrate_out_same_dataset(&d, &key));
  d = c.datasets[0], snprintf(d.scale, sizeof d.scale, "auto");
  assert_false(pb_calibrate_out_same_dataset(&d, &key));
  d = c.datasets[0], snprintf(d.path, sizeof d.path, "data/imgs2");
  assert_false(pb_calibrate_out_same_dataset(&d, &key));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(budget),
      cmocka_unit_test(decode_sample_stride),
      cmocka_unit_test(shuffled_order),
      cmocka_unit_test(gcd),
      cmocka_unit_test(block_walk_by_hand),
      cmocka_unit_test(block_walk_visits_each_once),
      cmocka_unit_test(direct_block),
      cmocka_unit_test(summary_machine_only),
      cmocka_unit_test(summary_flags_implausible_memcpy),
      cmocka_unit_test(summary_with_dataset),
      cmocka_unit_test(dataset_match),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
