/* pipebench init --data DIR [--preset NAME] [--out FILE] [--force]: a config for the user's own data
 * (src/cli/init.c). */
#ifndef PB_INIT_H
#define PB_INIT_H

#include <stdbool.h>

typedef struct pb_init_opts {
  const char *data_dir; /* --data: the directory (or glob, or @list) to probe */
  const char *preset;   /* --preset resnet|unet3d|cosmoflow|bert; NULL: chosen from the data */
  const char *out_file; /* --out; NULL: <directory name>.json in the current directory */
  bool force;           /* replace an existing out_file */
  bool quiet;           /* no summary of what was found */
} pb_init_opts;

/* The exit status (docs/CONTRACT.md §1); prints its own errors. */
int pb_init(const pb_init_opts *o);

#endif
