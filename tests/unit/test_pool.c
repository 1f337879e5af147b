/* pb_pool: fixed buffers, alignment, blocking get woken by release, cancellation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "pool.h"

static void test_get_release_alignment(void **state) {
  pb_pool p;
  assert_int_equal(pb_pool_init(&p, 3, 1000, 4096), 0);
  pb_buf *b[3];
  for (int i = 0; i < 3; i++) {
    b[i] = pb_pool_try_get(&p);
    assert_non_null(b[i]);
    assert_int_equal((uintptr_t)b[i]->data % 4096, 0);
    assert_int_equal(b[i]->capacity_bytes, 1000);
  }
  assert_null(pb_pool_try_get(&p)); /* exhausted: never grows */
  pb_buf_release(b[1]);
  assert_ptr_equal(pb_pool_try_get(&p), b[1]);
  for (int i = 0; i < 3; i++) pb_buf_release(b[i]);
  pb_buf_release(NULL); /* shared payloads carry no buffer */
  assert_int_equal(pb_pool_free_count(&p), 3);
  pb_pool_close(&p);
}

typedef struct getter {
  pb_pool *p;
  pb_buf *got;
} getter;

static void get_blocking(void *arg) {
  getter *g = arg;
  g->got = pb_pool_get(g->p);
}

static void test_get_waits_for_release(void **state) {
  pb_pool p;
  pb_pool_init(&p, 1, 64, 64);
  pb_buf *only = pb_pool_get(&p);
  getter g = {&p, NULL};
  uv_thread_t t;
  uv_thread_create(&t, get_blocking, &g);
  uv_sleep(30);
  assert_int_equal(pb_pool_free_count(&p), 0); /* the getter is still waiting */
  pb_buf_release(only);
  uv_thread_join(&t);
  assert_ptr_equal(g.got, only);
  pb_buf_release(g.got);
  pb_pool_close(&p);
}

static void test_cancel_wakes_getter(void **state) {
  pb_pool p;
  pb_pool_init(&p, 1, 64, 64);
  pb_buf *only = pb_pool_get(&p);
  getter g = {&p, only};
  uv_thread_t t;
  uv_thread_create(&t, get_blocking, &g);
  uv_sleep(30);
  pb_pool_cancel(&p);
  uv_thread_join(&t);
  assert_null(g.got);
  pb_buf_release(only);
  pb_pool_close(&p);
}

/* Size classes: never less than asked, at most 12.5 % more above 4 KB, stable (a class is its own class),
 * and few: every size from 120 KB + 1 to 128 KB lands on 128 KB (steps of 8 KB between 64 and 128 KB). */
static void test_size_classes(void **state) {
  (void)state;
  for (size_t n = 1; n < (64u << 20); n = n * 3 / 2 + 1) {
    size_t c = pb_buf_size_class(n);
    assert_true(c >= n);
    if (n > 4096) assert_true(c * 8 <= n * 9);
    assert_int_equal(pb_buf_size_class(c), c);
  }
  for (size_t n = 120 * 1024 + 1; n <= 128 * 1024; n += 97) assert_int_equal(pb_buf_size_class(n), 128 * 1024);
}

/* A buffer grows to its pool's largest need so far (or what pb_pool_expect announced), so buffers of a
 * pool settle on one size instead of growing a few bytes at a time (the soak's creeping heap). */
static void test_buffers_grow_to_the_pools_largest(void **state) {
  (void)state;
  pb_pool p;
  assert_int_equal(pb_pool_init(&p, 3, 0, 64), 0);
  pb_buf *a = pb_pool_get(&p), *b = pb_pool_get(&p), *c = pb_pool_get(&p);
  assert_int_equal(pb_buf_reserve(a, 100000), 0);
  assert_int_equal(a->capacity_bytes, pb_buf_size_class(100000));
  assert_int_equal(pb_buf_reserve(b, 5000), 0);
  assert_int_equal(b->capacity_bytes, a->capacity_bytes); /* the pool's largest, not 5000 */
  pb_pool_expect(&p, 300000);
  assert_int_equal(pb_buf_reserve(c, 10), 0);
  assert_int_equal(c->capacity_bytes, pb_buf_size_class(300000));
  void *kept = a->data;
  assert_int_equal(pb_buf_reserve(a, 90000), 0); /* big enough already: no new block */
  assert_ptr_equal(a->data, kept);
  pb_buf_release(a);
  pb_buf_release(b);
  pb_buf_release(c);
  pb_pool_close(&p);
}

/* A planned pool: buffers settle on a common size only up to the plan; one past it takes the excess from
 * the run's budget, is refused (-E2BIG, nothing allocated) when the budget cannot cover it, and goes back
 * empty on release, its excess returned. */
static void test_buffers_past_the_plan_use_the_budget(void **state) {
  (void)state;
  pb_pool p;
  pb_mem_budget budget = {.allowed_bytes = 3u << 20};
  assert_int_equal(pb_pool_init(&p, 3, 0, 64), 0);
  pb_pool_plan(&p, 1u << 20, &budget);
  pb_buf *a = pb_pool_get(&p), *b = pb_pool_get(&p), *c = pb_pool_get(&p);
  assert_int_equal(pb_buf_reserve(a, 3u << 20), 0); /* 2 MiB past the plan */
  assert_int_equal(atomic_load(&budget.over_plan_bytes), 2u << 20);
  assert_int_equal(pb_buf_reserve(b, 1000), 0);
  assert_int_equal(b->capacity_bytes, 1000); /* the outsized buffer did not raise the pool's common size */
  assert_int_equal(pb_buf_reserve(c, 5u << 20), -E2BIG); /* 4 MiB more: over the 3 MiB allowed */
  assert_int_equal(atomic_load(&budget.over_plan_bytes), 2u << 20);
  pb_buf_release(a); /* freed: its excess back */
  assert_int_equal(atomic_load(&budget.over_plan_bytes), 0);
  assert_null(a->data);
  assert_int_equal(pb_buf_reserve(c, 4u << 20), 0);
  assert_int_equal(atomic_load(&budget.over_plan_bytes), 3u << 20);
  pb_buf_release(b);
  pb_buf_release(c);
  assert_int_equal(atomic_load(&budget.over_plan_bytes), 0);
  pb_pool_close(&p);
}

/* The batch collate's streaming copy: every size around its threshold and its 64-byte blocks, every
 * alignment of both ends, and nothing written outside the destination. */
static void test_copy_streaming(void **state) {
  (void)state;
  const size_t max = (64u << 10) + 300;
  uint8_t *src = malloc(max + 64), *dst = malloc(max + 128);
  assert_non_null(src);
  assert_non_null(dst);
  for (size_t i = 0; i < max + 64; i++) src[i] = (uint8_t)(i * 131u + 7u);
  const size_t sizes[] = {0, 1, 63, 4096, (64u << 10) - 1, 64u << 10, (64u << 10) + 1, (64u << 10) + 63, max};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
    for (size_t so = 0; so < 17; so += 4)
      for (size_t d_off = 1; d_off < 34; d_off += 5) {
        size_t n = sizes[k];
        memset(dst, 0xA5, max + 128);
        pb_copy_streaming(dst + d_off, src + so, n);
        assert_memory_equal(dst + d_off, src + so, n);
        for (size_t i = 0; i < d_off; i++) assert_int_equal(dst[i], 0xA5);
        for (size_t i = d_off + n; i < max + 128; i++) assert_int_equal(dst[i], 0xA5);
      }
  free(src);
  free(dst);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_get_release_alignment),
      cmocka_unit_test(test_get_waits_for_release),
      cmocka_unit_test(test_cancel_wakes_getter),
      cmocka_unit_test(test_size_classes),
      cmocka_unit_test(test_buffers_grow_to_the_pools_largest),
      cmocka_unit_test(test_buffers_past_the_plan_use_the_budget),
      cmocka_unit_test(test_copy_streaming),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
