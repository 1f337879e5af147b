#include "trace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

uint32_t pb_trace_ring_capacity(int workers) {
  uint64_t per = PB_TRACE_BUDGET_EVENTS / (uint64_t)(workers > 0 ? workers : 1);
  uint32_t cap = PB_TRACE_MIN_RING;
  while (cap < PB_TRACE_MAX_RING && (uint64_t)cap * 2 <= per) cap *= 2;
  return cap;
}

int pb_trace_ring_init(pb_trace_ring *r, uint32_t capacity) {
  memset(r, 0, sizeof *r);
  r->ev = malloc((size_t)capacity * sizeof *r->ev);
  if (!r->ev) return -ENOMEM;
  /* Touch every page now, before the run: a page fault in the middle of a measured call would be
   * charged to that call. */
  memset(r->ev, 0, (size_t)capacity * sizeof *r->ev);
  r->mask = capacity - 1;
  return 0;
}

void pb_trace_ring_free(pb_trace_ring *r) {
  free(r->ev);
  memset(r, 0, sizeof *r);
}

int pb_trace_ring_linearize(const pb_trace_ring *r, pb_event **out, uint32_t *n, uint64_t *dropped) {
  *out = NULL;
  *n = 0;
  *dropped = 0;
  if (!r->ev) return 0;
  uint64_t cap = (uint64_t)r->mask + 1;
  uint64_t kept = r->head < cap ? r->head : cap;
  pb_event *v = malloc((kept ? kept : 1) * sizeof *v);
  if (!v) return -ENOMEM;
  uint64_t first = r->head - kept;
  for (uint64_t i = 0; i < kept; i++) v[i] = r->ev[(first + i) & r->mask];
  *out = v;
  *n = (uint32_t)kept;
  *dropped = first;
  return 0;
}
