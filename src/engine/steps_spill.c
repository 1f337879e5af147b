/* The step record past PB_STEPS_IN_MEMORY records: written to an unlinked file in the output directory
 * during the run, so that a run of any length holds at most that many records (8192, 704 KB) in memory, and
 * mapped back (clean file pages, which the kernel can drop and re-read) when the report needs them all.
 * If the file cannot be made or written the record simply stays in memory, with one warning. */
#define _GNU_SOURCE /* O_TMPFILE */
#include "steps.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void pb_steps_spill_to(pb_steps *s, const char *dir) {
  s->spill_off = !dir || !*dir;
  if (s->spill_off) return;
  snprintf(s->spill_dir, sizeof s->spill_dir, "%s", dir);
  const char *limit = getenv("PB_DEBUG_STEPS_IN_MEMORY"); /* tests: spill after a few records */
  long n = limit ? strtol(limit, NULL, 10) : 0;
  if (n > 0) s->mem_limit = (size_t)n;
  if (s->mem_limit && s->cap > s->mem_limit && s->n == 0) { /* room made for a short run beyond the limit: give it back */
    pb_step *v = realloc(s->v, s->mem_limit * sizeof *v);
    if (v) s->v = v, s->cap = s->mem_limit;
  }
}

/* An unlinked file in the spill directory: O_TMPFILE where the file system has it, else a named file
 * removed at once.  Either way nothing is left behind, even after a crash. */
static int open_spill_file(const char *dir) {
  int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  char path[sizeof ((pb_steps *)0)->spill_dir + 32];
  snprintf(path, sizeof path, "%s/.pipebench-steps-XXXXXX", dir);
  fd = mkostemp(path, O_CLOEXEC);
  if (fd >= 0) unlink(path);
  return fd;
}

static int pwrite_all(int fd, const void *buf, size_t bytes, off_t off) {
  const char *p = buf;
  while (bytes) {
    ssize_t w = pwrite(fd, p, bytes, off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return w < 0 ? -errno : -EIO;
    p += w;
    bytes -= (size_t)w;
    off += w;
  }
  return 0;
}

static void give_up_spilling(pb_steps *s, int err) {
  fprintf(stderr, "pipebench: warning: %s: cannot write the step record out (%s); it stays in memory\n",
          s->spill_dir, strerror(-err));
  s->spill_off = true;
}

/* Under the lock: the held records go to the file and v is empty again.  0, or -errno (the file is as it
 * was, and spilling is off). */
static int spill(pb_steps *s) {
  size_t held = s->n - s->spilled;
  if (s->spill_fd < 0) s->spill_fd = open_spill_file(s->spill_dir);
  int rc = s->spill_fd < 0 ? -errno : pwrite_all(s->spill_fd, s->v, held * sizeof *s->v, (off_t)(s->spilled * sizeof *s->v));
  if (rc) {
    if (s->spill_fd >= 0 && ftruncate(s->spill_fd, (off_t)(s->spilled * sizeof *s->v))) { /* best effort */ }
    give_up_spilling(s, rc);
    return rc;
  }
  s->spilled = s->n;
  return 0;
}

int pb_steps_make_room(pb_steps *s) {
  if (s->n - s->spilled < s->cap) return 0;
  if (!s->spill_off && s->cap >= s->mem_limit && spill(s) == 0) return 0;
  pb_step *v = realloc(s->v, 2 * s->cap * sizeof *v); /* grow per step, never per sample */
  if (!v) return -ENOMEM;
  s->v = v;
  s->cap *= 2;
  return 0;
}

/* Reads the spilled records back in front of the held ones, in memory (when the file cannot be mapped). */
static int read_back(pb_steps *s) {
  size_t held = s->n - s->spilled;
  pb_step *v = malloc((s->n ? s->n : 1) * sizeof *v);
  if (!v) return -ENOMEM;
  size_t want = s->spilled * sizeof *v, got = 0;
  while (got < want) {
    ssize_t r = pread(s->spill_fd, (char *)v + got, want - got, (off_t)got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      free(v);
      return r < 0 ? -errno : -EIO;
    }
    got += (size_t)r;
  }
  memcpy(v + s->spilled, s->v, held * sizeof *v);
  free(s->v);
  s->v = v;
  s->cap = s->n ? s->n : 1;
  s->spilled = 0;
  return 0;
}

int pb_steps_finish(pb_steps *s) {
  if (s->spill_fd < 0 || s->spilled == 0) return 0;
  size_t bytes = s->n * sizeof *s->v;
  size_t held = s->n - s->spilled;
  int rc = s->spill_off ? -EIO : pwrite_all(s->spill_fd, s->v, held * sizeof *s->v, (off_t)(s->spilled * sizeof *s->v));
  void *map = rc ? MAP_FAILED : mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE, s->spill_fd, 0);
  if (map == MAP_FAILED) {
    rc = read_back(s); /* the device's timeline (GPU) rewrites records, hence a private writable map */
  } else {
    free(s->v);
    s->v = map;
    s->cap = s->n;
    s->spilled = 0;
    s->map_bytes = bytes;
  }
  close(s->spill_fd);
  s->spill_fd = -1;
  if (rc) fprintf(stderr, "pipebench: %s: cannot read the step record back: %s\n", s->spill_dir, strerror(-rc));
  return rc;
}

pb_step *pb_steps_take(pb_steps *s, size_t *map_bytes) {
  pb_step *v = s->v;
  *map_bytes = s->map_bytes;
  s->v = NULL;
  s->map_bytes = 0;
  return v;
}

void pb_steps_free_record(pb_steps *s) {
  if (s->map_bytes) munmap(s->v, s->map_bytes);
  else free(s->v);
  s->v = NULL;
  s->map_bytes = 0;
  if (s->spill_fd >= 0) close(s->spill_fd);
  s->spill_fd = -1;
}
