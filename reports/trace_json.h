/* trace.json (CONTRACT §5): the Chrome Trace Event Format view of a run's record, and the record itself
 * (so that `pipebench analyze` can reproduce the report from this file alone). */
#ifndef PB_TRACE_JSON_H
#define PB_TRACE_JSON_H

#include "record.h"

/* Writes rec to path (atomically: a temporary file renamed into place).  0 or -errno. */
int pb_trace_write_file(const pb_record *rec, const char *path);

/* Reads a trace.json written by pb_trace_write_file into rec (which then owns its config).
 * Returns 0; -ENOENT/-EACCES/-EIO when the file cannot be read; -EINVAL when it is not such a trace,
 * with one line in err saying where and what was expected. */
int pb_trace_load_file(pb_record *rec, const char *path, pb_err *err);

#endif
