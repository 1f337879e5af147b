#include "queue.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "common.h"
#include "pool.h"

int pb_queue_init(pb_queue *q, int capacity, int producers, int consumers) {
  *q = (pb_queue){.capacity = capacity, .producers = producers, .consumers = consumers, .ahead_limit = -1};
  q->ring = calloc((size_t)capacity, sizeof *q->ring);
  if (!q->ring) return -ENOMEM;
  if (uv_mutex_init(&q->lock) || uv_cond_init(&q->not_empty) || uv_cond_init(&q->not_full) ||
      uv_cond_init(&q->ahead_room)) {
    free(q->ring);
    return -ENOMEM;
  }
  return 0;
}

void pb_queue_close(pb_queue *q) {
  if (!q->ring) return;
  uv_cond_destroy(&q->ahead_room);
  uv_cond_destroy(&q->not_full);
  uv_cond_destroy(&q->not_empty);
  uv_mutex_destroy(&q->lock);
  free(q->ring);
  q->ring = NULL;
}

void pb_queue_set_window(pb_queue *q, const _Atomic uint64_t *start_ns, const _Atomic uint64_t *end_ns) {
  q->window_start_ns = start_ns;
  q->window_end_ns = end_ns;
}

static uint64_t window_overlap(const pb_queue *q, uint64_t t0, uint64_t t1) {
  uint64_t ws = q->window_start_ns ? atomic_load_explicit(q->window_start_ns, memory_order_relaxed) : 0;
  uint64_t we = q->window_end_ns ? atomic_load_explicit(q->window_end_ns, memory_order_relaxed) : UINT64_MAX;
  return pb_overlap_ns(t0, t1, ws, we);
}

/* Under the lock, before the count changes: the time since the last change at the old count. */
static void integrate_fill(pb_queue *q) {
  uint64_t now = pb_now_ns();
  if (q->last_change_ns) {
    q->fill_ns += (uint64_t)q->count * window_overlap(q, q->last_change_ns, now);
    q->run_fill_ns += (uint64_t)q->count * (now - q->last_change_ns);
  }
  q->last_change_ns = now;
}

/* Wakes up to n waiters: signal when few are needed, broadcast when all are. */
static void wake(uv_cond_t *cond, int waiting, int n) {
  if (waiting == 0 || n == 0) return;
  if (n >= waiting) {
    uv_cond_broadcast(cond);
    return;
  }
  for (int i = 0; i < n; i++) uv_cond_signal(cond);
}

void pb_queue_set_ahead(pb_queue *q, int limit) { q->ahead_limit = limit < 0 ? -1 : limit; }

/* Under the lock, with an ahead limit: how many more outputs the producers may start (<= 0: none). */
static int ahead_left(const pb_queue *q) {
  int bound = q->ahead_limit == 0 ? q->waiting_consumers : q->ahead_limit;
  return bound - q->reserved - q->count;
}

/* Under the lock: slots freed or consumers come to wait: as many reserving producers as there is room for go
 * on at once (woken one after another, each would add a wake-up's latency to the next). */
static void wake_reservers(pb_queue *q) {
  int room = q->ahead_limit < 0 ? 0 : ahead_left(q);
  if (q->waiting_reservers && room > 0) wake(&q->ahead_room, q->waiting_reservers, room);
}

int pb_queue_reserve(pb_queue *q, int max, bool *waited) {
  if (waited) *waited = false;
  if (q->ahead_limit < 0) return max;
  uv_mutex_lock(&q->lock);
  while (ahead_left(q) <= 0 && !q->cancelled) {
    if (waited) *waited = true;
    q->waiting_reservers++;
    pb_thread_waits++;
    uv_cond_wait(&q->ahead_room, &q->lock);
    q->waiting_reservers--;
  }
  int k = -ECANCELED;
  if (!q->cancelled) {
    k = PB_QMIN(ahead_left(q), max);
    q->reserved += k;
    wake_reservers(q); /* room left for another */
  }
  uv_mutex_unlock(&q->lock);
  return k;
}

void pb_queue_unreserve(pb_queue *q, int n) {
  if (q->ahead_limit < 0 || n <= 0) return;
  uv_mutex_lock(&q->lock);
  q->reserved -= PB_QMIN(n, q->reserved);
  wake_reservers(q);
  uv_mutex_unlock(&q->lock);
}

int pb_queue_push_many(pb_queue *q, const pb_elem *elems, int n, int *pushed, bool *waited, int reserved) {
  int done = 0;
  if (waited) *waited = false;
  uv_mutex_lock(&q->lock);
  if (q->ahead_limit >= 0) q->reserved -= PB_QMIN(PB_QMIN(reserved, n), q->reserved); /* they become queued */
  while (done < n) {
    while (q->count == q->capacity && !q->cancelled) {
      if (waited) *waited = true;
      q->waiting_producers++;
      pb_thread_waits++;
      uv_cond_wait(&q->not_full, &q->lock);
      q->waiting_producers--;
    }
    if (q->cancelled) break;
    int room = q->capacity - q->count, k = PB_QMIN(room, n - done);
    integrate_fill(q);
    for (int i = 0; i < k; i++) q->ring[(q->head + q->count + i) % q->capacity] = elems[done + i];
    q->count += k;
    done += k;
    wake(&q->not_empty, q->waiting_consumers, k);
  }
  int rc = q->cancelled && done < n ? -ECANCELED : 0;
  uv_mutex_unlock(&q->lock);
  if (pushed) *pushed = done;
  return rc;
}

/* Room a pop must leave before it wakes a producer waiting on the full queue: a quarter of the queue, at
 * most PB_QUEUE_WAKE_ROOM.  A producer is then woken once per batch of small pops (a stage whose threads
 * take one element at a time), not at each, while its consumers still have three quarters of the queue
 * to work on. */
static int wake_room(const pb_queue *q) {
  int room = PB_QMIN(q->capacity / 4, PB_QUEUE_WAKE_ROOM);
  return room < 1 ? 1 : room;
}

/* How many one consumer may take now: all of a small backlog, a fair share of a large one. */
static int take_count(const pb_queue *q, int max) {
  int k = q->count;
  if (q->consumers > 1) k = (k + q->consumers - 1) / q->consumers;
  return k < max ? k : max;
}

/* Under the lock: takes what take_count allows (0 when empty). */
static int take_locked(pb_queue *q, pb_elem *out, int max) {
  int k = take_count(q, max);
  if (k) integrate_fill(q);
  for (int i = 0; i < k; i++) out[i] = q->ring[(q->head + i) % q->capacity];
  q->head = (q->head + k) % q->capacity;
  q->count -= k;
  int room = q->capacity - q->count;
  if (k && room >= wake_room(q)) wake(&q->not_full, q->waiting_producers, room);
  if (k) wake_reservers(q);
  return k;
}

/* Under the lock: a consumer is about to wait for an element (counted in waiting_consumers): under an
 * ahead limit of 0 that is the demand a producer waits for. */
static void consumer_waits(pb_queue *q) {
  if (q->ahead_limit == 0) wake_reservers(q);
}

int pb_queue_pop_many(pb_queue *q, pb_elem *out, int max) {
  uv_mutex_lock(&q->lock);
  while (q->count == 0 && q->producers > 0 && !q->cancelled) {
    q->waiting_consumers++;
    consumer_waits(q);
    pb_thread_waits++;
    uv_cond_wait(&q->not_empty, &q->lock);
    q->waiting_consumers--;
  }
  /* 0 from take_locked here means empty with no producer left: end of data */
  int k = q->cancelled ? -ECANCELED : take_locked(q, out, max);
  uv_mutex_unlock(&q->lock);
  return k;
}

int pb_queue_pop_until(pb_queue *q, pb_elem *out, uint64_t deadline_ns) {
  uv_mutex_lock(&q->lock);
  while (q->count == 0 && q->producers > 0 && !q->cancelled) {
    uint64_t now = pb_now_ns();
    if (now >= deadline_ns) break;
    q->waiting_consumers++;
    consumer_waits(q);
    pb_thread_waits++;
    (void)uv_cond_timedwait(&q->not_empty, &q->lock, deadline_ns - now);
    q->waiting_consumers--;
  }
  int k = q->cancelled ? -ECANCELED : take_locked(q, out, 1);
  uv_mutex_unlock(&q->lock);
  return k;
}

void pb_queue_producer_done(pb_queue *q) {
  uv_mutex_lock(&q->lock);
  if (q->producers > 0 && --q->producers == 0) uv_cond_broadcast(&q->not_empty);
  uv_mutex_unlock(&q->lock);
}

void pb_queue_cancel(pb_queue *q) {
  uv_mutex_lock(&q->lock);
  q->cancelled = true;
  uv_cond_broadcast(&q->not_empty);
  uv_cond_broadcast(&q->not_full);
  uv_cond_broadcast(&q->ahead_room);
  uv_mutex_unlock(&q->lock);
}

uint64_t pb_queue_drain(pb_queue *q) {
  uint64_t samples = 0;
  uv_mutex_lock(&q->lock);
  integrate_fill(q);
  for (int i = 0; i < q->count; i++) {
    pb_elem *e = &q->ring[(q->head + i) % q->capacity];
    samples += e->nsamples;
    pb_buf_release(e->buf);
  }
  q->count = 0;
  uv_mutex_unlock(&q->lock);
  return samples;
}

double pb_queue_mean_fill(pb_queue *q, uint64_t window_ns) {
  if (!window_ns) return NAN;
  uv_mutex_lock(&q->lock);
  integrate_fill(q); /* the stretch since the last change, up to the window's end */
  double fill = (double)q->fill_ns / ((double)window_ns * q->capacity);
  uv_mutex_unlock(&q->lock);
  return fill;
}

uint64_t pb_queue_fill_integral(pb_queue *q) {
  uv_mutex_lock(&q->lock);
  integrate_fill(q);
  uint64_t v = q->run_fill_ns;
  uv_mutex_unlock(&q->lock);
  return v;
}
