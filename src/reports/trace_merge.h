/* One trace.json for a whole multi-process job (issue 8): every rank's own trace (rank-N/trace.json),
 * side by side in one file that Perfetto and chrome://tracing open, one process per rank and role:
 *
 *   pid (rank + 1) x 100 + 1   rank's pipeline (host), one track per stage worker
 *   pid (rank + 1) x 100 + 2   rank's device(s), steps, copies, input waits, gradient exchanges
 *
 * Each rank's timestamps are relative to its own start (its monotonic clock), so they are shifted by the
 * rank's start on the wall clock minus the earliest rank's: exact between the ranks of one host, as good
 * as the hosts' clock sync (NTP: about a millisecond) across hosts.  Flow ids are renumbered so that two
 * ranks' flows never join.  Event lines are rewritten, not re-encoded: everything else is kept byte for
 * byte.
 *
 * The merged file is for viewing: its header is "pipebench_job" (ranks, their pids and offsets), not a
 * run's record, and `pipebench analyze` names the rank traces to analyse instead. */
#ifndef PB_TRACE_MERGE_H
#define PB_TRACE_MERGE_H

#include <stddef.h>

#include "common.h"

typedef struct pb_trace_part {
  int rank;
  const char *host;
  const char *text;   /* the rank's trace.json ("" when it has none: --no-trace, failed, too large) */
  size_t len;
  const char *why_missing; /* when text is empty: why ("" or NULL: no trace was written) */
} pb_trace_part;

/* Writes the job's trace to path from n ranks' parts.  A part that is not a pipebench trace is left out
 * and listed with the reason in the header.  Returns the number of ranks merged (>= 0), or -errno with err
 * set when the file cannot be written. */
int pb_trace_merge(const char *path, const pb_trace_part *parts, int n, pb_err *err);

/* The process id a rank's pipeline (role 1) or device (role 2) has in the merged trace. */
int pb_trace_merged_pid(int rank, int role);

#endif
