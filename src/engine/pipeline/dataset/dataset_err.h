/* Error helper shared by the dataset format readers (internal; not part of the public API). */
#ifndef PB_DATASET_ERR_H
#define PB_DATASET_ERR_H

#include <errno.h>

#include "common.h"

/* Corrupt or malformed file content: fill `err` and yield -EBADMSG, so callers can tell bad data (skip it
 * under on_error=skip) from a bad argument (-EINVAL) or an I/O failure (-EIO, -ENOENT, ...). */
#define PB_BAD_DATA(err, ...) (pb_err_set((err), __VA_ARGS__), -EBADMSG)

/* Errors name the file; a NULL name (a buffer that did not come from a file) still reads sensibly. */
static inline const char *pb_ds_name(const char *file) { return file ? file : "<memory>"; }

#endif
