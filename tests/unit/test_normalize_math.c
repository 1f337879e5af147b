/* The on-device normalize (src/engine/kernels/normalize_math.h, run by cuda_kernels.cu) must produce what the host
 * ops produce for normalize + to_chw.  The kernel cannot run here, but its arithmetic and indexing are
 * the same inline functions, evaluated on the host for every output element. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "normalize_math.h"
#include "ops.h"

/* The kernel's loop body, on the host. */
static void device_normalize(const uint8_t *in, float *out, const pb_norm_params *p) {
  uint64_t total = (uint64_t)p->n * p->c * p->h * p->w;
  for (uint64_t o = 0; o < total; o++) out[o] = pb_norm_value(p, in[pb_norm_src_index(p, o)], pb_norm_channel(p, o));
}

/* The host path: per image normalize to float32, then HWC -> CHW (or already CHW). */
static void host_normalize(const uint8_t *in, float *out, const pb_norm_params *p, const double *mean,
                           const double *std, int nms) {
  size_t px = (size_t)p->h * p->w * p->c;
  float *tmp = malloc(px * sizeof *tmp);
  assert_non_null(tmp);
  for (int i = 0; i < p->n; i++) {
    pb_image src = {(void *)(in + i * px), p->h, p->w, p->c, PB_DTYPE_UINT8, p->in_chw};
    pb_image norm = {tmp, p->h, p->w, p->c, PB_DTYPE_FLOAT32, p->in_chw};
    assert_int_equal(pb_normalize(&src, &norm, mean, nms, std, nms, PB_DTYPE_FLOAT32), 0);
    pb_image chw = {out + i * px, p->h, p->w, p->c, PB_DTYPE_FLOAT32, true};
    if (p->in_chw)
      memcpy(out + i * px, tmp, px * sizeof *tmp);
    else
      assert_int_equal(pb_to_chw(&norm, &chw), 0);
  }
  free(tmp);
}

static void check_layout(int in_chw, int c, int nms) {
  const double mean[3] = {123.675, 116.28, 103.53}, std[3] = {58.395, 57.12, 57.375};
  pb_norm_params p = {.n = 3, .h = 5, .w = 7, .c = c, .in_chw = in_chw};
  for (int k = 0; k < c; k++) {
    p.mean[k] = (float)mean[nms > 1 ? k : 0];
    p.inv_std[k] = (float)(1.0 / std[nms > 1 ? k : 0]);
  }
  size_t total = (size_t)p.n * p.h * p.w * p.c;
  uint8_t *in = malloc(total);
  float *dev = malloc(total * sizeof *dev), *host = malloc(total * sizeof *host);
  assert_non_null(in);
  assert_non_null(dev);
  assert_non_null(host);
  for (size_t i = 0; i < total; i++) in[i] = (uint8_t)((i * 37 + 11) % 256);
  device_normalize(in, dev, &p);
  host_normalize(in, host, &p, mean, std, nms);
  for (size_t i = 0; i < total; i++) assert_true(fabsf(dev[i] - host[i]) <= 1e-5f * (1 + fabsf(host[i])));
  free(in);
  free(dev);
  free(host);
}

static void test_hwc_rgb(void **state) { check_layout(0, 3, 3); }
static void test_chw_rgb(void **state) { check_layout(1, 3, 3); }
static void test_gray_single_mean(void **state) { check_layout(0, 1, 1); }

/* Spot check of the index map: output (img 1, channel 2, y 0, x 1) of 2x2x3 HWC reads input
 * img 1 + pixel 1, channel 2 = 12 + 1*3 + 2. */
static void test_index_map(void **state) {
  pb_norm_params p = {.n = 2, .h = 2, .w = 2, .c = 3};
  uint64_t o = 1 * 12 + 2 * 4 + 0 * 2 + 1;
  assert_int_equal(pb_norm_src_index(&p, o), 12 + 1 * 3 + 2);
  assert_int_equal(pb_norm_channel(&p, o), 2);
  p.in_chw = 1;
  assert_int_equal(pb_norm_src_index(&p, o), o);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hwc_rgb),
      cmocka_unit_test(test_chw_rgb),
      cmocka_unit_test(test_gray_single_mean),
      cmocka_unit_test(test_index_map),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
