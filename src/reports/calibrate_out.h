/* `pipebench calibrate`'s summary on stdout: the machine's ceilings, and those of the config's dataset
 * when one was given.  (calibration.json itself is the record layer's: pb_calib_to_json.) */
#ifndef PB_CALIBRATE_OUT_H
#define PB_CALIBRATE_OUT_H

#include <stdbool.h>
#include <stdio.h>

#include "calibration.h"

/* Does the cached dataset entry d stand for the dataset `key` names (path, block size, scale, decode's
 * smallest side, fused crop)?  The counts of files and bytes are not compared: the summary shows what the
 * cache holds for it. */
bool pb_calibrate_out_same_dataset(const pb_calib_dataset *d, const pb_calib_dataset *key);

/* The summary: machine, cores, memcpy, the GPU's copies and step kernel (or why not measured), then, with a
 * dataset key (NULL: none), each cached entry for it: its files, decode and read ceilings; then "saved in"
 * the cache when `cache` is not NULL. */
void pb_calibrate_out_text(FILE *out, const pb_calibration *c, const pb_calib_dataset *key, const char *cache);

#endif
