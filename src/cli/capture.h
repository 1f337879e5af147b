/* A TensorFlow Profiler capture named on the command line (twin, analyze): a <host>.xplane.pb, a run directory of
 * them, or a log directory (its newest run under plugins/profile/), and of several hosts the most input-bound one,
 * as the profiler's input-pipeline analysis picks. */
#ifndef PB_CAPTURE_H
#define PB_CAPTURE_H

#include <stdbool.h>

#include "common.h"
#include "record.h"
#include "tfdata.h"

#define PB_CAPTURE_SUFFIX ".xplane.pb"

typedef struct pb_capture {
  char path[PB_PATH_LEN];                    /* the host's file read */
  pb_tfdata t;                               /* its reading (pb_capture_free) */
  int nhosts;                                /* hosts in the capture (the table keeps the first PB_MAX_IMPORT_HOSTS) */
  pb_import_host hosts[PB_MAX_IMPORT_HOSTS]; /* most input-bound first: hosts[0] is the one read */
} pb_capture;

/* True when PATH is a capture: a *.xplane.pb file, or a directory holding plugins/profile/. */
bool pb_is_capture(const char *path);

/* Reads ARG's capture into *c.  The exit status (docs/CONTRACT.md) after one error line naming `cmd`, or 0. */
int pb_capture_open(const char *arg, const char *cmd, pb_capture *c);
void pb_capture_free(pb_capture *c);

#endif
