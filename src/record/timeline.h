/* Queue occupancy over time: the report's "queue fill over time" chart (report.html) and trace.json's
 * counter tracks.  The main thread samples every stage's output queue while it waits for the run to end;
 * each point is the time-weighted mean fill over the interval before it (from the queue's integrated
 * occupancy), not an instantaneous reading, so chunked pushes and pops do not alias.
 *
 * Bounded: at most PB_TIMELINE_POINTS points.  When they are used up, neighbouring pairs are merged and the
 * interval doubles, so a run of any length keeps an even coverage of its whole span. */
#ifndef PB_TIMELINE_H
#define PB_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

#define PB_TIMELINE_POINTS 512
#define PB_TIMELINE_FIRST_INTERVAL_NS 100000000ull /* 100 ms */

typedef struct pb_timeline {
  uint64_t t0_ns;               /* when sampling began (pb_now_ns clock) */
  uint64_t interval_ns;         /* the sampling interval now (doubles at every merge) */
  size_t n;                     /* points kept */
  uint64_t t_ns[PB_TIMELINE_POINTS]; /* end of each point's interval; it began at the previous end (or t0) */
  int nseries;                  /* one per queue */
  char names[PB_MAX_STAGES + 1][PB_NAME_LEN]; /* the stage whose output queue it is */
  int capacity[PB_MAX_STAGES + 1];            /* the queue's capacity, elements */
  float fill[PB_MAX_STAGES + 1][PB_TIMELINE_POINTS]; /* mean fill over the interval, 0..1 */
} pb_timeline;

/* Fills are kept to 1e-4 (what trace.json stores, so a reloaded record is identical). */
static inline int pb_timeline_fill_e4(float fill) { return (int)(fill * 10000.0f + 0.5f); }
static inline float pb_timeline_fill_from_e4(int e4) { return (float)e4 / 10000.0f; }

/* Starts an empty timeline (no series yet) at t0_ns. */
void pb_timeline_init(pb_timeline *tl, uint64_t t0_ns);
/* Adds one point ending at t_ns with each series' mean fill; merges pairs first when full. */
void pb_timeline_add(pb_timeline *tl, uint64_t t_ns, const float *fill);
/* Merges neighbouring pairs of points (duration-weighted means) and doubles the interval. */
void pb_timeline_halve(pb_timeline *tl);

#endif
