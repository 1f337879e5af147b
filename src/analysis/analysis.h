/* The analysis: from a pb_record (what a run recorded) to the report's diagnosis.
 *
 *   graph.c          the stage graph rebuilt from the trace's lineage, and each node's figures
 *   critical_path.c  the critical path, walked back over the event dependency graph
 *   model*.c, simulate.c  the model of the pipeline, fitted from the record, predicting by simulation
 *   transient.c      transients inside the window (a cache's fill, a shuffle's, a slow start)
 *   bottleneck.c     the capacity figures and the bottleneck (critical path cross-checked with the model)
 *   recommend.c      recommendations, each predicted by the model
 *
 * Every function reads only the record (never a running engine), so `pipebench analyze` and a live run
 * give the same answers. */
#ifndef PB_ANALYSIS_H
#define PB_ANALYSIS_H

#include <stdint.h>

#include "keymap.h"
#include "model.h"
#include "record.h"
#include "report.h"

#define PB_NO_ROW (-1)
#define PB_DEVICE_ROW (-2) /* "the device" where a stage row is expected */

/* One event of the record: stage row, worker, index in that worker's events. */
typedef struct pb_evref {
  int row, worker;
  uint32_t idx;
} pb_evref;

typedef struct pb_analysis {
  const pb_record *rec;
  bool traced;
  uint64_t t_stop, t_end;       /* the analysed window: the measured window, clipped to what the trace kept */
  bool complete;                /* the trace covers the whole measured window */
  uint64_t events, dropped;
  pb_keymap emits[PB_MAX_STAGES + 1]; /* per row: emitted element key -> packed pb_evref */
  int parent[PB_MAX_STAGES + 1];      /* per row: the row its inputs came from (PB_NO_ROW: source/none) */
  int device_parent;                  /* the row that feeds the device */
  long *prev_step;              /* per step: the previous step on the same device, or -1 */
  size_t *steps_by_end;         /* step indices sorted by end time (the critical path's binary search) */
} pb_analysis;

/* Builds emit maps, the stage graph (parents from lineage) and the per-step device order.
 * Returns 0, or -ENOMEM (the analysis then falls back to counters only). */
int pb_analysis_init(pb_analysis *a, const pb_record *rec);
void pb_analysis_free(pb_analysis *a);

const pb_event *pb_analysis_event(const pb_analysis *a, pb_evref ref);
/* The event that handed element `key` on in row `row` (any worker); false when not in the trace. */
bool pb_analysis_emitter(const pb_analysis *a, int row, uint64_t key, pb_evref *ref);

/* Shared by the model and the recommendations (analysis.c). */
#define PB_CPU_BOUND_FRACTION 0.5
/* CPU time is most of the stage's busy time, not counting the time it waited for a core (run-queue
 * delay, when the kernel reports it): cpu_fraction / (1 - cpu_delay_fraction) >= 0.5.  It competes for
 * cores.  A stage that waits on latency stays "waiting" on a saturated machine, however long its
 * threads queue for a core; one that computes stays CPU-bound, however little CPU it gets. */
bool pb_stage_cpu_bound(const pb_stage_report *s);
/* The stage's CPU share of its busy time net of run-queue delay (see pb_stage_cpu_bound), 0..1. */
double pb_stage_cpu_share(const pb_stage_report *s);
void pb_pipeline_capacities(pb_report *r);
/* Cores the stages kept busy in the window: sum of utilization x threads x cpu_fraction (cores_used). */
double pb_report_cores_used(const pb_report *r);
/* Index of the report row named `name`, or -1. */
int pb_report_stage_index(const pb_report *r, const char *name);

/* graph.c: the stage-graph node figures of each row (parent, start, total, self, calls). */
void pb_graph_fill(pb_report *r, const pb_analysis *a);

/* critical_path.c: walks the path back from the end of the last measured step; fills the report's
 * critical_path section and the stages' critical_path_* figures. */
void pb_critical_path(pb_report *r, const pb_analysis *a);

/* transient.c: a transient inside the measured window (r->transient says which, and how much warm-up
 * leaves it out); *steady_pct = input_bound_pct over the measured steps after it. */
typedef enum pb_transient_kind {
  PB_TRANSIENT_NONE,
  PB_TRANSIENT_CACHE_FILL,
  PB_TRANSIENT_SHUFFLE_FILL,
  PB_TRANSIENT_SLOW_START,
} pb_transient_kind;
pb_transient_kind pb_transient(pb_report *r, const pb_record *rec, double *steady_pct);

/* bottleneck.c: capacity figures (model_*, cpu_limit_per_s, device_rate_per_s) and the bottleneck. */
void pb_bottleneck(pb_report *r, const pb_record *rec);
/* The model's row `mrow` alone: threads / calibrated mean service, in the pipeline's samples/s (NAN when
 * not measured). */
double pb_model_stage_capacity(const pb_report *r, int mrow);

/* recommend.c: recommendations, each with a predicted samples/s. */
void pb_recommend(pb_report *r, const pb_record *rec);

/* Everything above, in order (metrics.c calls it after the step and stage figures are in r). */
void pb_analysis_run(pb_report *r, const pb_record *rec);

#endif
