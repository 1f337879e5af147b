/* `pipebench calibrate`'s arithmetic, as pure functions: its time budget, which files the decode
 * measurement samples, the shuffled order of the random reads, the scattered walk over a file's blocks
 * (each once, no table) and O_DIRECT's block size.  calibrate.c measures; these are the choices,
 * here so the unit tests reach them (tests/unit/test_calibrate_cli.c). */
#ifndef PB_CALIBRATE_FIT_H
#define PB_CALIBRATE_FIT_H

#include <stddef.h>
#include <stdint.h>

#define PB_CALIB_SECONDS 1.0 /* each measurement's default time */
#define PB_CALIB_DIRECT_ALIGN 4096

/* Seconds per measurement: PIPEBENCH_CALIBRATE_SECONDS's value when it is a positive number, else
 * PB_CALIB_SECONDS (env: the variable's text, or NULL). */
double pb_calib_budget_s(const char *env);

/* The stride between the files the decode measurement loads, so that up to max_files spread over all
 * `count` of them (1 when they all fit). */
size_t pb_calib_sample_stride(size_t count, size_t max_files);

/* order[0..n): 0..n-1 shuffled (Fisher-Yates, seeded): the same seed, the same order. */
void pb_calib_shuffled_order(size_t *order, size_t n, uint64_t seed);

/* The greatest common divisor (gcd(a, 0) = a). */
uint64_t pb_calib_gcd(uint64_t a, uint64_t b);

/* fio's randread over n blocks without a table: block (start + k * step) mod n for k = 0..n-1, from two
 * random draws; step far apart (about n/2 to 5n/6, no readahead helps) and coprime to n, so the walk is a
 * permutation.  n <= 2: in order (start 0, step 1). */
void pb_calib_block_walk(uint64_t nblocks, uint64_t draw_start, uint64_t draw_step, uint64_t *start, uint64_t *step);

/* O_DIRECT's block: `block` rounded up to PB_CALIB_DIRECT_ALIGN. */
size_t pb_calib_direct_block(size_t block);

#endif
