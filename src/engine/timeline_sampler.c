/* Sampling the engine's queues into a timeline (timeline_sampler.h). */
#include "timeline_sampler.h"

#include <stdio.h>
#include <string.h>

#include "engine.h"

void pb_timeline_sampler_init(pb_timeline_sampler *s, pb_timeline *tl, pb_engine *e, uint64_t now_ns) {
  memset(s, 0, sizeof *s);
  s->tl = tl;
  s->engine = e;
  s->last_ns = now_ns;
  pb_timeline_init(tl, now_ns);
  tl->nseries = e->nstages;
  for (int i = 0; i < e->nstages; i++) {
    snprintf(tl->names[i], sizeof tl->names[i], "%s", e->stages[i].name);
    tl->capacity[i] = e->stages[i].out->capacity;
    s->last_integral[i] = pb_queue_fill_integral(e->stages[i].out);
  }
}

static void take_point(pb_timeline_sampler *s, uint64_t now_ns) {
  float fill[PB_MAX_STAGES + 1];
  double dt = (double)(now_ns - s->last_ns);
  for (int i = 0; i < s->tl->nseries; i++) {
    pb_queue *q = s->engine->stages[i].out;
    uint64_t v = pb_queue_fill_integral(q);
    /* The queue integrates up to its own clock reading, a moment after now_ns: never above full. */
    double f = (double)(v - s->last_integral[i]) / (dt * q->capacity);
    fill[i] = pb_timeline_fill_from_e4(pb_timeline_fill_e4((float)(f > 1.0 ? 1.0 : f < 0 ? 0 : f)));
    s->last_integral[i] = v;
  }
  pb_timeline_add(s->tl, now_ns, fill);
  s->last_ns = now_ns;
}

void pb_timeline_sample(pb_timeline_sampler *s, uint64_t now_ns) {
  if (!s->tl || now_ns - s->last_ns < s->tl->interval_ns) return;
  take_point(s, now_ns);
}

void pb_timeline_sample_final(pb_timeline_sampler *s, uint64_t now_ns) {
  if (!s->tl || now_ns <= s->last_ns || now_ns - s->last_ns < s->tl->interval_ns / 10) return;
  take_point(s, now_ns);
}
