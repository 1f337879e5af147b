#include "files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"

/* A name in a one-line message: control bytes (a newline, a terminal escape) as '?', as config messages
 * show the user's strings, and cut short with "..." past SHOWN_BYTES. */
#define SHOWN_BYTES 400
typedef struct shown_name {
  char text[SHOWN_BYTES + 4];
} shown_name;

static const char *shown(const char *name, shown_name *buf) {
  return pb_cfg_clean(name, SHOWN_BYTES, buf->text, sizeof buf->text);
}

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

/* Every directory walked so far (an open-addressing set of dev/ino): a directory reached again through
 * another link (a link to a sibling, two links to one shard directory) is walked once, so no file is
 * listed twice and link chains that branch and rejoin cannot blow up. */
typedef struct dir_id {
  dev_t dev;
  ino_t ino;
  bool used;
} dir_id;

typedef struct walk_ctx {
  pb_file_list *l;
  pb_err *err;
  dir_id *seen;
  size_t nseen, cap; /* cap: a power of two, or 0 */
  char **links;      /* symlinked directories met, walked after the real tree (see walk_links) */
  size_t nlinks, links_cap;
} walk_ctx;

static size_t dir_hash(dev_t dev, ino_t ino, size_t cap) {
  uint64_t h = ((uint64_t)dev * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)ino * 0xC2B2AE3D27D4EB4Full);
  return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

static bool seen_insert(walk_ctx *w, dev_t dev, ino_t ino, bool *was_there);

static int seen_grow(walk_ctx *w) {
  size_t cap = w->cap ? 2 * w->cap : 64;
  dir_id *old = w->seen;
  size_t old_cap = w->cap;
  w->seen = calloc(cap, sizeof *w->seen);
  if (!w->seen) {
    w->seen = old;
    return -ENOMEM;
  }
  w->cap = cap;
  w->nseen = 0;
  bool dup;
  for (size_t i = 0; i < old_cap; i++)
    if (old[i].used) seen_insert(w, old[i].dev, old[i].ino, &dup);
  free(old);
  return 0;
}

/* Adds dev/ino; *was_there when it already was.  False only when out of memory. */
static bool seen_insert(walk_ctx *w, dev_t dev, ino_t ino, bool *was_there) {
  *was_there = false;
  if ((w->nseen + 1) * 2 > w->cap && seen_grow(w)) return false;
  for (size_t i = dir_hash(dev, ino, w->cap);; i = (i + 1) & (w->cap - 1)) {
    if (!w->seen[i].used) {
      w->seen[i] = (dir_id){.dev = dev, .ino = ino, .used = true};
      w->nseen++;
      return true;
    }
    if (w->seen[i].dev == dev && w->seen[i].ino == ino) return *was_there = true;
  }
}

static int walk_dir(walk_ctx *w, const char *dir, const struct stat *st);

static int defer_link(walk_ctx *w, char *path) {
  if (w->nlinks == w->links_cap) {
    size_t cap = w->links_cap ? 2 * w->links_cap : 16;
    char **links = realloc(w->links, cap * sizeof *links);
    if (!links) {
      free(path);
      return -ENOMEM;
    }
    w->links = links, w->links_cap = cap;
  }
  w->links[w->nlinks++] = path;
  return 0;
}

/* One directory entry: a file is added, a real directory walked; a symlinked directory is kept for later
 * (walk_links).  A link that leads nowhere (dangling, or a loop of links) is listed like a file, so the
 * read stage reports it as an error on that path (counted, and fatal with on_error fail) instead of losing
 * it silently.  Entries that vanished since readdir, devices, sockets and fifos are skipped. */
static int walk_entry(walk_ctx *w, char *path) {
  struct stat lst, st;
  if (lstat(path, &lst) != 0) {
    if (errno != ENOENT) return list_push(w->l, path, 0); /* e.g. ENAMETOOLONG: the reader says which */
    free(path); /* gone since readdir */
    return 0;
  }
  if (stat(path, &st) != 0) {
    if (S_ISLNK(lst.st_mode)) return list_push(w->l, path, 0); /* dangling or ELOOP: the reader says which */
    free(path);
    return 0;
  }
  if (S_ISREG(st.st_mode)) return list_push(w->l, path, (uint64_t)st.st_size);
  if (S_ISDIR(st.st_mode) && S_ISLNK(lst.st_mode)) return defer_link(w, path);
  int rc = S_ISDIR(st.st_mode) ? walk_dir(w, path, &st) : 0;
  free(path);
  return rc;
}

static int walk_dir(walk_ctx *w, const char *dir, const struct stat *st) {
  bool again;
  if (!seen_insert(w, st->st_dev, st->st_ino, &again)) return -ENOMEM;
  if (again) return 0; /* reached before through another path: its files are listed already */
  DIR *d = opendir(dir);
  if (!d) {
    int e = errno;
    shown_name n;
    pb_err_set(w->err, "%s: cannot open directory: %s (expected a readable directory)", shown(dir, &n), strerror(e));
    return -e;
  }
  int rc = 0;
  struct dirent *ent;
  while (rc == 0 && (ent = readdir(d)) != NULL) {
    if (ent->d_name[0] == '.') continue; /* hidden files and directories, and . and .. */
    char *path = join_path(dir, ent->d_name);
    rc = path ? walk_entry(w, path) : -ENOMEM;
  }
  closedir(d);
  return rc;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A symlinked directory that contains the link itself: following it would never end. */
static int check_cycle(walk_ctx *w, const char *link) {
  char *target = realpath(link, NULL), *slash = strrchr(link, '/'), *parent = NULL;
  if (slash) {
    char *dir = strndup(link, (size_t)(slash - link) + (slash == link));
    parent = dir ? realpath(dir, NULL) : NULL;
    free(dir);
  } else {
    parent = realpath(".", NULL);
  }
  size_t n = target ? strlen(target) : 0;
  bool cycle = target && parent && strncmp(parent, target, n) == 0 && (parent[n] == '\0' || parent[n] == '/' || n == 1);
  shown_name n1, n2;
  int rc = cycle ? pb_err_set(w->err, "%s: symlink loop: it leads back to %s (expected a directory tree without cycles)",
                              shown(link, &n1), shown(target, &n2))
                 : 0;
  free(target);
  free(parent);
  return rc;
}

/* The symlinked directories, after the real tree: a directory reachable by its real path is listed under
 * it whatever readdir's order, and a link adds only what nothing else reaches (each directory is walked
 * once).  Taken in name order, links found inside them too, so the listing is deterministic.  Frees the
 * walk's state; rc is the walk's result so far (nothing more is walked after an error). */
static int walk_links(walk_ctx *w, int rc) {
  for (size_t i = 0; rc == 0 && i < w->nlinks; i++) {
    qsort(w->links + i, w->nlinks - i, sizeof *w->links, cmp_str);
    struct stat st;
    rc = check_cycle(w, w->links[i]);
    if (!rc && stat(w->links[i], &st) == 0 && S_ISDIR(st.st_mode)) rc = walk_dir(w, w->links[i], &st);
  }
  for (size_t i = 0; i < w->nlinks; i++) free(w->links[i]);
  free(w->links);
  free(w->seen);
  return rc;
}

static int cmp_path(const void *a, const void *b) {
  return strcmp(((const pb_file *)a)->path, ((const pb_file *)b)->path);
}

/* A directory's files come sorted by full path wherever it is named (dataset.path, a glob, a list line). */
static int walk_sorted(pb_file_list *l, const char *dir, const struct stat *st, pb_err *err) {
  size_t first = l->count;
  walk_ctx w = {.l = l, .err = err};
  int rc = walk_links(&w, walk_dir(&w, dir, st));
  if (rc == 0 && l->count > first) qsort(l->files + first, l->count - first, sizeof *l->files, cmp_path);
  return rc;
}

/* A path named explicitly (the dataset path, a glob match, a list entry): a file or a directory to walk. */
static int add_path(pb_file_list *l, const char *path, pb_err *err) {
  struct stat st;
  shown_name n;
  if (stat(path, &st) != 0) {
    int e = errno;
    pb_err_set(err, "%s: %s (expected an existing file or directory)", shown(path, &n), strerror(e));
    return -e;
  }
  if (S_ISDIR(st.st_mode)) return walk_sorted(l, path, &st, err);
  if (!S_ISREG(st.st_mode))
    return pb_err_set(err, "%s: not a regular file (expected a data file or a directory)", shown(path, &n));
  char *copy = strdup(path);
  return copy ? list_push(l, copy, (uint64_t)st.st_size) : -ENOMEM;
}

static int add_glob(pb_file_list *l, const char *pattern, pb_err *err) {
  glob_t g;
  int grc = glob(pattern, GLOB_BRACE | GLOB_TILDE, NULL, &g), rc = 0;
  shown_name n;
  if (grc == GLOB_NOMATCH) {
    pb_err_set(err, "%s: no files match this pattern (expected at least one)", shown(pattern, &n));
    rc = -ENOENT;
  } else if (grc != 0) {
    pb_err_set(err, "%s: glob failed (expected a readable pattern)", shown(pattern, &n));
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
    shown_name n;
    snprintf(inner, sizeof inner, "%s", err->msg);
    pb_err_set(err, "%s: line %d: %s", shown(list_path, &n), line_no, inner);
  }
  free(path);
  return rc;
}

static int add_list_file(pb_file_list *l, const char *list_path, pb_err *err) {
  FILE *f = fopen(list_path, "r");
  if (!f) {
    int e = errno;
    shown_name n;
    pb_err_set(err, "%s: cannot read the file list: %s (expected a readable file, one path per line)",
               shown(list_path, &n), strerror(e));
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
    shown_name n;
    pb_err_set(err, "%s: no files found (expected at least one non-hidden data file)", shown(path, &n));
    rc = -ENOENT;
  }
  if (rc < 0) {
    pb_file_list_free(out);
    return rc;
  }
  for (size_t i = 0; i < out->count; i++) out->files[i].index = i;
  return 0;
}

const char *pb_file_extension(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char *dot = strrchr(base, '.');
  return dot && dot != base ? dot + 1 : "";
}

static bool extension_kept(const char *path, const char *const *exts, int nexts) {
  const char *ext = pb_file_extension(path);
  for (int i = 0; i < nexts; i++)
    if (strcmp(exts[i], "*") == 0 || strcasecmp(exts[i], ext) == 0) return true;
  return false;
}

void pb_file_list_keep_extensions(pb_file_list *l, const char *const *exts, int nexts, pb_files_skipped *skipped) {
  size_t kept = 0;
  l->total_bytes = 0;
  for (size_t i = 0; i < l->count; i++) {
    pb_file f = l->files[i];
    if (!extension_kept(f.path, exts, nexts)) {
      if (skipped && skipped->count < 3) snprintf(skipped->first[skipped->count], 256, "%.255s", f.path);
      if (skipped) skipped->count++;
      free(f.path);
      continue;
    }
    f.index = kept;
    l->files[kept++] = f;
    l->total_bytes += f.bytes;
  }
  l->count = kept;
}

const char *const *pb_format_extensions(int format, int *n) {
  static const char *const jpeg[] = {"jpg", "jpeg", "jpe"}, *const tfrecord[] = {"tfrecord", "tfrecords", "tfr",
                                                                                 "record", ""};
  static const char *const npy[] = {"npy"}, *const npz[] = {"npz"}, *const raw[] = {"bin", "raw", "dat", ""};
  switch (format) {
    case PB_FMT_JPEG:
      return *n = (int)PB_ARRAY_LEN(jpeg), jpeg;
    case PB_FMT_TFRECORD:
      return *n = (int)PB_ARRAY_LEN(tfrecord), tfrecord;
    case PB_FMT_NPY:
      return *n = (int)PB_ARRAY_LEN(npy), npy;
    case PB_FMT_NPZ:
      return *n = (int)PB_ARRAY_LEN(npz), npz;
    case PB_FMT_RAW:
      return *n = (int)PB_ARRAY_LEN(raw), raw;
    default:
      return *n = 0, NULL;
  }
}

/* The extensions the dataset reads: its own list, else its format's.  Returns how many. */
static int dataset_extensions(const pb_dataset_cfg *d, const char **exts) {
  if (d->nextensions) {
    for (int i = 0; i < d->nextensions; i++) exts[i] = d->extensions[i];
    return d->nextensions;
  }
  int n = 0;
  const char *const *own = pb_format_extensions((int)d->format, &n);
  for (int i = 0; i < n && i < PB_MAX_EXTENSIONS; i++) exts[i] = own[i];
  return PB_MIN(n, PB_MAX_EXTENSIONS);
}

/* ".jpg, .jpeg or .jpe" ("no extension" for ""). */
static void join_extensions(const char **exts, int n, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && used < len; i++) {
    const char *sep = i == 0 ? "" : i == n - 1 ? " or " : ", ";
    used += (size_t)snprintf(buf + used, len - used, "%s%s%s", sep, exts[i][0] ? "." : "",
                             exts[i][0] ? exts[i] : "no extension");
  }
}

int pb_dataset_list(const pb_dataset_cfg *d, pb_file_list *out, pb_files_skipped *skipped, pb_err *err) {
  pb_files_skipped none;
  if (!skipped) skipped = &none;
  memset(skipped, 0, sizeof *skipped);
  int rc = pb_files_list(d->path, out, err);
  const char *exts[PB_MAX_EXTENSIONS];
  int n = dataset_extensions(d, exts);
  if (rc || d->path[0] == '@' || n == 0) return rc;
  size_t listed = out->count;
  pb_file_list_keep_extensions(out, exts, n, skipped);
  if (out->count) return 0;
  char list[256];
  shown_name p, f;
  join_extensions(exts, n, list, sizeof list);
  pb_err_set(err,
             "%s: none of its %zu files has the extension of dataset.format %s (%s), e.g. %s (expected such "
             "files, or dataset.extensions naming theirs)",
             shown(d->path, &p), listed, pb_format_name(d->format), list, shown(skipped->first[0], &f));
  pb_file_list_free(out);
  return -ENOENT;
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

/* ---- opening a data file ------------------------------------------------------------------------------ */

size_t pb_data_file_head(const char *path, void *buf, size_t cap, uint64_t offset) {
  struct stat st;
  int fd = pb_data_file_open(path, 0, &st);
  if (fd < 0) return 0;
  ssize_t n = pread(fd, buf, cap, (off_t)offset);
  close(fd);
  return n > 0 ? (size_t)n : 0;
}

const char *pb_file_kind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return S_ISREG(mode) ? "a regular file" : "of an unknown kind";
}

int pb_data_file_open(const char *path, int flags, struct stat *st) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | flags);
  if (fd < 0) return -errno;
  int rc = fstat(fd, st) != 0 ? -errno : !S_ISREG(st->st_mode) ? PB_ENOTREG : 0;
  int fl = rc ? 0 : fcntl(fd, F_GETFL);
  if (!rc && (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0)) rc = -errno;
  if (rc) close(fd);
  return rc ? rc : fd;
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
