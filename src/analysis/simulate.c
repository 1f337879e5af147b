/* The model's simulation (model.h): the engine, replayed as a discrete-event simulation.
 *
 * Elements of one kind are alike, so a queue is a count with a capacity, a list of the threads waiting
 * to take from it and a list of those blocked handing on to it.  A thread is waiting for input, in
 * service (with the uncontended seconds it has left), or blocked holding one output.  Devices are
 * threads of one more row that take batches from the last queue.
 *
 * Time advances from one service end to the next.  A service with CPU share f alternates CPU (a share f
 * of its idle-machine time) and waits; while the threads in service together want more cores than there
 * are (the sum of their shares), each one's CPU parts run at a fraction x of a core, so it progresses at
 * r(f) = 1 / ((1 - f) + f / x) of its idle-machine speed and uses f r(f) cores on average.  x is the
 * one that fills the cores exactly: sum over the threads in service of f r(f) = cores (a safeguarded
 * Newton over the few distinct shares).  While the cores have room every service runs at its own speed, and the next
 * service to end is the top of a heap of absolute end times; while they are short, every rate changes at
 * every event, and each event scans the threads in service.
 *
 * Draws are common: each row draws from a random stream of its own, so a change to one stage leaves every
 * other row's sequence of draws as it was (two predictions differ by the change, not by luck).  The
 * devices' steps are set up front: the run's own, in the order it made them (model.h: device_seq_s), else
 * one i.i.d. draw per step of the simulated run.  Their runs of short and long steps are what a prefetch
 * buffer has to absorb, and the longest of them set a deep buffer's idle: i.i.d. draws of the bursty-device
 * case's steps predicted 0.02 to 3.2 % idle at depth 16 by seed (fed at 42,000/s; 2.2 % was measured), the
 * run's own order 0.9 (drawing without replacement in shuffled rounds of the 128 quantiles evened those
 * runs out further, and predicted a deep prefetch's idle at a tenth of what was measured).  Unless they are
 * the whole run's recorded steps, they are scaled so that their mean is the distribution's exactly: a
 * bursty device's 200 draws could be 15 % off its mean (a prediction then beat the device's own rate).
 *
 * A stage's service drawn at time t is scaled by the stage's level at t (model.h: the recorded run's pace
 * per window, 1 without): a busy host's slow spells come when they came, in every worker of the stage at
 * once, which i.i.d. draws average away.
 *
 * Long runs are not simulated to the end: past SIM_MAX_SAMPLES the rest of the window runs at the rate
 * of the simulated window's second half, and a cache's later epochs at the rate of a second simulation
 * that starts with the cache full (sim_run_long). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* Samples simulated per prediction, at most (see sim_run_long): a run's recorded device steps are
 * replayed, and the steps past what is simulated only weigh through the simulated part's rate, so the
 * bursty-device case's 600 steps of 512 are simulated whole (at 200,000, its 387 first steps predicted
 * 0.9-1.0 % idle at depth 8 where 2.5 % was measured, and 2.0-2.3 % when all 600 were simulated). */
#define SIM_MAX_SAMPLES 400000
#define SIM_MIN_STEPS 200       /* measured steps simulated at least, when the run has that many */
#define SIM_MAX_EVENTS 20000000 /* a guard: a simulation never runs away */
#define CACHE_COPY_BYTES_PER_S 4e9 /* a cache's copy into memory, when a change inserts one */

enum { T_WAIT, T_BUSY, T_BLOCKED, T_AHEAD, T_DONE }; /* T_AHEAD: waiting for room under an ahead limit */

typedef struct srow {
  pb_model_role role;
  int threads;
  int64_t cap;                  /* output queue capacity */
  int64_t buffer;
  int64_t ahead; /* -1: no limit; 0: an output only for a consumer waiting; N: started + queued <= N */
  double rate_cap_per_s, pace_next; /* a whole-stage rate cap: the next moment an element may complete */
  const double *service_s;      /* NULL for a device row (uses the model's device_s) */
  double scale;                 /* service times x this */
  double cpu_share;
  int elements_per_call;        /* a source's call makes this many (a multi-sample file's samples) */
  const float *level;           /* the stage's pace over the run (model.h), NULL: none */
  int nlevels;
  double level_window_s;
  int stream;                   /* which draw stream: its row in the model (an inserted cache: past them) */
  int first_thread;
  /* runtime */
  int64_t count;                /* elements in its output queue */
  int *waiters, nwait, wait_head; /* threads of the next row waiting on this queue (ring) */
  int *blocked, nblk, blk_head;   /* threads of this row blocked on it (ring) */
  int *resv, nresv, resv_head;    /* threads of this row waiting for room under its ahead limit (ring) */
  int64_t reserved;               /* outputs started under the ahead limit, not yet handed on */
  int ring;                     /* ring sizes */
  int64_t made;                 /* source: elements made */
  int64_t limit;                /* source: elements it may make (INT64_MAX: endless) */
  int64_t passed;               /* cache: elements passed through */
  bool replay;                  /* cache: replaying */
  int64_t held;                 /* shuffle: samples held */
  double busy_in_window;        /* thread-seconds in service inside the window */
} srow;

typedef struct sthread {
  int row;
  int state;
  double left_s;
  double cpu;
  bool paced;                   /* waiting for the stage's rate cap, the service itself done */
  int fill;                     /* batch: samples in its batch */
  int pending;                  /* elements made by its last call, not yet handed on */
  bool holds;                   /* it holds a reservation under its row's ahead limit */
  double done_at;               /* when its service ends (while the cores have room: in the heap) */
} sthread;

/* A row's stream of draws. */
typedef struct draws {
  uint64_t rng;
} draws;

typedef struct sim {
  const pb_model *m;
  int nrows;                    /* stage rows; the devices are row nrows */
  srow rows[PB_MAX_STAGES + 3];
  sthread *th;
  int nth;
  int *ring_mem;
  double cores;
  int batch_size;
  draws streams[PB_MAX_STAGES + 3]; /* per row; the devices' is streams[nrows] */
  double *device_steps;         /* the devices' step times, drawn up front (mean exact) */
  int busy_in_row[PB_MAX_STAGES + 3]; /* threads in service (not paced) per row; the devices' at nrows */
  bool scanning;                /* the cores are short: rates change at every event (else: the heap) */
  int *heap, nheap;             /* threads in service by done_at (while not scanning) */
  int64_t ndevice_steps, next_device_step;
  double t;
  int64_t steps_done, warmup, target_steps; /* target 0: by duration */
  double duration_s;
  bool window_open;
  double window_start, half_time;
  int64_t half_steps;
  double device_busy_in_window, cores_in_window;
} sim;

static uint64_t next_rand(uint64_t *x) { /* splitmix64 */
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static void draws_init(draws *d, uint64_t seed) { d->rng = seed; }

/* A uniform draw among the quantiles of row `row`'s stream. */
static double draw(sim *s, int row, const double *q) {
  return q[next_rand(&s->streams[row].rng) % PB_MODEL_QUANTILES];
}

/* The devices' next step time: from the run's steps drawn up front, then (past them) a plain draw. */
static double device_step(sim *s) {
  if (s->next_device_step < s->ndevice_steps) return s->device_steps[s->next_device_step++];
  return draw(s, s->nrows, s->m->device_s);
}

/* Scales draws [from, to) so that their mean is the distribution's. */
static void scale_to_mean(sim *s, int64_t from, int64_t to) {
  double sum = 0;
  for (int64_t i = from; i < to; i++) sum += s->device_steps[i];
  double want = s->m->device_mean_s * (double)(to - from);
  if (sum > 0)
    for (int64_t i = from; i < to; i++) s->device_steps[i] *= want / sum;
}

/* The run's step times.  With the recorded sequence (model.h: device_seq_s): the run's own, in its order,
 * from the first warm-up step the simulation runs (a long warm-up is cut short: its first steps are
 * skipped).  Else drawn.  Unless they are the recorded steps of the whole run, the warm-up's, each half of
 * the measured steps' and the rest's are scaled so that each has the distribution's mean: the simulated
 * devices then do exactly the measured work on average, in the window and in the half whose rate a long run
 * is extrapolated from (a replay of only the first steps of a run would otherwise carry their mean, not the
 * run's, into the rest), and keep the order of short and long steps. */
static int draw_device_steps(sim *s, int64_t warmup, int64_t steps, int64_t extra) {
  int64_t n = warmup + steps + extra, half = warmup + (steps + 1) / 2;
  s->device_steps = malloc((size_t)(n > 0 ? n : 1) * sizeof *s->device_steps);
  if (!s->device_steps) return -ENOMEM;
  s->ndevice_steps = n;
  const pb_model *m = s->m;
  if (m->ndevice_seq > 0) {
    int64_t skip = m->warmup_steps > warmup ? m->warmup_steps - warmup : 0;
    for (int64_t i = 0; i < n; i++) s->device_steps[i] = m->device_seq_s[(skip + i) % m->ndevice_seq];
    if (!skip && steps >= m->steps && warmup + steps <= m->ndevice_seq) return 0; /* the whole run, as it ran */
  } else {
    for (int64_t i = 0; i < n; i++) s->device_steps[i] = draw(s, s->nrows, m->device_s);
  }
  scale_to_mean(s, 0, warmup);
  scale_to_mean(s, warmup, half);
  scale_to_mean(s, half, warmup + steps);
  scale_to_mean(s, warmup + steps, n);
  return 0;
}

static bool is_device(const sim *s, int row) { return row == s->nrows; }

/* ---------- queues ---------- */

static void ring_push(int *v, int ring, int head, int *n, int x) { v[(head + (*n)++) % ring] = x; }
static int ring_pop(int *v, int ring, int *head, int *n) {
  int x = v[*head];
  *head = (*head + 1) % ring;
  (*n)--;
  return x;
}

static void start_service(sim *s, int j);
static void take_input(sim *s, int j);

/* Under row's ahead limit, may one more output be started? */
static bool ahead_room(const srow *row) {
  if (row->ahead < 0) return true;
  int64_t ahead = row->reserved + row->count;
  return row->ahead == 0 ? ahead < row->nwait : ahead < row->ahead;
}

/* Room under row r's ahead limit (an output taken or handed on, a consumer come to wait): its threads waiting
 * for it go on, as many as it allows. */
static void ahead_wake(sim *s, int r) {
  srow *row = &s->rows[r];
  while (row->nresv > 0 && ahead_room(row)) {
    int j = ring_pop(row->resv, row->ring, &row->resv_head, &row->nresv);
    row->reserved++;
    s->th[j].holds = true;
    take_input(s, j);
  }
}

/* Thread j's output left it: the room it reserved is free again. */
static void release_ahead(sim *s, int j) {
  if (!s->th[j].holds) return;
  s->th[j].holds = false;
  s->rows[s->th[j].row].reserved--;
}

/* Thread j hands on the elements its call made (`pending`), one by one: each straight to a waiting
 * consumer or into the queue; when the queue is full it blocks holding the rest (a read of a
 * multi-sample file holds the file's remaining samples).  Then it takes its next input. */
static void hand_on(sim *s, int j) {
  sthread *t = &s->th[j];
  srow *q = &s->rows[t->row];
  while (t->pending > 0) {
    if (q->nwait > 0) { /* a consumer waits: it takes the element at once */
      int c = ring_pop(q->waiters, q->ring, &q->wait_head, &q->nwait);
      t->pending--;
      release_ahead(s, j);
      start_service(s, c);
      continue;
    }
    if (q->count >= q->cap) {
      t->state = T_BLOCKED;
      ring_push(q->blocked, q->ring, q->blk_head, &q->nblk, j);
      return;
    }
    q->count++;
    t->pending--;
    release_ahead(s, j);
  }
  take_input(s, j);
  ahead_wake(s, t->row);
}

/* A consumer took an element from row r's queue: room for one blocked producer's next element. */
static void room_made(sim *s, int r) {
  srow *q = &s->rows[r];
  if (q->nblk == 0) return;
  int p = ring_pop(q->blocked, q->ring, &q->blk_head, &q->nblk);
  q->count++;
  s->th[p].pending--;
  release_ahead(s, p);
  hand_on(s, p);
}

/* ---------- the heap of service ends ---------- */

static bool earlier(const sim *s, int a, int b) { return s->th[a].done_at < s->th[b].done_at; }

static void heap_push(sim *s, int j) {
  int i = s->nheap++;
  s->heap[i] = j;
  while (i > 0 && earlier(s, s->heap[i], s->heap[(i - 1) / 2])) {
    int p = (i - 1) / 2, x = s->heap[p];
    s->heap[p] = s->heap[i];
    s->heap[i] = x;
    i = p;
  }
}

static int heap_pop(sim *s) {
  int top = s->heap[0];
  s->heap[0] = s->heap[--s->nheap];
  for (int i = 0;;) {
    int l = 2 * i + 1, r = l + 1, m = i;
    if (l < s->nheap && earlier(s, s->heap[l], s->heap[m])) m = l;
    if (r < s->nheap && earlier(s, s->heap[r], s->heap[m])) m = r;
    if (m == i) break;
    int x = s->heap[m];
    s->heap[m] = s->heap[i];
    s->heap[i] = x;
    i = m;
  }
  return top;
}

/* ---------- threads ---------- */

static bool source_may_make(const srow *row) { return row->made < row->limit; }

/* Thread j's service (or its wait for a rate cap's slot) has `left_s` to go from now. */
static void become_busy(sim *s, int j) {
  sthread *t = &s->th[j];
  t->state = T_BUSY;
  if (!t->paced) s->busy_in_row[t->row]++;
  if (!s->scanning) {
    t->done_at = s->t + t->left_s;
    heap_push(s, j);
  }
}

/* Thread j's service (or pacing) has ended: it no longer counts as in service. */
static void retire(sim *s, int j) {
  if (!s->th[j].paced) s->busy_in_row[s->th[j].row]--;
}

/* The row's pace at time t: the recorded run's level for the window t falls in (past the run's end, its
 * windows again from the first), 1 without levels. */
static double level_at(const srow *row, double t) {
  if (!row->nlevels) return 1;
  double w = floor(t / row->level_window_s);
  return row->level[(long)fmod(w > 0 ? w : 0, row->nlevels)];
}

static void start_service(sim *s, int j) {
  sthread *t = &s->th[j];
  int r = t->row;
  t->paced = false;
  if (is_device(s, r)) {
    t->left_s = device_step(s);
    t->cpu = 0;
  } else {
    srow *row = &s->rows[r];
    int per_call = row->role == PB_ROLE_SOURCE ? row->elements_per_call : 1; /* one service: a whole file */
    t->left_s = draw(s, r, row->service_s) * row->scale * per_call * level_at(row, s->t);
    t->cpu = row->cpu_share;
  }
  become_busy(s, j);
}

/* Thread j wants its next element. */
static void take_input(sim *s, int j) {
  sthread *t = &s->th[j];
  int r = t->row;
  srow *row = is_device(s, r) ? NULL : &s->rows[r];
  if (row && (row->role == PB_ROLE_SOURCE || (row->role == PB_ROLE_CACHE && row->replay))) {
    if (row->role == PB_ROLE_SOURCE && !source_may_make(row)) {
      t->state = T_DONE;
      return;
    }
    start_service(s, j);
    return;
  }
  /* under an ahead limit, room for its output first: for each element, or a batch's whole batch */
  if (row && row->ahead >= 0 && !t->holds && (row->role != PB_ROLE_BATCH || t->fill == 0)) {
    if (!ahead_room(row)) {
      t->state = T_AHEAD;
      ring_push(row->resv, row->ring, row->resv_head, &row->nresv, j);
      return;
    }
    row->reserved++;
    t->holds = true;
  }
  srow *in = &s->rows[r - 1];
  if (in->count > 0) {
    in->count--;
    start_service(s, j);
    room_made(s, r - 1);
    ahead_wake(s, r - 1);
    return;
  }
  t->state = T_WAIT;
  ring_push(in->waiters, in->ring, in->wait_head, &in->nwait, j);
  if (in->ahead == 0) ahead_wake(s, r - 1); /* a consumer waits: the demand an on-demand stage serves */
}

/* The cache has passed its first epoch through and nothing more comes: it replays from now on.  A shuffle
 * before it keeps its buffer's samples at the end of the epoch (the simulation does not drain it), so they
 * count as passed: else the cache would wait for them for ever. */
static void maybe_start_replay(sim *s, int r) {
  srow *row = &s->rows[r];
  int64_t held = 0;
  for (int i = 0; i < r; i++)
    if (s->rows[i].role == PB_ROLE_SHUFFLE) held += s->rows[i].held;
  if (row->role != PB_ROLE_CACHE || row->replay || row->passed + held < s->rows[0].limit) return;
  row->replay = true;
  for (int k = 0; k < row->threads; k++) {
    int j = row->first_thread + k;
    if (s->th[j].state != T_WAIT) continue;
    /* leave the upstream queue's waiter list: rebuild it without j */
    srow *in = &s->rows[r - 1];
    for (int i = 0, n = in->nwait; i < n; i++) { /* rotate the ring once, leaving j out */
      int x = ring_pop(in->waiters, in->ring, &in->wait_head, &in->nwait);
      if (x != j) ring_push(in->waiters, in->ring, in->wait_head, &in->nwait, x);
    }
    start_service(s, j);
  }
}

static void open_window(sim *s) {
  s->window_open = true;
  s->window_start = s->t;
}

static void device_step_done(sim *s, int j) {
  s->steps_done++;
  if (!s->window_open && s->steps_done >= s->warmup) open_window(s);
  int64_t measured = s->steps_done - s->warmup;
  if (s->target_steps > 0 && measured == (s->target_steps + 1) / 2) {
    s->half_time = s->t;
    s->half_steps = measured;
  }
  take_input(s, j);
}

/* Thread j's service ended. */
static void service_done(sim *s, int j) {
  sthread *t = &s->th[j];
  int r = t->row;
  if (is_device(s, r)) {
    device_step_done(s, j);
    return;
  }
  srow *row = &s->rows[r];
  int per_call = row->role == PB_ROLE_SOURCE ? row->elements_per_call : 1;
  if (row->rate_cap_per_s > 0 && !t->paced) { /* the stage's cap: this call's elements wait for their slot */
    double slot = row->pace_next > s->t ? row->pace_next : s->t;
    row->pace_next = slot + per_call / row->rate_cap_per_s;
    if (slot > s->t) {
      t->paced = true;
      t->left_s = slot - s->t;
      t->cpu = 0;
      become_busy(s, j);
      return;
    }
  }
  t->pending = 1;
  switch (row->role) {
  case PB_ROLE_SOURCE:
    row->made += per_call;
    t->pending = per_call;
    hand_on(s, j);
    return;
  case PB_ROLE_BATCH:
    if (++t->fill < s->batch_size) {
      take_input(s, j);
      return;
    }
    t->fill = 0;
    hand_on(s, j);
    return;
  case PB_ROLE_SHUFFLE:
    if (row->held < row->buffer) {
      row->held++;
      take_input(s, j);
      return;
    }
    hand_on(s, j);
    return;
  case PB_ROLE_CACHE:
    if (!row->replay) row->passed++;
    hand_on(s, j);
    maybe_start_replay(s, r);
    return;
  case PB_ROLE_SERVER:
    hand_on(s, j);
    return;
  }
}

/* ---------- the event loop ---------- */

static bool finished(const sim *s) {
  if (!s->window_open) return false;
  if (s->duration_s > 0 && s->t - s->window_start >= s->duration_s) return true;
  return s->target_steps > 0 && s->steps_done - s->warmup >= s->target_steps;
}

static double rate_at(double f, double x) { return 1.0 / ((1 - f) + f / x); }

/* The CPU parts' speed x (0..1] at which the threads in service use exactly the cores, given how many are
 * in service with each share; 1 when they want no more than there are.  *used: the cores they use. */
static double cpu_speed(const sim *s, const int *busy, double *used) {
  double demand = 0;
  for (int i = 0; i < s->nrows; i++) demand += busy[i] * s->rows[i].cpu_share;
  if (demand <= s->cores) {
    *used = demand;
    return 1;
  }
  /* u(x) = sum of f r(f, x) rises with x and is concave: safeguarded Newton from x = cores / demand (exact
   * when every share is 0 or 1), kept inside a bracket that shrinks like a bisection's. */
  double lo = 0, hi = 1, x = s->cores / demand;
  for (int it = 0; it < 30; it++) {
    double u = 0, du = 0;
    for (int i = 0; i < s->nrows; i++) {
      if (!busy[i]) continue;
      double f = s->rows[i].cpu_share, d = (1 - f) + f / x;
      u += busy[i] * f / d;
      du += busy[i] * f * f / (x * x * d * d);
    }
    if (fabs(u - s->cores) <= 1e-7 * s->cores) break;
    if (u > s->cores) hi = x;
    else lo = x;
    double next = du > 0 ? x - (u - s->cores) / du : (lo + hi) / 2;
    x = next > lo && next < hi ? next : (lo + hi) / 2;
  }
  *used = s->cores;
  return x > 0 ? x : 1e-9;
}

/* Time passes by dt: busy time per row and the devices', and cores used, inside the window. */
static void account(sim *s, double dt, double cores_used) {
  if (!s->window_open) return;
  for (int i = 0; i < s->nrows; i++) s->rows[i].busy_in_window += s->busy_in_row[i] * dt;
  s->device_busy_in_window += s->busy_in_row[s->nrows] * dt;
  s->cores_in_window += cores_used * dt;
}

/* Switches between the heap (the cores have room: every service at its own speed, its end fixed) and the
 * scan (they are short: left_s advanced at every event). */
static void set_scanning(sim *s, bool scanning) {
  if (scanning == s->scanning) return;
  s->scanning = scanning;
  if (scanning) { /* the ends in the heap become time left */
    for (int k = 0; k < s->nheap; k++) s->th[s->heap[k]].left_s = s->th[s->heap[k]].done_at - s->t;
    s->nheap = 0;
    return;
  }
  for (int j = 0; j < s->nth; j++) /* time left becomes ends, at full speed now */
    if (s->th[j].state == T_BUSY) {
      s->th[j].done_at = s->t + s->th[j].left_s;
      heap_push(s, j);
    }
}

/* One event with the heap: the earliest end. */
static bool step_heap(sim *s, double used) {
  if (s->nheap == 0) return false;
  int best = heap_pop(s);
  double dt = s->th[best].done_at - s->t;
  if (dt < 0) dt = 0;
  account(s, dt, used);
  s->t += dt;
  s->th[best].left_s = 0;
  retire(s, best);
  service_done(s, best);
  return true;
}

/* One event with the scan: every rate at the cores' speed x, the earliest end, every service advanced. */
static bool step_scan(sim *s, double slow, double used) {
  int best = -1;
  double best_dt = INFINITY;
  for (int j = 0; j < s->nth; j++) {
    const sthread *t = &s->th[j];
    if (t->state != T_BUSY) continue;
    double dt = t->left_s / rate_at(t->cpu, slow);
    if (dt < best_dt) best_dt = dt, best = j;
  }
  if (best < 0) return false;
  if (best_dt < 0) best_dt = 0;
  for (int j = 0; j < s->nth; j++) {
    sthread *t = &s->th[j];
    if (t->state == T_BUSY) t->left_s = j == best ? 0 : t->left_s - rate_at(t->cpu, slow) * best_dt;
  }
  account(s, best_dt, used);
  s->t += best_dt;
  retire(s, best);
  service_done(s, best);
  return true;
}

/* Advances to the next service end and handles it; false when nothing is in service (a stall: the
 * source ran dry). */
static bool step_once(sim *s) {
  double used;
  double slow = cpu_speed(s, s->busy_in_row, &used); /* each CPU part's share of a core */
  set_scanning(s, slow < 1);
  return s->scanning ? step_scan(s, slow, used) : step_heap(s, used);
}

/* ---------- setting up ---------- */

static int add_threads(sim *s, int row, int n) {
  for (int k = 0; k < n; k++) s->th[s->nth++] = (sthread){.row = row, .state = T_WAIT};
  return 0;
}

/* The rows of the model with the change applied (a cache inserted, threads, speeds, capacities). */
static void build_rows(sim *s, const pb_model *m, const pb_model_change *c, double scale) {
  int n = 0;
  for (int i = 0; i < m->nstages; i++) {
    const pb_model_stage *ms = &m->stages[i];
    srow *row = &s->rows[n++];
    *row = (srow){.role = ms->role, .threads = ms->threads, .cap = ms->queue_capacity, .buffer = ms->buffer,
                  .rate_cap_per_s = ms->rate_cap_per_s, .service_s = ms->service_s,
                  .elements_per_call = ms->elements_per_call > 1 ? ms->elements_per_call : 1, .stream = i,
                  .scale = ms->saturated ? scale : 1,
                  .cpu_share = ms->cpu_share};
    if (ms->nlevels) row->level = ms->level, row->nlevels = ms->nlevels, row->level_window_s = ms->level_window_s;
    if (c->threads[i] > 0) row->threads = c->threads[i];
    if (c->queue_capacity[i] > 0) row->cap = c->queue_capacity[i];
    int per_thread = c->ahead_per_thread[i] ? c->ahead_per_thread[i] : ms->ahead_per_thread;
    bool on_demand = c->on_demand[i] ? c->on_demand[i] > 0 : ms->on_demand;
    row->ahead = on_demand ? 0 : per_thread > 0 ? (int64_t)per_thread * (row->threads > 0 ? row->threads : 1) : -1;
    if (c->speedup[i] > 0) row->scale = isinf(c->speedup[i]) ? 0 : row->scale / c->speedup[i];
    if (row->cap < 1) row->cap = 1;
    if (row->threads < 1) row->threads = 1;
    if (c->cache_after == i) { /* a cache right after this row: the engine's sample queue after it */
      srow *cache = &s->rows[n++];
      *cache = (srow){.role = PB_ROLE_CACHE,
                      .threads = 1,
                      .cap = ms->queue_capacity > 0 ? ms->queue_capacity : 1,
                      .ahead = -1,
                      .service_s = NULL,
                      .scale = 1,
                      .cpu_share = 1,
                      .stream = PB_MAX_STAGES + 1};
    }
  }
  s->nrows = n;
}

/* A cache a change inserted copies each sample once: its service is that copy. */
static void cache_service(const pb_model *m, const pb_model_change *c, double *q) {
  double bytes = c->cache_after >= 0 ? m->stages[c->cache_after].bytes_per_element : 0;
  double sec = 1e-6 + bytes / CACHE_COPY_BYTES_PER_S;
  for (int i = 0; i < PB_MODEL_QUANTILES; i++) q[i] = sec;
}

static int sim_init(sim *s, const pb_model *m, const pb_model_change *c, double scale, double *cache_q) {
  memset(s, 0, sizeof *s);
  s->m = m;
  s->batch_size = m->batch_size > 0 ? m->batch_size : 1;
  s->cores = c->cores > 0 ? c->cores : m->cores;
  if (!(s->cores > 0)) s->cores = 1;
  build_rows(s, m, c, scale);
  /* Each row's stream seeded by its row in the model, whatever a change inserted before it; the devices'
   * by its own. */
  for (int i = 0; i < s->nrows; i++)
    draws_init(&s->streams[i], m->seed ^ (0x5eed5eedULL * (uint64_t)(s->rows[i].stream + 1)));
  draws_init(&s->streams[s->nrows], m->seed ^ 0xde71cedeULL);
  int total = m->devices;
  bool has_cache = false;
  for (int i = 0; i < s->nrows; i++) {
    total += s->rows[i].threads;
    if (s->rows[i].role == PB_ROLE_CACHE) has_cache = true;
    if (!s->rows[i].service_s) s->rows[i].service_s = cache_q;
  }
  s->th = calloc((size_t)total, sizeof *s->th);
  s->heap = calloc((size_t)total, sizeof *s->heap);
  int ring = total + 1;
  s->ring_mem = calloc((size_t)(s->nrows + 1) * 3 * (size_t)ring, sizeof *s->ring_mem);
  if (!s->th || !s->heap || !s->ring_mem) return -ENOMEM;
  for (int i = 0; i < s->nrows; i++) {
    srow *row = &s->rows[i];
    row->ring = ring;
    row->waiters = s->ring_mem + (size_t)i * 3 * ring;
    row->blocked = row->waiters + ring;
    row->resv = row->blocked + ring;
    row->first_thread = s->nth;
    add_threads(s, i, row->threads);
    row->limit = INT64_MAX;
  }
  /* A cache makes the source stop after one epoch (pb_engine_source_epochs); unknown epochs: endless. */
  if (has_cache && m->epoch_samples > 0) s->rows[0].limit = m->epoch_samples;
  add_threads(s, s->nrows, m->devices);
  return 0;
}

static void sim_free(sim *s) {
  free(s->device_steps);
  free(s->heap);
  free(s->th);
  free(s->ring_mem);
}

/* Everything starts at once: sources serve, every other thread waits for input. */
static void sim_start(sim *s, bool cache_full) {
  for (int i = 0; i < s->nrows; i++)
    if (cache_full && s->rows[i].role == PB_ROLE_CACHE) {
      s->rows[i].replay = true;
      s->rows[0].limit = 0; /* the stages before it have nothing to do */
    }
  if (s->warmup == 0) open_window(s);
  for (int j = 0; j < s->nth; j++) take_input(s, j);
}

static void sim_result(const sim *s, pb_model_result *out) {
  memset(out, 0, sizeof *out);
  double w = s->window_open ? s->t - s->window_start : 0;
  int64_t measured = s->steps_done - s->warmup;
  out->window_s = w;
  out->ok = w > 0 && measured > 0;
  if (!out->ok) return;
  out->samples_per_s = (double)measured * s->batch_size / w;
  double share = s->m->device_compute_share > 0 ? s->m->device_compute_share : 1; /* unset: all compute */
  out->idle_pct = 100.0 * (1.0 - s->device_busy_in_window * share / (s->m->devices * w));
  if (out->idle_pct < 0) out->idle_pct = 0;
  out->cores_used = s->cores_in_window / w;
  for (int i = 0; i < s->nrows && i < PB_MAX_STAGES + 2; i++)
    out->utilization[i] = s->rows[i].busy_in_window / (s->rows[i].threads * w);
}

/* A cache in the model, or one the change inserts. */
static bool has_cache(const pb_model *m, const pb_model_change *c) {
  if (c->cache_after >= 0) return true;
  for (int i = 0; i < m->nstages; i++)
    if (m->stages[i].role == PB_ROLE_CACHE) return true;
  return false;
}

/* Runs warm-up + `steps` measured steps (or the duration); *tail_rate: samples/s over the second half. */
static bool sim_run(const pb_model *m, const pb_model_change *c, double scale, int64_t steps, double duration_s,
                    bool cache_full, pb_model_result *out, double *tail_rate) {
  sim *s = calloc(1, sizeof *s);
  double cache_q[PB_MODEL_QUANTILES];
  cache_service(m, c, cache_q);
  if (!s || sim_init(s, m, c, scale, cache_q)) {
    if (s) sim_free(s);
    free(s);
    return false;
  }
  /* A warm-up long enough to cover a cache's first epoch leaves it full when the window opens; a long
   * warm-up is simulated only as long as it takes to fill the queues (its steps are not measured). */
  double b = m->batch_size > 0 ? m->batch_size : 1;
  s->warmup = m->warmup_steps;
  if (has_cache(m, c) && m->epoch_samples > 0 && (double)s->warmup * b >= (double)m->epoch_samples) cache_full = true;
  if ((double)s->warmup * b > SIM_MAX_SAMPLES / 2) s->warmup = (int64_t)fmax(20, SIM_MAX_SAMPLES / 2 / b);
  s->target_steps = steps;
  s->duration_s = duration_s;
  /* every step of the run (the steps in service when it ends too) */
  if (draw_device_steps(s, s->warmup, steps, m->devices)) {
    sim_free(s);
    free(s);
    return false;
  }
  sim_start(s, cache_full);
  long ev = 0;
  for (; !finished(s) && ev < SIM_MAX_EVENTS; ev++)
    if (!step_once(s)) break; /* nothing in service: the source ran dry */
  sim_result(s, out);
  if (ev >= SIM_MAX_EVENTS) out->ok = false; /* ran out of events: a part of the window is no prediction */
  if (tail_rate) {
    int64_t measured = s->steps_done - s->warmup;
    double dt = s->t - s->half_time;
    *tail_rate = s->half_steps > 0 && measured > s->half_steps && dt > 0
                     ? (double)(measured - s->half_steps) * s->batch_size / dt
                     : out->samples_per_s;
  }
  sim_free(s);
  free(s);
  return out->ok;
}


/* A run longer than SIM_MAX_SAMPLES: its start simulated (warm-up and transients), the rest at the
 * steady rate; with a cache, the epochs after the first at the rate of a run that starts cached. */
static bool sim_run_long(const pb_model *m, const pb_model_change *c, double scale, int64_t sim_steps,
                         pb_model_result *out) {
  double tail;
  if (!sim_run(m, c, scale, sim_steps, 0, false, out, &tail)) return false;
  double b = m->batch_size, n_window = (double)m->steps * b, n_sim = (double)sim_steps * b;
  double rest = n_window - n_sim;
  double uncached = rest, cached = 0, cached_rate = tail, cached_idle = out->idle_pct;
  if (has_cache(m, c) && m->epoch_samples > 0) {
    double before = (double)m->warmup_steps * b + n_sim; /* samples the simulated part took */
    uncached = fmax(0, fmin(rest, (double)m->epoch_samples - before));
    cached = rest - uncached;
    pb_model_result cr;
    if (cached > 0) {
      if (!sim_run(m, c, scale, sim_steps, 0, true, &cr, &cached_rate)) return false; /* no rate for those epochs */
      cached_idle = cr.idle_pct;
    }
  }
  double t_uncached = tail > 0 ? uncached / tail : 0, t_cached = cached_rate > 0 ? cached / cached_rate : 0;
  double total = out->window_s + t_uncached + t_cached;
  if (!(total > 0)) return false;
  out->idle_pct = (out->idle_pct * (out->window_s + t_uncached) + cached_idle * t_cached) / total;
  out->samples_per_s = n_window / total;
  out->window_s = total;
  return true;
}

bool pb_model_simulate(const pb_model *m, const pb_model_change *c, double service_scale, pb_model_result *out) {
  memset(out, 0, sizeof *out);
  if (!m->valid) return false;
  pb_model_change none;
  if (!c) {
    pb_model_change_init(&none);
    c = &none;
  }
  double b = m->batch_size > 0 ? m->batch_size : 1;
  if (m->duration_s > 0) { /* by time: as long as the duration, or SIM_MAX_SAMPLES' worth */
    return sim_run(m, c, service_scale, (int64_t)fmax(SIM_MIN_STEPS, SIM_MAX_SAMPLES / b), m->duration_s, false, out,
                   NULL) ||
           out->ok;
  }
  int64_t cap = (int64_t)fmax(SIM_MIN_STEPS, SIM_MAX_SAMPLES / b - (double)m->warmup_steps);
  if (m->steps <= cap) return sim_run(m, c, service_scale, m->steps, 0, false, out, NULL);
  return sim_run_long(m, c, service_scale, cap, out);
}

void pb_model_change_init(pb_model_change *c) {
  memset(c, 0, sizeof *c);
  c->cache_after = -1;
}

bool pb_model_predict(const pb_model *m, const pb_model_change *c, pb_model_result *out) {
  return pb_model_simulate(m, c, m->calibrated ? m->service_scale : 1, out);
}

int pb_model_row(const pb_model *m, const char *name) {
  for (int i = 0; i < m->nstages; i++)
    if (strcmp(m->stages[i].name, name) == 0) return i;
  return -1;
}
