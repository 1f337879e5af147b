/* machine.c: usable cores (affinity, cgroup quota) and CPU taken by others (/proc/stat).  See machine.h.
 *
 * Everything is read through small fixed buffers: a line that does not fit is skipped whole, a path that
 * does not fit is not read, and a file that cannot be opened counts as absent. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT, CPU_ALLOC */
#include "machine.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { PATH_BYTES = 1024, LINE_BYTES = 4096 };

/* ---------- files ---------- */

/* Opens root+path for reading.  O_NONBLOCK so that a FIFO in a fake tree cannot block us; it changes
 * nothing for regular files, /proc or /sys. */
static FILE *open_at(const char *root, const char *path) {
  char full[2 * PATH_BYTES];
  if (snprintf(full, sizeof full, "%s%s", root, path) >= (int)sizeof full) return NULL;
  int fd = open(full, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return NULL;
  FILE *f = fdopen(fd, "r");
  if (!f) close(fd);
  return f;
}

/* The next line without its '\n'; false at the end of the file.  A line longer than the buffer is read to
 * its end and comes back empty: every line we parse is short, and a cut one could parse as another. */
static bool read_line(FILE *f, char *buf, size_t n) {
  if (!fgets(buf, (int)n, f)) return false;
  size_t len = strlen(buf);
  if (len && buf[len - 1] == '\n') {
    buf[len - 1] = '\0';
    return true;
  }
  if (len + 1 < n) return true; /* the last line, without '\n' */
  int ch;
  while ((ch = getc(f)) != EOF && ch != '\n') {}
  buf[0] = '\0';
  return true;
}

/* The first line of dir/name into buf ("" for an empty file); false when the file cannot be opened. */
static bool read_first_line(const char *dir, const char *name, char *buf, size_t n) {
  char path[PATH_BYTES];
  if (snprintf(path, sizeof path, "/%s", name) >= (int)sizeof path) return false;
  FILE *f = open_at(dir, path);
  if (!f) return false;
  if (!read_line(f, buf, n)) buf[0] = '\0';
  fclose(f);
  return true;
}

/* A decimal integer at *p (after spaces), with nothing but a space or the end after it; moves *p past it. */
static bool next_int(const char **p, long long *v) {
  while (**p == ' ' || **p == '\t') (*p)++;
  if (!isdigit((unsigned char)**p) && **p != '-') return false;
  char *end;
  errno = 0;
  *v = strtoll(*p, &end, 10);
  if (end == *p || errno || (*end && *end != ' ' && *end != '\t')) return false;
  *p = end;
  return true;
}

static bool only_spaces(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\n') p++;
  return *p == '\0';
}

/* Whether the comma-separated list holds tok as a whole entry ("cpu" is in "rw,cpu,cpuacct", not in
 * "rw,cpuset"). */
static bool has_token(const char *list, const char *tok) {
  size_t n = strlen(tok);
  for (const char *p = list; p; p = strchr(p, ',')) {
    if (*p == ',') p++;
    if (strncmp(p, tok, n) == 0 && (p[n] == ',' || p[n] == '\0')) return true;
  }
  return false;
}

/* mountinfo writes a space, tab, newline or backslash in a path as \ooo (octal). */
static void unescape_octal(char *s) {
  char *w = s;
  for (const char *r = s; *r;) {
    if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' &&
        r[3] <= '7') {
      *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
      r += 4;
    } else {
      *w++ = *r++;
    }
  }
  *w = '\0';
}

static void strip_trailing_slashes(char *s) {
  size_t n = strlen(s);
  while (n && s[n - 1] == '/') s[--n] = '\0';
}

/* ---------- where the cgroup is ---------- */

/* One cgroup hierarchy as this process sees it. */
typedef struct hierarchy {
  int version;               /* 1 or 2 */
  char mount[PATH_BYTES];    /* where it is mounted, without a trailing '/' ("" for "/") */
  char mount_root[PATH_BYTES]; /* the cgroup that is the mount's root (mountinfo's 4th field) */
  char cgroup[PATH_BYTES];   /* this process's cgroup under the mount: "" or "/a/b" */
} hierarchy;

/* The fields of one mountinfo line ("ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE
 * SUPEROPTS"), pointing into the line (which is cut up); false when the line is not of that shape. */
typedef struct mount_fields {
  char *root, *mount, *fstype, *superopts;
} mount_fields;

static bool split_mountinfo(char *line, mount_fields *m) {
  char *sep = strstr(line, " - ");
  if (!sep) return false;
  *sep = '\0';
  char *save = NULL, *tok = strtok_r(line, " ", &save);
  for (int i = 0; tok && i < 3; i++) tok = strtok_r(NULL, " ", &save);
  m->root = tok;
  m->mount = tok ? strtok_r(NULL, " ", &save) : NULL;
  m->fstype = strtok_r(sep + 3, " ", &save);
  char *source = m->fstype ? strtok_r(NULL, " ", &save) : NULL;
  m->superopts = source ? strtok_r(NULL, " ", &save) : NULL;
  return m->root && m->mount && m->superopts;
}

static bool is_wanted_mount(const mount_fields *m, int version) {
  if (version == 2) return strcmp(m->fstype, "cgroup2") == 0;
  return strcmp(m->fstype, "cgroup") == 0 && has_token(m->superopts, "cpu");
}

/* The first mount of the version's hierarchy (v1: the one holding the cpu controller). */
static bool find_mount(const char *root, hierarchy *h) {
  FILE *f = open_at(root, "/proc/self/mountinfo");
  if (!f) return false;
  char line[LINE_BYTES];
  bool found = false;
  mount_fields m;
  while (!found && read_line(f, line, sizeof line)) {
    if (!split_mountinfo(line, &m) || !is_wanted_mount(&m, h->version)) continue;
    unescape_octal(m.root);
    unescape_octal(m.mount);
    found = strlen(m.mount) < PATH_BYTES && strlen(m.root) < PATH_BYTES;
    if (found) {
      strcpy(h->mount, m.mount);
      strcpy(h->mount_root, m.root);
      strip_trailing_slashes(h->mount);
    }
  }
  fclose(f);
  return found;
}

/* Whether a /proc/self/cgroup line ("ID:CONTROLLERS:PATH") is the version's; *path points into it. */
static bool is_wanted_cgroup(char *line, int version, char **path) {
  char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
  if (!c2) return false;
  *c1 = *c2 = '\0';
  *path = c2 + 1;
  if (version == 2) return strcmp(line, "0") == 0 && c1[1] == '\0';
  return strcmp(line, "0") != 0 && has_token(c1 + 1, "cpu");
}

static bool find_cgroup(const char *root, hierarchy *h) {
  FILE *f = open_at(root, "/proc/self/cgroup");
  if (!f) return false;
  char line[LINE_BYTES], *path;
  bool found = false;
  while (!found && read_line(f, line, sizeof line))
    found = is_wanted_cgroup(line, h->version, &path) && strlen(path) < PATH_BYTES;
  if (found) strcpy(h->cgroup, path);
  fclose(f);
  return found;
}

/* /proc/self/cgroup names the cgroup from the root of our cgroup namespace; the mount shows the hierarchy
 * from mount_root down.  A cgroup outside what the mount shows (a bind-mounted container cgroup, or "/.."
 * paths, which the kernel writes for a cgroup above our namespace's root) leaves the mount's root as the
 * only place to read: it is the container's own cgroup. */
static void cgroup_under_mount(hierarchy *h) {
  size_t n = strcmp(h->mount_root, "/") == 0 ? 0 : strlen(h->mount_root);
  char *cg = h->cgroup;
  if (strstr(cg, "/..") || strncmp(cg, h->mount_root, n) != 0 || (cg[n] != '/' && cg[n] != '\0')) {
    cg[0] = '\0';
    return;
  }
  memmove(cg, cg + n, strlen(cg + n) + 1);
  strip_trailing_slashes(cg);
}

/* ---------- the quota ---------- */

/* What one level of the hierarchy says: 1 and *cores for a quota, 0 for none (or no file), -1 when the
 * file is there but malformed. */
typedef int (*level_quota_fn)(const char *dir, double *cores);

/* cgroup v2 cpu.max: "max PERIOD" (no limit) or "QUOTA PERIOD", both in microseconds. */
static int parse_cpu_max(const char *s, double *cores) {
  while (*s == ' ') s++;
  if (strncmp(s, "max", 3) == 0 && (s[3] == ' ' || s[3] == '\0')) return 0;
  long long quota_us, period_us;
  if (!next_int(&s, &quota_us) || !next_int(&s, &period_us) || !only_spaces(s)) return -1;
  if (quota_us <= 0 || period_us <= 0) return -1;
  *cores = (double)quota_us / (double)period_us;
  return 1;
}

static int level_quota_v2(const char *dir, double *cores) {
  char line[128];
  if (!read_first_line(dir, "cpu.max", line, sizeof line)) return 0;
  return parse_cpu_max(line, cores);
}

/* cgroup v1: cpu.cfs_quota_us (-1: no limit) over cpu.cfs_period_us. */
static int level_quota_v1(const char *dir, double *cores) {
  char line[128];
  long long quota_us, period_us;
  if (!read_first_line(dir, "cpu.cfs_quota_us", line, sizeof line)) return 0;
  const char *p = line;
  if (!next_int(&p, &quota_us) || !only_spaces(p) || quota_us == 0 || quota_us < -1) return -1;
  if (quota_us == -1) return 0;
  if (!read_first_line(dir, "cpu.cfs_period_us", line, sizeof line)) return -1;
  p = line;
  if (!next_int(&p, &period_us) || !only_spaces(p) || period_us <= 0) return -1;
  *cores = (double)quota_us / (double)period_us;
  return 1;
}

/* The smallest quota from the process's cgroup up to the mount's root (a child cannot use more than any
 * ancestor allows); NAN when none.  *malformed is set when a level's file did not parse. */
static double min_quota_up(const char *root, hierarchy *h, bool *malformed) {
  level_quota_fn level = h->version == 2 ? level_quota_v2 : level_quota_v1;
  double min_cores = NAN;
  char dir[2 * PATH_BYTES + 8];
  for (char *rel = h->cgroup;;) {
    double cores;
    int r = 0;
    if (snprintf(dir, sizeof dir, "%s%s%s", root, h->mount, rel) < (int)sizeof dir) r = level(dir, &cores);
    if (r < 0) *malformed = true;
    if (r > 0 && !(cores >= min_cores)) min_cores = cores; /* !(x >= NAN) holds: the first one counts */
    char *slash = strrchr(rel, '/');
    if (!slash) break;
    *slash = '\0';
  }
  return min_cores;
}

/* The version's quota, NAN when the hierarchy or its quota is not there. */
static double hierarchy_quota(const char *root, int version, bool *malformed) {
  hierarchy h = {.version = version};
  if (!find_mount(root, &h) || !find_cgroup(root, &h)) return NAN;
  cgroup_under_mount(&h);
  return min_quota_up(root, &h, malformed);
}

/* ---------- affinity ---------- */

/* Builds a mask from a CPU list (numbers outside cpu_set_t are left out); the count of CPUs in it. */
static int mask_from_list(cpu_set_t *set, const int *cpus, int n_cpus) {
  CPU_ZERO(set);
  for (int i = 0; i < n_cpus; i++)
    if (cpus[i] >= 0 && cpus[i] < CPU_SETSIZE) CPU_SET(cpus[i], set);
  return CPU_COUNT(set);
}

/* The calling thread's mask and its count; -1 when it does not fit a cpu_set_t (over 1024 CPUs). */
static int own_mask(cpu_set_t *set) {
  CPU_ZERO(set);
  return sched_getaffinity(0, sizeof *set, set) == 0 ? CPU_COUNT(set) : -1;
}

/* The count alone, also past 1024 CPUs (where the kernel refuses a smaller mask with EINVAL); -1 when
 * unknown.  The one allocation of this module, and only on such machines. */
static int own_affinity_count(void) {
  cpu_set_t set;
  int n = own_mask(&set);
  for (int cpus = 2 * CPU_SETSIZE; n < 0 && errno == EINVAL && cpus <= (1 << 20); cpus *= 2) {
    cpu_set_t *big = CPU_ALLOC(cpus);
    if (!big) return -1;
    size_t bytes = CPU_ALLOC_SIZE(cpus);
    CPU_ZERO_S(bytes, big);
    if (sched_getaffinity(0, bytes, big) == 0) n = CPU_COUNT_S(bytes, big);
    CPU_FREE(big);
  }
  return n;
}

/* ---------- usable cores ---------- */

static void describe(pb_cores *c, const char *quota_name, const char *malformed_name) {
  size_t size = sizeof c->limited_by;
  int n;
  if (!isnan(c->quota_cores) && c->quota_cores < c->affinity)
    n = snprintf(c->limited_by, size, "%s: %.2f cores", quota_name, c->quota_cores);
  else if (c->affinity < c->online)
    n = snprintf(c->limited_by, size, "CPU affinity: %d of %d CPUs", c->affinity, c->online);
  else
    n = snprintf(c->limited_by, size, "all %d online CPUs", c->online);
  if (malformed_name && n >= 0 && (size_t)n < size)
    snprintf(c->limited_by + n, size - (size_t)n, "; malformed %s ignored", malformed_name);
}

/* Both hierarchies: on hybrid systems cgroup2 is mounted beside v1 and the cpu controller sits in one of
 * them; when both give a quota the smaller one binds. */
static void probe_quota(pb_cores *c, const char *root) {
  bool bad_v2 = false, bad_v1 = false;
  double v2 = hierarchy_quota(root, 2, &bad_v2), v1 = hierarchy_quota(root, 1, &bad_v1);
  bool v1_binds = !isnan(v1) && !(v2 <= v1);
  c->quota_cores = v1_binds ? v1 : v2;
  const char *malformed = bad_v2 ? "cgroup v2 cpu.max" : bad_v1 ? "cgroup v1 cpu.cfs_quota_us" : NULL;
  describe(c, v1_binds ? "cgroup v1 cpu.cfs_quota_us" : "cgroup v2 cpu.max", malformed);
}

void pb_cores_probe_cpus(pb_cores *c, const char *root, const int *cpus, int n_cpus) {
  cpu_set_t set;
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  c->affinity = cpus ? mask_from_list(&set, cpus, n_cpus) : own_affinity_count();
  c->online = online > 0 && online <= INT_MAX ? (int)online : (c->affinity > 0 ? c->affinity : 1);
  if (c->affinity < 1) c->affinity = c->online;
  probe_quota(c, root ? root : "");
  c->usable_cores = c->affinity;
  if (!isnan(c->quota_cores) && c->quota_cores < c->usable_cores) c->usable_cores = c->quota_cores;
}

void pb_cores_probe(pb_cores *c, const char *root) { pb_cores_probe_cpus(c, root, NULL, 0); }

/* ---------- CPU samples ---------- */

/* One "cpuN user nice system idle iowait irq softirq steal guest guest_nice" line into v[0..8) (older
 * kernels write fewer fields: the missing ones are 0).  false when it is not a per-CPU line. */
static bool parse_stat_cpu(const char *line, int *cpu, unsigned long long v[8]) {
  if (strncmp(line, "cpu", 3) != 0 || !isdigit((unsigned char)line[3])) return false;
  char *end;
  errno = 0;
  long n = strtol(line + 3, &end, 10);
  if (errno || *end != ' ' || n > INT_MAX) return false;
  *cpu = (int)n;
  int k = 0;
  for (const char *p = end; k < 8; k++) {
    while (*p == ' ') p++;
    if (!isdigit((unsigned char)*p)) break;
    v[k] = strtoull(p, &end, 10);
    if (errno) return false;
    p = end;
  }
  for (int i = k; i < 8; i++) v[i] = 0;
  return k >= 4;
}

/* Sums the per-CPU lines of the mask's CPUs (every CPU when mask is NULL).  The per-CPU lines come first
 * in /proc/stat: the first line after them ends the read. */
static void sum_stat(FILE *f, const cpu_set_t *mask, pb_cpu_sample *s) {
  char line[512];
  unsigned long long v[8];
  int cpu;
  while (read_line(f, line, sizeof line)) {
    if (strncmp(line, "cpu", 3) != 0) break;
    if (!parse_stat_cpu(line, &cpu, v)) continue;
    if (mask && (cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, mask))) continue;
    s->busy_ticks += v[0] + v[1] + v[2] + v[5] + v[6]; /* user nice system irq softirq */
    s->steal_ticks += v[7];
    s->cpus++;
  }
}

static bool clock_ns(clockid_t id, uint64_t *ns) {
  struct timespec ts;
  if (clock_gettime(id, &ts) != 0) return false;
  *ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  return true;
}

static void take_sample(pb_cpu_sample *s, const char *root, const cpu_set_t *mask) {
  memset(s, 0, sizeof *s);
  s->ticks_per_s = sysconf(_SC_CLK_TCK);
  bool clocks = clock_ns(CLOCK_MONOTONIC, &s->t_ns) && clock_ns(CLOCK_PROCESS_CPUTIME_ID, &s->self_cpu_ns);
  FILE *f = open_at(root ? root : "", "/proc/stat");
  if (f) {
    sum_stat(f, mask, s);
    fclose(f);
  }
  s->ok = clocks && s->cpus > 0 && s->ticks_per_s > 0;
}

void pb_cpu_sample_take_cpus(pb_cpu_sample *s, const char *root, const int *cpus, int n_cpus) {
  cpu_set_t set;
  if (cpus) mask_from_list(&set, cpus, n_cpus);
  take_sample(s, root, cpus ? &set : NULL);
}

void pb_cpu_sample_take(pb_cpu_sample *s, const char *root) {
  cpu_set_t set;
  take_sample(s, root, own_mask(&set) > 0 ? &set : NULL);
}

static bool samples_comparable(const pb_cpu_sample *a, const pb_cpu_sample *b) {
  return a->ok && b->ok && a->ticks_per_s > 0 && a->ticks_per_s == b->ticks_per_s && a->cpus == b->cpus &&
         b->t_ns > a->t_ns && b->busy_ticks >= a->busy_ticks && b->steal_ticks >= a->steal_ticks &&
         b->self_cpu_ns >= a->self_cpu_ns;
}

/* The parts are clamped one by one (only the busy-minus-own difference can dip below 0, from whole-tick
 * counting; steal cannot), so that total = others + steal always holds. */
pb_cpu_others pb_cpu_taken_by_others(const pb_cpu_sample *a, const pb_cpu_sample *b) {
  pb_cpu_others o = {NAN, NAN, NAN, false};
  if (!samples_comparable(a, b)) return o;
  double wall_s = (double)(b->t_ns - a->t_ns) / 1e9, tick_s = 1.0 / (double)a->ticks_per_s;
  double busy_s = (double)(b->busy_ticks - a->busy_ticks) * tick_s;
  double own_s = (double)(b->self_cpu_ns - a->self_cpu_ns) / 1e9;
  o.others_cores = fmax(0.0, (busy_s - own_s) / wall_s);
  o.steal_cores = (double)(b->steal_ticks - a->steal_ticks) * tick_s / wall_s;
  o.total_cores = o.others_cores + o.steal_cores;
  o.ok = true;
  return o;
}
