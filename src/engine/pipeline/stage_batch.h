/* fuse_map (pb_config_batch_in_place): the map stage right before `batch` writes each result straight
 * into a slot of the batch being formed, so the batch stage only counts arrivals and hands full batches
 * on (tf.data's map_and_batch fusion) instead of copying every sample (a DataLoader's collate). */
#ifndef PB_STAGE_BATCH_H
#define PB_STAGE_BATCH_H

#include "engine.h"

/* Is map stage `map` to write into the batch stage after it?  Plan-time: the engine's config decides. */
bool pb_map_writes_into_batch(const pb_stage *map);
/* A map worker takes the next slot of the batch being formed by stage `batch`, waiting for a batch buffer
 * when it must start one and none is free (its blocked-out time).  Returns where the sample's bytes go
 * (the stage's planned bytes per sample) and sets *owner, which the element carries in `in_batch`; NULL
 * when the run was cancelled.  The element must reach the batch stage (with slot_error set if the map
 * failed on it afterwards), or the run be cancelled. */
void *pb_batch_take_slot(pb_worker *map_worker, pb_stage *batch, const pb_elem *in, void **owner);

/* Closes up a batch of `taken` slots over its `gaps` failed ones (gap_slots, any order; sorted on return):
 * the samples in slots at or past taken - gaps move into the gaps below it, so the samples are the first
 * taken - gaps slots, each whole. */
void pb_batch_close_gaps(void *base, size_t slot_bytes, uint32_t taken, uint32_t *gap_slots, uint32_t gaps);

#endif
