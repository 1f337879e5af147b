/* The engine's accounting, as the stages report to it: every counter a stage moves goes through one of
 * these, so what each counter means (docs/METRICS.md "Accounting") and which ones the measured window
 * clips are decided here, not in eight stage files.  The engine itself counts what passes through
 * pb_emit, the queues and pb_worker_error; a stage reports only what the engine cannot see: a sample that
 * ended inside it (dropped, replayed), a file it read, the bytes it read.  Inline: these sit on per-sample
 * paths, where a call would cost more than the add. */
#ifndef PB_ACCOUNT_H
#define PB_ACCOUNT_H

#include "engine.h"

/* Samples of a remainder batch that never reach a step (drop_remainder, or several batch threads merging
 * their partial batches at end of data).  The whole run: the accounting balances over every sample. */
static inline void pb_count_dropped(pb_worker *w, uint64_t samples) { w->ctr.samples_dropped_total += samples; }

/* One sample handed on again from a cache's copy (a replay, not a new sample from the source). */
static inline void pb_count_replayed(pb_worker *w) { w->ctr.samples_replayed_total++; }

/* A source made a sample that failed before it could be handed on (a bad file or record): it still counts
 * as made, so that it balances against the error pb_worker_error counts. */
static inline void pb_count_made_failed(pb_worker *w) { w->ctr.samples_out_total += 1; }

/* A file opened and read through, whatever became of its samples (an empty or malformed file too). */
static inline void pb_count_file_read(pb_worker *w) { w->ctr.files_read_total++; }

/* Bytes a source read from storage, counted when read inside the measured window, and the reads that took:
 * one per block_bytes (the read stage reads a file in blocks of that size), at least one a file. */
static inline void pb_count_bytes_read(pb_worker *w, uint64_t bytes) {
  if (!pb_engine_in_window(w->stage->engine, pb_now_ns())) return;
  uint64_t block = w->stage->cfg && w->stage->cfg->block_bytes > 0 ? (uint64_t)w->stage->cfg->block_bytes : 0;
  w->ctr.bytes_in += bytes;
  w->ctr.read_ops += block && bytes > block ? (bytes + block - 1) / block : 1;
}

#endif
