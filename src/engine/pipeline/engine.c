#include "engine.h"

#define PB_HOPELESS_ERRORS 10000

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------- the measured window ---------- */

uint64_t pb_engine_clip(const pb_engine *e, uint64_t t0, uint64_t t1) {
  uint64_t ws = atomic_load_explicit(&e->window_start_ns, memory_order_relaxed);
  uint64_t we = atomic_load_explicit(&e->window_end_ns, memory_order_relaxed);
  return pb_overlap_ns(t0, t1, ws, we);
}

bool pb_engine_in_window(const pb_engine *e, uint64_t t) {
  return t >= atomic_load_explicit(&e->window_start_ns, memory_order_relaxed) &&
         t < atomic_load_explicit(&e->window_end_ns, memory_order_relaxed);
}

void pb_engine_open_window(pb_engine *e, uint64_t t_ns) { atomic_store(&e->window_start_ns, t_ns); }
void pb_engine_close_window(pb_engine *e, uint64_t t_ns) { atomic_store(&e->window_end_ns, t_ns); }

/* ---------- helpers for stages ---------- */

void pb_worker_abandon(pb_worker *w, pb_elem *e) {
  w->ctr.samples_in_flight += e->nsamples;
  pb_buf_release(e->buf);
  e->buf = NULL;
}

/* The dataset parsers name the file in their messages ("<file>: offset 128: ..."); the error record has it
 * in its own field and the failure line puts it first: once is enough. */
static const char *without_file(const char *message, const char *file) {
  size_t n = file ? strlen(file) : 0;
  if (n && strncmp(message, file, n) == 0 && message[n] == ':' && message[n + 1] == ' ') return message + n + 2;
  return message;
}

/* ---------- stopping on errors ---------- */

bool pb_streak_hopeless(uint64_t failures, uint64_t since_ns, uint64_t now_ns, uint64_t epoch_samples,
                        uint64_t reorder_samples) {
  if (failures < PB_STREAK_MIN) return false;
  uint64_t whole = UINT64_MAX; /* saturates: an absurd epoch leaves the time rule */
  if (epoch_samples == 0) epoch_samples = PB_STREAK_UNKNOWN_EPOCH / 2; /* not known yet: a generous stand-in */
  if (epoch_samples <= UINT64_MAX / 4 && reorder_samples <= UINT64_MAX / 4)
    whole = 2 * epoch_samples + reorder_samples + PB_STREAK_MIN;
  return failures >= whole || (now_ns > since_ns && now_ns - since_ns >= PB_STREAK_MAX_NS);
}

/* Samples the stages before s may hold back (a shuffle's buffer): a good one among them can come after many
 * failures. */
static uint64_t reorder_samples(const pb_stage *s) {
  uint64_t held = 0;
  for (int i = 0; i < s->index; i++) {
    const pb_stage *t = &s->engine->stages[i];
    if (t->ops->held_samples) held += t->ops->held_samples(t);
  }
  return held;
}

void pb_engine_note_epoch_samples(pb_engine *e, uint64_t samples) {
  uint64_t known = atomic_load_explicit(&e->epoch_samples, memory_order_relaxed);
  while (samples > known &&
         !atomic_compare_exchange_weak_explicit(&e->epoch_samples, &known, samples, memory_order_relaxed,
                                                memory_order_relaxed)) {
  }
}

/* One more failure in a row at stage s: the streak's length, and (*since_ns) when its first failed. */
static uint64_t note_streak(pb_stage *s, uint64_t samples, uint64_t now_ns, uint64_t *since_ns) {
  uint64_t before = atomic_fetch_add_explicit(&s->fail_streak, samples, memory_order_relaxed);
  if (before == 0) atomic_store_explicit(&s->fail_streak_since_ns, now_ns, memory_order_relaxed);
  *since_ns = before == 0 ? now_ns : atomic_load_explicit(&s->fail_streak_since_ns, memory_order_relaxed);
  return before + samples;
}

/* A good output: the stage works, whatever failed before it. */
static void clear_streak(pb_stage *s) {
  if (atomic_load_explicit(&s->fail_streak, memory_order_relaxed)) /* a read, not a write, on the hot path */
    atomic_store_explicit(&s->fail_streak, 0, memory_order_relaxed);
}

typedef enum { STOP_NONE, STOP_ERROR, STOP_MAX_ERRORS, STOP_NO_BATCH, STOP_STREAK } stop_kind;

/* Under errors_lock, errors_total counted: does this error stop the run, and why. */
static stop_kind stop_for(pb_engine *e, bool fatal, bool streak_hopeless) {
  const pb_run_cfg *run = &e->cfg->run;
  if (fatal || run->on_error_fail) return STOP_ERROR;
  if (run->max_errors && e->errors_total > (uint64_t)run->max_errors) return STOP_MAX_ERRORS;
  /* on_error skip must not spin forever on data that cannot work at all (wrong format, O_DIRECT refused
   * by the file system): 10,000 errors before a single batch end the run; data that stops working later
   * (a dataset removed mid-run) ends it by the failure streak. */
  if (e->errors_total >= PB_HOPELESS_ERRORS && atomic_load(&e->batches_made) == 0) return STOP_NO_BATCH;
  return streak_hopeless ? STOP_STREAK : STOP_NONE;
}

/* Why the run stopped, after the sample's own error; empty when that error is the reason itself. */
static void stop_reason(const pb_stage *s, stop_kind k, uint64_t streak, uint64_t streak_ns, char *why, size_t len) {
  const pb_engine *e = s->engine;
  uint64_t epoch = atomic_load_explicit(&e->epoch_samples, memory_order_relaxed);
  char epoch_text[64] = "the epoch's size is not known";
  if (epoch) snprintf(epoch_text, sizeof epoch_text, "an epoch is %llu", (unsigned long long)epoch);
  why[0] = '\0';
  if (k == STOP_MAX_ERRORS)
    snprintf(why, len, "; more than run.max_errors (%lld) errors, the run stopped", (long long)e->cfg->run.max_errors);
  else if (k == STOP_NO_BATCH)
    snprintf(why, len, "; no sample has worked: %d errors before the first batch, the run stopped", PB_HOPELESS_ERRORS);
  else if (k == STOP_STREAK)
    snprintf(why, len, "; no sample has worked at stage %s since: %llu in a row failed (in %.1f s; %s), the run "
                       "stopped", s->name, (unsigned long long)streak, (double)streak_ns / 1e9, epoch_text);
}

/* The failure line, one line whatever the file names hold: control bytes show as '?' (as in config
 * messages), so a name with a newline or a terminal escape cannot break the line or reach the terminal. */
static void set_failure(pb_engine *e, const char *line) {
  pb_cfg_clean(line, sizeof e->failure, e->failure, sizeof e->failure);
}

/* The first errors of distinct files: a file that fails every epoch is kept once, so the list names up to
 * PB_FIRST_ERRORS different files (issue 34: one bad file filled it).  Errors without a file are all kept. */
static void keep_first_error(pb_engine *e, const char *file, const char *message) {
  if (e->nfirst_errors >= PB_FIRST_ERRORS) return;
  for (int i = 0; file && file[0] && i < e->nfirst_errors; i++)
    if (strncmp(e->first_errors[i].file, file, sizeof e->first_errors[i].file - 1) == 0) return; /* as kept */
  pb_error_record *r = &e->first_errors[e->nfirst_errors++];
  snprintf(r->file, sizeof r->file, "%s", file ? file : "");
  snprintf(r->message, sizeof r->message, "%s", message);
}

void pb_worker_error(pb_worker *w, pb_elem *el, const char *file, const char *message, bool fatal) {
  pb_engine *e = w->stage->engine;
  message = without_file(message, file);
  w->ctr.samples_error_total += el->nsamples;
  pb_buf_release(el->buf);
  el->buf = NULL;
  uint64_t now = pb_now_ns(), since = now;
  uint64_t streak = note_streak(w->stage, el->nsamples, now, &since);
  uint64_t epoch = atomic_load_explicit(&e->epoch_samples, memory_order_relaxed);
  bool streak_hopeless = pb_streak_hopeless(streak, since, now, epoch, reorder_samples(w->stage));
  uv_mutex_lock(&e->errors_lock);
  e->errors_total += el->nsamples;
  keep_first_error(e, file, message);
  stop_kind k = stop_for(e, fatal, streak_hopeless);
  bool first_stop = k != STOP_NONE && !atomic_load(&e->failed);
  if (first_stop) {
    /* the sample's own error in the contract's form, then why the run stopped on it */
    char why[240], shown_file[304], line[sizeof e->failure];
    stop_reason(w->stage, k, streak, now > since ? now - since : 0, why, sizeof why);
    pb_cfg_clean(file ? file : "", 300, shown_file, sizeof shown_file); /* a long path must leave room for why */
    snprintf(line, sizeof line, "%s%s%s%s", shown_file, file ? ": " : "", message, why);
    set_failure(e, line);
    atomic_store(&e->failed, true);
  }
  uv_mutex_unlock(&e->errors_lock);
  if (first_stop) pb_engine_cancel(e);
}

/* The run stops at once, not when the main thread next looks (up to 50 ms later, time enough for
 * thousands more samples, errors among them, to go through): every queue and pool is cancelled now. */
void pb_engine_fail(pb_engine *e, const char *message) {
  uv_mutex_lock(&e->errors_lock);
  bool first = !atomic_load(&e->failed);
  if (first) {
    set_failure(e, message);
    atomic_store(&e->failed, true);
  }
  uv_mutex_unlock(&e->errors_lock);
  if (first) pb_engine_cancel(e);
}

bool pb_engine_failed(pb_engine *e) { return atomic_load(&e->failed); }

const char *pb_engine_file_path(const pb_engine *e, uint32_t index) {
  return e->have_files && index < e->files.count ? e->files.files[index].path : NULL;
}

/* ---------- trace segments (trace.h) ---------- */

static void seg_open(pb_worker *w, uint64_t t0, uint64_t key, uint64_t bytes, uint8_t flags) {
  w->in_segment = true;
  w->seg_t0_ns = t0;
  w->seg_key = key;
  w->seg_out = PB_NO_KEY;
  w->seg_bytes = bytes;
  w->seg_flags = flags;
}

static void seg_close(pb_worker *w, uint64_t t1) {
  if (!w->in_segment) return;
  w->in_segment = false;
  pb_trace_add(&w->trace, PB_EV_PROCESS, w->seg_flags, w->seg_t0_ns, t1, w->seg_key, w->seg_out, w->seg_bytes);
}

/* The segment goes on after a cut (a block, an emit): same input, no longer the call's start. */
static void seg_continue(pb_worker *w, uint64_t t) {
  uint8_t keep = w->seg_flags & PB_EVF_PRODUCE;
  seg_open(w, t, w->seg_key, w->producing ? 0 : w->seg_bytes, keep);
}

void pb_worker_trace_joined(pb_worker *w, uint64_t batch_id) {
  if (!w->in_segment) return;
  w->seg_out = PB_BATCH_KEY(batch_id);
  w->seg_flags |= PB_EVF_JOINED;
}

/* An element was handed on (at `now`, which pb_emit read whenever the worker is producing): a producing
 * segment ends at every emit; a call's segment carries it, one emitted element per segment. */
static void seg_emitted(pb_worker *w, uint64_t key, uint64_t now) {
  if (!w->trace.ev || !w->in_segment) return;
  if (!w->producing && (w->seg_flags & PB_EVF_EMITTED)) { /* a second emit in one call */
    now = pb_now_ns();
    seg_close(w, now);
    seg_continue(w, now);
  }
  w->seg_out = key;
  w->seg_flags |= PB_EVF_EMITTED;
  if (w->producing) {
    seg_close(w, now);
    seg_continue(w, now);
  }
}

/* Time blocked on the output (a full queue, an empty pool): counted as blocked-out within the window,
 * and remembered so the call it happened in does not count it as service time. */
static void note_blocked(pb_worker *w, uint64_t t0, uint64_t t1, bool pool, bool waited) {
  if (w->trace.ev && waited) { /* a push that found room is not a block: no cut in the trace */
    bool was_in = w->in_segment;
    seg_close(w, t0);
    pb_trace_add(&w->trace, PB_EV_BLOCKED, pool ? PB_EVF_BLOCKED_POOL : 0, t0, t1, PB_NO_KEY, PB_NO_KEY, 0);
    if (was_in) seg_continue(w, t1);
  }
  uint64_t clipped = pb_engine_clip(w->stage->engine, t0, t1);
  w->ctr.blocked_out_ns += clipped;
  w->blocked_in_call_ns += t1 - t0;
  w->blocked_in_call_clipped_ns += clipped;
}

/* The trace: the outputs became available downstream at t1.  The open segment is cut around the push so
 * the worker's events stay in time order. */
static void trace_handoff(pb_worker *w, uint64_t t0, uint64_t t1) {
  if (!w->trace.ev) return;
  bool was_in = w->in_segment;
  seg_close(w, t0);
  pb_trace_add(&w->trace, PB_EV_HANDOFF, 0, t1, t1, PB_NO_KEY, PB_NO_KEY, 0);
  if (was_in) seg_continue(w, t1);
}

/* Pushes the buffered outputs; what a cancelled push leaves behind is counted in flight. */
static int flush_out(pb_worker *w) {
  if (w->nout == 0) return 0;
  pb_engine *e = w->stage->engine;
  int pushed = 0;
  uint64_t t0 = pb_now_ns();
  if (w->stage->out == pb_engine_output(e)) /* the device's input: it tells input wait from overhead */
    for (int i = 0; i < w->nout; i++) w->out[i].handoff_ns = t0;
  bool waited;
  int reserved = PB_MIN(w->reserved, w->nout); /* the outputs that fill slots reserved for them */
  w->reserved -= reserved;
  int rc = pb_queue_push_many(w->stage->out, w->out, w->nout, &pushed, &waited, reserved);
  uint64_t t1 = pb_now_ns();
  note_blocked(w, t0, t1, false, waited);
  trace_handoff(w, waited ? t1 : t0, t1); /* after a block the segment was already cut at t0 */
  for (int i = pushed; i < w->nout; i++) pb_worker_abandon(w, &w->out[i]);
  w->nout = 0;
  if (rc < 0) w->cancelled = true;
  return rc;
}

/* Busy time of [t0, t1) less the time blocked inside it: the part in the window goes to busy_ns, all of
 * it to busy_total_ns.  Returns the service time. */
static uint64_t count_busy(pb_worker *w, uint64_t t0, uint64_t t1) {
  uint64_t span = t1 > t0 ? t1 - t0 : 0;
  uint64_t service = span - PB_MIN(w->blocked_in_call_ns, span);
  uint64_t in_window = pb_engine_clip(w->stage->engine, t0, t1);
  w->ctr.busy_ns += in_window - PB_MIN(w->blocked_in_call_clipped_ns, in_window);
  w->ctr.busy_total_ns += service;
  return service;
}

/* The next element's share of the work spread over several (pb_worker_spread_work). */
static uint64_t take_spread_share(pb_worker *w) {
  if (!w->spread_left) return 0;
  uint64_t share = w->spread_ns / w->spread_left;
  w->spread_ns -= share;
  w->spread_left--;
  return share;
}

/* Spread work that no element took (a file's samples that failed, a run that stopped): busy time when
 * `now` is in the window, as if the last of them had been made then. */
static void settle_spread(pb_worker *w, uint64_t now) {
  if (w->spread_left && pb_engine_in_window(w->stage->engine, now)) w->ctr.busy_ns += w->spread_ns;
  w->spread_ns = w->spread_left = 0;
}

/* A source's work is counted per element it makes: the time since its previous element (or the start of
 * the produce call), less any time blocked meanwhile, is that element's own service time; with its share
 * of spread work, its service time. */
static void count_source_element(pb_worker *w, uint64_t now) {
  uint64_t own = count_busy(w, w->src_mark_ns, now);
  uint64_t share = take_spread_share(w);
  if (pb_engine_in_window(w->stage->engine, now)) {
    w->ctr.busy_ns += share;
    w->ctr.calls++;
    pb_hist_add(&w->hist, own + share);
  }
  w->last_service_ns = own;
  w->src_mark_ns = now;
  w->blocked_in_call_ns = w->blocked_in_call_clipped_ns = 0;
}

void pb_worker_spread_work(pb_worker *w, uint64_t elements) {
  if (!w->per_element || !w->stage->is_source || elements == 0) return;
  uint64_t now = pb_now_ns();
  settle_spread(w, now);
  uint64_t span = now > w->src_mark_ns ? now - w->src_mark_ns : 0;
  uint64_t service = span - PB_MIN(w->blocked_in_call_ns, span);
  w->ctr.busy_total_ns += service; /* the whole run's figure needs no window: counted now */
  w->spread_ns = service;
  w->spread_left = elements;
  w->src_mark_ns = now;
  w->blocked_in_call_ns = w->blocked_in_call_clipped_ns = 0;
}

/* Would the outputs held now wait past PB_FLUSH_AFTER_NS for the next one, which takes about
 * `next_ns`?  Then they go now: a slow producer never holds an output its consumer may be waiting for. */
static bool hold_too_long(const pb_worker *w, uint64_t now, uint64_t next_ns) {
  return now - w->out_first_ns + next_ns >= PB_FLUSH_AFTER_NS;
}

int pb_emit(pb_worker *w, const pb_elem *e) {
  bool per_element = w->per_element;
  clear_streak(w->stage);
  uint64_t now = w->nout == 0 || per_element ? pb_now_ns() : 0;
  if (per_element) count_source_element(w, now);
  /* The age of the oldest unsent output counts from when the work that made it began (the call's start,
   * or for a source the element's), so that a slow call's output goes out as soon as the call ends. */
  if (w->nout == 0) w->out_first_ns = per_element ? now : w->call_t0_ns;
  w->out[w->nout++] = *e;
  w->ctr.samples_out_total += e->nsamples;
  if (pb_engine_in_window(w->stage->engine, per_element ? now : w->out_first_ns)) {
    w->ctr.samples_out += e->nsamples;
    w->ctr.bytes_out += e->bytes;
  }
  seg_emitted(w, pb_elem_key(e), now); /* producing implies per_element: `now` was read */
  /* A source (or a flush) hands on by time too: what it holds goes before the next element, expected to
   * take as long as this one, would keep it past the bound (a slow source hands on every element). */
  if (w->nout >= w->stage->out_chunk || (per_element && hold_too_long(w, now, w->last_service_ns)))
    return flush_out(w);
  return 0;
}

void pb_worker_note_blocked(pb_worker *w, uint64_t t0_ns, uint64_t t1_ns) { note_blocked(w, t0_ns, t1_ns, true, true); }

pb_buf *pb_worker_get_buf(pb_worker *w, pb_pool *pool) {
  pb_buf *b = pb_pool_try_get(pool);
  if (b) return b;
  /* Never wait for a buffer while holding unsent outputs: they may be the very buffers that, once
   * consumed downstream, come back to this pool. */
  if (flush_out(w) < 0) return NULL;
  uint64_t t0 = pb_now_ns();
  b = pb_pool_get(pool);
  note_blocked(w, t0, pb_now_ns(), true, true);
  return b;
}

/* ---------- worker loops ---------- */

static void start_call(pb_worker *w) { w->blocked_in_call_ns = w->blocked_in_call_clipped_ns = 0; }

/* One call's bookkeeping.  Service time excludes time blocked on the output; busy time is the part of
 * the service inside the measured window; the call (and its histogram entry) counts when it ends in
 * the window.  Returns the service time. */
static uint64_t count_call(pb_worker *w, uint64_t samples, uint64_t bytes, uint64_t t0, uint64_t t1) {
  uint64_t service = count_busy(w, t0, t1);
  if (!pb_engine_in_window(w->stage->engine, t1)) return service;
  w->ctr.calls++;
  w->ctr.samples_in += samples;
  w->ctr.bytes_in += bytes;
  pb_hist_add(&w->hist, service);
  return service;
}

/* The service per input element, smoothed over chunks (a quarter of the new chunk's mean each time). */
static void note_elem_time(pb_worker *w, uint64_t service_ns, int n) {
  uint64_t mean = service_ns / (uint64_t)n;
  w->elem_ns = w->elem_ns ? (3 * w->elem_ns + mean) / 4 : PB_MAX(mean, 1);
}

/* Elements to take from the input queue at once.  A worker alone on its queue takes its chunk (fewer
 * lock round trips); one with siblings takes only what it will start on within PB_FLUSH_AFTER_NS (one at
 * a time for a slow stage, and while its speed is not known yet), so that no sibling waits on an empty
 * queue while elements sit unstarted in this worker's hands. */
static int take_limit(const pb_worker *w) {
  const pb_stage *s = w->stage;
  if (s->threads <= 1 || s->chunk <= 1) return s->chunk;
  if (!w->elem_ns) return 1;
  uint64_t k = PB_FLUSH_AFTER_NS / w->elem_ns;
  return k < 1 ? 1 : k > (uint64_t)s->chunk ? s->chunk : (int)k;
}

static void abandon_inputs(pb_worker *w, int from, int n) {
  for (int i = from; i < n; i++) pb_worker_abandon(w, &w->in[i]);
}

/* Processes one popped chunk; returns -ECANCELED when the run was cancelled meanwhile. */
static int process_chunk(pb_worker *w, int n) {
  const pb_stage_ops *ops = w->stage->ops;
  uint64_t t0 = pb_now_ns(), service = 0;
  for (int i = 0; i < n; i++) {
    uint64_t samples = w->in[i].nsamples, bytes = w->in[i].bytes;
    start_call(w);
    w->call_t0_ns = t0;
    if (w->trace.ev) seg_open(w, t0, pb_elem_key(&w->in[i]), bytes, PB_EVF_CALL_START);
    int rc = ops->process(w, &w->in[i]);
    uint64_t t1 = pb_now_ns();
    seg_close(w, t1);
    uint64_t call_ns = count_call(w, samples, bytes, t0, t1);
    service += call_ns;
    /* cancelled (by a failed push or pool wait, or the engine's flag: a run stopped by an error ends here,
     * not after the chunk): what this worker still holds for the next stage goes to flush_out, which
     * counts it in flight (a fused map can return before it pushed what it had made) */
    if (rc < 0 || w->cancelled || atomic_load_explicit(&w->stage->engine->cancelled, memory_order_relaxed)) {
      abandon_inputs(w, i + 1, n);
      flush_out(w);
      return -ECANCELED;
    }
    /* what would wait past the bound if the next call takes as long as this one goes now */
    if (w->nout && i + 1 < n && hold_too_long(w, t1, call_ns)) {
      if (flush_out(w) < 0) {
        abandon_inputs(w, i + 1, n);
        return -ECANCELED;
      }
      t1 = pb_now_ns(); /* the next call starts after the hand-off */
    }
    t0 = t1;
  }
  note_elem_time(w, service, n);
  return flush_out(w);
}

static void count_source_rest(pb_worker *w, uint64_t t1);

/* A source's produce() or a flush(): work not on one input, cut into a segment per element handed on. */
static void produce_begin(pb_worker *w, uint64_t t0) {
  if (!w->trace.ev) return;
  w->producing = true;
  seg_open(w, t0, PB_NO_KEY, 0, PB_EVF_PRODUCE);
}

static void produce_end(pb_worker *w) {
  if (!w->trace.ev) return;
  uint64_t t1 = pb_now_ns();
  if (t1 > w->seg_t0_ns) seg_close(w, t1); /* work after the last emit */
  w->in_segment = w->producing = false;
}

/* Under an ahead limit on its output (a map's `ahead`, a batch made on demand): room is reserved for what the
 * worker will make before it takes input (the wait for it is time blocked on the output), and it takes no more
 * input than that room holds.  Returns how many to take, or -ECANCELED. */
static int reserve_ahead(pb_worker *w, int limit) {
  pb_stage *s = w->stage;
  if (s->out->ahead_limit < 0) return limit;
  int wanted = s->ops->inputs_wanted ? s->ops->inputs_wanted(w) : 0; /* 0: one output per input */
  if (w->reserved == 0) {
    /* a worker's share of the room at most (a map's `ahead` is per thread), so that one worker does not take
     * it all while its siblings idle */
    int share = PB_MAX(1, s->out->ahead_limit / s->threads);
    uint64_t t0 = pb_now_ns();
    bool waited;
    int r = pb_queue_reserve(s->out, wanted ? 1 : PB_MIN(limit, share), &waited);
    if (r < 0) return r;
    if (waited) note_blocked(w, t0, pb_now_ns(), false, true);
    w->reserved = r;
  }
  return PB_MIN(limit, wanted ? wanted : w->reserved);
}

/* Reserved room no output will fill: a map's inputs not taken or dropped; any stage's at its end. */
static void release_ahead(pb_worker *w, int keep) {
  if (w->reserved <= keep) return;
  pb_queue_unreserve(w->stage->out, w->reserved - keep);
  w->reserved = keep;
}

static void run_transform(pb_worker *w) {
  pb_stage *s = w->stage;
  bool one_per_input = !s->ops->inputs_wanted;
  for (;;) {
    int limit = reserve_ahead(w, take_limit(w));
    if (limit < 0) return; /* cancelled */
    uint64_t t0 = pb_now_ns();
    /* Chunks follow the payload size (engine_plan.c), and the stage's speed when threads share the
     * queue (take_limit); batches move one at a time, so a worker never hoards buffers it is not working
     * on. */
    int n = pb_queue_pop_many(s->in, w->in, limit);
    uint64_t t1 = pb_now_ns();
    if (one_per_input) release_ahead(w, n > 0 ? n : 0);
    w->ctr.wait_in_ns += pb_engine_clip(s->engine, t0, t1);
    pb_trace_add(&w->trace, PB_EV_WAIT, 0, t0, t1, PB_NO_KEY, PB_NO_KEY, 0);
    if (n < 0 || (n > 0 && process_chunk(w, n) < 0)) return; /* cancelled */
    if (one_per_input) release_ahead(w, 0);                  /* what a dropped sample would have filled */
    if (n == 0) {                                             /* end of data */
      if (s->ops->flush) { /* its work (a cache's replays, a shuffle's drain) counts per element made */
        start_call(w);
        w->src_mark_ns = t1;
        w->per_element = true;
        produce_begin(w, t1);
        int rc = s->ops->flush(w);
        produce_end(w);
        count_source_rest(w, pb_now_ns());
        w->per_element = false;
        if (rc < 0 && rc != -ECANCELED) { /* e.g. out of memory merging a remainder: what it holds is counted */
          if (s->ops->abandon) w->ctr.samples_in_flight += s->ops->abandon(w);
          char msg[PB_NAME_LEN + 96];
          snprintf(msg, sizeof msg, "stage %s: %s at the end of the data", s->name, strerror(-rc));
          pb_engine_fail(s->engine, msg);
        }
        if (rc < 0) return;
      }
      flush_out(w);
      release_ahead(w, 0); /* a remainder dropped */
      return;
    }
  }
}

/* Work after a produce call's last element (reading ahead, finding the end of data): busy time, no call. */
static void count_source_rest(pb_worker *w, uint64_t t1) {
  if (w->per_element) count_busy(w, w->src_mark_ns, t1);
}

static void run_source(pb_worker *w) {
  pb_stage *s = w->stage;
  while (!w->cancelled) {
    start_call(w);
    uint64_t t0 = pb_now_ns();
    w->src_mark_ns = t0;
    produce_begin(w, t0);
    int n = s->ops->produce(w, s->out_chunk);
    produce_end(w);
    count_source_rest(w, pb_now_ns());
    if (n <= 0) break;
    flush_out(w);
  }
  if (!w->cancelled) flush_out(w);
}

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The run-queue delay inside the thread's service time since `s0`, or -1 when unknown.  The kernel
 * counts every trip through the run queue, also the one after each wake-up from a queue or pool wait,
 * which is not service time.  Reading the counters around every wait would cost more than the waits
 * are worth to a fast stage, so the share of those trips is taken from their count: each time the
 * thread was put on a core it queued, on average, delay / slices; `waits` of those slices began with a
 * wake-up. */
static int64_t service_cpu_delay_ns(bool have_s0, const pb_sched_stat *s0, uint64_t waits) {
  pb_sched_stat s1;
  if (!have_s0 || !pb_thread_sched_stat(&s1) || s1.delay_ns < s0->delay_ns || s1.slices <= s0->slices) return -1;
  double delay = (double)(s1.delay_ns - s0->delay_ns), slices = (double)(s1.slices - s0->slices);
  double in_service = slices > (double)waits ? delay * (1.0 - (double)waits / slices) : 0.0;
  return (int64_t)in_service;
}

static void worker_main(void *arg) {
  pb_worker *w = arg;
  pb_stage *s = w->stage;
  w->per_element = s->is_source;
  pb_sched_stat sched0;
  bool have_sched = pb_thread_sched_stat(&sched0);
  uint64_t waits0 = pb_thread_waits;
  uint64_t cpu0 = thread_cpu_ns();
  pb_thread_precise_timers();
  if (s->is_source)
    run_source(w);
  else
    run_transform(w);
  settle_spread(w, pb_now_ns());
  if (w->cancelled || atomic_load(&s->engine->cancelled)) {
    if (s->ops->abandon) w->ctr.samples_in_flight += s->ops->abandon(w);
  }
  w->cpu_ns = thread_cpu_ns() - cpu0;
  w->cpu_delay_ns = service_cpu_delay_ns(have_sched, &sched0, pb_thread_waits - waits0);
  pb_queue_producer_done(s->out);
}

/* ---------- start / stop ---------- */

int pb_engine_workers(const pb_engine *e) {
  int n = 0;
  for (int i = 0; i < e->nstages; i++) n += e->stages[i].threads;
  return n;
}

static int init_stage(pb_engine *e, int i, pb_err *err) {
  pb_stage *s = &e->stages[i];
  int rc = pb_queue_init(&e->queues[i], pb_stage_out_capacity(s), s->threads, pb_engine_next_consumers(e, i));
  if (rc) return pb_err_setc(err, -ENOMEM, "cannot allocate the queue after stage %s", s->name);
  pb_queue_set_window(&e->queues[i], &e->window_start_ns, &e->window_end_ns);
  pb_queue_set_ahead(&e->queues[i], s->ops->ahead_limit ? s->ops->ahead_limit(s) : -1);
  s->out = &e->queues[i];
  s->in = i > 0 ? &e->queues[i - 1] : NULL;
  s->workers = calloc((size_t)s->threads, sizeof *s->workers);
  if (!s->workers) return pb_err_setc(err, -ENOMEM, "out of memory for stage %s", s->name);
  for (int k = 0; k < s->threads; k++) {
    s->workers[k] = (pb_worker){.stage = s, .index = k};
    pb_rng_seed(&s->workers[k].rng, e->cfg->seed ^ ((uint64_t)i << 32) ^ (uint64_t)k);
    pb_hist_reset(&s->workers[k].hist);
    if (e->tracing && pb_trace_ring_init(&s->workers[k].trace, pb_trace_ring_capacity(pb_engine_workers(e))))
      return pb_err_setc(err, -ENOMEM, "out of memory for the trace of stage %s (expected --no-trace)", s->name);
  }
  return s->ops->init ? s->ops->init(s, err) : 0;
}

/* Samples in one epoch as far as the config and the listing tell: a generated dataset says so, files read
 * whole are a sample each, raw files hold their bytes' worth of records; the records of other files are
 * learned as they are read (pb_engine_note_epoch_samples).  0 when nothing tells (an endless memory source). */
static uint64_t known_epoch_samples(const pb_engine *e) {
  const pb_dataset_cfg *d = &e->cfg->dataset;
  uint64_t per_file = d->generate.present ? (uint64_t)d->generate.samples_per_file : 1;
  if (!e->have_files) {
    if (d->format == PB_FMT_SYNTHETIC) return (uint64_t)d->num_samples;
    return d->generate.present ? (uint64_t)d->generate.num_files * per_file : 0;
  }
  uint64_t record_bytes = (uint64_t)(d->record_bytes ? d->record_bytes : d->generate.record_bytes);
  if (d->format == PB_FMT_RAW && record_bytes) return PB_MAX(e->files.total_bytes / record_bytes, e->files.count);
  if (d->generate.present || d->format == PB_FMT_JPEG) return (uint64_t)e->files.count * per_file;
  return 0; /* TFRecord, npy, npz of the user's: their records are counted as files are read (file_done) */
}

int pb_engine_start(pb_engine *e, pb_err *err) {
  atomic_store(&e->epoch_samples, known_epoch_samples(e));
  for (int i = 0; i < e->nstages; i++) {
    int rc = init_stage(e, i, err);
    if (rc) return rc;
  }
  for (int i = 0; i < e->nstages; i++) {
    pb_stage *s = &e->stages[i];
    for (int k = 0; k < s->threads; k++) {
      if (uv_thread_create(&s->workers[k].thread, worker_main, &s->workers[k]) != 0) {
        pb_engine_cancel(e); /* the threads already running stop; join waits for exactly those */
        return pb_err_setc(err, -EAGAIN, "cannot start a thread for stage %s (expected the system to allow %d more)",
                           s->name, s->threads - k);
      }
      s->threads_started++;
    }
  }
  return 0;
}

pb_queue *pb_engine_output(pb_engine *e) { return &e->queues[e->nstages - 1]; }

void pb_engine_cancel(pb_engine *e) {
  atomic_store(&e->cancelled, true);
  for (int i = 0; i < e->nstages; i++) {
    if (e->queues[i].ring) pb_queue_cancel(&e->queues[i]);
    if (e->stages[i].state && e->stages[i].ops->cancel) e->stages[i].ops->cancel(&e->stages[i]);
  }
}

void pb_engine_join(pb_engine *e) {
  for (int i = 0; i < e->nstages; i++) {
    pb_stage *s = &e->stages[i];
    for (int k = 0; k < s->threads_started; k++) uv_thread_join(&s->workers[k].thread);
    s->threads_started = 0;
  }
}

uint64_t pb_engine_drain(pb_engine *e) {
  uint64_t samples = 0;
  for (int i = 0; i < e->nstages; i++)
    if (e->queues[i].ring) samples += pb_queue_drain(&e->queues[i]);
  return samples;
}

void pb_engine_close(pb_engine *e) {
  pb_engine_join(e);
  for (int i = 0; i < e->nstages; i++) {
    pb_stage *s = &e->stages[i];
    if (s->ops->close) s->ops->close(s);
    for (int k = 0; s->workers && k < s->threads; k++) pb_trace_ring_free(&s->workers[k].trace);
    free(s->workers);
    s->workers = NULL;
    pb_queue_close(&e->queues[i]);
  }
  if (e->have_files) pb_file_list_free(&e->files);
  e->have_files = false;
  uv_mutex_destroy(&e->errors_lock);
}

/* Every counter is a uint64_t sum (src/reports/trace_fields.c asserts the struct holds nothing else), so the
 * workers' counters add word by word: a counter added later is summed without a line here. */
_Static_assert(sizeof(pb_counters) % sizeof(uint64_t) == 0, "pb_counters holds only uint64_t counters");
void pb_stage_totals(const pb_stage *s, pb_counters *ctr, pb_hist *hist) {
  memset(ctr, 0, sizeof *ctr);
  pb_hist_reset(hist);
  uint64_t *sum = (uint64_t *)ctr;
  for (int k = 0; k < s->threads; k++) {
    const uint64_t *c = (const uint64_t *)&s->workers[k].ctr;
    for (size_t i = 0; i < sizeof *ctr / sizeof *sum; i++) sum[i] += c[i];
    pb_hist_merge(hist, &s->workers[k].hist);
  }
}
