#include "files.h"

#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- building the list --------------------------------------------------------------------------------- */

/* Takes ownership of `path`. */
static int list_push(pb_file_list *l, char *path, uint64_t bytes) {
  if (l->count == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 64;
    pb_file *files = realloc(l->files, cap * sizeof *files);
    if (!files) {
      free(path);
      return -ENOMEM;
    }
    l->files = files;
    l->cap = cap;
  }
  l->files[l->count++] = (pb_file){.path = path, .bytes = bytes};
  l->total_bytes += bytes;
  return 0;
}

static char *join_path(const char *dir, const char *name) {
  size_t n = strlen(dir);
  const char *sep = (n > 0 && dir[n - 1] == '/') ? "" : "/";
  size_t bytes = n + strlen(sep) + strlen(name) + 1;
  char *out = malloc(bytes);
  if (out) snprintf(out, bytes, "%s%s%s", dir, sep, name);
  return out;
}

/* The directories from the walk's root down to the one being read: a symlink that leads back to one of
 * them is a cycle. */
typedef struct walk_up {
  dev_t dev;
  ino_t ino;
  const char *path;
  const struct walk_up *parent;
} walk_up;

static int walk_dir(pb_file_list *l, const char *dir, const struct stat *st, const walk_up *up, pb_err *err);

static const walk_up *find_ancestor(const walk_up *up, const struct stat *st) {
  for (; up; up = up->parent)
    if (up->dev == st->st_dev && up->ino == st->st_ino) return up;
  return NULL;
}

/* One directory entry: a file is added, a directory walked (symlinked ones too: datasets are often
 * assembled from links to shards elsewhere).  A symlink back to a directory above it is a cycle: refused.
 * A link that leads nowhere (dangling, or a loop of links) is listed like a file, so the read stage reports
 * it as an error on that path (counted, and fatal with on_error fail) instead of losing it silently.
 * Entries that vanished since readdir, devices, sockets and fifos are skipped. */
static int walk_entry(pb_file_list *l, char *path, const walk_up *up, pb_err *err) {
  struct stat lst, st;
  if (lstat(path, &lst) != 0) { /* gone since readdir */
    free(path);
    return 0;
  }
  if (stat(path, &st) != 0) {
    if (S_ISLNK(lst.st_mode)) return list_push(l, path, 0); /* dangling or ELOOP: the reader says which */
    free(path);
    return 0;
  }
  if (S_ISREG(st.st_mode)) return list_push(l, path, (uint64_t)st.st_size);
  int rc = 0;
  if (S_ISDIR(st.st_mode)) {
    const walk_up *loop = find_ancestor(up, &st);
    if (loop)
      rc = pb_err_set(err, "%s: symlink loop: it leads back to %s (expected a directory tree without cycles)", path,
                      loop->path);
    else
      rc = walk_dir(l, path, &st, up, err);
  }
  free(path);
  return rc;
}

static int walk_dir(pb_file_list *l, const char *dir, const struct stat *st, const walk_up *up, pb_err *err) {
  DIR *d = opendir(dir);
  if (!d) {
    int e = errno;
    pb_err_set(err, "%s: cannot open directory: %s (expected a readable directory)", dir, strerror(e));
    return -e;
  }
  walk_up here = {.dev = st->st_dev, .ino = st->st_ino, .path = dir, .parent = up};
  int rc = 0;
  struct dirent *ent;
  while (rc == 0 && (ent = readdir(d)) != NULL) {
    if (ent->d_name[0] == '.') continue; /* hidden files and directories, and . and .. */
    char *path = join_path(dir, ent->d_name);
    rc = path ? walk_entry(l, path, &here, err) : -ENOMEM;
  }
  closedir(d);
  return rc;
}

static int cmp_path(const void *a, const void *b) {
  return strcmp(((const pb_file *)a)->path, ((const pb_file *)b)->path);
}

/* A directory's files come sorted by full path wherever it is named (dataset.path, a glob, a list line). */
static int walk_sorted(pb_file_list *l, const char *dir, const struct stat *st, pb_err *err) {
  size_t first = l->count;
  int rc = walk_dir(l, dir, st, NULL, err);
  if (rc == 0 && l->count > first) qsort(l->files + first, l->count - first, sizeof *l->files, cmp_path);
  return rc;
}

/* A path named explicitly (the dataset path, a glob match, a list entry): a file or a directory to walk. */
static int add_path(pb_file_list *l, const char *path, pb_err *err) {
  struct stat st;
  if (stat(path, &st) != 0) {
    int e = errno;
    pb_err_set(err, "%s: %s (expected an existing file or directory)", path, strerror(e));
    return -e;
  }
  if (S_ISDIR(st.st_mode)) return walk_sorted(l, path, &st, err);
  if (!S_ISREG(st.st_mode))
    return pb_err_set(err, "%s: not a regular file (expected a data file or a directory)", path);
  char *copy = strdup(path);
  return copy ? list_push(l, copy, (uint64_t)st.st_size) : -ENOMEM;
}

static int add_glob(pb_file_list *l, const char *pattern, pb_err *err) {
  glob_t g;
  int grc = glob(pattern, GLOB_BRACE | GLOB_TILDE, NULL, &g), rc = 0;
  if (grc == GLOB_NOMATCH) {
    pb_err_set(err, "%s: no files match this pattern (expected at least one)", pattern);
    rc = -ENOENT;
  } else if (grc != 0) {
    pb_err_set(err, "%s: glob failed (expected a readable pattern)", pattern);
    rc = grc == GLOB_NOSPACE ? -ENOMEM : -EIO;
  }
  for (size_t i = 0; rc == 0 && i < g.gl_pathc; i++) rc = add_path(l, g.gl_pathv[i], err);
  globfree(&g);
  return rc;
}

/* ---- @FILE lists --------------------------------------------------------------------------------------- */

/* The line without surrounding white space (in place); NULL for a blank or comment line. */
static char *list_line(char *line) {
  while (*line == ' ' || *line == '\t') line++;
  size_t n = strlen(line);
  while (n > 0 && strchr(" \t\r\n", line[n - 1])) line[--n] = '\0';
  return (n == 0 || line[0] == '#') ? NULL : line;
}

/* `entry` as a path usable from the current directory: relative entries are relative to the list's dir. */
static char *resolve_entry(const char *list_path, const char *entry) {
  const char *slash = strrchr(list_path, '/');
  if (entry[0] == '/' || !slash) return strdup(entry);
  size_t dir_bytes = (size_t)(slash - list_path) + 1, bytes = dir_bytes + strlen(entry) + 1;
  char *out = malloc(bytes);
  if (out) snprintf(out, bytes, "%.*s%s", (int)dir_bytes, list_path, entry);
  return out;
}

static int add_list_entry(pb_file_list *l, const char *list_path, int line_no, const char *entry, pb_err *err) {
  char *path = resolve_entry(list_path, entry);
  if (!path) return -ENOMEM;
  int rc = add_path(l, path, err);
  if (rc < 0 && err) { /* prefix the list's line so the user finds the bad entry */
    char inner[sizeof err->msg];
    snprintf(inner, sizeof inner, "%s", err->msg);
    pb_err_set(err, "%s: line %d: %s", list_path, line_no, inner);
  }
  free(path);
  return rc;
}

static int add_list_file(pb_file_list *l, const char *list_path, pb_err *err) {
  FILE *f = fopen(list_path, "r");
  if (!f) {
    int e = errno;
    pb_err_set(err, "%s: cannot read the file list: %s (expected a readable file, one path per line)", list_path,
               strerror(e));
    return -e;
  }
  char *buf = NULL, *entry;
  size_t cap = 0;
  int rc = 0;
  for (int line_no = 1; rc == 0 && getline(&buf, &cap, f) >= 0; line_no++)
    if ((entry = list_line(buf)) != NULL) rc = add_list_entry(l, list_path, line_no, entry, err);
  free(buf);
  fclose(f);
  return rc;
}

/* ---- pb_files_list --------------------------------------------------------------------------------------- */

static int cmp_index(const void *a, const void *b) {
  size_t x = ((const pb_file *)a)->index, y = ((const pb_file *)b)->index;
  return (x > y) - (x < y);
}

static bool has_glob_chars(const char *path) { return strpbrk(path, "*?[{") != NULL; }

/* Fills the list from `path`, in its final order. */
static int collect(const char *path, pb_file_list *l, pb_err *err) {
  struct stat st;
  if (path[0] == '@') return add_list_file(l, path + 1, err);
  if (stat(path, &st) == 0 || !has_glob_chars(path)) return add_path(l, path, err);
  int rc = add_glob(l, path, err);
  /* brace alternatives come out in pattern order, and walked directories after their glob match: re-sort */
  if (rc == 0 && l->count > 0) qsort(l->files, l->count, sizeof *l->files, cmp_path);
  return rc;
}

int pb_files_list(const char *path, pb_file_list *out, pb_err *err) {
  *out = (pb_file_list){0};
  int rc = collect(path, out, err);
  if (rc == 0 && out->count == 0) {
    pb_err_set(err, "%s: no files found (expected at least one non-hidden data file)", path);
    rc = -ENOENT;
  }
  if (rc < 0) {
    pb_file_list_free(out);
    return rc;
  }
  for (size_t i = 0; i < out->count; i++) out->files[i].index = i;
  return 0;
}

void pb_file_list_free(pb_file_list *l) {
  for (size_t i = 0; i < l->count; i++) free(l->files[i].path);
  free(l->files);
  *l = (pb_file_list){0};
}

int pb_file_list_clone(const pb_file_list *src, pb_file_list *dst) {
  *dst = (pb_file_list){0};
  for (size_t i = 0; i < src->count; i++) {
    char *path = strdup(src->files[i].path);
    if (!path || list_push(dst, path, src->files[i].bytes) != 0) {
      pb_file_list_free(dst);
      return -ENOMEM;
    }
    dst->files[i].index = src->files[i].index;
  }
  return 0;
}

/* ---- shuffle and shard --------------------------------------------------------------------------------- */

/* Uniform in [0, n) without modulo bias (Lemire's multiply-shift with rejection). */
static uint64_t rng_below(pb_rng *r, uint64_t n) {
  __uint128_t m = (__uint128_t)pb_rng_next(r) * n;
  uint64_t threshold = (0 - n) % n;
  while ((uint64_t)m < threshold) m = (__uint128_t)pb_rng_next(r) * n;
  return (uint64_t)(m >> 64);
}

void pb_file_list_shuffle(pb_file_list *l, uint64_t seed, uint32_t epoch) {
  pb_rng r;
  /* Start from the listing order so the result does not depend on earlier shuffles; a distinct stream per
   * epoch (the golden-ratio multiple spreads consecutive epochs apart before splitmix seeding). */
  if (l->count > 0) qsort(l->files, l->count, sizeof *l->files, cmp_index);
  pb_rng_seed(&r, seed ^ (0x9e3779b97f4a7c15ULL * ((uint64_t)epoch + 1)));
  for (size_t i = l->count; i > 1; i--) {
    size_t j = (size_t)rng_below(&r, i);
    pb_file tmp = l->files[i - 1];
    l->files[i - 1] = l->files[j];
    l->files[j] = tmp;
  }
}

void pb_file_list_shard(pb_file_list *l, int rank, int world_size) {
  if (world_size < 1 || rank < 0 || rank >= world_size) return;
  size_t kept = 0;
  l->total_bytes = 0;
  for (size_t i = 0; i < l->count; i++) {
    if (i % (size_t)world_size != (size_t)rank) {
      free(l->files[i].path);
      continue;
    }
    l->files[kept++] = l->files[i];
    l->total_bytes += l->files[i].bytes;
  }
  l->count = kept;
}
