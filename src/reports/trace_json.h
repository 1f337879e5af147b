/* trace.json (docs/CONTRACT.md §5): the Chrome Trace Event Format view of a run's record, and the record itself
 * (so that `pipebench analyze` can reproduce the report from this file alone). */
#ifndef PB_TRACE_JSON_H
#define PB_TRACE_JSON_H

#include "record.h"

/* Writes rec to path (atomically: path.tmp, then renamed into place; docs/TRACE.md gives the layout).
 * Streams the events (no JSON tree of them).  0 or -errno (-ENOMEM, or the I/O error). */
int pb_trace_write_file(const pb_record *rec, const char *path);

/* Reads a trace.json written by pb_trace_write_file into rec (which then owns its config; free it with
 * pb_record_free), streaming it line by line.  The record is bit-identical to the one written.
 * Returns 0; -errno (-ENOENT, -EACCES, -EIO..) when the file cannot be read; -ENOMEM; -EINVAL when it is
 * not such a trace, with one line in err: "<path>: line N: <what> (expected <what>)".  On error rec is
 * left empty (zeroed). */
int pb_trace_load_file(pb_record *rec, const char *path, pb_err *err);

#endif
