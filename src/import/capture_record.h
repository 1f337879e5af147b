/* The record of a tf.data job read from its TensorFlow Profiler capture (issue 35): the same plain data a run of
 * pipebench records (record.h), so that `pipebench analyze CAPTURE` gives the same stage graph, critical path,
 * classification, step breakdown, report.json, report.html and Chrome trace as a run does.
 *
 * The rows are the twin's stages (twin.h: one per iterator of the chain, source first), so that every
 * recommendation's `--set` applies to the config `pipebench twin` writes, and the record carries that config.
 * What each row holds:
 * - the in-memory source row: one element per element of the first row, made when that row took it;
 * - a row of an iterator's functions (a parallel map): one call per function run, from its start to its end (its
 *   latency: what one of its `parallelism` slots is held), on the slot free at its start; its CPU is the runs'
 *   execution on the threadpool;
 * - a row of an iterator's own time (the source, a synchronous map): one call per GetNext, its self time at the
 *   call's end;
 * - a batch row: each sample joins its batch when the row before handed it on; the batch is handed on when its
 *   last sample joined (or, for a synchronous batch iterator, when its call returned, its self time before);
 * - a prefetch row: each batch passes when the row before handed it on;
 * - the steps: each step from its marker's start, its batch ready when its IteratorGetNext wait ended, the device
 *   computing for the rest of the step.  The first step is left out of the measured window when there are three
 *   or more (it carries the pipeline's start), as the twin's device.
 * Lineage is by order: the k-th element a row takes is the k-th its input handed on, and a row of function runs
 * hands its elements on in the order its consumer took them, where the capture's `<Kind>Consume` events name them
 * (with deterministic=False a parallel map hands on whichever element is done first; else the order the runs
 * started, tf.data's order); the k-th step takes the k-th batch the last row handed on, when that batch was
 * ready before the step's wait ended; a step whose batch was made before the capture began takes none (its
 * samples count as read before the capture: the accounting balances).  Rows and the queues between them are
 * pipebench's model of the job, not tf.data's threads: a row's idle time is counted as waiting for input, since
 * the capture does not say whether a slot waited on its input or on a full buffer. */
#ifndef PB_CAPTURE_RECORD_H
#define PB_CAPTURE_RECORD_H

#include "common.h"
#include "record.h"
#include "tfdata.h"

/* Fills *rec (pb_record_free it; it owns its config: the twin's, named `name`) from the capture's reading t of the
 * file `capture`, and rec->source (tool, capture, host, step marker, the capture's own verdict and advice; no
 * hosts: the caller lists those).  0, or a negative errno with err set: -EBADMSG when the capture has no steps
 * or its twin does not load, -ENOMEM. */
int pb_capture_record(const pb_tfdata *t, const char *capture, const char *name, pb_record *rec, pb_err *err);

#endif
