/* Per-event tracing: what each worker thread did, when, and on which element.
 *
 * Every worker owns one ring of fixed-size events (no lock, no allocation on the hot path: the writer is
 * the only thread touching it until the run is joined).  A worker's events never overlap and are in time
 * order, so its ring is its timeline:
 *
 *   WAIT    [t0,t1)  waiting for input (an empty input queue)
 *   PROCESS [t0,t1)  working on input element `key`; a call is cut into several PROCESS segments when it
 *                    blocks on its output (a full queue, an empty buffer pool), and a source's (or a
 *                    flush's) work is cut at every element it hands on
 *   BLOCKED [t0,t1)  waiting for downstream (flag BLOCKED_POOL: for a pooled buffer, else a full queue)
 *   HANDOFF [t,t]    the outputs emitted so far went into the output queue (they became available
 *                    downstream here, not when they were emitted: outputs are handed on in chunks)
 *
 * Lineage: `key` is the element a segment worked on (a sample's id from the source; a batch's key is
 * PB_BATCH_KEY(batch_id)), `out` the element it produced: with flag EMITTED the segment handed `out` on
 * (a map emits its input, a shuffle some other sample, a batch stage the batch); with flag JOINED the
 * input became part of batch `out` (batch membership).  The analysis rebuilds the stage graph and the
 * critical path from these alone (src/analysis/).
 *
 * Bounded memory: a ring keeps the most recent events.  When a run is longer than the rings, the analysis
 * uses the window every ring still covers (the end of the run) and the report says so. */
#ifndef PB_TRACE_H
#define PB_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "record_types.h"


/* Events kept in all rings together, by default (40 bytes each: 40 MB). */
#define PB_TRACE_BUDGET_EVENTS (1u << 20)


typedef struct pb_trace_ring {
  pb_event *ev;           /* NULL: tracing off */
  uint32_t mask;          /* capacity - 1 (capacity a power of two) */
  uint64_t head;          /* events ever written; the ring keeps the last min(head, capacity) */
} pb_trace_ring;

/* Ring capacity for each of `workers` threads within PB_TRACE_BUDGET_EVENTS (a power of two). */
uint32_t pb_trace_ring_capacity(int workers);
int pb_trace_ring_init(pb_trace_ring *r, uint32_t capacity);
void pb_trace_ring_free(pb_trace_ring *r);
/* Copies the kept events, oldest first, into a new array (*out, *n); *dropped = events overwritten. */
int pb_trace_ring_linearize(const pb_trace_ring *r, pb_event **out, uint32_t *n, uint64_t *dropped);

static inline void pb_trace_add(pb_trace_ring *r, uint8_t kind, uint8_t flags, uint64_t t0, uint64_t t1,
                                uint64_t key, uint64_t out, uint64_t bytes) {
  if (!r->ev) return;
  pb_event *e = &r->ev[r->head++ & r->mask];
  e->t0_ns = t0;
  e->t1_ns = t1;
  e->key = key;
  e->out = out;
  e->bytes = bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)bytes;
  e->kind = kind;
  e->flags = flags;
  e->reserved = 0;
}

#endif
