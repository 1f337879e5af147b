/* A bounded multi-producer multi-consumer queue of pb_elem values between two stages.
 *
 * Why it is fast enough: producers and consumers move elements in chunks (push_many/pop_many), so one
 * lock round trip is paid per chunk, and a condition variable is signalled only when a thread is
 * actually waiting on it; a producer waiting on a full queue is woken when a quarter of it is free (64
 * elements at most), not by every pop.  End-of-data (every producer called producer_done) and
 * cancellation both wake every waiter. */
#ifndef PB_QUEUE_H
#define PB_QUEUE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "elem.h"

#define PB_QMIN(a, b) ((a) < (b) ? (a) : (b))
#define PB_QUEUE_WAKE_ROOM 64 /* room that wakes a producer waiting on a full queue, at most (queue.c) */

typedef struct pb_queue {
  uv_mutex_t lock;
  uv_cond_t not_empty, not_full;
  pb_elem *ring;
  int capacity, head, count;
  int producers;             /* still producing; 0 = end of data once empty */
  int consumers;             /* consumer threads, to share a backlog fairly in pop_many */
  int waiting_consumers, waiting_producers;
  /* The ahead limit (pb_queue_set_ahead): -1 none; else producers reserve a slot before they start on an
   * output, and `reserved` (started, not yet pushed) plus `count` stays within ahead_limit, or with 0 within
   * the consumers waiting (each output made on demand). */
  int ahead_limit, reserved, waiting_reservers;
  uv_cond_t ahead_room;
  bool cancelled;
  /* Occupancy integrated over time (element-nanoseconds) inside the measured window, updated at every
   * push and pop: mean fill = fill_ns / (capacity x window length). */
  const _Atomic uint64_t *window_start_ns, *window_end_ns; /* NULL: the whole run */
  uint64_t last_change_ns, fill_ns;
  uint64_t run_fill_ns;      /* the same over the whole run (not clipped): the fill-over-time samples */
} pb_queue;

int pb_queue_init(pb_queue *q, int capacity, int producers, int consumers);
void pb_queue_close(pb_queue *q);

/* Appends all n elements, waiting while full.  Returns 0, or -ECANCELED (then `*pushed` of them went in).
 * `*waited` (optional) tells whether it had to wait for room.  `reserved` of them (at most n) fill slots
 * the caller reserved (pb_queue_reserve). */
int pb_queue_push_many(pb_queue *q, const pb_elem *elems, int n, int *pushed, bool *waited, int reserved);
/* Bounds what the producers have ahead of the consumers: started outputs plus queued ones at most `limit`
 * (tf.data's parallel map buffer: its calls in flight and results waiting), or with 0 no more than the
 * consumers waiting for one (a tf.data batch without prefetch: made inside its consumer's GetNext).  -1: no
 * bound but the queue's.  Before any thread uses the queue. */
void pb_queue_set_ahead(pb_queue *q, int limit);
/* Under an ahead limit: waits until an output may be started, then reserves 1 to max of them.  Returns how
 * many (max at once without a limit), or -ECANCELED.  `*waited` (optional): whether it had to wait. */
int pb_queue_reserve(pb_queue *q, int max, bool *waited);
/* Gives back n reserved slots that no output will fill. */
void pb_queue_unreserve(pb_queue *q, int n);
/* Takes between 1 and max elements, waiting while empty.  When several consumers share the queue, one
 * takes at most its fair share of the backlog so that slow stages keep every thread busy.
 * Returns the count, 0 at end of data, or -ECANCELED. */
int pb_queue_pop_many(pb_queue *q, pb_elem *out, int max);
/* Takes one element, waiting for one until deadline_ns (pb_now_ns's clock) at the latest: 1, 0 when
 * there was none by then (or at end of data), or -ECANCELED. */
int pb_queue_pop_until(pb_queue *q, pb_elem *out, uint64_t deadline_ns);
/* A producer has finished; the last one turns an empty queue into end-of-data for the consumers. */
void pb_queue_producer_done(pb_queue *q);
/* Wakes and fails every current and future push/pop. */
void pb_queue_cancel(pb_queue *q);
/* Removes what is left (after the run); returns the samples they held and releases pooled buffers. */
uint64_t pb_queue_drain(pb_queue *q);
/* Integrate occupancy only inside [*start, *end) (the engine's measured window). */
void pb_queue_set_window(pb_queue *q, const _Atomic uint64_t *start_ns, const _Atomic uint64_t *end_ns);
/* Time-weighted mean occupancy over a window of window_ns, 0..1; NAN without a window (not measured: the
 * report says null, not 0). */
double pb_queue_mean_fill(pb_queue *q, uint64_t window_ns);
/* Occupancy integrated over the whole run so far, element-nanoseconds: the difference of two readings
 * over (capacity x time between them) is the mean fill in between (src/record/timeline.c). */
uint64_t pb_queue_fill_integral(pb_queue *q);

#endif
