/* The element that moves between stages: a sample, or (after `batch`) a batch of samples.
 * Elements are passed BY VALUE through the queues (112 bytes, asserted below), so the engine allocates nothing
 * per element;
 * the payload they point at lives in a pooled buffer (`buf`) or in memory shared for the whole run. */
#ifndef PB_ELEM_H
#define PB_ELEM_H

#include <stddef.h>
#include <stdint.h>

struct pb_buf;

#define PB_NO_BATCH UINT64_MAX
#define PB_NO_FILE UINT32_MAX

typedef struct pb_elem {
  uint64_t id;               /* sample id given at the source; for a batch, its first member's id */
  uint64_t batch_id;         /* PB_NO_BATCH for a sample */
  void *data;                /* payload */
  size_t bytes;              /* payload size */
  struct pb_buf *buf;        /* the pooled buffer owning `data`, or NULL when the payload is shared */
  uint32_t nsamples;         /* 1 for a sample, the member count for a batch */
  uint32_t epoch;
  uint32_t file_index;       /* the sample's file in the run's file list (PB_NO_FILE: in-memory) */
  uint32_t record;           /* the sample's position in its file: with file_index and epoch, a key that
                              * does not depend on thread scheduling (random augmentations use it) */
  uint16_t height, width;    /* a decoded image's size (0 for other payloads) */
  uint8_t channels;
  uint8_t dtype;             /* pb_dtype of an image payload */
  uint8_t chw;               /* image layout: 0 HWC, 1 CHW */
  uint8_t device;            /* a batch copied by a GPU h2d: the device it was copied to */
  uint16_t full_height, full_width; /* decoded with fused_crop: the whole image's size, of which this holds
                              * the crop the next random_resized_crop draws (0: not cropped) */
  uint16_t crop_x;           /* fused_crop: the crop's first column here (the region decoded is wider: whole
                              * iMCU columns), its rows are all of this one's */
  uint8_t crop_denom;        /* fused_crop: the crop was decoded at 1/crop_denom of full_* (0 or 1: at full
                              * size); its place here is pb_crop_scaled's of the drawn crop */
  void *in_batch;            /* fuse_map: the forming batch (stage_batch.c) whose buffer already holds this
                              * sample's payload, in the slot its map worker took; NULL otherwise */
  const char *slot_error;    /* fuse_map: the map failed on this sample after taking its slot; the batch
                              * stage counts the error and closes the gap (the message names the map) */
  uint64_t h2d_start_ns;     /* set by the h2d stage: when this batch's copy ran; 0 = not copied yet */
  uint64_t h2d_end_ns;
  uint64_t handoff_ns;       /* when the last stage handed this batch to the device (0 before) */
} pb_elem;

/* Queues copy elements by value: a field added here costs every hop, so its size is stated, not drifting. */
_Static_assert(sizeof(pb_elem) == 112, "pb_elem grew: update this, elem.h's comment and ARCHITECTURE.md");

/* The seed of a sample's random augmentations in map stage `stage_index`: from its key (file, record,
 * epoch; or its id in memory), so that draws do not depend on thread scheduling, and so that the decode
 * stage's fused_crop draws exactly the crop the map stage would. */
static inline uint64_t pb_elem_aug_seed(const pb_elem *e, uint64_t seed, int stage_index) {
  uint64_t key = e->file_index == PB_NO_FILE
                     ? e->id
                     : ((uint64_t)e->epoch << 44) ^ ((uint64_t)e->file_index << 20) ^ e->record;
  return seed ^ (key * 0x9E3779B97F4A7C15ULL) ^ (uint64_t)stage_index;
}

#endif
