/* Recommendations, each with the change to make (a --set expression when one fits) and the samples/s
 * the capacity model predicts after it.
 *
 * The prediction is always the same model: the pipeline delivers the minimum of
 *   - every stage's capacity (threads / mean service time, in samples/s), with the changed stage's
 *     capacity scaled by the change (threads t -> t' scales it by t'/t),
 *   - the device's rate (batch x devices / mean compute time),
 *   - the cores' limit for the CPU-bound stages (ncpu / CPU seconds per sample, summed),
 * so a recommendation never promises more than the device or the machine can take.  The rules:
 *   threads   more threads for the bottleneck, enough to reach the next limit; for a CPU-bound stage
 *             within the free cores (or taken from a stage with slack when none are free); for a stage
 *             that waits without CPU (latency), as many as needed
 *   prefetch  the pipeline is fast enough on average but the device still waits: deeper prefetch, sized
 *             by Little's law from the p99 input wait (d' = d + ceil(p99 wait / compute time))
 *   cache     read-bound and the dataset fits in limits.max_memory_mb: cache after read
 *   pinned    h2d-bound on a GPU with pageable memory: pinned buffers
 *   scale     decode-bound, DCT scale 1, and the first crop/resize at most half the image: scale 1/2 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "metrics.h"

/* Measured decode speed-up of DCT scale 1/2 over 1 for 500x375 photos (docs/PERFORMANCE.md, decode
 * stage: 850.8 vs 758 images/s): Huffman decoding dominates, so halving the IDCT gains little. */
#define PB_DECODE_HALF_SPEEDUP 1.12
#define PB_MAX_THREADS_SUGGESTED 256

/* The model's prediction when stage `changed` gets capacity `new_cap` (and `changed2`, if >= 0,
 * `new_cap2`): bounded by the cores' limit the capacity model computed (bottleneck.c runs first). */
static double predict(const pb_report *r, int changed, double new_cap, int changed2, double new_cap2) {
  double rate = isnan(r->device_rate_per_s) ? INFINITY : r->device_rate_per_s;
  for (int i = 0; i < r->nstages; i++) {
    const pb_stage_report *s = &r->stages[i];
    if (s->skipped || isnan(s->pipeline_capacity_per_s)) continue;
    double cap = i == changed ? new_cap : i == changed2 ? new_cap2 : s->pipeline_capacity_per_s;
    if (cap < rate) rate = cap;
  }
  if (!isnan(r->cpu_limit_per_s) && r->cpu_limit_per_s < rate) rate = r->cpu_limit_per_s;
  return isinf(rate) ? NAN : rate;
}

static pb_recommendation *add(pb_report *r) {
  if (r->nrecommendations >= PB_MAX_RECOMMENDATIONS) return NULL;
  pb_recommendation *rc = &r->recommendations[r->nrecommendations++];
  memset(rc, 0, sizeof *rc);
  return rc;
}

/* Lowest capacity among the stages other than `except`, and the device. */
static double next_limit(const pb_report *r, int except) {
  double lim = isnan(r->device_rate_per_s) ? INFINITY : r->device_rate_per_s;
  for (int i = 0; i < r->nstages; i++)
    if (i != except && !r->stages[i].skipped && !isnan(r->stages[i].pipeline_capacity_per_s) && r->stages[i].pipeline_capacity_per_s < lim)
      lim = r->stages[i].pipeline_capacity_per_s;
  return lim;
}

/* A CPU-bound stage with slack that can give one thread to the bottleneck and still keep up. */
static int find_donor(const pb_report *r, int except, double target) {
  int best = -1;
  for (int i = 0; i < r->nstages; i++) {
    const pb_stage_report *s = &r->stages[i];
    if (i == except || s->skipped || s->threads < 2 || !pb_stage_cpu_bound(s) || isnan(s->pipeline_capacity_per_s)) continue;
    double after = s->pipeline_capacity_per_s * (s->threads - 1) / s->threads;
    if (after >= 1.1 * target && (best < 0 || after > r->stages[best].pipeline_capacity_per_s)) best = i;
  }
  return best;
}

/* Stages whose `threads` the config accepts above 1 (h2d's parallelism is `streams`; the emulated copy
 * engine is one, so more streams would not help there). */
static bool threads_settable(const char *type) {
  return strcmp(type, "read") == 0 || strcmp(type, "decode") == 0 || strcmp(type, "map") == 0 ||
         strcmp(type, "batch") == 0;
}

/* A read stage's bandwidth cap (the whole stage's) in samples/s, or INFINITY. */
static double bandwidth_cap_per_s(const pb_report *r, const pb_record *rec, int bi) {
  const pb_stage_rec *sr = &rec->stages[bi];
  if (sr->cfg_index < 0 || strcmp(sr->type, "read") != 0) return INFINITY;
  double mb = rec->cfg->stages[sr->cfg_index].bandwidth_mb_per_s;
  const pb_stage_report *s = &r->stages[bi];
  if (!(mb > 0) || !s->calls || !s->bytes_out) return INFINITY;
  return mb * 1e6 / ((double)s->bytes_out / (double)s->calls);
}

/* "--set stages.B.threads=WANT" and its prediction (capacity scaled by the threads, within `cap_limit`);
 * the caller writes the reason. */
static pb_recommendation *set_threads(pb_report *r, const pb_stage_report *b, int bi, int want, double cap_limit) {
  pb_recommendation *rc = add(r);
  if (!rc) return NULL;
  snprintf(rc->action, sizeof rc->action, "--set stages.%s.threads=%d", b->name, want);
  rc->predicted_samples_per_s = predict(r, bi, fmin(b->pipeline_capacity_per_s * want / b->threads, cap_limit), -1, 0);
  return rc;
}

/* Stage rows are copied before use: their names are written into r->recommendations, which is in r. */
static void recommend_threads(pb_report *r, const pb_record *rec, int bi) {
  const pb_stage_report b_copy = r->stages[bi], *b = &b_copy;
  if (!threads_settable(b->type) || isnan(b->pipeline_capacity_per_s) || b->pipeline_capacity_per_s <= 0) return;
  /* A read capped by bandwidth_mb_per_s gains nothing from threads beyond the cap. */
  double cap_limit = bandwidth_cap_per_s(r, rec, bi);
  if (cap_limit <= 1.05 * b->pipeline_capacity_per_s) return;
  double target = fmin(next_limit(r, bi), cap_limit);
  /* The cores bound every stage together: threads past the cores' limit only queue for a core. */
  if (!isnan(r->cpu_limit_per_s)) {
    if (!pb_stage_cpu_bound(b) && r->cpu_limit_per_s <= 1.05 * b->pipeline_capacity_per_s) return;
    target = fmin(target, r->cpu_limit_per_s);
  }
  int t = b->threads;
  double need = isinf(target) ? t + 1 : ceil(t * target / b->pipeline_capacity_per_s - 1e-9);
  int want = need > PB_MAX_THREADS_SUGGESTED ? PB_MAX_THREADS_SUGGESTED : need <= t ? t + 1 : (int)need;
  double cores_used = r->cores_used;
  double free_cores = r->ncpu - cores_used;
  pb_recommendation *rc;
  if (!pb_stage_cpu_bound(b)) { /* waits without CPU (latency): threads are cheap, add what the target needs */
    if (!(rc = set_threads(r, b, bi, want, cap_limit))) return;
    snprintf(rc->reason, sizeof rc->reason,
             "%s is the bottleneck and mostly waits (CPU %.0f %% of its busy time): %d threads instead of %d "
             "overlap more waits, up to the next limit of %.1f samples/s",
             b->name, b->cpu_fraction * 100, want, t, target);
    return;
  }
  double share = pb_stage_cpu_share(b); /* of a thread's own time, net of queueing for a core */
  int extra = (int)floor(free_cores / (share > 0 ? share : 1) + 1e-9);
  if (extra >= 1) {
    if (want > t + extra) want = t + extra;
    if (!(rc = set_threads(r, b, bi, want, cap_limit))) return;
    snprintf(rc->reason, sizeof rc->reason,
             "%s is the bottleneck and CPU-bound (CPU %.0f %% of its busy time); %.1f of %d cores are free, "
             "so %d threads instead of %d",
             b->name, b->cpu_fraction * 100, free_cores > 0 ? free_cores : 0, r->ncpu, want, t);
    return;
  }
  double new_cap = b->pipeline_capacity_per_s * (t + 1) / t;
  int donor = find_donor(r, bi, fmin(new_cap, target));
  if (!(rc = add(r))) return;
  if (donor >= 0) {
    const pb_stage_report d_copy = r->stages[donor], *d = &d_copy;
    snprintf(rc->action, sizeof rc->action, "--set stages.%.63s.threads=%d --set stages.%.63s.threads=%d", b->name, t + 1,
             d->name, d->threads - 1);
    rc->predicted_samples_per_s = predict(r, bi, new_cap, donor, d->pipeline_capacity_per_s * (d->threads - 1) / d->threads);
    snprintf(rc->reason, sizeof rc->reason,
             "%s is the bottleneck and CPU-bound, and the %d cores are busy (%.1f in use): move a thread from %s, "
             "whose capacity (%.1f samples/s) stays above the target",
             b->name, r->ncpu, cores_used, d->name, d->pipeline_capacity_per_s);
  } else {
    snprintf(rc->action, sizeof rc->action, "--set stages.%s.threads=%d", b->name, t + 1);
    rc->predicted_samples_per_s = predict(r, bi, new_cap, -1, 0);
    snprintf(rc->reason, sizeof rc->reason,
             "%s is the bottleneck and CPU-bound, but the %d cores are busy (%.1f in use) and no stage has a "
             "thread to spare: more threads help only up to the cores' limit; a machine with more cores, or "
             "a cheaper %s, would",
             b->name, r->ncpu, cores_used, b->name);
  }
}

/* p99 of the measured steps' input wait, ms. */
static double p99_input_wait_ms(const pb_record *rec) {
  double *v = malloc((rec->nsteps ? rec->nsteps : 1) * sizeof *v);
  if (!v) return NAN;
  size_t n = 0;
  for (size_t i = 0; i < rec->nsteps; i++)
    if (rec->steps[i].measured) v[n++] = (double)pb_step_breakdown(&rec->steps[i]).input_wait_ns / 1e6;
  double p = pb_percentile(v, n, 99);
  free(v);
  return p;
}

static void recommend_prefetch(pb_report *r, const pb_record *rec) {
  if (isnan(r->model_capacity_per_s) || isnan(r->device_rate_per_s)) return;
  if (r->model_capacity_per_s < 1.1 * r->device_rate_per_s) return; /* too slow on average, not variance */
  double wait = p99_input_wait_ms(rec);
  double device_ms = r->compute_ms + (r->comm_ms > 0 ? r->comm_ms : 0); /* compute and exchange */
  if (isnan(wait) || !(device_ms > 0)) return;
  double ratio = ceil(wait / device_ms);
  int extra = ratio < 1 ? 1 : ratio > 64 ? 64 : (int)ratio;
  int pi = -1;
  for (int i = 0; i < r->nstages; i++)
    if (!r->stages[i].skipped && strcmp(r->stages[i].type, "prefetch") == 0) pi = i;
  pb_recommendation *rc = add(r);
  if (!rc) return;
  if (pi >= 0 && rec->stages[pi].cfg_index >= 0) { /* the loader checks it; a row without a config never */
    const pb_stage_cfg *sc = &rec->cfg->stages[rec->stages[pi].cfg_index];
    snprintf(rc->action, sizeof rc->action, "--set stages.%s.depth=%lld", rec->stages[pi].name,
             (long long)(sc->depth + extra));
  } else {
    snprintf(rc->action, sizeof rc->action, "add {\"type\": \"prefetch\", \"depth\": %d} after batch", extra + 1);
  }
  rc->predicted_samples_per_s = predict(r, -1, 0, -1, 0);
  snprintf(rc->reason, sizeof rc->reason,
           "the pipeline keeps up on average (%.1f samples/s for %.1f needed) but the device still waits: "
           "p99 input wait %.1f ms per %.1f ms step; by Little's law %d more batch(es) in flight cover it",
           r->model_capacity_per_s, r->device_rate_per_s, wait, device_ms, extra);
}

/* Dataset bytes when the config says how big it is (dataset.generate), else 0 (unknown). */
static double dataset_bytes(const pb_record *rec, const pb_stage_report *read) {
  const pb_generate_cfg *g = &rec->cfg->dataset.generate;
  if (!g->present || !g->num_files || !read->calls) return 0;
  double per_sample = (double)read->bytes_out / (double)read->calls;
  return per_sample * (double)g->num_files * (double)(g->samples_per_file ? g->samples_per_file : 1);
}

static void recommend_cache(pb_report *r, const pb_record *rec, int bi) {
  for (int i = 0; i < rec->cfg->nstages; i++)
    if (rec->cfg->stages[i].type == PB_STAGE_CACHE) return;
  const pb_stage_report b_copy = r->stages[bi], *b = &b_copy;
  double bytes = dataset_bytes(rec, b);
  double limit = (double)rec->cfg->max_memory_mb * 1e6;
  if (!(bytes > 0) || bytes > 0.5 * limit) return;
  pb_recommendation *rc = add(r);
  if (!rc) return;
  snprintf(rc->action, sizeof rc->action, "add {\"type\": \"cache\"} after stage %s", b->name);
  rc->predicted_samples_per_s = predict(r, bi, INFINITY, -1, 0);
  snprintf(rc->reason, sizeof rc->reason,
           "read-bound, and the dataset (%.0f MB) fits in limits.max_memory_mb (%lld MB): from the second epoch "
           "on, samples come from memory",
           bytes / 1e6, (long long)rec->cfg->max_memory_mb);
}

static void recommend_pinned(pb_report *r, const pb_record *rec, int bi) {
  const pb_stage_rec *sr = &rec->stages[bi];
  if (sr->cfg_index < 0 || rec->cfg->stages[sr->cfg_index].pinned || strcmp(r->device_kind, "gpu") != 0) return;
  pb_recommendation *rc = add(r);
  if (!rc) return;
  snprintf(rc->action, sizeof rc->action, "--set stages.%s.pinned=true", rec->stages[bi].name);
  rc->predicted_samples_per_s = NAN; /* the pinned/pageable ratio is the machine's (pipebench calibrate) */
  snprintf(rc->reason, sizeof rc->reason,
           "H2D-bound with pageable host memory: pinned buffers copy by DMA without a staging copy (typically "
           "about twice as fast; no prediction without a measurement of this machine)");
}

/* The first op after decode that sets the image size, and its size; 0 when none. */
static int64_t crop_size_after(const pb_record *rec, int cfg_index) {
  for (int i = cfg_index + 1; i < rec->cfg->nstages; i++) {
    const pb_stage_cfg *sc = &rec->cfg->stages[i];
    if (sc->type != PB_STAGE_MAP) continue;
    for (int k = 0; k < sc->nops; k++)
      if (sc->ops[k].kind == PB_OP_RANDOM_RESIZED_CROP || sc->ops[k].kind == PB_OP_RESIZE ||
          sc->ops[k].kind == PB_OP_CENTER_CROP)
        return sc->ops[k].size;
  }
  return 0;
}

static void recommend_scale(pb_report *r, const pb_record *rec, int bi) {
  const pb_stage_rec *sr = &rec->stages[bi];
  if (sr->cfg_index < 0 || rec->cfg->stages[sr->cfg_index].scale != PB_SCALE_1) return;
  const pb_stage_report b_copy = r->stages[bi], *b = &b_copy;
  int64_t crop = crop_size_after(rec, sr->cfg_index);
  /* The decoded image's shorter side, from its mean size (3 channels, 4:3). */
  double pixels = b->calls ? (double)b->bytes_out / (double)b->calls / 3.0 : 0;
  double short_side = sqrt(pixels * 3.0 / 4.0);
  if (!crop || short_side < 2.0 * (double)crop) return;
  pb_recommendation *rc = add(r);
  if (!rc) return;
  snprintf(rc->action, sizeof rc->action, "--set stages.%s.scale=1/2", b->name);
  rc->predicted_samples_per_s = predict(r, bi, b->pipeline_capacity_per_s * PB_DECODE_HALF_SPEEDUP, -1, 0);
  snprintf(rc->reason, sizeof rc->reason,
           "decode-bound, and the images (shorter side ~%.0f px) are at least twice the %lld px crop: DCT "
           "scaling decodes at half size (measured %.2fx faster)",
           short_side, (long long)crop, PB_DECODE_HALF_SPEEDUP);
}

void pb_recommend(pb_report *r, const pb_record *rec) {
  r->nrecommendations = 0;
  if (!r->classification || strcmp(r->classification, "not_input_bound") == 0) return;
  int bi = -1;
  if (r->bottleneck_stage[0] && strcmp(r->bottleneck_stage, "device") != 0) bi = pb_report_stage_index(r, r->bottleneck_stage);
  if (bi >= 0) {
    const char *type = r->stages[bi].type;
    if (strcmp(type, "read") == 0) recommend_cache(r, rec, bi);
    if (strcmp(type, "decode") == 0) recommend_scale(r, rec, bi);
    if (strcmp(type, "h2d") == 0) recommend_pinned(r, rec, bi);
    recommend_threads(r, rec, bi);
  }
  recommend_prefetch(r, rec);
  /* Best predicted first (unknown predictions last). */
  for (int i = 1; i < r->nrecommendations; i++)
    for (int j = i; j > 0; j--) {
      double a = r->recommendations[j - 1].predicted_samples_per_s, b = r->recommendations[j].predicted_samples_per_s;
      if (!(isnan(a) || (!isnan(b) && b > a))) break;
      pb_recommendation tmp = r->recommendations[j];
      r->recommendations[j] = r->recommendations[j - 1];
      r->recommendations[j - 1] = tmp;
    }
}
