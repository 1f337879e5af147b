/* One model of the pipeline: fitted from what a run recorded, predicting by simulation.
 *
 * Every verdict that says "change X and you get Y samples/s" comes from here: the bottleneck rule, each
 * recommendation, `tune`'s candidates and any what-if.  The model is plain data (it outlives the record
 * it was fitted from: a report carries it, and tune keeps one per trial).
 *
 * Fit (model_fit.c): per stage row, the distribution of one element's service time on an idle machine
 * (the stage's histogram, less its run-queue delay where the stages kept the cores busy: that delay is
 * their own contention, which the simulation adds back), its share of CPU, its threads and output queue;
 * the device's step-time distribution (compute + exchange, and the copy when the device thread does
 * it); the cores the pipeline can use (the process's affinity and cgroup quota, less what other
 * processes took during the run); the run as configured (warm-up, steps or duration, epoch size).
 *
 * Predict (simulate.c): a discrete-event simulation of the engine with the change applied: threads
 * that take an element from their input queue, serve it for a drawn service time and hand it on
 * (blocking while the output queue is full, and before taking input while an ahead limit is reached: a
 * map's `ahead`, a batch made on demand), a batch stage whose threads each fill their own batch, a
 * shuffle buffer that fills before it hands anything on, a cache that replays after its first epoch,
 * bounded queues (a prefetch's depth), and the devices taking batches with their drawn step times.
 * CPU is processor-shared: while the threads in service want more cores than there are, each one's
 * CPU part slows by cores / demand, so a stage saturates when the cores fill.  The simulated run has
 * the configured warm-up and length, so transients inside the window (a cache's first epoch, a shuffle
 * buffer's fill) weigh as they would.
 *
 * Calibration: the model replays the measured run first; when the run was input-bound and the replay
 * differs, the service times of the stages that were saturated (busy most of the window: the ones that
 * set the run's pace, and the only ones whose true speed the run shows) are scaled by one factor
 * (service_scale) so that the replay matches the measured samples/s, and predictions use that factor.
 * A stage with slack keeps its measured times: scaling it too would move the next limit by the
 * bottleneck's error.  fit_error_pct says how far the replay was before (docs/METRICS.md, "model"). */
#ifndef PB_MODEL_H
#define PB_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

struct pb_record;
struct pb_report;

/* Quantiles kept of each service-time distribution: (i + 0.5) / N, scaled so their mean is the exact
 * mean (a draw picks one of them uniformly). */
#define PB_MODEL_QUANTILES 128
/* Device steps kept in the order the run made them (pb_model.device_seq_s) */
#define PB_MODEL_DEVICE_SEQ 4096
/* Windows kept of a stage's pace over the run (pb_model_stage.level), each at least PB_MODEL_LEVEL_MIN_S */
#define PB_MODEL_LEVELS 256
#define PB_MODEL_LEVEL_MIN_S 0.1

typedef enum pb_model_role {
  PB_ROLE_SOURCE,  /* makes elements without input (the read stage, the in-memory source) */
  PB_ROLE_SERVER,  /* one element in, one out (decode, map, prefetch, h2d) */
  PB_ROLE_BATCH,   /* samples in, one batch out per batch_size (each thread fills its own batch) */
  PB_ROLE_SHUFFLE, /* holds `buffer` samples before it hands any on, then one out for each one in */
  PB_ROLE_CACHE,   /* passes the first epoch through, then replays it (the stages before it stop) */
} pb_model_role;

typedef struct pb_model_stage {
  char name[PB_NAME_LEN];
  char type[16];
  pb_model_role role;
  int threads;
  int max_threads;              /* what the config accepts (the schema: 1 for shuffle, cache, ...) */
  int queue_capacity;           /* its output queue, elements */
  int64_t buffer;               /* shuffle: samples held */
  int ahead_per_thread;         /* a map's `ahead`: elements in work or waiting per thread at most; 0: no bound */
  bool on_demand;               /* a batch started only when its consumer waits for one */
  double rate_cap_per_s;        /* elements/s the whole stage cannot exceed (a read's bandwidth cap); 0: none */
  int elements_per_call;        /* a source's call makes this many at once (a read of multi-sample files:
                                 * the samples a file held), handed on one by one; service_s is per element */
  double service_s[PB_MODEL_QUANTILES]; /* one element's service time on an idle machine, ascending */
  double mean_s;
  double cpu_share;             /* 0..1: the part of a service that needs a core */
  double bytes_per_element;     /* what it hands on, per element */
  int report_row;               /* its row in the report (skipped rows are not in the model) */
  bool batched;                 /* handles batches (after the batch stage) */
  bool valid;                   /* measured (a stage that handled nothing has no distribution) */
  bool saturated;               /* its threads were busy most of the window: the calibration scales it */
  /* The stage's pace over the run, from its traced calls: level[w] is its mean service time in the w-th
   * window of level_window_s from the run's start over the calls' mean, shrunk towards 1 by the share of
   * the windows' spread that chance explains.  A busy host slows all of a stage's workers at once for
   * hundreds of ms (wake-up latency, other tenants): a service that starts at time t takes a draw of
   * service_s times the level at t, so those spells drain a prefetch buffer as they did, where i.i.d. draws
   * average them away.  nlevels 0: none (untraced, or a spread within chance). */
  int nlevels;
  double level_window_s;
  float level[PB_MODEL_LEVELS];
} pb_model_stage;

typedef struct pb_model {
  bool valid;
  char why[160];                /* when not */
  int nstages;
  pb_model_stage stages[PB_MAX_STAGES + 2]; /* the report's rows (+ one a change may insert) */
  int batch_size;
  int devices;
  double device_s[PB_MODEL_QUANTILES]; /* one step's device time, ascending */
  double device_mean_s;
  double device_compute_share;  /* of the device time, the compute (idle % counts compute alone) */
  /* Each step's device time in the order the run made them, warm-up first (the first PB_MODEL_DEVICE_SEQ):
   * the simulation replays them in that order (from the first again past the last).  A prefetch buffer's
   * idle is set by the longest runs of short steps, which differ from one sequence of draws to the next
   * (600 i.i.d. draws of one bursty device gave 0.02 to 3.2 % idle at depth 16); the recorded order is the
   * run's own (a seeded emulated device repeats it exactly), with any correlation a real device's steps
   * have.  0: none (a hand-built model): i.i.d. draws of device_s. */
  int ndevice_seq;
  float device_seq_s[PB_MODEL_DEVICE_SEQ];
  double cores;                 /* cores the pipeline's threads can use: usable less others' load */
  double cores_usable;          /* affinity and quota */
  /* the run as configured */
  int64_t warmup_steps, steps;  /* steps: measured steps (0 with a duration) */
  double duration_s;            /* > 0: a run limited by time */
  int64_t epoch_samples;        /* samples in one epoch; 0: unknown */
  uint64_t seed;
  /* the fit */
  double measured_samples_per_s, measured_idle_pct;
  double replay_samples_per_s;  /* the model's replay of the run before calibration */
  double replay_idle_pct;
  double service_scale;         /* host service times x this (1: not calibrated) */
  double fit_error_pct;         /* (replay before calibration - measured) / measured x 100 */
  double base_samples_per_s;    /* the calibrated replay: what predictions of changes are compared with */
  double base_idle_pct;         /* and its device idle %: the recommendations' "now" */
  bool calibrated;
} pb_model;

/* A what-if: every field 0 (or -1 where said) leaves that part as it was. */
typedef struct pb_model_change {
  int threads[PB_MAX_STAGES + 2];        /* > 0: this many threads */
  double speedup[PB_MAX_STAGES + 2];     /* > 0: service times divided by this (INFINITY: free) */
  int queue_capacity[PB_MAX_STAGES + 2]; /* > 0: this output queue capacity (a prefetch's depth) */
  int ahead_per_thread[PB_MAX_STAGES + 2]; /* > 0: this `ahead`; -1: no bound */
  int on_demand[PB_MAX_STAGES + 2];        /* 1: made on demand; -1: batched ahead */
  int cache_after;                       /* >= 0: a cache inserted after this row; -1: none */
  double cores;                          /* > 0: this many cores for the pipeline */
} pb_model_change;

typedef struct pb_model_result {
  bool ok;
  double samples_per_s;         /* over the measured window of the configured run */
  double idle_pct;              /* device idle time / (devices x window) x 100 */
  double window_s;
  double utilization[PB_MAX_STAGES + 2]; /* busy thread-time / (threads x window), per row */
  double cores_used;            /* mean cores the threads in service used in the window */
} pb_model_result;

/* Fits the model to a run: rec for the distributions, r for the figures metrics.c computed (stages'
 * CPU shares, measured samples/s and idle), then calibrates it.  m->valid false (and m->why) when the
 * run says too little (no measured step, no batch). */
void pb_model_fit(pb_model *m, const struct pb_record *rec, const struct pb_report *r);
void pb_model_change_init(pb_model_change *c);
/* Simulates the configured run with the change applied (calibrated).  false when the model is not valid
 * or memory ran out. */
bool pb_model_predict(const pb_model *m, const pb_model_change *c, pb_model_result *out);
/* The same without calibration (service_scale 1): what model_fit uses, and tests. */
bool pb_model_simulate(const pb_model *m, const pb_model_change *c, double service_scale, pb_model_result *out);

/* Fits ms->level (above) from n calls: when each began (s from the run's start) and its service time (s),
 * over a run of run_s.  model_fit.c gives it the trace's calls; public for the tests. */
void pb_model_fit_levels(pb_model_stage *ms, const double *start_s, const double *service_s, size_t n, double run_s);

/* Row of the stage named `name`, or -1. */
int pb_model_row(const pb_model *m, const char *name);

#endif
