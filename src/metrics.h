/* From what a run recorded (step timeline, per-stage counters, accounting) to the numbers of the
 * report (docs/METRICS.md defines each).  Reads only records; never touches running threads. */
#ifndef PB_METRICS_H
#define PB_METRICS_H

#include "config.h"
#include "device.h"
#include "engine.h"
#include "report.h"
#include "record.h"
#include "steps.h"

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

/* Device idle % over [ws, we): 100 - compute time inside it / (devices x its length) x 100, over every
 * step of `device` (-1: all devices, then `devices` of them).  NAN for an empty window. */
double pb_steps_idle_pct(const pb_step *v, size_t n, int devices, int device, uint64_t ws, uint64_t we);

#endif
