/* pb_queue: order, chunked moves, blocking, end of data with several producers, cancellation. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "queue.h"
#include "unit_util.h"

static pb_elem sample(uint64_t id) { return (pb_elem){.id = id, .batch_id = PB_NO_BATCH, .nsamples = 1}; }

static void test_fifo_and_wraparound(void **state) {
  pb_queue q;
  assert_int_equal(pb_queue_init(&q, 4, 1, 1), 0);
  pb_elem out[4];
  uint64_t next_in = 0, next_out = 0;
  for (int round = 0; round < 10; round++) { /* 30 elements through 4 slots: the ring wraps */
    pb_elem in[3] = {sample(next_in), sample(next_in + 1), sample(next_in + 2)};
    next_in += 3;
    assert_int_equal(pb_queue_push_many(&q, in, 3, NULL, NULL, 0), 0);
    int n = pb_queue_pop_many(&q, out, 4);
    assert_int_equal(n, 3);
    for (int i = 0; i < n; i++) assert_int_equal(out[i].id, next_out++);
  }
  pb_queue_close(&q);
}

static void test_end_of_data_needs_every_producer(void **state) {
  pb_queue q;
  pb_queue_init(&q, 8, 2, 1);
  pb_elem e = sample(7), out[8];
  pb_queue_push_many(&q, &e, 1, NULL, NULL, 0);
  pb_queue_producer_done(&q);
  assert_int_equal(pb_queue_pop_many(&q, out, 8), 1); /* one producer left: data still flows */
  pb_queue_producer_done(&q);
  assert_int_equal(pb_queue_pop_many(&q, out, 8), 0); /* now: end of data, without blocking */
  pb_queue_close(&q);
}

static void test_fair_share_with_several_consumers(void **state) {
  pb_queue q;
  pb_queue_init(&q, 64, 1, 4);
  pb_elem in[40], out[64];
  for (int i = 0; i < 40; i++) in[i] = sample((uint64_t)i);
  pb_queue_push_many(&q, in, 40, NULL, NULL, 0);
  assert_int_equal(pb_queue_pop_many(&q, out, 64), 10); /* 40 queued, 4 consumers: a quarter each */
  assert_int_equal(pb_queue_pop_many(&q, out, 2), 2);   /* never more than asked */
  pb_queue_close(&q);
}

typedef struct producer_arg {
  pb_queue *q;
  int count, chunk;
  uint64_t base;
} producer_arg;

static void producer(void *p) {
  producer_arg *a = p;
  pb_elem buf[16];
  for (int i = 0; i < a->count; i += a->chunk) {
    int n = a->count - i < a->chunk ? a->count - i : a->chunk;
    for (int k = 0; k < n; k++) buf[k] = sample(a->base + (uint64_t)(i + k));
    pb_queue_push_many(a->q, buf, n, NULL, NULL, 0);
  }
  pb_queue_producer_done(a->q);
}

/* Two producers through a tiny queue (blocking on full): every element arrives exactly once. */
static void test_threads_deliver_everything_once(void **state) {
  enum { PER = 20000 };
  pb_queue q;
  pb_queue_init(&q, 3, 2, 1);
  uint64_t t0 = uv_hrtime();
  producer_arg a = {&q, PER, 5, 0}, b = {&q, PER, 7, PER};
  uv_thread_t ta, tb;
  uv_thread_create(&ta, producer, &a);
  uv_thread_create(&tb, producer, &b);
  static uint8_t seen[2 * PER];
  int total = 0, n;
  pb_elem out[16];
  while ((n = pb_queue_pop_many(&q, out, 16)) > 0) {
    for (int i = 0; i < n; i++) {
      assert_true(out[i].id < 2 * PER);
      assert_int_equal(seen[out[i].id], 0);
      seen[out[i].id] = 1;
    }
    total += n;
  }
  assert_int_equal(n, 0);
  assert_int_equal(total, 2 * PER);
  uv_thread_join(&ta);
  uv_thread_join(&tb);
  double fill = pb_queue_mean_fill(&q, uv_hrtime() - t0); /* time-weighted over the whole test */
  assert_double_cmp(fill, >, 0.0);
  assert_double_cmp(fill, <=, 1.0);
  pb_queue_close(&q);
}

typedef struct blocked_arg {
  pb_queue *q;
  int rc;
  bool push;
} blocked_arg;

static void blocked_worker(void *p) {
  blocked_arg *a = p;
  pb_elem e = sample(1), out[1];
  a->rc = a->push ? pb_queue_push_many(a->q, &e, 1, NULL, NULL, 0) : pb_queue_pop_many(a->q, out, 1);
}

/* Time-weighted occupancy: full for the whole window reads 1, empty reads 0, and only the window counts. */
static void test_mean_fill_is_time_weighted(void **state) {
  pb_queue q;
  pb_queue_init(&q, 2, 1, 1);
  _Atomic uint64_t ws = UINT64_MAX, we = UINT64_MAX;
  pb_queue_set_window(&q, &ws, &we);
  pb_elem two[2] = {sample(0), sample(1)}, out[2];
  pb_queue_push_many(&q, two, 2, NULL, NULL, 0);
  uv_sleep(20); /* full, but before the window: not counted */
  atomic_store(&ws, uv_hrtime());
  uv_sleep(50); /* full inside the window */
  pb_queue_pop_many(&q, out, 2);
  uv_sleep(50); /* empty inside the window */
  atomic_store(&we, uv_hrtime());
  double fill = pb_queue_mean_fill(&q, atomic_load(&we) - atomic_load(&ws));
  assert_double_cmp(fill, >, 0.4);
  assert_double_cmp(fill, <, 0.6);
  pb_queue_close(&q);
}

/* Cancellation wakes a consumer waiting on empty and a producer waiting on full. */
static void test_cancel_wakes_waiters(void **state) {
  pb_queue empty, full;
  pb_queue_init(&empty, 1, 1, 1);
  pb_queue_init(&full, 1, 1, 1);
  pb_elem e = sample(0);
  pb_queue_push_many(&full, &e, 1, NULL, NULL, 0);
  blocked_arg pop = {&empty, 99, false}, push = {&full, 99, true};
  uv_thread_t t1, t2;
  uv_thread_create(&t1, blocked_worker, &pop);
  uv_thread_create(&t2, blocked_worker, &push);
  uv_sleep(50); /* let both block */
  pb_queue_cancel(&empty);
  pb_queue_cancel(&full);
  uv_thread_join(&t1);
  uv_thread_join(&t2);
  assert_int_equal(pop.rc, -ECANCELED);
  assert_int_equal(push.rc, -ECANCELED);
  assert_int_equal(pb_queue_drain(&full), 1); /* what is left is counted, not lost */
  pb_queue_close(&empty);
  pb_queue_close(&full);
}

static int queued(pb_queue *q) {
  uv_mutex_lock(&q->lock);
  int n = q->count;
  uv_mutex_unlock(&q->lock);
  return n;
}

/* A producer waiting on a full queue is woken when a quarter of it is free, not by every pop: consumers
 * that take one element at a time (the threads of a slow stage) used to wake it for each, and on a busy
 * machine each wake-up costs the stage's cores more than the element's hand-off. */
static void test_full_queue_wakes_producer_at_a_quarter(void **state) {
  pb_queue q;
  pb_queue_init(&q, 16, 1, 1);
  pb_elem in[16], out[16];
  for (int i = 0; i < 16; i++) in[i] = sample((uint64_t)i);
  pb_queue_push_many(&q, in, 16, NULL, NULL, 0);
  producer_arg a = {&q, 8, 8, 16}; /* 8 more, in one push: it blocks on the full queue */
  uv_thread_t t;
  uv_thread_create(&t, producer, &a);
  uv_sleep(30);
  for (int i = 1; i <= 3; i++) {
    assert_int_equal(pb_queue_pop_many(&q, out, 1), 1);
    uv_sleep(20);
    assert_int_equal(queued(&q), 16 - i); /* under a quarter free: the producer sleeps on */
  }
  assert_int_equal(pb_queue_pop_many(&q, out, 1), 1);
  for (int ms = 0; ms < 2000 && queued(&q) < 16; ms++) uv_sleep(1);
  assert_int_equal(queued(&q), 16); /* a quarter free: woken, it filled the room */
  int total = 4, n;
  while ((n = pb_queue_pop_many(&q, out, 16)) > 0) total += n;
  assert_int_equal(total, 24);
  uv_thread_join(&t);
  pb_queue_close(&q);
}

/* Under an ahead limit of 2, started outputs plus queued ones stay within 2: two reservations fill it, a
 * pop frees one, and unreserving gives room back; without a limit a reservation is all it asks at once. */
static void test_ahead_limit_counts_started_and_queued(void **state) {
  (void)state;
  pb_queue q;
  pb_queue_init(&q, 8, 2, 1);
  assert_int_equal(pb_queue_reserve(&q, 5, NULL), 5); /* no limit */
  pb_queue_set_ahead(&q, 2);
  assert_int_equal(pb_queue_reserve(&q, 5, NULL), 2);
  pb_elem e = sample(0), out[2];
  assert_int_equal(pb_queue_push_many(&q, &e, 1, NULL, NULL, 1), 0); /* one reserved slot filled */
  assert_int_equal(q.reserved, 1);
  assert_int_equal(q.count, 1);
  pb_queue_unreserve(&q, 1);
  assert_int_equal(pb_queue_reserve(&q, 5, NULL), 1); /* the queued one still counts */
  assert_int_equal(pb_queue_pop_many(&q, out, 2), 1);
  assert_int_equal(pb_queue_reserve(&q, 5, NULL), 1);
  assert_int_equal(q.reserved, 2);
  pb_queue_close(&q);
}

typedef struct reserver_arg {
  pb_queue *q;
  int rounds;
  _Atomic int started; /* reservations made */
} reserver_arg;

/* A producer: `rounds` times, reserve one, then push it. */
static void reserver(void *p) {
  reserver_arg *a = p;
  for (int i = 0; i < a->rounds; i++) {
    if (pb_queue_reserve(a->q, 1, NULL) != 1) return;
    atomic_fetch_add(&a->started, 1);
    pb_elem e = sample((uint64_t)i);
    pb_queue_push_many(a->q, &e, 1, NULL, NULL, 1);
  }
}

static int wait_started(reserver_arg *a, int n) {
  for (int ms = 0; ms < 5000 && atomic_load(&a->started) < n; ms++) uv_sleep(1);
  return atomic_load(&a->started);
}

/* Two producers under a limit of 2: they fill it and wait; one pop of two lets both go on (each woken,
 * not one of them), and nothing more is started. */
static void test_ahead_wakes_every_producer_with_room(void **state) {
  (void)state;
  pb_queue q;
  pb_queue_init(&q, 8, 2, 1);
  pb_queue_set_ahead(&q, 2);
  reserver_arg a = {&q, 2, 0};
  uv_thread_t t1, t2;
  uv_thread_create(&t1, reserver, &a);
  uv_thread_create(&t2, reserver, &a);
  assert_int_equal(wait_started(&a, 2), 2);
  uv_sleep(20);
  assert_int_equal(atomic_load(&a.started), 2); /* the limit holds */
  pb_elem out[2];
  assert_int_equal(pb_queue_pop_many(&q, out, 2), 2);
  assert_int_equal(wait_started(&a, 4), 4);
  uv_thread_join(&t1);
  uv_thread_join(&t2);
  pb_queue_close(&q);
}

/* On demand (limit 0): nothing is started until a consumer waits, then one output for it. */
static void test_on_demand_starts_when_a_consumer_waits(void **state) {
  (void)state;
  pb_queue q;
  pb_queue_init(&q, 1, 1, 1);
  pb_queue_set_ahead(&q, 0);
  reserver_arg a = {&q, 2, 0};
  uv_thread_t t;
  uv_thread_create(&t, reserver, &a);
  uv_sleep(30);
  assert_int_equal(atomic_load(&a.started), 0);
  pb_elem out[1];
  assert_int_equal(pb_queue_pop_many(&q, out, 1), 1); /* waits: that is the demand */
  uv_sleep(30);
  assert_int_equal(atomic_load(&a.started), 1); /* not one ahead of the next demand */
  assert_int_equal(pb_queue_pop_many(&q, out, 1), 1);
  uv_thread_join(&t);
  assert_int_equal(atomic_load(&a.started), 2);
  pb_queue_cancel(&q);
  assert_int_equal(pb_queue_reserve(&q, 1, NULL), -ECANCELED);
  pb_queue_close(&q);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fifo_and_wraparound),
      cmocka_unit_test(test_end_of_data_needs_every_producer),
      cmocka_unit_test(test_fair_share_with_several_consumers),
      cmocka_unit_test(test_threads_deliver_everything_once),
      cmocka_unit_test(test_mean_fill_is_time_weighted),
      cmocka_unit_test(test_cancel_wakes_waiters),
      cmocka_unit_test(test_full_queue_wakes_producer_at_a_quarter),
      cmocka_unit_test(test_ahead_limit_counts_started_and_queued),
      cmocka_unit_test(test_ahead_wakes_every_producer_with_room),
      cmocka_unit_test(test_on_demand_starts_when_a_consumer_waits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
