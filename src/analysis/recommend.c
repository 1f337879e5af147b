/* Recommendations, each with the change to make (a --set expression when one fits) and what the model
 * (model.h) predicts after it: samples/s over the configured run and the device's idle %.  Every
 * candidate is simulated with its change applied; one predicted to gain less than the run's noise is not
 * recommended.  The rules that propose candidates:
 *   threads   for the bottleneck and its co-bottlenecks (together), and for the model's lowest-capacity
 *             stage: the fewest threads that reach what the model says more threads can give (never when
 *             the cores bind: more threads only queue for a core)
 *   prefetch  the device waits although the pipeline keeps up on average (variance): the shallowest
 *             depth whose predicted idle is within 1 point of what any depth can give
 *   cache     read-bound and the dataset fits in limits.max_memory_mb: a cache after read, predicted over
 *             the configured run (its first epoch at the uncached rate)
 *   scale     decode-bound (or the cores bind with decode spending them), DCT scale 1, and the first
 *             crop/resize at most half the image: scale 1/2
 *   fused_crop  the same, and the next map opens with random_resized_crop: decode only the crop's region
 *   cores     the cores bind: a machine (or cgroup) with twice the usable cores
 *   pinned    h2d-bound on a GPU with pageable memory: pinned buffers (no prediction: the machine's ratio)
 * A prediction at the device's own rate is a ceiling ("up to"), not an estimate. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "metrics.h"

/* Measured decode speed-up of DCT scale 1/2 over 1 for 500x375 photos (docs/PERFORMANCE.md, decode
 * stage: 850.8 vs 758 images/s): Huffman decoding dominates, so halving the IDCT gains little. */
#define PB_DECODE_HALF_SPEEDUP 1.12
/* Measured decode CPU per image with fused_crop against the whole image, 500x375 photos and
 * random_resized_crop's default scale (docs/PERFORMANCE.md, vs_pytorch fifth run, W=1 aa: 1109 vs 707 us):
 * only the crop's region is entropy-decoded and transformed. */
#define PB_DECODE_FUSED_SPEEDUP 1.57
#define PB_MAX_THREADS_SUGGESTED 256
#define MIN_GAIN_PCT 2.0      /* a change must gain this much (or the run's noise) to be recommended */
#define IDLE_KNEE_POINTS 1.0  /* prefetch: within this many points of the deepest depth's idle */
#define MAX_DEPTH 256

/* A stage's name, copied out of r: the recommendation written with it lives in r too. */
typedef struct name_buf {
  char s[PB_NAME_LEN];
} name_buf;
static name_buf name_of(const pb_model *m, int row) {
  name_buf b;
  memcpy(b.s, m->stages[row].name, sizeof b.s);
  return b;
}

static pb_recommendation *add(pb_report *r, const char *kind) {
  if (r->nrecommendations >= PB_MAX_RECOMMENDATIONS) return NULL;
  pb_recommendation *rc = &r->recommendations[r->nrecommendations++];
  memset(rc, 0, sizeof *rc);
  rc->kind = kind;
  rc->predicted_samples_per_s = rc->predicted_idle_pct = NAN;
  return rc;
}

static double min_gain(const pb_report *r) {
  double g = MIN_GAIN_PCT;
  if (r->noise_pct > g) g = r->noise_pct;
  return g / 100;
}

/* Worth recommending: predicted above the model's own replay of the run by more than the noise (the same
 * simulation with and without the change: the draws are common, so the difference is the change's). */
static bool gains(const pb_report *r, const pb_model_result *res) {
  double base = r->model.base_samples_per_s > 0 ? r->model.base_samples_per_s : r->samples_per_s;
  return res->ok && res->samples_per_s > base * (1 + min_gain(r));
}

/* The prediction; "up to" when it is the device's own rate (its steps, with an in-step copy and the
 * exchange: the model's). */
static void set_prediction(const pb_report *r, pb_recommendation *rc, const pb_model_result *res) {
  const pb_model *m = &r->model;
  rc->predicted_samples_per_s = res->samples_per_s;
  rc->predicted_idle_pct = res->idle_pct;
  double ceiling = m->device_mean_s > 0 ? m->batch_size * m->devices / m->device_mean_s : NAN;
  rc->up_to = !isnan(ceiling) && res->samples_per_s >= 0.99 * ceiling;
}

static bool predict(const pb_report *r, const pb_model_change *c, pb_model_result *res) {
  return pb_model_predict(&r->model, c, res);
}

/* The change simulated; a recommendation of `kind` with its prediction when it gains, else NULL (also when
 * the list is full).  *res: the prediction, for the reason. */
static pb_recommendation *add_simulated(pb_report *r, const char *kind, const pb_model_change *c, pb_model_result *res) {
  if (!predict(r, c, res) || !gains(r, res)) return NULL;
  pb_recommendation *rc = add(r, kind);
  if (rc) set_prediction(r, rc, res);
  return rc;
}

/* The bottleneck, or one of its co-bottlenecks ("cores" among them). */
static bool is_named(const pb_report *r, const char *name) {
  if (strcmp(r->bottleneck_stage, name) == 0) return true;
  for (int i = 0; i < r->nco_stages; i++)
    if (strcmp(r->co_stages[i], name) == 0) return true;
  return false;
}

/* ---------- threads ---------- */

/* Rows (of the model) that need more threads: the bottleneck and its co-bottlenecks. */
static int threads_rows(const pb_report *r, int *rows) {
  int n = 0;
  int b = pb_model_row(&r->model, r->bottleneck_stage);
  if (b >= 0) rows[n++] = b;
  for (int i = 0; i < r->nco_stages; i++) {
    int c = pb_model_row(&r->model, r->co_stages[i]);
    if (c >= 0) rows[n++] = c;
  }
  return n;
}

/* The threads row `mrow` would need for `target` samples/s, from its capacity now. */
static int threads_for(const pb_report *r, int mrow, double target) {
  const pb_model_stage *ms = &r->model.stages[mrow];
  double cap = pb_model_stage_capacity(r, mrow);
  double need = !(cap > 0) || isinf(target) ? ms->threads + 1 : ceil(ms->threads * target / cap - 1e-9);
  int max = ms->max_threads < PB_MAX_THREADS_SUGGESTED ? ms->max_threads : PB_MAX_THREADS_SUGGESTED;
  int want = need > max ? max : need <= ms->threads ? ms->threads + 1 : (int)need;
  return want > max ? max : want;
}

/* The change setting each of rows[0..n) to want[i] threads. */
static void threads_change(const int *rows, int n, const int *want, pb_model_change *c) {
  pb_model_change_init(c);
  for (int i = 0; i < n; i++) c->threads[rows[i]] = want[i];
}

/* The fewest threads (each row between its current count + 1 and `full`) whose prediction is within 2 %
 * of the prediction at `full`: a bisection on the fraction of the way there. */
static bool fewest_threads(const pb_report *r, const int *rows, int n, const int *full, int *best,
                           pb_model_result *best_res) {
  pb_model_change c;
  threads_change(rows, n, full, &c);
  pb_model_result top;
  if (!predict(r, &c, &top)) return false;
  memcpy(best, full, n * sizeof *best);
  *best_res = top;
  double lo = 0, hi = 1;
  for (int it = 0; it < 5 && hi - lo > 0.05; it++) {
    double f = (lo + hi) / 2;
    int want[PB_MAX_STAGES + 2];
    bool same = true;
    for (int i = 0; i < n; i++) {
      int t = r->model.stages[rows[i]].threads;
      want[i] = full[i] > t ? t + 1 + (int)floor(f * (full[i] - t - 1) + 0.5) : t; /* a row that cannot take more */
      if (want[i] != best[i]) same = false;
    }
    if (same) break;
    threads_change(rows, n, want, &c);
    pb_model_result res;
    if (!predict(r, &c, &res)) return false;
    if (res.samples_per_s >= 0.98 * top.samples_per_s) {
      memcpy(best, want, n * sizeof *best);
      *best_res = res;
      hi = f;
    } else {
      lo = f;
    }
  }
  return true;
}

/* A read capped by bandwidth_mb_per_s is not helped past its cap; the target is the next limit. */
static double next_limit(const pb_report *r, const int *rows, int n) {
  double lim = isnan(r->device_rate_per_s) ? INFINITY : r->device_rate_per_s;
  for (int i = 0; i < r->model.nstages; i++) {
    bool changed = false;
    for (int k = 0; k < n; k++) changed = changed || rows[k] == i;
    double cap = pb_model_stage_capacity(r, i);
    if (!changed && !isnan(cap) && cap < lim) lim = cap;
  }
  if (!isnan(r->cpu_limit_per_s) && r->cpu_limit_per_s < lim) lim = r->cpu_limit_per_s;
  return lim;
}

static void describe_threads(const pb_report *r, pb_recommendation *rc, const int *rows, int n, const int *want) {
  size_t len = 0; /* the rows whose threads change (a co-bottleneck at its schema's limit keeps its own) */
  for (int i = 0; i < n && len < sizeof rc->action; i++)
    if (want[i] != r->model.stages[rows[i]].threads)
      len += (size_t)snprintf(rc->action + len, sizeof rc->action - len, "%s--set stages.%.63s.threads=%d",
                              len ? " " : "", name_of(&r->model, rows[i]).s, want[i]);
  char which[300] = "";
  for (int i = 0; i < n; i++) {
    const pb_model_stage *ms = &r->model.stages[rows[i]];
    if (want[i] == ms->threads) continue;
    size_t w = strlen(which);
    snprintf(which + w, sizeof which - w, "%s%s %d -> %d (%s, CPU %.0f %% of its service)", w ? "; " : "", ms->name,
             ms->threads, want[i], ms->cpu_share >= PB_CPU_BOUND_FRACTION ? "CPU-bound" : "mostly waiting",
             ms->cpu_share * 100);
  }
  snprintf(rc->reason, sizeof rc->reason,
           "%s: threads %s; the model predicts %.1f samples/s (device idle %.1f %%), the fewest threads within 2 %% "
           "of what more threads can give (next limit %.1f samples/s)",
           n > 1 ? "co-bottlenecks, changed together" : "the bottleneck", which, rc->predicted_samples_per_s,
           rc->predicted_idle_pct, next_limit(r, rows, n));
}

static void recommend_threads_for(pb_report *r, const int *rows, int n) {
  int full[PB_MAX_STAGES + 2], best[PB_MAX_STAGES + 2];
  double target = next_limit(r, rows, n);
  int settable = 0;
  for (int i = 0; i < n; i++) {
    const pb_model_stage *ms = &r->model.stages[rows[i]];
    full[i] = ms->max_threads > ms->threads ? threads_for(r, rows[i], target) : ms->threads;
    settable += full[i] > ms->threads;
  }
  if (!settable) return;
  pb_model_result res;
  if (!fewest_threads(r, rows, n, full, best, &res) || !gains(r, &res)) return;
  pb_recommendation *rc = add(r, "threads");
  if (!rc) return;
  set_prediction(r, rc, &res);
  describe_threads(r, rc, rows, n, best);
}

static void recommend_threads(pb_report *r) {
  /* At the cores' limit (named, or as tight as the stage) more threads only queue for a core: the fluid
   * sharing of the simulation says "no loss", but a scheduler's time slices make a serial stage that
   * shares a core with more threads slower (3 spinning threads on 2 cores: 773 samples/s measured where
   * the model said 947). */
  if (is_named(r, "cores")) return;
  int rows[PB_MAX_STAGES + 2];
  int n = threads_rows(r, rows);
  if (n) recommend_threads_for(r, rows, n);
  /* The model's lowest-capacity stage, when the path named another one. */
  int m = pb_model_row(&r->model, r->model_stage);
  bool named = false;
  for (int i = 0; i < n; i++) named = named || rows[i] == m;
  if (m >= 0 && !named) recommend_threads_for(r, &m, 1);
}

/* ---------- prefetch ---------- */

static int row_of_type(const pb_model *m, const char *type) {
  for (int i = m->nstages - 1; i >= 0; i--)
    if (strcmp(m->stages[i].type, type) == 0) return i;
  return -1;
}

/* Bytes a deeper prefetch would add: a batch per extra slot (the batch stage's elements in are samples:
 * a batch is batch_size of them). */
static bool depth_fits(const pb_report *r, int brow, int extra) {
  double batch_bytes = r->model.stages[brow].bytes_per_element * r->model.batch_size;
  if (!(batch_bytes > 0) || !r->memory_limit_bytes) return true;
  return (double)r->memory_planned_bytes + extra * batch_bytes <= (double)r->memory_limit_bytes;
}

static void recommend_prefetch(pb_report *r, const pb_record *rec) {
  const pb_model *m = &r->model;
  int prow = row_of_type(m, "prefetch"), brow = row_of_type(m, "batch");
  int row = prow >= 0 ? prow : brow;
  if (row < 0 || brow < 0) return;
  int cur = m->stages[row].queue_capacity;
  pb_model_change c;
  pb_model_result deep, res, best_res = {0};
  pb_model_change_init(&c);
  c.queue_capacity[row] = MAX_DEPTH;
  if (!predict(r, &c, &deep)) return;
  int best = 0;
  for (int d = cur + 1; d <= MAX_DEPTH; d = d < 2 * cur ? 2 * cur : 2 * d) {
    c.queue_capacity[row] = d;
    if (!predict(r, &c, &res)) return;
    if (getenv("PB_DEBUG_MODEL")) fprintf(stderr, "prefetch: depth %d: %.1f/s idle %.2f %%\n", d, res.samples_per_s, res.idle_pct);
    if (res.idle_pct <= deep.idle_pct + IDLE_KNEE_POINTS) {
      best = d, best_res = res;
      break;
    }
  }
  if (getenv("PB_DEBUG_MODEL"))
    fprintf(stderr, "prefetch: depth %d -> %d: %.1f/s idle %.2f %% (deep %.1f/s %.2f %%; base %.1f/s, noise %.2f %%)\n", cur,
            best, best ? best_res.samples_per_s : NAN, best ? best_res.idle_pct : NAN, deep.samples_per_s, deep.idle_pct,
            r->model.base_samples_per_s, r->noise_pct);
  if (!best || !gains(r, &best_res) || !depth_fits(r, brow, best - cur)) return;
  pb_recommendation *rc = add(r, "prefetch");
  if (!rc) return;
  set_prediction(r, rc, &best_res);
  if (prow >= 0 && rec->stages[m->stages[prow].report_row].cfg_index >= 0)
    snprintf(rc->action, sizeof rc->action, "--set stages.%s.depth=%d", name_of(m, prow).s, best);
  else
    snprintf(rc->action, sizeof rc->action, "add {\"type\": \"prefetch\", \"depth\": %d} after batch", best - 1);
  double idle_now = r->model.base_idle_pct; /* the model's replay of the run as it is */
  snprintf(rc->reason, sizeof rc->reason,
           "the device waits (idle %.1f %%, p99 step %.1f ms against a mean of %.1f ms) though the pipeline's lowest "
           "capacity is %.1f samples/s for %.1f needed: the waits come from variance. The model predicts idle %.1f %% "
           "at depth %d (now %.1f %% at %d), within %.0f point of what any depth gives (%.1f %% at %d)",
           r->device_idle_pct, r->step_p99_ms, r->step_mean_ms, r->model_capacity_per_s, r->device_rate_per_s,
           best_res.idle_pct, best, idle_now, cur, IDLE_KNEE_POINTS, deep.idle_pct, MAX_DEPTH);
}

/* ---------- cache, scale, cores, pinned ---------- */


static void recommend_cache(pb_report *r, const pb_record *rec) {
  const pb_model *m = &r->model;
  int read = row_of_type(m, "read");
  if (read < 0 || !is_named(r, m->stages[read].name) || row_of_type(m, "cache") >= 0) return;
  double bytes = (double)m->epoch_samples * m->stages[read].bytes_per_element;
  double limit = (double)rec->cfg->max_memory_mb * 1e6;
  if (!(bytes > 0) || bytes > 0.5 * limit) return;
  pb_model_change c;
  pb_model_change_init(&c);
  c.cache_after = read;
  pb_model_result res;
  pb_recommendation *rc = add_simulated(r, "cache", &c, &res);
  if (!rc) return;
  snprintf(rc->action, sizeof rc->action, "add {\"type\": \"cache\"} after stage %s", name_of(m, read).s);
  snprintf(rc->reason, sizeof rc->reason,
           "read-bound, and the dataset (%lld samples, %.0f MB) fits in limits.max_memory_mb (%lld MB): from the second "
           "epoch on, samples come from memory. Over this run's %lld measured steps (the first epoch still read) the "
           "model predicts %.1f samples/s",
           (long long)m->epoch_samples, bytes / 1e6, (long long)rec->cfg->max_memory_mb, (long long)m->steps,
           res.samples_per_s);
}

/* The model's decode row when a cheaper decode is worth proposing: decode is named, or the cores bind
 * (*cores then), and it has a config stage to change; else -1. */
static int decode_to_cheapen(const pb_report *r, const pb_record *rec, bool *cores) {
  const pb_model *m = &r->model;
  int row = row_of_type(m, "decode");
  *cores = is_named(r, "cores");
  if (row < 0 || !(*cores || is_named(r, m->stages[row].name))) return -1;
  return rec->stages[m->stages[row].report_row].cfg_index >= 0 ? row : -1;
}

/* Why a cheaper decode pays, the reason's first words. */
static const char *decode_why(bool cores) { return cores ? "the cores bind and decode spends them" : "decode-bound"; }

/* Decode made `speedup` times cheaper, simulated: a recommendation of `kind` when it gains (add_simulated). */
static pb_recommendation *add_decode_speedup(pb_report *r, const char *kind, int row, double speedup,
                                             pb_model_result *res) {
  pb_model_change c;
  pb_model_change_init(&c);
  c.speedup[row] = speedup;
  return add_simulated(r, kind, &c, res);
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

static void recommend_scale(pb_report *r, const pb_record *rec) {
  const pb_model *m = &r->model;
  bool cores;
  int row = decode_to_cheapen(r, rec, &cores);
  if (row < 0) return;
  const pb_stage_rec *sr = &rec->stages[m->stages[row].report_row];
  if (rec->cfg->stages[sr->cfg_index].scale != PB_SCALE_1) return;
  int64_t crop = crop_size_after(rec, sr->cfg_index);
  /* The decoded image's shorter side, from its mean size (3 channels, 4:3). */
  double pixels = m->stages[row].bytes_per_element / 3.0;
  double short_side = sqrt(pixels * 3.0 / 4.0);
  if (!crop || short_side < 2.0 * (double)crop) return;
  pb_model_result res;
  pb_recommendation *rc = add_decode_speedup(r, "scale", row, PB_DECODE_HALF_SPEEDUP, &res);
  if (!rc) return;
  snprintf(rc->action, sizeof rc->action, "--set stages.%s.scale=1/2", name_of(m, row).s);
  snprintf(
      rc->reason, sizeof rc->reason,
      "%s, and the images (shorter side ~%.0f px) are at least twice the %lld px crop: DCT scaling decodes at half "
      "size (measured %.2fx faster), which the model turns into %.1f samples/s",
      decode_why(cores), short_side, (long long)crop, PB_DECODE_HALF_SPEEDUP, res.samples_per_s);
}

/* The first map stage after the decode row opens with random_resized_crop, with no cache between (the
 * config's own rule for fused_crop, config_pipeline.c). */
static bool crop_to_fuse(const pb_record *rec, int cfg_index) {
  for (int i = cfg_index + 1; i < rec->cfg->nstages; i++) {
    const pb_stage_cfg *s = &rec->cfg->stages[i];
    if (s->type == PB_STAGE_CACHE) return false;
    if (s->type == PB_STAGE_MAP) return s->nops > 0 && s->ops[0].kind == PB_OP_RANDOM_RESIZED_CROP;
  }
  return false;
}

static void recommend_fused_crop(pb_report *r, const pb_record *rec) {
  const pb_model *m = &r->model;
  bool cores;
  int row = decode_to_cheapen(r, rec, &cores);
  if (row < 0) return;
  const pb_stage_rec *sr = &rec->stages[m->stages[row].report_row];
  if (rec->cfg->stages[sr->cfg_index].fused_crop || !crop_to_fuse(rec, sr->cfg_index)) return;
  pb_model_result res;
  pb_recommendation *rc = add_decode_speedup(r, "fused_crop", row, PB_DECODE_FUSED_SPEEDUP, &res);
  if (!rc) return;
  snprintf(rc->action, sizeof rc->action, "--set stages.%s.fused_crop=true", name_of(m, row).s);
  snprintf(rc->reason, sizeof rc->reason,
           "%s, and the next map opens with random_resized_crop: decoding only the crop's region gives the same "
           "pixels with less work (measured %.2fx less decode CPU per image on 500x375 photos), which the model "
           "turns into %.1f samples/s",
           decode_why(cores), PB_DECODE_FUSED_SPEEDUP, res.samples_per_s);
}

static void recommend_cores(pb_report *r) {
  if (!is_named(r, "cores")) return;
  const pb_model *m = &r->model;
  pb_model_change c;
  pb_model_change_init(&c);
  c.cores = m->cores + m->cores_usable; /* twice the usable cores, others' load as it was */
  pb_model_result res;
  pb_recommendation *rc = add_simulated(r, "cores", &c, &res);
  if (!rc) return;
  snprintf(rc->action, sizeof rc->action, "more cores: %.0f usable instead of %.2f (a larger machine, CPU affinity or cgroup quota)",
           2 * m->cores_usable, m->cores_usable);
  snprintf(rc->reason, sizeof rc->reason,
           "the cores bind (%s): with twice the usable cores and the same threads the model predicts %.1f samples/s "
           "(device idle %.1f %%)",
           r->cores_limited_by[0] ? r->cores_limited_by : "online CPUs", res.samples_per_s, res.idle_pct);
}

static void recommend_pinned(pb_report *r, const pb_record *rec) {
  const pb_model *m = &r->model;
  int row = row_of_type(m, "h2d");
  if (row < 0 || !is_named(r, m->stages[row].name)) return;
  const pb_stage_rec *sr = &rec->stages[m->stages[row].report_row];
  if (sr->cfg_index < 0 || rec->cfg->stages[sr->cfg_index].pinned || strcmp(r->device_kind, "gpu") != 0) return;
  pb_recommendation *rc = add(r, "pinned");
  if (!rc) return;
  snprintf(rc->action, sizeof rc->action, "--set stages.%s.pinned=true", name_of(m, row).s);
  snprintf(rc->reason, sizeof rc->reason,
           "H2D-bound with pageable host memory: pinned buffers copy by DMA without a staging copy (typically "
           "about twice as fast; no prediction without a measurement of this machine)");
}

/* A batch made on demand keeps the device waiting while it is made: batching ahead overlaps that with the
 * steps (tf.data: a prefetch at the end of the pipeline). */
static void recommend_batch_ahead(pb_report *r) {
  const pb_model *m = &r->model;
  int row = row_of_type(m, "batch");
  if (row < 0 || !m->stages[row].on_demand) return;
  pb_model_change c;
  pb_model_change_init(&c);
  c.on_demand[row] = -1;
  pb_model_result res;
  pb_recommendation *rc = add_simulated(r, "batch_ahead", &c, &res);
  if (!rc) return;
  snprintf(rc->action, sizeof rc->action, "--set stages.%s.on_demand=false", name_of(m, row).s);
  snprintf(rc->reason, sizeof rc->reason,
           "the batch is made on demand, so the device waits while it is made (idle %.1f %%): made ahead, it is "
           "made during the steps, and the model predicts %.1f samples/s (device idle %.1f %%); in tf.data, end the "
           "pipeline with .prefetch",
           r->device_idle_pct, res.samples_per_s, res.idle_pct);
}

/* Best predicted first (unknown predictions last). */
static void sort_by_prediction(pb_report *r) {
  for (int i = 1; i < r->nrecommendations; i++)
    for (int j = i; j > 0; j--) {
      double a = r->recommendations[j - 1].predicted_samples_per_s, b = r->recommendations[j].predicted_samples_per_s;
      if (!(isnan(a) || (!isnan(b) && b > a))) break;
      pb_recommendation tmp = r->recommendations[j];
      r->recommendations[j] = r->recommendations[j - 1];
      r->recommendations[j - 1] = tmp;
    }
}

void pb_recommend(pb_report *r, const pb_record *rec) {
  r->nrecommendations = 0;
  if (!r->classification || strcmp(r->classification, "not_input_bound") == 0 || !r->model.valid) return;
  if (strcmp(r->bottleneck_stage, "device") == 0) return; /* a transient: warm-up is the advice */
  recommend_cache(r, rec);
  recommend_scale(r, rec);
  recommend_fused_crop(r, rec);
  recommend_pinned(r, rec);
  recommend_cores(r);
  recommend_threads(r);
  recommend_prefetch(r, rec);
  recommend_batch_ahead(r);
  sort_by_prediction(r);
}
