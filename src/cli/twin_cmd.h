/* pipebench twin CAPTURE [CAPTURE ...] [--out FILE] [--force] [--quiet]: a pipebench config emulating the tf.data
 * pipeline of a TensorFlow Profiler capture, of several captures of one job the least disturbed (src/cli/twin.c). */
#ifndef PB_TWIN_CMD_H
#define PB_TWIN_CMD_H

#include <stdbool.h>

#define PB_TWIN_MAX_CAPTURES 16

typedef struct pb_twin_opts {
  /* each a <host>.xplane.pb, a run directory, or a log directory (its newest run, its most input-bound host);
   * several are captures of one job, and the twin is made from the one whose job ran fastest */
  const char *captures[PB_TWIN_MAX_CAPTURES];
  int ncaptures;
  const char *out_file; /* --out; NULL: <host>-twin.json here */
  bool force;           /* replace an existing out_file */
  bool quiet;           /* no summary of the pipeline and the derivation */
} pb_twin_opts;

/* The exit status (docs/CONTRACT.md); prints its own errors. */
int pb_twin_cmd(const pb_twin_opts *o);

#endif
