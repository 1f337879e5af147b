/* pb_pool: fixed buffers, alignment, blocking get woken by release, cancellation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_get_release_alignment),
      cmocka_unit_test(test_get_waits_for_release),
      cmocka_unit_test(test_cancel_wakes_getter),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
