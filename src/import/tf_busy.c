/* Core occupancy by a tf.data job's function executions (tf_busy.h). */
#include "tf_busy.h"

#include <errno.h>
#include <stdlib.h>

typedef struct busy_edge {
  int64_t t_ps;
  int delta; /* +1: an execution begins, -1: one ends */
} busy_edge;

static int cmp_edge(const void *a, const void *b) {
  const busy_edge *x = a, *y = b;
  if (x->t_ps != y->t_ps) return (x->t_ps > y->t_ps) - (x->t_ps < y->t_ps);
  return x->delta - y->delta; /* an end before a begin at the same moment */
}

void pb_tf_busy_free(pb_tf_busy *b) {
  free(b->t_ps);
  free(b->count);
  *b = (pb_tf_busy){0};
}

int pb_tf_busy_build(const pb_tf_span *execs, size_t n, pb_tf_busy *b) {
  *b = (pb_tf_busy){0};
  size_t m = 0;
  for (size_t k = 0; k < n; k++) m += execs[k].end_ps > execs[k].start_ps;
  if (m == 0) return 0;
  busy_edge *e = malloc(2 * m * sizeof *e);
  b->t_ps = malloc(2 * m * sizeof *b->t_ps);
  b->count = malloc(2 * m * sizeof *b->count);
  if (!e || !b->t_ps || !b->count) {
    free(e);
    pb_tf_busy_free(b);
    return -ENOMEM;
  }
  size_t ne = 0;
  for (size_t k = 0; k < n; k++)
    if (execs[k].end_ps > execs[k].start_ps) {
      e[ne++] = (busy_edge){execs[k].start_ps, +1};
      e[ne++] = (busy_edge){execs[k].end_ps, -1};
    }
  qsort(e, ne, sizeof *e, cmp_edge);
  int running = 0;
  for (size_t k = 0; k < ne; k++) {
    running += e[k].delta;
    if (b->n && b->t_ps[b->n - 1] == e[k].t_ps) { /* several edges at one moment: one step */
      b->count[b->n - 1] = running;
    } else {
      b->t_ps[b->n] = e[k].t_ps;
      b->count[b->n++] = running;
    }
  }
  free(e);
  return 0;
}

/* The index of the first step after t (n when none). */
static size_t step_after(const pb_tf_busy *b, int64_t t) {
  size_t lo = 0, hi = b->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (b->t_ps[mid] <= t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

int64_t pb_tf_busy_ps(const pb_tf_busy *b, int64_t from_ps, int64_t to_ps, int cores) {
  if (cores <= 0 || b->n == 0 || to_ps <= from_ps) return 0;
  int64_t sum = 0;
  size_t first = step_after(b, from_ps);
  for (size_t i = first ? first - 1 : 0; i < b->n && b->t_ps[i] < to_ps; i++) {
    int64_t a = b->t_ps[i] > from_ps ? b->t_ps[i] : from_ps;
    int64_t z = i + 1 < b->n && b->t_ps[i + 1] < to_ps ? b->t_ps[i + 1] : to_ps;
    if (z > a && b->count[i] >= cores) sum += z - a;
  }
  return sum;
}

int64_t pb_tf_run_waits_ps(const pb_tf_span *run, size_t n, const pb_tf_busy *b, int cores) {
  int64_t waits = 0, done = INT64_MIN;
  for (size_t k = 0; k < n; k++) {
    if (run[k].end_ps <= run[k].start_ps) continue;
    if (done != INT64_MIN && run[k].start_ps > done)
      waits += run[k].start_ps - done - pb_tf_busy_ps(b, done, run[k].start_ps, cores);
    if (run[k].end_ps > done) done = run[k].end_ps;
  }
  return waits;
}
