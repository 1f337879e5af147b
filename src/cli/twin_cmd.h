/* pipebench twin CAPTURE [--out FILE] [--force] [--quiet]: a pipebench config emulating the tf.data pipeline of
 * a TensorFlow Profiler capture (src/cli/twin.c). */
#ifndef PB_TWIN_CMD_H
#define PB_TWIN_CMD_H

#include <stdbool.h>

typedef struct pb_twin_opts {
  const char *capture;  /* a <host>.xplane.pb, or a log directory (its newest run, its most input-bound host) */
  const char *out_file; /* --out; NULL: <host>-twin.json here */
  bool force;           /* replace an existing out_file */
  bool quiet;           /* no summary of the pipeline and the derivation */
} pb_twin_opts;

/* The exit status (docs/CONTRACT.md); prints its own errors. */
int pb_twin_cmd(const pb_twin_opts *o);

#endif
