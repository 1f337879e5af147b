/* From what a run recorded (step timeline, per-stage counters, accounting) to the numbers of the
 * report (docs/METRICS.md defines each).  Reads only records; never touches running threads. */
#ifndef PB_METRICS_H
#define PB_METRICS_H

#include "config.h"
#include "record.h"
#include "report.h"

/* Fills r (which the caller zeroed) from what the run recorded, analysis included; r->config is left
 * for the caller.  `rec` must outlive r (r points at its strings). */
void pb_metrics_compute(pb_report *r, const pb_record *rec);

/* The step time breakdown of one step (ns), as defined in docs/METRICS.md. */
typedef struct pb_step_parts {
  uint64_t step_ns, input_wait_ns, h2d_ns, compute_ns, comm_ns, other_ns;
  /* the batch was on the device and the previous step over, but the step had not been launched: the
   * host's thread woke (or launched) late.  A part of what would otherwise be `other`. */
  uint64_t host_late_ns;
} pb_step_parts;
pb_step_parts pb_step_breakdown(const pb_step *st);

const char *pb_classify(double input_bound_pct);


#endif
