#include "pagecache.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files.h"

/* mincore works on a mapping; a file is mapped a window at a time so that a huge file needs neither a huge
 * address range nor a huge residency vector (1 GiB = 256 Ki pages of 4 KiB). */
#define WINDOW_BYTES ((uint64_t)1 << 30)
/* Warming reads this much per call: large enough that the syscalls cost nothing next to the copy. */
#define READ_BYTES ((size_t)1 << 20)

static int fail(pb_err *err, const char *path, const char *what, int e) {
  pb_err_set(err, "%s: %s: %s", path, what, strerror(e));
  return -e;
}

/* As the read stage opens data files: never blocking in open() (a FIFO swapped in), regular files only. */
static int open_ro(const char *path, pb_err *err) {
  struct stat st;
  int fd = pb_data_file_open(path, 0, &st);
  if (fd == PB_ENOTREG) return pb_err_setc(err, -EINVAL, "%s: not a regular file: %s", path, pb_file_kind(st.st_mode));
  if (fd < 0) return fail(err, path, "cannot open", -fd);
  return fd;
}

static int file_size(int fd, const char *path, uint64_t *bytes, pb_err *err) {
  struct stat st;
  if (fstat(fd, &st) != 0) return fail(err, path, "cannot stat", errno);
  *bytes = (uint64_t)st.st_size;
  return 0;
}

/* Resident bytes of [off, off + len) of an open file: mincore over a mapping of that window. */
static int resident_window(int fd, const char *path, uint64_t off, uint64_t len, unsigned char *vec,
                           uint64_t page, uint64_t *resident, pb_err *err) {
  void *p = mmap(NULL, (size_t)len, PROT_READ, MAP_SHARED, fd, (off_t)off);
  if (p == MAP_FAILED) return fail(err, path, "cannot map", errno);
  int rc = mincore(p, (size_t)len, vec) == 0 ? 0 : fail(err, path, "mincore", errno);
  uint64_t pages = (len + page - 1) / page;
  for (uint64_t i = 0; !rc && i < pages; i++)
    if (vec[i] & 1) *resident += PB_MIN(page, len - i * page); /* the last page counts only the file's part */
  munmap(p, (size_t)len);
  return rc;
}

static int resident_fd(int fd, const char *path, uint64_t bytes, uint64_t *resident, pb_err *err) {
  uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  unsigned char *vec = malloc((size_t)(PB_MIN(bytes, WINDOW_BYTES) / page + 1));
  if (!vec) return fail(err, path, "residency vector", ENOMEM);
  int rc = 0;
  for (uint64_t off = 0; !rc && off < bytes; off += WINDOW_BYTES)
    rc = resident_window(fd, path, off, PB_MIN(WINDOW_BYTES, bytes - off), vec, page, resident, err);
  free(vec);
  return rc;
}

int pb_pagecache_resident_file(const char *path, uint64_t *resident_bytes, uint64_t *bytes, pb_err *err) {
  *resident_bytes = *bytes = 0;
  int fd = open_ro(path, err);
  if (fd < 0) return fd;
  int rc = file_size(fd, path, bytes, err);
  if (!rc && *bytes > 0) rc = resident_fd(fd, path, *bytes, resident_bytes, err);
  close(fd);
  return rc;
}

static int dontneed(int fd, const char *path, pb_err *err) {
  int e = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED); /* returns the error, does not set errno */
  return e ? fail(err, path, "posix_fadvise(DONTNEED)", e) : 0;
}

int pb_pagecache_evict_file(const char *path, bool *synced, pb_err *err) {
  *synced = false;
  int fd = open_ro(path, err);
  if (fd < 0) return fd;
  uint64_t bytes = 0, resident = 0;
  int rc = dontneed(fd, path, err);
  if (!rc) rc = file_size(fd, path, &bytes, err);
  if (!rc && bytes > 0) rc = resident_fd(fd, path, bytes, &resident, err);
  if (!rc && resident > 0) {
    /* Dirty pages (a dataset written moments ago) are only queued for writeback by DONTNEED, not dropped:
     * write them now and ask again.  Pages another process maps stay whatever we do. */
    *synced = true;
    rc = fdatasync(fd) == 0 ? dontneed(fd, path, err) : fail(err, path, "fdatasync", errno);
  }
  close(fd);
  return rc;
}

static int read_all(int fd, const char *path, char *buf, uint64_t *bytes_read, pb_err *err) {
  for (;;) {
    ssize_t n = read(fd, buf, READ_BYTES);
    if (n == 0) return 0;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(err, path, "cannot read", errno);
    *bytes_read += (uint64_t)n;
  }
}

int pb_pagecache_warm_file(const char *path, uint64_t *bytes_read, pb_err *err) {
  *bytes_read = 0;
  int fd = open_ro(path, err);
  if (fd < 0) return fd;
  char *buf = malloc(READ_BYTES);
  int rc = buf ? 0 : fail(err, path, "read buffer", ENOMEM);
  if (!rc) {
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED); /* a hint only: the read below is what counts */
    rc = read_all(fd, path, buf, bytes_read, err);
  }
  free(buf);
  close(fd);
  return rc;
}

/* ---------- file lists ---------- */

static void tally_skip(pb_pagecache_tally *t, const pb_err *err) {
  if (t->skipped++ == 0) t->first_error = *err;
}

static bool should_stop(pb_pagecache_stop_fn stop, pb_pagecache_tally *t) {
  if (stop && stop()) t->stopped = true;
  return t->stopped;
}

/* One file's work; on success it adds what it measured to *t (files is counted by the caller). */
typedef int (*file_op)(const pb_file *f, pb_pagecache_tally *t, pb_err *err);

/* op over every file of the list until stop says so; a file that fails is skipped, the first error kept. */
static uint64_t each_file(const pb_file_list *l, pb_pagecache_stop_fn stop, pb_pagecache_tally *t, file_op op) {
  memset(t, 0, sizeof *t);
  for (size_t i = 0; i < l->count && !should_stop(stop, t); i++) {
    pb_err err;
    if (op(&l->files[i], t, &err)) {
      tally_skip(t, &err);
      continue;
    }
    t->files++;
  }
  return t->skipped;
}

static int evict_one(const pb_file *f, pb_pagecache_tally *t, pb_err *err) {
  bool synced;
  int rc = pb_pagecache_evict_file(f->path, &synced, err);
  if (rc) return rc;
  t->bytes += f->bytes;
  t->synced += synced;
  return 0;
}

static int warm_one(const pb_file *f, pb_pagecache_tally *t, pb_err *err) {
  uint64_t read_bytes;
  int rc = pb_pagecache_warm_file(f->path, &read_bytes, err);
  if (rc) return rc;
  t->bytes += read_bytes;
  t->resident_bytes += read_bytes;
  return 0;
}

static int resident_one(const pb_file *f, pb_pagecache_tally *t, pb_err *err) {
  uint64_t resident, bytes;
  int rc = pb_pagecache_resident_file(f->path, &resident, &bytes, err);
  if (rc) return rc;
  t->bytes += bytes;
  t->resident_bytes += resident;
  return 0;
}

uint64_t pb_pagecache_evict(const pb_file_list *l, pb_pagecache_stop_fn stop, pb_pagecache_tally *t) {
  return each_file(l, stop, t, evict_one);
}

uint64_t pb_pagecache_warm(const pb_file_list *l, pb_pagecache_stop_fn stop, pb_pagecache_tally *t) {
  return each_file(l, stop, t, warm_one);
}

uint64_t pb_pagecache_resident(const pb_file_list *l, pb_pagecache_stop_fn stop, pb_pagecache_tally *t) {
  return each_file(l, stop, t, resident_one);
}

double pb_pagecache_resident_pct(const pb_pagecache_tally *t) {
  if (t->bytes == 0) return NAN; /* nothing measured, or only empty files */
  return 100.0 * (double)t->resident_bytes / (double)t->bytes;
}
