/* The element that moves between stages: a sample, or (after `batch`) a batch of samples.
 * Elements are passed BY VALUE through the queues (64 bytes), so the engine allocates nothing per element;
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
  uint64_t h2d_start_ns;     /* set by the h2d stage: when this batch's copy ran; 0 = not copied yet */
  uint64_t h2d_end_ns;
  uint64_t handoff_ns;       /* when the last stage handed this batch to the device (0 before) */
} pb_elem;

#endif
