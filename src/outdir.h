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

/* Removes from dir pipebench's output files (report.json, trace.json, report.html, stages.csv,
 * steps.csv, ab.json, sweep.json, sweep.csv, tune.json, tuned.json, repeats.csv) whose names are not in
 * keep (NULL-terminated; NULL keeps none), every NAME.tmp of them a killed writer left, a lost step spill
 * file, and the subdirectories of an earlier multi-run command (repeat-N, trial-N, rank-N, synthetic,
 * real-cold, real-warm): each emptied of pipebench's files the same way (under its lock) and removed when
 * nothing else is left in it.  0; or -EBUSY / -errno with err set (a subdirectory another run holds, a
 * file that cannot be removed). */
int pb_outdir_clear(const char *dir, const char *const *keep, pb_err *err);

#endif
