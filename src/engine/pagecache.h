/* The dataset's files in the Linux page cache, for `pipebench ab` (docs/AB.md): drop them from the cache
 * (posix_fadvise DONTNEED), read them into it, and measure how much of them is resident (mincore over an
 * mmap of each file).
 *
 * Every function works file by file and never stops on one bad file: a file that cannot be opened, mapped
 * or read is skipped and counted, and the first such error is kept for the caller to print. */
#ifndef PB_PAGECACHE_H
#define PB_PAGECACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "common.h"
#include "files.h"

/* What one pass over a file list did. */
typedef struct pb_pagecache_tally {
  uint64_t files;            /* files handled */
  uint64_t bytes;            /* their sizes, as found now (fstat) */
  uint64_t resident_bytes;   /* pb_pagecache_resident: bytes in the page cache; warm: bytes read */
  uint64_t skipped;          /* files that could not be opened, mapped or read */
  uint64_t synced;           /* pb_pagecache_evict: files that needed fdatasync before they would go */
  bool stopped;              /* the stop callback asked to stop before the end of the list */
  pb_err first_error;        /* the first skipped file's error ("" when none) */
} pb_pagecache_tally;

/* Called between files; true stops the pass (Ctrl-C).  NULL: never stop. */
typedef bool (*pb_pagecache_stop_fn)(void);

/* ---------- one file: 0, or a negative errno with err set to "<path>: <what>" ---------- */

/* Asks the kernel to drop the file's cached pages (POSIX_FADV_DONTNEED).  The kernel drops only clean pages
 * that no process maps: when pages stay, the file is fdatasync'ed (dirty pages of a freshly written dataset
 * are the usual reason; fdatasync needs no write access on Linux) and asked again.  *synced says whether
 * that second try was needed. */
int pb_pagecache_evict_file(const char *path, bool *synced, pb_err *err);

/* Reads the whole file once (after POSIX_FADV_WILLNEED), so that its pages are cached when memory allows.
 * *bytes_read receives what was read. */
int pb_pagecache_warm_file(const char *path, uint64_t *bytes_read, pb_err *err);

/* Bytes of the file now in the page cache (mincore over a read-only shared mapping, which does not fault
 * any page in) and its size.  An empty file is 0 of 0. */
int pb_pagecache_resident_file(const char *path, uint64_t *resident_bytes, uint64_t *bytes, pb_err *err);

/* ---------- a file list: fills *t; returns the number of skipped files ---------- */

uint64_t pb_pagecache_evict(const pb_file_list *l, pb_pagecache_stop_fn stop, pb_pagecache_tally *t);
uint64_t pb_pagecache_warm(const pb_file_list *l, pb_pagecache_stop_fn stop, pb_pagecache_tally *t);
uint64_t pb_pagecache_resident(const pb_file_list *l, pb_pagecache_stop_fn stop, pb_pagecache_tally *t);

/* resident_bytes / bytes x 100 of a resident tally: NAN when no byte could be measured
 * (every file skipped, or only empty files). */
double pb_pagecache_resident_pct(const pb_pagecache_tally *t);

#endif
