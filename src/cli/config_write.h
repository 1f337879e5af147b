/* Writing a config that pipebench made (init's, twin's) as the presets in configs/ are written: the top level
 * one key a line, dataset one key a line, one stage a line (wrapped at 110 columns), so that a person reads
 * and edits it. */
#ifndef PB_CONFIG_WRITE_H
#define PB_CONFIG_WRITE_H

#include <cJSON.h>
#include <stdbool.h>

/* Writes FILE whole or not at all (FILE.tmp, renamed); an existing FILE only with force.  0, or the exit
 * status with one line on stderr naming `who` (the command). */
int pb_config_write(const char *who, const char *file, const cJSON *cfg, bool force);
/* The config just written loads as any config does: 0, or PB_EXIT_RUNTIME with one line (pipebench's bug). */
int pb_config_check_written(const char *who, const char *file);

#endif
