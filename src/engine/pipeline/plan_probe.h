/* What the dataset's samples weigh, read from the dataset before the run: the memory plan's input
 * (engine_plan.c).  A directory of JPEGs is sized from its listing and the headers of a few of its images;
 * a user's TFRecord files from the first record of a few of them (its feature's bytes, and the JPEG header
 * inside when the payload is JPEG).  Nothing here decodes a pixel or reads more than a file's head or first
 * record, so planning costs a few small reads whatever the dataset's size.  A sample larger than any probed
 * takes its excess from what limits.max_memory_mb leaves past the plan (pb_pool_plan), or is refused. */
#ifndef PB_PLAN_PROBE_H
#define PB_PLAN_PROBE_H

#include <stdint.h>

#include "engine.h"

/* Bytes of one sample as the read stage emits it, or 0 when the dataset does not say (not JPEG or TFRecord,
 * nothing readable).  JPEG: the listed sizes (the largest file, or the 99th percentile when the largest is
 * more than 4x it: one outsized file must not size every buffer).  TFRecord: the largest first-record
 * payload among the probed files. */
uint64_t pb_probe_sample_bytes(const pb_engine *e);

/* Bytes of one image as `decode` emits it: the largest among the probed images' headers, at the scale decode
 * will use; 0 when the payload is not JPEG or no header could be read. */
uint64_t pb_probe_decoded_bytes(const pb_engine *e, const pb_stage_cfg *decode);

#endif
