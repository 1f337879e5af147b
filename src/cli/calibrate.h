/* `pipebench calibrate [--config FILE]`: measures this machine's ceilings (memcpy per core and over all
 * cores, the core count, the GPU's host-to-device copies and step kernel) and, with a config, those of its
 * dataset (decode per core of its own files at its scale, read of its storage at its block size, buffered
 * and O_DIRECT, sequential and random), and keeps them in the machine's calibration.json
 * (calibration.h).  What the cache already holds for this machine is reused unless --force. */
#ifndef PB_CALIBRATE_H
#define PB_CALIBRATE_H

#include <stdbool.h>

#include "config.h"

typedef struct pb_calibrate_opts {
  const pb_config *cfg;         /* NULL: the machine part only */
  const char *out_dir;          /* --out: also write <out_dir>/calibration.json (NULL: the cache only) */
  bool force;                   /* measure again what the cache holds */
  bool json_stdout, quiet;
  bool no_text;                 /* --format without text: no summary on stdout */
} pb_calibrate_opts;

/* 0, or the exit status after printing one line (1: a measurement or the cache failed; 130: interrupted). */
int pb_calibrate(const pb_calibrate_opts *o);

#endif
