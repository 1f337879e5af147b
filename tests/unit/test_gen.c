/* Unit tests for gen's plan (src/cli/gen_plan.c): the files' names, which names are gen's own, how samples
 * split over files, the seeds of the sizes and bytes, each record's size, the npy arrays' shapes, the
 * writer threads and what gen refuses to generate.  The answers are worked by hand (the seeds' 64-bit
 * products in Python: (2 * 0x9E3779B97F4A7C15 + 1) mod 2^64 = 0x3C6EF372FE94F82B). */
#include <string.h>

#include "gen_plan.h"
#include "unit_util.h"

static void names_of_each_format(void **state) {
  (void)state;
  static const struct {
    pb_format format;
    uint64_t index;
    const char *want;
  } cases[] = {
      {PB_FMT_JPEG, 7, "img-00000007.jpg"},
      {PB_FMT_JPEG, 123456789, "img-123456789.jpg"}, /* more digits than the width: all of them */
      {PB_FMT_TFRECORD, 3, "shard-00003.tfrecord"},
      {PB_FMT_NPY, 0, "sample-00000000.npy"},
      {PB_FMT_NPZ, 12, "sample-00000012.npz"},
      {PB_FMT_RAW, 2, "records-00002.bin"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char name[64];
    pb_gen_file_name(cases[i].format, cases[i].index, name, sizeof name);
    assert_string_equal(name, cases[i].want);
    assert_true(pb_gen_is_generated(name)); /* every name gen writes is one it removes on --force */
  }
}

static void only_gens_own_names(void **state) {
  (void)state;
  static const char *const ours[] = {"img-00000001.jpg",      ".tmp-shard-00001.tfrecord", PB_GEN_MANIFEST,
                                     ".tmp-" PB_GEN_MANIFEST, "records-12345.bin",         "sample-000000001.npz"};
  static const char *const theirs[] = {"img-holiday.png",
                                       "img-0001.jpg",
                                       "shard-00001.tfrecord.bak",
                                       "records-1234.bin",
                                       "sample-00000001.npy.txt",
                                       ".tmp-img-1.jpg",
                                       "notes.txt",
                                       "img-00000001.JPG",
                                       ".tmp-",
                                       ""};
  for (size_t i = 0; i < sizeof ours / sizeof ours[0]; i++)
    if (!pb_gen_is_generated(ours[i])) fail_msg("\"%s\" is gen's own, and was not recognised", ours[i]);
  for (size_t i = 0; i < sizeof theirs / sizeof theirs[0]; i++)
    if (pb_gen_is_generated(theirs[i])) fail_msg("\"%s\" is not gen's, and was taken for it", theirs[i]);
}

static void samples_split_over_files(void **state) {
  (void)state;
  assert_int_equal(pb_gen_sample_index(0, 128, 0), 0);
  assert_int_equal(pb_gen_sample_index(3, 128, 5), 389); /* 3 x 128 + 5 */
  assert_int_equal(pb_gen_sample_index(9, 1, 0), 9);     /* one sample per file: the file's index */
  assert_int_equal(pb_gen_label(389), 389);
  assert_int_equal(pb_gen_label(1389), 389); /* 1000 classes, in turn */
  assert_int_equal(pb_gen_label(999), 999);
  assert_int_equal(pb_gen_label(1000), 0);
}

static void seeds(void **state) {
  (void)state;
  assert_int_equal(pb_gen_size_seed(0, 5), 5);
  assert_int_equal(pb_gen_size_seed(1, 0), 0x9E3779B97F4A7C15ULL);
  assert_int_equal(pb_gen_size_seed(2, 1), 0x3C6EF372FE94F82BULL); /* the product wraps */
  assert_int_equal(pb_gen_bytes_seed(0, 1), 0xD1B54A32D192ED03ULL);
  assert_int_equal(pb_gen_bytes_seed(5, 0), 5);
  assert_int_equal(pb_gen_bytes_seed(0xFF, 2), 0xA36A9465A325DAF9ULL);
}

static void record_sizes(void **state) {
  (void)state;
  static pb_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.seed = 42;
  cfg.dataset.generate.record_bytes = 4096;
  for (uint64_t key = 0; key < 50; key++) assert_int_equal(pb_gen_record_bytes(&cfg, key), 4096); /* no stdev */
  cfg.dataset.generate.record_bytes_stdev = 512;
  size_t a = pb_gen_record_bytes(&cfg, 1), b = pb_gen_record_bytes(&cfg, 2);
  assert_int_equal(pb_gen_record_bytes(&cfg, 1), a); /* seeded: the same record, the same size */
  assert_int_not_equal(a, b);
  double sum = 0;
  for (uint64_t key = 0; key < 4000; key++) sum += (double)pb_gen_record_bytes(&cfg, key);
  assert_double_between(sum / 4000, 4096 - 40, 4096 + 40); /* 4000 draws: the mean's stdev is 8 bytes */
  cfg.dataset.generate.record_bytes = 1;                   /* a stdev far over the mean: never below 1 */
  cfg.dataset.generate.record_bytes_stdev = 1000000;
  int ones = 0;
  for (uint64_t key = 0; key < 100; key++) {
    size_t n = pb_gen_record_bytes(&cfg, key);
    assert_int_cmp((int64_t)n, >=, 1);
    ones += n == 1;
  }
  assert_int_between(ones, 30, 70); /* about half the draws are negative, and become 1 */
  cfg.dataset.generate.record_bytes = 14660063; /* unet3d's: the tail below a tenth of the mean is raised to it */
  cfg.dataset.generate.record_bytes_stdev = 6834181;
  int floored = 0;
  for (uint64_t key = 0; key < 2000; key++) {
    size_t n = pb_gen_record_bytes(&cfg, key);
    assert_int_cmp((int64_t)n, >=, 1466006);
    floored += n == 1466006;
  }
  assert_int_between(floored, 5, 80); /* P(x < 0.1 mean) = P(z < -1.93) = 2.7 %: about 54 of 2000 */
}

static void array_shapes(void **state) {
  (void)state;
  int64_t shape[2] = {-1, -1};
  assert_int_equal(pb_gen_array_shape(4, 100, shape), 2);
  assert_int_equal(shape[0], 4);
  assert_int_equal(shape[1], 100);
  assert_int_equal(pb_gen_array_shape(1, 100, shape), 1); /* one sample: [record] */
  assert_int_equal(shape[0], 100);
  assert_int_equal(pb_gen_array_shape(0, 7, shape), 1);
  assert_int_equal(shape[0], 7);
}

static void writer_threads(void **state) {
  (void)state;
  assert_int_equal(pb_gen_workers(8, 100), 8);
  assert_int_equal(pb_gen_workers(0, 100), 1); /* no answer from the system: one */
  assert_int_equal(pb_gen_workers(64, 100), 16);
  assert_int_equal(pb_gen_workers(8, 3), 3); /* no more threads than files */
  assert_int_equal(pb_gen_workers(1, 1), 1);
}

/* A config gen accepts: 4 JPEG files of 64x48 into data/x. */
static void jpeg_config(pb_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  snprintf(cfg->dataset.path, sizeof cfg->dataset.path, "data/x");
  cfg->dataset.format = PB_FMT_JPEG;
  pb_generate_cfg *g = &cfg->dataset.generate;
  *g = (pb_generate_cfg){.present = true,
                         .num_files = 4,
                         .samples_per_file = 1,
                         .has_image = true,
                         .width = 64,
                         .height = 48,
                         .quality = 90};
}

static void expect_refusal(const pb_config *cfg, const char *want_path, const char *want_why) {
  const char *path = NULL;
  char buf[200];
  const char *why = pb_gen_refusal(cfg, &path, buf, sizeof buf);
  if (!why) fail_msg("accepted; expected %s: %s", want_path, want_why);
  assert_string_equal(path, want_path);
  if (!strstr(why, want_why)) fail_msg("\"%s\" does not say \"%s\"", why, want_why);
}

static void refusals(void **state) {
  (void)state;
  static pb_config cfg;
  const char *path;
  char buf[200];
  jpeg_config(&cfg);
  assert_null(pb_gen_refusal(&cfg, &path, buf, sizeof buf));
  cfg.dataset.generate.present = false;
  expect_refusal(&cfg, "dataset.generate", "missing");
  jpeg_config(&cfg);
  cfg.dataset.format = PB_FMT_SYNTHETIC;
  expect_refusal(&cfg, "dataset.format", "synthetic data lives in memory");
  jpeg_config(&cfg);
  snprintf(cfg.dataset.path, sizeof cfg.dataset.path, "data/*.jpg");
  expect_refusal(&cfg, "dataset.path", "not a directory");
  jpeg_config(&cfg);
  cfg.dataset.generate.samples_per_file = 2;
  expect_refusal(&cfg, "dataset.generate.samples_per_file", "one image (expected 1)");
  jpeg_config(&cfg);
  cfg.dataset.generate.height = 65501; /* one over libjpeg's side */
  expect_refusal(&cfg, "dataset.generate.image.height", "65501 pixels is more than a JPEG can hold");
  cfg.dataset.generate.height = 65500, cfg.dataset.generate.width = 65500; /* each side fits; not their product */
  expect_refusal(&cfg, "dataset.generate.image",
                 "65500 x 65500 is 4290250000 pixels (expected at most 268435456 pixels per generated image)");
  cfg.dataset.generate.width = 16384, cfg.dataset.generate.height = 16384; /* exactly 2^28: allowed */
  assert_null(pb_gen_refusal(&cfg, &path, buf, sizeof buf));
}

static void raw_refusals(void **state) {
  (void)state;
  static pb_config cfg;
  const char *path;
  char buf[200];
  jpeg_config(&cfg);
  cfg.dataset.format = PB_FMT_RAW;
  cfg.dataset.generate.has_image = false;
  expect_refusal(&cfg, "dataset.generate.record_bytes", "missing");
  cfg.dataset.generate.record_bytes = cfg.dataset.record_bytes = 512;
  assert_null(pb_gen_refusal(&cfg, &path, buf, sizeof buf));
  cfg.dataset.generate.record_bytes_stdev = 8;
  expect_refusal(&cfg, "dataset.generate.record_bytes_stdev", "fixed-size");
  cfg.dataset.generate.record_bytes_stdev = 0;
  cfg.dataset.record_bytes = 256;
  expect_refusal(&cfg, "dataset.record_bytes", "256, not the 512 bytes of the records gen writes");
  cfg.dataset.format = PB_FMT_TFRECORD; /* tfrecord with a jpeg payload needs the image */
  cfg.dataset.payload = PB_PAYLOAD_JPEG;
  expect_refusal(&cfg, "dataset.generate.image", "missing (expected width, height and quality");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(names_of_each_format),
      cmocka_unit_test(only_gens_own_names),
      cmocka_unit_test(samples_split_over_files),
      cmocka_unit_test(seeds),
      cmocka_unit_test(record_sizes),
      cmocka_unit_test(array_shapes),
      cmocka_unit_test(writer_threads),
      cmocka_unit_test(refusals),
      cmocka_unit_test(raw_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
