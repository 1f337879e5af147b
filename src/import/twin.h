/* A twin of an imported tf.data pipeline (issue 35): a pipebench config that emulates it with synthetic data,
 * so that tune, sweep, ab and what-if run on it without TensorFlow or the dataset.
 *
 * The chain of iterators (pb_tfdata_chain, source first) becomes stages:
 * - the source (Range, TFRecord, TensorSlice, ...): a synthetic dataset of samples of the batch's bytes per
 *   sample, and a one-thread map that spins for the source's own time per element;
 * - a parallel map: a map of `parallelism` threads, `ahead` 1 (tf.data's buffer holds as many results, in work
 *   or waiting, as its calls), spinning for its function's execution per element, then
 *   sleeping for its waits between executions with a core free (an asynchronous op's; tfdata.h `waits`), when
 *   they are 5 % of the execution or more;
 * - map-and-batch: that map (unbounded: its buffer is of batches), then a batch of its `batch_size`; a
 *   synchronous batch: a batch `on_demand` (made inside its consumer's GetNext, as tf.data's);
 * - a synchronous map or filter (any other iterator before the batch): a one-thread map spinning its own time;
 * - prefetch: a prefetch of its `buffer_limit`;
 * - the device: the emulated device, its step the steps' time less the pipeline's part of their input wait
 *   (their `Iterator::Root` calls; the GetNext call's dispatch stays in the step) (normal, the measured mean
 *   and standard deviation).
 * A time whose coefficient of variation is 0.25 or more is drawn lognormal with the measured mean and the
 * sigma that gives that variation; below, constant. */
#ifndef PB_TWIN_H
#define PB_TWIN_H

#include <cJSON.h>
#include <stdio.h>

#include "common.h"
#include "config.h"
#include "tfdata.h"

#define PB_TWIN_MAX_NOTES 48

/* What a twin stage emulates: which iterator, and which of its work. */
typedef enum pb_twin_role {
  PB_TWIN_OWN_TIME,     /* a map spinning for the iterator's own time per call (the source, a synchronous map) */
  PB_TWIN_FUNCTIONS,    /* a map running the iterator's functions (a parallel map, map-and-batch's map) */
  PB_TWIN_BATCH,        /* a batch of the iterator's batch_size */
  PB_TWIN_BATCH_OF_ONE, /* a batch of 1 where the pipeline batches nowhere (iterator -1) */
  PB_TWIN_PREFETCH,     /* a prefetch of its buffer_limit */
} pb_twin_role;

typedef struct pb_twin_stage {
  int iterator; /* index in the pb_tfdata's iterators; -1: none */
  pb_twin_role role;
} pb_twin_stage;

/* How each part of the twin was derived, a line each ("ParallelMapV2_1 -> map, 2 threads: parallelism 2; spin
 * 11 us, lognormal sigma 1.1: 164 function runs"), and what each of its stages emulates (stage[i] for the
 * config's stages[i]). */
typedef struct pb_twin_notes {
  int n;
  char line[PB_TWIN_MAX_NOTES][320];
  int nstages;
  pb_twin_stage stage[PB_MAX_STAGES];
} pb_twin_notes;

/* The twin's config into *out (cJSON_Delete it), named `name`, its `about` saying it came from `capture`.  0, or
 * with err set -EBADMSG when the capture has no steps, -ENOMEM. */
int pb_twin_config(const pb_tfdata *t, const char *capture, const char *name, pb_twin_notes *notes, cJSON **out,
                   pb_err *err);

#endif
