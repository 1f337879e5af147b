/* The live side of a timeline (timeline.h, plain data a record keeps): the main thread samples every
 * stage's output queue while it waits for the run to end.  Engine layer: only the run includes this. */
#ifndef PB_TIMELINE_SAMPLER_H
#define PB_TIMELINE_SAMPLER_H

#include "timeline.h"

struct pb_engine;
/* The sampler: the engine's queues and their last integrated readings. */
typedef struct pb_timeline_sampler {
  pb_timeline *tl;
  struct pb_engine *engine;
  uint64_t last_ns;
  uint64_t last_integral[PB_MAX_STAGES + 1];
} pb_timeline_sampler;

/* Names the series after the engine's stages and takes the first readings (call after pb_engine_start). */
void pb_timeline_sampler_init(pb_timeline_sampler *s, pb_timeline *tl, struct pb_engine *e, uint64_t now_ns);
/* Adds a point when an interval has passed since the last one (cheap otherwise: one comparison). */
void pb_timeline_sample(pb_timeline_sampler *s, uint64_t now_ns);
/* The last, partial interval (when it is at least a tenth of one), at the end of the run. */
void pb_timeline_sample_final(pb_timeline_sampler *s, uint64_t now_ns);

#endif
