#include "outdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"

#define DIR_LEN (PB_PATH_LEN + 256) /* an output directory and a sub-run's name under it */
#define MAX_LOCKS 8                 /* a command's directory, its run's, and a subdirectory being cleared */
#define MAX_DEPTH 3                 /* tune/trial-001/repeat-2: the deepest pipebench writes */

/* ---------- the lock ---------- */

typedef struct held_lock {
  int refs;                 /* 0: a free entry */
  int fd;                   /* the flock'ed lock file; -1 where the file system has no locks */
  int cleanup_slot;         /* pb_cleanup_on_exit's, for the lock file */
  char dir[DIR_LEN];
  char file[DIR_LEN + 32];
} held_lock;

static held_lock g_locks[MAX_LOCKS];
static pthread_mutex_t g_locks_mutex = PTHREAD_MUTEX_INITIALIZER;

static held_lock *find_lock(const char *dir) {
  for (int i = 0; i < MAX_LOCKS; i++)
    if (g_locks[i].refs && strcmp(g_locks[i].dir, dir) == 0) return &g_locks[i];
  return NULL;
}

static held_lock *free_entry(void) {
  for (int i = 0; i < MAX_LOCKS; i++)
    if (!g_locks[i].refs) return &g_locks[i];
  return NULL;
}

/* Opens and flocks the lock file.  The run before us removes the file as it lets go: when that happened
 * between our open and our flock, we hold a file nobody else will open, so we start again on the file
 * that is there now.  The fd, -EBUSY when another process holds it, -ENOLCK without locks, or -errno. */
static int open_locked(const char *file) {
  for (int attempt = 0; attempt < 16; attempt++) {
    int fd = open(file, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) return -errno;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int e = errno;
      close(fd);
      if (e == EWOULDBLOCK) return -EBUSY;
      return e == ENOLCK || e == EOPNOTSUPP || e == ENOSYS || e == EINVAL ? -ENOLCK : -e;
    }
    struct stat mine, there;
    if (fstat(fd, &mine) == 0 && stat(file, &there) == 0 && mine.st_dev == there.st_dev && mine.st_ino == there.st_ino)
      return fd;
    close(fd);
  }
  return -EBUSY; /* the file keeps changing hands: someone is using the directory */
}

/* "<pid> <host>" into the lock file, for the refused run's message; a failure only costs that. */
static void write_holder(int fd) {
  char host[256] = "", text[320];
  gethostname(host, sizeof host - 1);
  int n = snprintf(text, sizeof text, "%ld %s\n", (long)getpid(), host);
  if (ftruncate(fd, 0) == 0 && pwrite(fd, text, (size_t)n, 0) < 0) {
  }
}

/* The holder as the message gives it: "pid N", "pid N on HOST" when it is another machine's (a shared
 * file system), or "pid unknown" (it has not written it yet). */
static void describe_holder(const char *file, char *out, size_t len) {
  char text[320] = "", host[256] = "", ours[256] = "";
  int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  ssize_t n = fd >= 0 ? pread(fd, text, sizeof text - 1, 0) : -1;
  if (fd >= 0) close(fd);
  text[n > 0 ? n : 0] = '\0';
  long pid = 0;
  int got = sscanf(text, "%ld %255s", &pid, host);
  gethostname(ours, sizeof ours - 1);
  if (got < 1 || pid <= 0) snprintf(out, len, "pid unknown");
  else if (got == 2 && strcmp(host, ours) != 0) snprintf(out, len, "pid %ld on %s", pid, host);
  else snprintf(out, len, "pid %ld", pid);
}

static int lock_failed(const char *dir, const char *file, int rc, pb_err *err) {
  char clean[256], holder[320];
  pb_cfg_clean(dir, 160, clean, sizeof clean);
  if (rc == -EBUSY) {
    describe_holder(file, holder, sizeof holder);
    pb_err_set(err, "%s: in use by another run (%s) (expected an output directory no other run is writing)", clean,
               holder);
    return -EBUSY;
  }
  pb_err_set(err, "%s/%s: cannot lock the output directory: %s (expected a writable directory)", clean,
             PB_OUTDIR_LOCK_FILE, strerror(-rc));
  return rc;
}

static void note_subdir(const char *dir);

static int lock_locked(const char *dir, pb_err *err) {
  held_lock *h = find_lock(dir);
  if (h) { /* this process holds it already (a command's directory named again): one more user */
    h->refs++;
    return 0;
  }
  h = free_entry();
  if (strlen(dir) >= sizeof h->dir) return lock_failed(dir, "", -ENAMETOOLONG, err);
  if (!h) {
    pb_err_set(err, "%s: cannot lock the output directory: %d locks held already (expected fewer nested runs)", dir,
               MAX_LOCKS);
    return -ENOSPC;
  }
  char file[sizeof h->file];
  snprintf(file, sizeof file, "%s/%s", dir, PB_OUTDIR_LOCK_FILE);
  int fd = open_locked(file);
  if (fd == -ENOLCK) fd = -1; /* no locks here: run unlocked rather than not at all */
  else if (fd < 0) return lock_failed(dir, file, fd, err);
  note_subdir(dir);
  *h = (held_lock){.refs = 1, .fd = fd, .cleanup_slot = fd >= 0 ? pb_cleanup_on_exit(file) : -1};
  snprintf(h->dir, sizeof h->dir, "%s", dir);
  snprintf(h->file, sizeof h->file, "%s", file);
  if (fd >= 0) write_holder(fd);
  return 0;
}

static void note_written(const char *path);

int pb_outdir_lock(const char *dir, pb_err *err) {
  pb_set_written_hook(note_written); /* from the first lock on, what pipebench writes is recorded */
  pthread_mutex_lock(&g_locks_mutex);
  int rc = lock_locked(dir, err);
  pthread_mutex_unlock(&g_locks_mutex);
  return rc;
}

/* Removed while still held: a run that opened it meanwhile finds, once it has the lock, that the file is
 * not the one there (open_locked) and starts again. */
static void release(held_lock *h) {
  if (h->fd >= 0) {
    unlink(h->file);
    close(h->fd);
  }
  pb_cleanup_forget(h->cleanup_slot);
  h->refs = 0;
}

void pb_outdir_unlock(const char *dir) {
  pthread_mutex_lock(&g_locks_mutex);
  held_lock *h = find_lock(dir);
  if (h && --h->refs == 0) release(h);
  pthread_mutex_unlock(&g_locks_mutex);
}

void pb_outdir_unlock_all(void) {
  pthread_mutex_lock(&g_locks_mutex);
  for (int i = 0; i < MAX_LOCKS; i++)
    if (g_locks[i].refs) release(&g_locks[i]);
  pthread_mutex_unlock(&g_locks_mutex);
}

/* ---------- an earlier run's files ---------- */

/* What pipebench wrote in a directory it held: one name a line (files, and the sub-run directories of a
 * multi-run command), appended as each is written (pb_write_atomic's hook) or locked.  Only these are ever
 * removed: a user's file of the same name as one of ours (a steps.csv of their own) was never written by
 * us, so it is not listed, and stays. */
#define MANIFEST_LINE 256

static void manifest_path(const char *dir, char *out, size_t len) { snprintf(out, len, "%s/%s", dir, PB_OUTDIR_MANIFEST); }

static bool manifest_has(const char *file, const char *name) {
  FILE *f = fopen(file, "re");
  bool found = false;
  char line[MANIFEST_LINE + 2];
  while (f && !found && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    found = strcmp(line, name) == 0;
  }
  if (f) fclose(f);
  return found;
}

/* Adds name to dir's manifest (once).  A failure costs only the removal of this file by a later run. */
static void manifest_add(const char *dir, const char *name) {
  char file[DIR_LEN + 32];
  if (strlen(name) >= MANIFEST_LINE || strchr(name, '\n')) return;
  manifest_path(dir, file, sizeof file);
  if (manifest_has(file, name)) return;
  FILE *f = fopen(file, "ae");
  if (!f) return;
  fprintf(f, "%s\n", name);
  fclose(f);
}

/* dir and the last component of path, split at the last '/' ("." for a bare name). */
static void split_path(const char *path, char *dir, size_t len, const char **name) {
  const char *slash = strrchr(path, '/');
  *name = slash ? slash + 1 : path;
  snprintf(dir, len, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
}

/* pb_write_atomic's hook: a file written in a directory this process holds goes into its manifest. */
static void note_written(const char *path) {
  char dir[DIR_LEN];
  const char *name;
  split_path(path, dir, sizeof dir, &name);
  pthread_mutex_lock(&g_locks_mutex);
  if (find_lock(dir)) manifest_add(dir, name);
  pthread_mutex_unlock(&g_locks_mutex);
}

void pb_outdir_record(const char *dir, const char *name) {
  pthread_mutex_lock(&g_locks_mutex);
  manifest_add(dir, name);
  pthread_mutex_unlock(&g_locks_mutex);
}

/* A directory locked below one this process holds is a sub-run's: the parent's manifest lists it. */
static void note_subdir(const char *dir) {
  char parent[DIR_LEN];
  const char *name;
  split_path(dir, parent, sizeof parent, &name);
  if (find_lock(parent)) manifest_add(parent, name);
}

/* A file of a killed writer: a step spill file (steps_spill.c) whose unlink never came, or NAME.tmp of a
 * NAME the manifest lists. */
static bool is_leftover(const char *name, const char *manifest) {
  if (strncmp(name, ".pipebench-steps-", 17) == 0) return true;
  size_t len = strlen(name);
  if (len < 5 || strcmp(name + len - 4, ".tmp") != 0) return false;
  char base[MANIFEST_LINE + 8];
  snprintf(base, sizeof base, "%.*s", (int)(len - 4), name);
  return manifest_has(manifest, base);
}

static int clear_dir(const char *dir, int depth, pb_err *err);

static int remove_failed(const char *path, int e, pb_err *err) {
  char clean[256];
  pb_err_set(err, "%s: cannot remove an earlier run's file: %s (expected a directory this run may write)",
             pb_cfg_clean(path, 200, clean, sizeof clean), strerror(e));
  return -e;
}

/* A sub-run's directory of an earlier command: emptied under its own lock (a run may be writing there
 * right now), then removed if nothing of the user's is left in it. */
static int clear_subrun(const char *path, int depth, pb_err *err) {
  int rc = pb_outdir_lock(path, err);
  if (rc) return rc;
  rc = clear_dir(path, depth + 1, err);
  pb_outdir_unlock(path);
  if (!rc && rmdir(path) != 0 && errno != ENOTEMPTY && errno != EEXIST && errno != ENOENT) rc = remove_failed(path, errno, err);
  return rc;
}

/* One listed name: removed (a directory cleared first); *stays when it is still there (a directory holding
 * files of the user's). */
static int clear_listed(const char *dir, const char *name, int depth, bool *stays, pb_err *err) {
  char path[DIR_LEN + MANIFEST_LINE + 2];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  *stays = false;
  struct stat st;
  if (lstat(path, &st) != 0) return 0; /* gone meanwhile */
  if (S_ISDIR(st.st_mode)) { /* a link is never followed: only a real directory of ours is cleared */
    int rc = depth < MAX_DEPTH ? clear_subrun(path, depth, err) : 0;
    *stays = lstat(path, &st) == 0; /* the user's files kept it */
    return rc;
  }
  if (unlink(path) != 0 && errno != ENOENT) return remove_failed(path, errno, err);
  return 0;
}

/* The killed writers' leftovers in dir. */
static int clear_leftovers(const char *dir, const char *manifest, pb_err *err) {
  DIR *d = opendir(dir);
  if (!d) return errno == ENOENT ? 0 : remove_failed(dir, errno, err);
  int rc = 0;
  for (struct dirent *e; !rc && (e = readdir(d));) {
    char path[DIR_LEN + 256];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (is_leftover(e->d_name, manifest) && unlink(path) != 0 && errno != ENOENT) rc = remove_failed(path, errno, err);
  }
  closedir(d);
  return rc;
}

static int clear_dir(const char *dir, int depth, pb_err *err) {
  char manifest[DIR_LEN + 32], kept[DIR_LEN + 40];
  manifest_path(dir, manifest, sizeof manifest);
  int rc = clear_leftovers(dir, manifest, err);
  FILE *in = rc ? NULL : fopen(manifest, "re");
  if (!in) return rc; /* nothing of ours recorded here: nothing to remove */
  snprintf(kept, sizeof kept, "%s.new", manifest);
  FILE *out = fopen(kept, "we");
  char line[MANIFEST_LINE + 2];
  while (!rc && fgets(line, sizeof line, in)) {
    line[strcspn(line, "\n")] = '\0';
    bool stays = false;
    if (!line[0] || strchr(line, '/') || strcmp(line, ".") == 0 || strcmp(line, "..") == 0) continue;
    rc = clear_listed(dir, line, depth, &stays, err);
    if (stays && out) fprintf(out, "%s\n", line);
  }
  fclose(in);
  bool empty = out && ftell(out) == 0;
  if (out && fclose(out) == 0 && !rc) rename(kept, manifest);
  else unlink(kept);
  if (!rc && empty) unlink(manifest);
  return rc;
}

int pb_outdir_clear(const char *dir, pb_err *err) { return clear_dir(dir, 0, err); }
