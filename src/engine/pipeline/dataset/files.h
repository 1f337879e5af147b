/* The dataset's file list (docs/CONTRACT.md §2 dataset.path), with per-epoch shuffling and sharding across ranks.
 *
 * dataset.path is one of:
 *   - a directory: walked recursively; hidden entries (names starting with '.') skipped; symlinks to files
 *     followed, symlinks to directories not (no cycles); files sorted by full path (strcmp, locale-free);
 *   - a glob (when the path does not exist as written and holds one of * ? [ {): glob(3) with GLOB_BRACE;
 *     matched directories are walked as above; the result sorted by full path;
 *   - @FILE: one path per line, in the order listed; blank lines and lines starting with '#' skipped,
 *     surrounding white space trimmed; relative paths are relative to FILE's directory; a listed directory
 *     is walked as above.
 * A relative dataset.path is relative to the current directory; the listed paths keep that form. */
#ifndef PB_FILES_H
#define PB_FILES_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "common.h"

typedef struct pb_file {
  char *path;
  uint64_t bytes;  /* size when listed (stat) */
  size_t index;    /* position in the listing's own order; lets shuffles start from it every epoch */
} pb_file;

typedef struct pb_file_list {
  pb_file *files;
  size_t count;
  size_t cap;           /* allocated slots (internal) */
  uint64_t total_bytes; /* sum of files[].bytes */
} pb_file_list;

/* Lists `path`.  0 with at least one file, or a negative errno with err set: -ENOENT for a missing path or
 * when nothing matched, -errno for an unreadable directory or list file, -EINVAL for a bad list entry.
 * *out is empty (and needs no free) on failure. */
int pb_files_list(const char *path, pb_file_list *out, pb_err *err);

void pb_file_list_free(pb_file_list *l);

/* The extension of the file's own name, without the dot ("" when it has none; a leading dot, as in a hidden
 * file's name, is not one).  Points into path. */
const char *pb_file_extension(const char *path);

/* Files a listing left out for their extension: how many, and the first few names. */
typedef struct pb_files_skipped {
  size_t count;
  char first[3][256];
} pb_files_skipped;

/* Keeps the files whose extension (after the last '.' of the file's own name, compared without case) is one
 * of exts[0..nexts): "" stands for a name with no extension, "*" for every file.  What goes is counted in
 * *skipped (may be NULL).  The listing order and indices are kept (indices renumbered from 0). */
void pb_file_list_keep_extensions(pb_file_list *l, const char *const *exts, int nexts, pb_files_skipped *skipped);

/* A dataset format's own extensions (without the dot), for pb_file_list_keep_extensions: jpeg: jpg jpeg jpe;
 * tfrecord: tfrecord tfrecords tfr record and none (ImageNet's shards are train-00000-of-01024); npy; npz;
 * raw: bin raw dat and none.  *n gets their count; NULL with 0 for a format that reads no files. */
const char *const *pb_format_extensions(int format, int *n);

struct pb_dataset_cfg;
/* The dataset's files: dataset.path listed (pb_files_list), then only the files with dataset.extensions, or
 * the format's own (an @list is taken as it is: it names its files).  *skipped (may be NULL) counts what the
 * extensions left out.  0; or a negative errno with err set, also when the extensions leave nothing (the
 * message names the extensions and a file they left out). */
int pb_dataset_list(const struct pb_dataset_cfg *d, pb_file_list *out, pb_files_skipped *skipped, pb_err *err);

/* Deep copy, e.g. to shard a freshly shuffled copy of the full list each epoch.  0 or -ENOMEM. */
int pb_file_list_clone(const pb_file_list *src, pb_file_list *dst);

/* Puts the files in the order of a permutation that depends only on (seed, epoch), not on the list's current
 * order: the same seed and epoch give the same order on every rank and every run. */
void pb_file_list_shuffle(pb_file_list *l, uint64_t seed, uint32_t epoch);

/* Keeps files rank, rank + world_size, rank + 2 world_size, ... of the current order.  A world_size below 1
 * or a rank outside [0, world_size) leaves the list unchanged (the config validates them). */
void pb_file_list_shard(pb_file_list *l, int rank, int world_size);

/* Opens a listed data file for reading (flags are added: O_DIRECT) without ever blocking in open(): with
 * O_NONBLOCK, so that a FIFO put where a data file was listed (or a device) does not wait for a writer;
 * then anything but a regular file is refused, and O_NONBLOCK is cleared again for the reads.  Returns the
 * descriptor with *st filled, or a negative errno: PB_ENOTREG when the path is not a regular file (*st then
 * says what it is, see pb_file_kind). */
#define PB_ENOTREG (-EMEDIUMTYPE)
int pb_data_file_open(const char *path, int flags, struct stat *st);
/* Up to `cap` bytes at `offset` of a regular data file (opened with pb_data_file_open: a FIFO never blocks
 * it), for the probes that read a file's head before a run; the bytes read, 0 when it cannot be read. */
size_t pb_data_file_head(const char *path, void *buf, size_t cap, uint64_t offset);
/* What a file that is not a regular file is, for its error: "a FIFO", "a directory", "a socket", ... */
const char *pb_file_kind(mode_t mode);

#endif
