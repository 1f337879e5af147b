/* What a capture says of its tf.data pipeline by itself (tfdata_verdict.h). */
#include "tfdata_verdict.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static bool is_batching(const pb_tf_iterator *it) { return strstr(it->kind, "Batch") != NULL; }
static bool is_prefetch(const pb_tf_iterator *it) { return pb_starts_with(it->kind, "Prefetch"); }
static bool is_repeat(const pb_tf_iterator *it) { return strstr(it->kind, "Repeat") != NULL; }

/* Position of the first batching iterator in the chain (source first), or n. */
static int batch_position(const pb_tfdata *t, const int *chain, int n) {
  for (int i = 0; i < n; i++)
    if (is_batching(&t->iterators[chain[i]])) return i;
  return n;
}

/* Samples/s the iterator at chain position pos can make (see the header); NAN where unknown. */
static double capacity(const pb_tf_iterator *it, int pos, int batch_pos, int64_t batch) {
  bool per_sample = pos < batch_pos || (pos == batch_pos && it->functions.n); /* map-and-batch's runs: samples */
  double spe = per_sample ? 1.0 : (double)batch;
  if (it->functions.n) {
    double ns = pb_tf_times_mean_ns(&it->latency);
    return ns > 0 ? spe * (double)(it->parallelism > 0 ? it->parallelism : 1) * 1e9 / ns : NAN;
  }
  double ns = pb_tf_times_mean_ns(&it->calls);
  return it->async || it->parent < 0 || ns <= 0 ? NAN : spe * 1e9 / ns;
}

static void step_means(const pb_tfdata *t, pb_tf_verdict *v) {
  pb_tfdata_step_ms(t, &v->step_ms, &v->device_ms, NULL);
  v->h2d_ms = t->nsteps ? pb_tfdata_h2d_ms(t) : 0;
  v->actual_per_s = v->step_ms > 0 ? (double)v->batch_size * 1e3 / v->step_ms : NAN;
  v->device_per_s = v->device_ms > 0 ? (double)v->batch_size * 1e3 / v->device_ms : NAN;
}

/* The lowest capacity among the iterators, leaving out `skip` (-1: none), or +inf. */
static double lowest_capacity(const pb_tfdata *t, const pb_tf_verdict *v, int skip) {
  double low = INFINITY;
  for (int i = 0; i < t->niterators; i++)
    if (i != skip && !isnan(v->capacity_per_s[i]) && v->capacity_per_s[i] < low) low = v->capacity_per_s[i];
  return low;
}

static void advise(pb_tf_verdict *v, int iterator, double predicted, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void advise(pb_tf_verdict *v, int iterator, double predicted, const char *fmt, ...) {
  if (v->nadvice == PB_TF_MAX_ADVICE) return;
  pb_tf_advice *a = &v->advice[v->nadvice++];
  a->iterator = iterator;
  a->predicted_per_s = predicted;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(a->text, sizeof a->text, fmt, ap);
  va_end(ap);
}

/* The bottleneck runs functions: as many parallel calls as reach the device's rate, within tf.data's cpu_budget
 * (the root's), or more cores when its calls already use them. */
static void advise_parallelism(const pb_tfdata *t, pb_tf_verdict *v, int cores) {
  const pb_tf_iterator *it = &t->iterators[v->bottleneck];
  double cap = v->capacity_per_s[v->bottleneck];
  int64_t now = it->parallelism > 0 ? it->parallelism : 1;
  double need = ceil((double)now * v->device_per_s / cap - 1e-9); /* a hostile capture's can pass any integer */
  int64_t want = !(need >= 1) ? 1 : need > 1e6 ? 1000000 : (int64_t)need;
  if (cores > 0 && want > cores) want = cores;
  const char *how = it->autotune ? " (AUTOTUNE chose " : " (now ";
  if (want <= now) {
    advise(v, -1, NAN, "more cores: %s's %lld parallel calls already use tf.data's cpu_budget of %d", it->name,
           (long long)now, cores);
    return;
  }
  double after = fmin(fmin(v->device_per_s, cap * (double)want / (double)now), lowest_capacity(t, v, v->bottleneck));
  advise(v, v->bottleneck, after, "num_parallel_calls=%lld on %s%s%lld)", (long long)want, it->name, how,
         (long long)now);
}

/* No prefetch at the pipeline's end: the batch is made inside the step's GetNext, while the device waits; with
 * one, making it overlaps the step, which then takes the longer of the two. */
static void advise_prefetch(const pb_tfdata *t, const int *chain, int n, pb_tf_verdict *v) {
  if (n < 2 || is_prefetch(&t->iterators[chain[n - 2]]) || v->input_bound_pct < 1) return;
  double input_ms = v->step_ms - v->device_ms; /* the wait: at least what making a batch takes in the step */
  double after = (double)v->batch_size * 1e3 / fmax(v->device_ms, input_ms);
  advise(v, -1, fmin(after, lowest_capacity(t, v, -1)),
         "end the pipeline with .prefetch(tf.data.AUTOTUNE) (after %s): the batch is made while the device waits",
         t->iterators[chain[n - 2]].name);
}

/* The steps copy their batch to the device after taking it (a GPU plane shows the copies): copied ahead, into
 * the device's memory while the previous step runs, the step is shorter by the copy.  Said from 1 % of the
 * step, as the prefetch is. */
static void advise_copy(const pb_tfdata *t, pb_tf_verdict *v) {
  if (!(v->h2d_ms >= v->step_ms / 100) || !(v->device_ms > v->h2d_ms)) return;
  double after = (double)v->batch_size * 1e3 / (v->step_ms - v->h2d_ms); /* the wait stays as it was */
  advise(v, -1, fmin(after, lowest_capacity(t, v, -1)),
         "copy the batches to the GPU ahead of the steps: end the pipeline with "
         ".apply(tf.data.experimental.prefetch_to_device(\"/gpu:0\")) (each step copies its batch for %.2f ms)",
         v->h2d_ms);
}

/* A repeat over a map that runs functions, with the bottleneck at or below the repeat: every epoch makes the
 * same elements again; .cache() before the repeat makes later epochs skip them. */
static void advise_cache(const pb_tfdata *t, const int *chain, int n, pb_tf_verdict *v) {
  int rep = -1, map = -1, at = -1;
  for (int i = 0; i < n; i++) {
    if (chain[i] == v->bottleneck) at = i;
    if (is_repeat(&t->iterators[chain[i]]) && rep < 0) rep = i;
    if (rep < 0 && t->iterators[chain[i]].functions.n) map = i;
  }
  if (rep < 0 || map < 0 || at < 0 || at > rep) return;
  double after = v->device_per_s;
  for (int i = rep + 1; i < n; i++)
    if (!isnan(v->capacity_per_s[chain[i]])) after = fmin(after, v->capacity_per_s[chain[i]]);
  advise(v, chain[map], after, ".cache() after %s, before the repeat (%s): later epochs skip its work",
         t->iterators[chain[map]].name, t->iterators[chain[rep]].name);
}

static void sort_advice(pb_tf_verdict *v) {
  for (int i = 1; i < v->nadvice; i++)
    for (int j = i; j > 0; j--) {
      double a = v->advice[j].predicted_per_s, b = v->advice[j - 1].predicted_per_s;
      if (!(isnan(b) && !isnan(a)) && !(a > b)) break;
      pb_tf_advice tmp = v->advice[j];
      v->advice[j] = v->advice[j - 1], v->advice[j - 1] = tmp;
    }
}

void pb_tfdata_verdict(const pb_tfdata *t, pb_tf_verdict *v) {
  memset(v, 0, sizeof *v);
  int chain[PB_TF_MAX_ITERATORS];
  int n = pb_tfdata_chain(t, chain, PB_TF_MAX_ITERATORS), b = batch_position(t, chain, n);
  v->batch_size = b < n && t->iterators[chain[b]].batch_size > 0 ? t->iterators[chain[b]].batch_size : 1;
  v->input_bound_pct = pb_tfdata_input_bound_pct(t);
  step_means(t, v);
  for (int i = 0; i < PB_TF_MAX_ITERATORS; i++) v->capacity_per_s[i] = NAN;
  for (int i = 0; i < n; i++) v->capacity_per_s[chain[i]] = capacity(&t->iterators[chain[i]], i, b, v->batch_size);
  v->bottleneck = -1;
  advise_prefetch(t, chain, n, v); /* said even below the threshold: what the step loses to it is known */
  advise_copy(t, v);
  if (!(v->input_bound_pct >= PB_TF_INPUT_BOUND_PCT)) {
    sort_advice(v);
    return;
  }
  double low = INFINITY;
  for (int i = 0; i < n; i++)
    if (v->capacity_per_s[chain[i]] < low) low = v->capacity_per_s[chain[i]], v->bottleneck = chain[i];
  if (low >= v->device_per_s) { /* no iterator is too slow: more parallelism would not help */
    v->bottleneck = -1;
    v->keeps_up = true;
    return;
  }
  if (v->bottleneck >= 0 && t->iterators[v->bottleneck].functions.n) advise_parallelism(t, v, pb_tfdata_cpu_budget(t));
  if (v->bottleneck >= 0) advise_cache(t, chain, n, v);
  sort_advice(v);
}
