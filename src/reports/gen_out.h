/* `pipebench gen`'s summary: what it wrote (or found up to date), as the line on stderr and as gen.json
 * (--json on stdout, --out <dir>/gen.json).  The dataset's own manifest is a data file of gen's, not a
 * report: gen writes it itself. */
#ifndef PB_GEN_OUT_H
#define PB_GEN_OUT_H

#include <cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"

typedef struct pb_gen_result {
  const char *path; /* dataset.path */
  pb_format format;
  bool generated; /* false: it was up to date (the counts are the manifest's) */
  uint64_t files, samples, bytes;
  double seconds;                                             /* the writing's wall time (0 when up to date) */
  uint64_t min_sample_bytes, max_sample_bytes, payload_bytes; /* over the samples written */
} pb_gen_result;

/* gen.json: pipebench_version, path, format, generated, files, samples, bytes, seconds (ms resolution).
 * NULL when out of memory. */
cJSON *pb_gen_out_json(const pb_gen_result *r);

/* "pipebench: gen: wrote N files, ... (sample bytes min, mean, max)" and its newline. */
void pb_gen_out_text(FILE *out, const pb_gen_result *r);

#endif
