/* The record of a live run (record.h): built from the engine, the step loop and the device once the run
 * is joined.  The only place where the collecting layer meets the record; everything that reads a record
 * (analysis, reports) includes record.h alone. */
#ifndef PB_RECORD_RUN_H
#define PB_RECORD_RUN_H

#include "device.h"
#include "engine.h"
#include "record.h"
#include "steps.h"

/* Builds the record of a joined, finished run (pb_steps_finish): copies what it needs and takes the step
 * record over from `s`.  0 or -ENOMEM. */
int pb_record_from_run(pb_record *rec, const pb_config *cfg, const pb_engine *e, pb_steps *s,
                       const pb_device *d, bool synthetic, bool interrupted, uint64_t queued_samples,
                       double cpu_s);

#endif
