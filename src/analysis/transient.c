/* Transients inside the measured window: a stretch at its start where the device waited for reasons
 * that end by themselves, so that the window's averages blame a stage for what more warm-up would
 * have left out.  Recognised, in order:
 *   cache fill    a cache's first epoch: the stages before it ran at their own pace until every sample
 *                 was in memory; later epochs come from the cache.  It ends about when the device has
 *                 taken one epoch's samples (the model's epoch size);
 *   shuffle fill  with no warm-up, a shuffle holds `buffer` samples before it hands any on: the first
 *                 step waits for them;
 *   slow start    any other slow start (a cold page cache, first allocations): the shortest prefix of the
 *                 measured steps after which the device waited under 5 % of step time, when the prefix
 *                 itself waited 20 % or more.
 * The report says which, until which measured step, and how many warm-up steps would leave it out. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "metrics.h"

#define STEADY_PCT 5.0      /* after the transient: not input-bound */
#define SLOW_START_PCT 20.0 /* during it: highly input-bound */

typedef struct step_sums {
  size_t n;                /* measured steps */
  double *wait_ns, *step_ns; /* prefix sums: [k] = over the first k measured steps */
} step_sums;

static bool sums_init(step_sums *s, const pb_record *rec) {
  s->n = 0;
  s->wait_ns = calloc(rec->nsteps + 1, sizeof *s->wait_ns);
  s->step_ns = calloc(rec->nsteps + 1, sizeof *s->step_ns);
  if (!s->wait_ns || !s->step_ns) return false;
  for (size_t i = 0; i < rec->nsteps; i++) {
    if (!rec->steps[i].measured) continue;
    pb_step_parts p = pb_step_breakdown(&rec->steps[i]);
    s->wait_ns[s->n + 1] = s->wait_ns[s->n] + (double)(p.input_wait_ns + p.h2d_ns);
    s->step_ns[s->n + 1] = s->step_ns[s->n] + (double)p.step_ns;
    s->n++;
  }
  return true;
}

static void sums_free(step_sums *s) {
  free(s->wait_ns);
  free(s->step_ns);
}

/* input-bound % of measured steps [a, b) */
static double pct(const step_sums *s, size_t a, size_t b) {
  double step = s->step_ns[b] - s->step_ns[a];
  return step > 0 ? (s->wait_ns[b] - s->wait_ns[a]) / step * 100 : NAN;
}

static const pb_stage_report *ran_stage_of_type(const pb_report *r, const char *type) {
  for (int i = 0; i < r->nstages; i++)
    if (!r->stages[i].skipped && r->stages[i].type && strcmp(r->stages[i].type, type) == 0) return &r->stages[i];
  return NULL;
}

/* Measured steps the cache's first epoch covers (0: none inside the window). */
static size_t cache_fill_steps(const pb_report *r, const step_sums *s) {
  const pb_model *m = &r->model;
  if (!ran_stage_of_type(r, "cache") || !(m->epoch_samples > 0) || m->batch_size <= 0) return 0;
  double before = (double)r->warmup_steps * m->batch_size; /* samples the warm-up took */
  double k = ceil(((double)m->epoch_samples - before) / m->batch_size);
  return k >= 1 && k < (double)s->n ? (size_t)k : 0;
}

static size_t shuffle_fill_steps(const pb_report *r, const step_sums *s) {
  return r->warmup_steps == 0 && ran_stage_of_type(r, "shuffle") && s->n > 1 ? 1 : 0;
}

/* The shortest prefix after which the device waits under STEADY_PCT, if the prefix waited SLOW_START_PCT
 * or more and holds most of the window's waiting; within the first third of the window.  (A steady run
 * waiting ~5 % always has some short prefix above 20 %: the share of the waiting keeps that out.) */
static size_t slow_start_steps(const step_sums *s) {
  double all_wait = s->wait_ns[s->n];
  for (size_t k = 1; k <= s->n / 3; k++)
    if (pct(s, k, s->n) < STEADY_PCT && pct(s, 0, k) >= SLOW_START_PCT && s->wait_ns[k] >= 0.5 * all_wait) return k;
  return 0;
}

/* Which transient, and its measured steps (0: none of that kind). */
static size_t transient_steps(const pb_report *r, const step_sums *s, pb_transient_kind kind) {
  switch (kind) {
  case PB_TRANSIENT_CACHE_FILL: return cache_fill_steps(r, s);
  case PB_TRANSIENT_SHUFFLE_FILL: return shuffle_fill_steps(r, s);
  case PB_TRANSIENT_SLOW_START: return slow_start_steps(s);
  default: return 0;
  }
}

static const char *transient_words(pb_transient_kind kind) {
  return kind == PB_TRANSIENT_CACHE_FILL     ? "the cache's first epoch (the stages before it read every sample once)"
         : kind == PB_TRANSIENT_SHUFFLE_FILL ? "the shuffle buffer's fill (no output until it holds its buffer)"
                                             : "a slow start (queues, caches or the host settling)";
}

/* The first kind that explains the waiting (the device under 5 % after it), else the first found. */
pb_transient_kind pb_transient(pb_report *r, const pb_record *rec, double *steady_pct) {
  r->transient[0] = '\0';
  *steady_pct = NAN;
  step_sums s;
  pb_transient_kind found = PB_TRANSIENT_NONE;
  size_t k = 0;
  if (sums_init(&s, rec) && s.n >= 4) {
    for (int kind = PB_TRANSIENT_CACHE_FILL; kind <= PB_TRANSIENT_SLOW_START; kind++) {
      size_t steps = transient_steps(r, &s, (pb_transient_kind)kind);
      if (!steps) continue;
      if (found == PB_TRANSIENT_NONE || pct(&s, steps, s.n) < STEADY_PCT) found = (pb_transient_kind)kind, k = steps;
      if (pct(&s, steps, s.n) < STEADY_PCT) break;
    }
    if (found != PB_TRANSIENT_NONE) {
      *steady_pct = pct(&s, k, s.n);
      int64_t warmup = r->warmup_steps + (int64_t)k + (int64_t)ceil(0.1 * (double)k);
      snprintf(r->transient, sizeof r->transient,
               "%s, over the first %zu measured steps (%.1f %% of their step time waiting, %.1f %% after): warm up past "
               "it, --set run.warmup_steps=%lld",
               transient_words(found), k, pct(&s, 0, k), *steady_pct, (long long)warmup);
    }
  }
  sums_free(&s);
  return found;
}
