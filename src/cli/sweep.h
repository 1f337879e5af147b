/* `pipebench sweep` (docs/CONTRACT.md §1): every combination of the --set PATH=V1,V2,.. lists, one run each, one
 * table (text on stdout, sweep.csv and sweep.json in the output directory), the best marked. */
#ifndef PB_SWEEP_H
#define PB_SWEEP_H

#include "multirun.h"
#include "repeat.h"
#include "sweep_grid.h"
#include "sweep_out.h"

/* What pb_sweep_split_sets's comparison of strings misses: one key under two spellings (stages.aug.threads
 * and stages[1].threads), given two lists or a list and a value, of which the later would silently win in
 * every combination while the table shows the other's values.  Resolves the paths against FILE with the
 * fixed overrides applied.  canon (NULL, or naxes entries) receives each axis's resolved path.  0, or
 * -EINVAL with err set (the config does not load, or a key is named twice). */
int pb_sweep_check_keys(const char *file, const pb_axis *axes, int naxes, const char *const *fixed, int nfixed,
                        char (*canon)[PB_CFG_PATH_LEN], pb_err *err);

/* m: command "sweep", the config file, the command line's --set overrides and lists, and options.  Returns
 * the exit status (docs/CONTRACT.md §1). */
int pb_sweep(pb_multi *m);

#endif
