/* Efficiency against the machine's calibrated ceilings (efficiency.c, docs/METRICS.md "efficiency"). */
#ifndef PB_EFFICIENCY_H
#define PB_EFFICIENCY_H

#include "calibration.h"
#include "report.h"

/* Fills r->efficiency and each stage's ceiling and efficiency (NAN where there is none); call once the
 * stages, the throughput and the capacity model (device_rate_per_s) are in r. */
void pb_efficiency_compute(pb_report *r, const pb_ceilings *c);

#endif
