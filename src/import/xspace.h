/* Reading a TensorFlow Profiler capture: one XSpace (`<host>.xplane.pb`), the first step of importing the
 * user's own tf.data job (issue 35).  An XSpace holds planes (the host's CPU threads: "/host:CPU"; each GPU:
 * "/device:GPU:N"), each plane lines (one thread, or a tf.data iterator: "tf_data_iterator_resource/<id>"),
 * each line events (a name through the plane's event metadata, a start and a duration in picoseconds, and
 * stats named through the plane's stat metadata: "id", "parent_id", "element_id", "parallelism", ...).
 *
 * This layer only decodes the file; nothing here knows pipebench's record.  It depends on the core alone. */
#ifndef PB_XSPACE_H
#define PB_XSPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"

typedef struct pb_xspace pb_xspace;

/* Reads and decodes `path`.  0 with *out (pb_xspace_free it), or a negative errno with err set to one line:
 * the read's (-ENOENT, -EACCES, -EFBIG past 4 GiB: "cannot read it"), -EBADMSG (not an XSpace: "<path>: not a
 * TensorFlow Profiler XSpace (...)"), -ENOMEM. */
int pb_xspace_load(const char *path, pb_xspace **out, pb_err *err);
/* The same from bytes in memory (`what` names them in errors). */
int pb_xspace_parse(const uint8_t *data, size_t bytes, const char *what, pb_xspace **out, pb_err *err);
void pb_xspace_free(pb_xspace *x); /* NULL is fine */

/* The capture's hosts (XSpace.hostnames). */
int pb_xspace_nhosts(const pb_xspace *x);
const char *pb_xspace_host(const pb_xspace *x, int i);

int pb_xspace_nplanes(const pb_xspace *x);
const char *pb_xspace_plane_name(const pb_xspace *x, int plane);
/* The plane called `name` ("/host:CPU"), or -1. */
int pb_xspace_find_plane(const pb_xspace *x, const char *name);

typedef struct pb_xline {
  const char *name; /* "python", "tf_data_iterator_resource/123", a thread's name */
  int64_t id;
  int64_t timestamp_ns; /* the line's origin: its events' offsets count from here */
  size_t nevents;
} pb_xline;

int pb_xspace_nlines(const pb_xspace *x, int plane);
void pb_xspace_line(const pb_xspace *x, int plane, int line, pb_xline *out);

typedef struct pb_xevent {
  const char *name; /* from the plane's event metadata ("" when the id names none) */
  int64_t start_ps; /* line timestamp x 1000 + offset: picoseconds on the capture's clock */
  int64_t duration_ps; /* >= 0, and start_ps + duration_ps fits an int64 (a hostile file's are held so) */
} pb_xevent;

void pb_xspace_event(const pb_xspace *x, int plane, int line, size_t event, pb_xevent *out);
/* The event's stat called `stat` as an integer (int64, uint64), or as text (a string, or a ref's metadata
 * name: how the profiler stores repeated strings): true when the event has it so.  A ref is text, never an
 * integer (TensorFlow writes "parallelism": "unavailable" as one). */
bool pb_xspace_event_int(const pb_xspace *x, int plane, int line, size_t event, const char *stat, int64_t *out);
bool pb_xspace_event_str(const pb_xspace *x, int plane, int line, size_t event, const char *stat, const char **out);

#endif
