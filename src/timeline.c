#include "timeline.h"

#include <stdio.h>
#include <string.h>

#include "engine.h"

void pb_timeline_init(pb_timeline *tl, uint64_t t0_ns) {
  memset(tl, 0, sizeof *tl);
  tl->t0_ns = t0_ns;
  tl->interval_ns = PB_TIMELINE_FIRST_INTERVAL_NS;
}

void pb_timeline_halve(pb_timeline *tl) {
  size_t m = 0;
  for (size_t i = 0; i + 1 < tl->n; i += 2, m++) {
    uint64_t begin = i ? tl->t_ns[i - 1] : tl->t0_ns;
    double d0 = (double)(tl->t_ns[i] - begin), d1 = (double)(tl->t_ns[i + 1] - tl->t_ns[i]);
    double d = d0 + d1 > 0 ? d0 + d1 : 1;
    for (int k = 0; k < tl->nseries; k++)
      tl->fill[k][m] = pb_timeline_fill_from_e4(pb_timeline_fill_e4((float)((tl->fill[k][i] * d0 + tl->fill[k][i + 1] * d1) / d)));
    tl->t_ns[m] = tl->t_ns[i + 1];
  }
  if (tl->n % 2) { /* an odd last point stays as it is */
    for (int k = 0; k < tl->nseries; k++) tl->fill[k][m] = tl->fill[k][tl->n - 1];
    tl->t_ns[m] = tl->t_ns[tl->n - 1];
    m++;
  }
  tl->n = m;
  tl->interval_ns *= 2;
}

void pb_timeline_add(pb_timeline *tl, uint64_t t_ns, const float *fill) {
  if (tl->n == PB_TIMELINE_POINTS) pb_timeline_halve(tl);
  for (int k = 0; k < tl->nseries; k++) tl->fill[k][tl->n] = fill[k];
  tl->t_ns[tl->n++] = t_ns;
}

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
