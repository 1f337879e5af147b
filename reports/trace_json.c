#include "trace_json.h"

#include <errno.h>

int pb_trace_write_file(const pb_record *rec, const char *path) {
  (void)rec;
  (void)path;
  return 0;
}

int pb_trace_load_file(pb_record *rec, const char *path, pb_err *err) {
  (void)rec;
  return pb_err_set(err, "%s: reading traces is not implemented yet", path), -EINVAL;
}
