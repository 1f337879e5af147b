/* `pipebench sweep` (CONTRACT §1): every combination of the --set PATH=V1,V2,.. lists, one run each, one
 * table (text on stdout, sweep.csv and sweep.json in the output directory), the best marked. */
#ifndef PB_SWEEP_H
#define PB_SWEEP_H

#include "multirun.h"

/* One swept (or, for tune, searched) path and its values. */
#define PB_SWEEP_MAX_AXES 8
#define PB_SWEEP_MAX_VALUES 64
typedef struct pb_axis {
  char path[256];
  int nvalues;
  char values[PB_SWEEP_MAX_VALUES][64];
} pb_axis;

/* Splits the command line's --set list: PATH=V1,V2,.. (a comma in a value that is not a JSON array or
 * object) becomes an axis, anything else stays a fixed override in fixed[].  0, or -EINVAL with err set
 * (too many axes or values, an empty value). */
int pb_sweep_split_sets(const char *const *sets, int nsets, pb_axis *axes, int *naxes, const char **fixed,
                        int *nfixed, pb_err *err);

/* What pb_sweep_split_sets's comparison of strings misses: one key under two spellings (stages.aug.threads
 * and stages[1].threads), given two lists or a list and a value, of which the later would silently win in
 * every combination while the table shows the other's values.  Resolves the paths against FILE with the
 * fixed overrides applied.  canon (NULL, or naxes entries) receives each axis's resolved path.  0, or
 * -EINVAL with err set (the config does not load, or a key is named twice). */
int pb_sweep_check_keys(const char *file, const pb_axis *axes, int naxes, const char *const *fixed, int nfixed,
                        char (*canon)[PB_CFG_PATH_LEN], pb_err *err);

int pb_sweep(pb_multi *m);

#endif
