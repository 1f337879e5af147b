/* A run owns its output directory (issue 32): a lock while it writes there, so that two runs never mix
 * their files in one --out, and the removal of what an earlier run left that this one does not rewrite,
 * so that `analyze DIR` never reproduces an older run.  Only pipebench's own file and directory names are
 * ever removed (docs/REPORTS.md, "The output directory"); a user's own files stay. */
#ifndef PB_OUTDIR_H
#define PB_OUTDIR_H

#include "common.h"

/* The lock's file in a locked directory: flock'ed by the run, holding "<pid> <host>". */
#define PB_OUTDIR_LOCK_FILE ".pipebench.lock"

/* Takes dir's lock for this process until pb_outdir_unlock(dir) or the process ends (a second signal
 * removes the lock file too).  0; -EBUSY with err = "<dir>: in use by another run (pid N) (expected ...)"
 * when another process holds it; or -errno with err set when the lock file cannot be made.  A file
 * system without locks (ENOLCK, EOPNOTSUPP) is run on unlocked. */
int pb_outdir_lock(const char *dir, pb_err *err);
/* Releases dir's lock (no-op when this process does not hold it) and removes the lock file. */
void pb_outdir_unlock(const char *dir);
/* Every lock this process still holds (main, before it returns). */
void pb_outdir_unlock_all(void);

/* The record of what pipebench wrote in a directory it held (one name a line): every file pb_write_atomic
 * put there and every sub-run directory locked below it.  Only what it lists is ever removed. */
#define PB_OUTDIR_MANIFEST ".pipebench-files"

/* Records in dir's manifest that pipebench writes `name` there (a file or directory written another way
 * than pb_write_atomic, or by another process: an MPI job's rank-N directories). */
void pb_outdir_record(const char *dir, const char *name);

/* Removes from dir what an earlier pipebench run wrote there (its manifest), every NAME.tmp of them a killed writer left, and a lost step spill
 * file; a listed sub-run directory (repeat-N, trial-N, ...) is emptied the same way under its own lock and
 * removed when nothing of the user's is left in it.  A user's files are never listed, so never removed,
 * whatever their names.  0; or -EBUSY / -errno with err set (a subdirectory another run holds, a file that
 * cannot be removed). */
int pb_outdir_clear(const char *dir, pb_err *err);

#endif
