/* calibrate's arithmetic (calibrate_fit.h). */
#include "calibrate_fit.h"

#include <math.h>
#include <stdlib.h>

#include "common.h"

double pb_calib_budget_s(const char *env) {
  double s = env ? strtod(env, NULL) : 0;
  return s > 0 ? s : PB_CALIB_SECONDS;
}

size_t pb_calib_sample_stride(size_t count, size_t max_files) { return count > max_files ? count / max_files : 1; }

void pb_calib_shuffled_order(size_t *order, size_t n, uint64_t seed) {
  pb_rng r;
  pb_rng_seed(&r, seed);
  for (size_t i = 0; i < n; i++) order[i] = i;
  for (size_t i = n; i > 1; i--) {
    size_t j = (size_t)(pb_rng_next(&r) % i), t = order[i - 1];
    order[i - 1] = order[j];
    order[j] = t;
  }
}

uint64_t pb_calib_gcd(uint64_t a, uint64_t b) {
  while (b) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

void pb_calib_block_walk(uint64_t nblocks, uint64_t draw_start, uint64_t draw_step, uint64_t *start, uint64_t *step) {
  *start = 0, *step = 1;
  if (nblocks <= 2) return;
  *start = draw_start % nblocks;
  *step = nblocks / 2 + 1 + draw_step % (nblocks / 3 + 1); /* far apart: no readahead helps */
  *step %= nblocks;
  while (pb_calib_gcd(*step, nblocks) != 1) *step = *step + 1 < nblocks ? *step + 1 : 1;
}

size_t pb_calib_direct_block(size_t block) {
  return (block + PB_CALIB_DIRECT_ALIGN - 1) / PB_CALIB_DIRECT_ALIGN * PB_CALIB_DIRECT_ALIGN;
}
