/* machine.c: usable cores and CPU taken by others, on fake /proc and /sys trees built in a temporary
 * directory (cgroup v2 and v1, nested quotas, containers, hybrid mounts, malformed files, /proc/stat
 * samples with known figures), then sanity checks on the real system.  The fake-tree tests give the
 * affinity mask as a list ({0, 1}), so their answers do not depend on this machine. */
#define _GNU_SOURCE /* sched_setaffinity, CPU_COUNT */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "machine.h"
#include "unit_util.h"

static const int two_cpus[] = {0, 1};
static char g_root[256];

#define MI_V2 "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw\n"
#define MI_V1_CPUSET "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime shared:9 - cgroup cgroup rw,cpuset\n"
#define MI_V1_CPU "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:7 - cgroup cgroup rw,cpu,cpuacct\n"

static int make_root(void **state) {
  const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  snprintf(g_root, sizeof g_root, "%s/pipebench-machine-XXXXXX", base);
  return mkdtemp(g_root) ? 0 : -1;
}

static int remove_root(void **state) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root);
  return system(cmd) == 0 ? 0 : -1;
}

/* Writes <root>/REL (creating its directories) with the text given. */
static void put(const char *rel, const char *text) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", g_root, rel);
  for (char *p = path + strlen(g_root) + 1; (p = strchr(p, '/')); p++) {
    *p = '\0';
    assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
    *p = '/';
  }
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  assert_int_equal(fclose(f), 0);
}

static pb_cores probe_two(void) {
  pb_cores c;
  pb_cores_probe_cpus(&c, g_root, two_cpus, 2);
  assert_int_equal(c.affinity, 2);
  return c;
}

static void assert_no_quota(const pb_cores *c) {
  if (!isnan(c->quota_cores)) fail_msg("quota %.3f cores, expected none (%s)", c->quota_cores, c->limited_by);
  assert_true(c->usable_cores == 2.0);
}

static void assert_quota(const pb_cores *c, double cores, const char *text) {
  if (!(fabs(c->quota_cores - cores) < 1e-9)) fail_msg("quota %.3f, expected %.3f", c->quota_cores, cores);
  assert_true(fabs(c->usable_cores - fmin(cores, 2.0)) < 1e-9);
  if (text) assert_string_equal(c->limited_by, text);
}

/* ---------- cgroup v2 ---------- */

static void test_v2_max(void **state) {
  put("proc/self/mountinfo", MI_V2);
  put("proc/self/cgroup", "0::/a/b\n");
  put("sys/fs/cgroup/a/b/cpu.max", "max 100000\n");
  put("sys/fs/cgroup/a/cpu.max", "max 100000\n");
  pb_cores c = probe_two();
  assert_no_quota(&c);
  assert_null(strstr(c.limited_by, "cgroup"));
}

static void test_v2_quota(void **state) {
  put("proc/self/mountinfo", MI_V2);
  put("proc/self/cgroup", "0::/a/b\n");
  put("sys/fs/cgroup/a/b/cpu.max", "150000 100000\n");
  put("sys/fs/cgroup/a/cpu.max", "max 100000\n");
  pb_cores c = probe_two();
  assert_quota(&c, 1.5, "cgroup v2 cpu.max: 1.50 cores");
}

/* The parent allows less than the child: the parent binds. */
static void test_v2_nested_parent_smaller(void **state) {
  put("proc/self/mountinfo", MI_V2);
  put("proc/self/cgroup", "0::/a/b/c\n");
  put("sys/fs/cgroup/a/b/c/cpu.max", "150000 100000\n");
  put("sys/fs/cgroup/a/b/cpu.max", "max 100000\n");
  put("sys/fs/cgroup/a/cpu.max", "50000 100000\n");
  pb_cores c = probe_two();
  assert_quota(&c, 0.5, "cgroup v2 cpu.max: 0.50 cores");
}

/* In a container with its own cgroup namespace the path is "/" and the mount's root is the container. */
static void test_v2_container_root(void **state) {
  put("proc/self/mountinfo", MI_V2);
  put("proc/self/cgroup", "0::/\n");
  put("sys/fs/cgroup/cpu.max", "125000 100000\n");
  pb_cores c = probe_two();
  assert_quota(&c, 1.25, NULL);
}

/* The mount shows the hierarchy from /kube/pod1 down: the path is taken relative to it, and the child's
 * quota (the smallest here) is found. */
static void test_v2_mount_root_prefix(void **state) {
  put("proc/self/mountinfo", "30 23 0:26 /kube/pod1 /sys/fs/cgroup rw shared:4 - cgroup2 cgroup2 rw\n");
  put("proc/self/cgroup", "0::/kube/pod1/c1\n");
  put("sys/fs/cgroup/c1/cpu.max", "80000 100000\n");
  put("sys/fs/cgroup/cpu.max", "120000 100000\n");
  pb_cores c = probe_two();
  assert_quota(&c, 0.8, NULL);
}

/* A cgroup the mount does not show (not there, outside the mount's root, or above the namespace's root):
 * the mount's root is still read. */
static void test_v2_path_not_under_mount(void **state) {
  const char *cgroups[] = {"0::/x/y/z\n", "0::/../../elsewhere\n", "0::/other\n"};
  const char *roots[] = {"/", "/", "/kube/pod1"};
  put("sys/fs/cpu.max", "10000 100000\n"); /* above the mount: never to be read */
  for (int i = 0; i < 3; i++) {
    char mi[256];
    snprintf(mi, sizeof mi, "30 23 0:26 %s /sys/fs/cgroup rw shared:4 - cgroup2 cgroup2 rw\n", roots[i]);
    put("proc/self/mountinfo", mi);
    put("proc/self/cgroup", cgroups[i]);
    put("sys/fs/cgroup/cpu.max", "75000 100000\n");
    pb_cores c = probe_two();
    assert_quota(&c, 0.75, "cgroup v2 cpu.max: 0.75 cores");
  }
}

/* ---------- cgroup v1 ---------- */

static void put_v1(const char *dir, const char *quota, const char *period) {
  char path[512];
  snprintf(path, sizeof path, "%s/cpu.cfs_quota_us", dir);
  put(path, quota);
  snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dir);
  put(path, period);
}

/* A cpuset hierarchy comes first in both files and must not be taken for the cpu controller. */
static void put_v1_tree(void) {
  put("proc/self/mountinfo", MI_V1_CPUSET MI_V1_CPU);
  put("proc/self/cgroup", "5:cpuset:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/\n");
  put_v1("sys/fs/cgroup/cpuset/docker/abc", "50000\n", "100000\n");
  put_v1("sys/fs/cgroup/cpu,cpuacct", "-1\n", "100000\n");
  put_v1("sys/fs/cgroup/cpu,cpuacct/docker", "-1\n", "100000\n");
}

static void test_v1_no_quota(void **state) {
  put_v1_tree();
  put_v1("sys/fs/cgroup/cpu,cpuacct/docker/abc", "-1\n", "100000\n");
  pb_cores c = probe_two();
  assert_no_quota(&c);
}

static void test_v1_quota(void **state) {
  put_v1_tree();
  put_v1("sys/fs/cgroup/cpu,cpuacct/docker/abc", "150000\n", "100000\n");
  pb_cores c = probe_two();
  assert_quota(&c, 1.5, "cgroup v1 cpu.cfs_quota_us: 1.50 cores");
}

/* A container that sees its own cgroup bind-mounted (mountinfo root /docker/abc) at an escaped path. */
static void test_v1_bind_mounted(void **state) {
  put("proc/self/mountinfo", "32 31 0:29 /docker/abc /sys/fs/cgroup/my\\040cpu ro - cgroup cgroup rw,cpu\n");
  put("proc/self/cgroup", "3:cpu:/docker/abc\n");
  put_v1("sys/fs/cgroup/my cpu", "25000\n", "50000\n");
  pb_cores c = probe_two();
  assert_quota(&c, 0.5, NULL);
}

/* Hybrid: cgroup2 beside v1 without cpu.max (the controller is in v1); with both, the smaller binds. */
static void test_hybrid(void **state) {
  put("proc/self/mountinfo", MI_V1_CPU "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n");
  put("proc/self/cgroup", "4:cpu,cpuacct:/\n0::/\n");
  put_v1("sys/fs/cgroup/cpu,cpuacct", "180000\n", "100000\n");
  pb_cores c = probe_two();
  assert_quota(&c, 1.8, "cgroup v1 cpu.cfs_quota_us: 1.80 cores");
  put("sys/fs/cgroup/unified/cpu.max", "110000 100000\n");
  c = probe_two();
  assert_quota(&c, 1.1, "cgroup v2 cpu.max: 1.10 cores");
}

/* ---------- missing and malformed ---------- */

static void test_no_cgroup_files(void **state) {
  pb_cores c = probe_two(); /* an empty root: no /proc, no /sys */
  assert_no_quota(&c);
  assert_null(strstr(c.limited_by, "malformed"));
  cpu_set_t set;
  assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
  pb_cores_probe(&c, g_root); /* this thread's own mask, still no cgroup */
  assert_int_equal(c.affinity, CPU_COUNT(&set));
  assert_true(c.usable_cores == c.affinity);
  assert_true(isnan(c.quota_cores));
}

static void test_malformed_cpu_max(void **state) {
  const char *bad[] = {"garbage\n", "", "150000 0\n", "-5 100000\n", "150000\n", "150000 100000 7\n",
                       "99999999999999999999999 100000\n", "1.5 1\n", "maxim 100000\n", "\n"};
  put("proc/self/mountinfo", MI_V2);
  put("proc/self/cgroup", "0::/a\n");
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    put("sys/fs/cgroup/a/cpu.max", bad[i]);
    pb_cores c = probe_two();
    assert_no_quota(&c);
    if (!strstr(c.limited_by, "malformed cgroup v2 cpu.max ignored")) fail_msg("'%s': %s", bad[i], c.limited_by);
  }
  put("sys/fs/cgroup/cpu.max", "50000 100000\n"); /* a good ancestor still counts */
  pb_cores c = probe_two();
  assert_quota(&c, 0.5, "cgroup v2 cpu.max: 0.50 cores; malformed cgroup v2 cpu.max ignored");
}

static void test_malformed_v1(void **state) {
  const char *quota[] = {"abc\n", "0\n", "-7\n", "150000\n", "150000\n"};
  const char *period[] = {"100000\n", "100000\n", "100000\n", "zero\n", "0\n"};
  put("proc/self/mountinfo", MI_V1_CPU);
  put("proc/self/cgroup", "4:cpu,cpuacct:/\n");
  for (int i = 0; i < 5; i++) {
    put_v1("sys/fs/cgroup/cpu,cpuacct", quota[i], period[i]);
    pb_cores c = probe_two();
    assert_no_quota(&c);
    if (!strstr(c.limited_by, "malformed cgroup v1")) fail_msg("%d: %s", i, c.limited_by);
  }
}

/* Garbage in mountinfo and /proc/self/cgroup (short lines, no separator, a line past any buffer, no final
 * newline): no hierarchy is found, nothing crashes, and only the good line counts. */
static void test_garbage_proc_files(void **state) {
  static char long_line[20000];
  memset(long_line, 'x', sizeof long_line - 1);
  const char *head = "1 2 0:3 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw "; /* cut: must not count */
  memcpy(long_line, head, strlen(head));
  put("proc/self/mountinfo", "\n - \n1 2\n- cgroup2\n1 2 3 4 5 6 - cgroup2\n::::\n");
  put("proc/self/cgroup", "0::\n:\n0:\n4::\n");
  put("sys/fs/cgroup/cpu.max", "50000 100000\n");
  pb_cores c = probe_two();
  assert_no_quota(&c);
  put("proc/self/mountinfo", long_line);
  c = probe_two();
  assert_no_quota(&c);
  char text[20200];
  snprintf(text, sizeof text, "%s\n%s", long_line, MI_V2);
  text[strlen(text) - 1] = '\0'; /* the good line has no final newline */
  put("proc/self/mountinfo", text);
  put("proc/self/cgroup", "0::/\n");
  c = probe_two();
  assert_quota(&c, 0.5, NULL);
}

/* ---------- /proc/stat samples ---------- */

static void put_stat(const char *dir, const unsigned long long cpu[3][10]) {
  char text[1024], path[256];
  int n = snprintf(text, sizeof text, "cpu  1 2 3 4 5 6 7 8 9 10\n");
  for (int i = 0; i < 3; i++) {
    const unsigned long long *v = cpu[i];
    n += snprintf(text + n, sizeof text - (size_t)n, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu\n", i,
                  v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]);
  }
  snprintf(text + n, sizeof text - (size_t)n, "intr 1 2 3\nctxt 5\ncpu9 1 1 1 1 1 1 1 1 1 1\n");
  snprintf(path, sizeof path, "%s/proc/stat", dir);
  put(path, text);
}

/* Two CPUs in the mask over 2 s: our process used 1 core (2 s), others 0.5 core (1 s), steal 0.25 core
 * (0.5 s).  Guest time (already in user), idle, iowait and cpu2 (outside the mask) must not count. */
static void take_known_samples(pb_cpu_sample *a, pb_cpu_sample *b) {
  long hz = sysconf(_SC_CLK_TCK);
  if (hz <= 0 || hz % 4) skip();
  unsigned long long t = (unsigned long long)hz;
  const unsigned long long s0[3][10] = {{1000, 10, 300, 9000, 50, 5, 7, 3, 400, 0},
                                        {2000, 0, 600, 8000, 20, 9, 11, 4, 0, 0},
                                        {500, 500, 500, 500, 500, 500, 500, 500, 500, 500}};
  unsigned long long s1[3][10];
  memcpy(s1, s0, sizeof s1);
  s1[0][0] += 2 * t;             /* user: our 2 s ... */
  s1[0][2] += t / 4;             /* ... system: others 1/4 s ... */
  s1[0][8] += 5 * t;             /* ... guest (counted in user already) */
  s1[0][3] += 7 * t;             /* idle */
  s1[0][4] += t;                 /* iowait */
  s1[0][7] += t / 4;             /* steal */
  s1[1][1] += t / 4;             /* nice */
  s1[1][5] += t / 4;             /* irq */
  s1[1][6] += t / 4;             /* softirq: others, 3/4 s on cpu1 */
  s1[1][7] += t / 4;             /* steal */
  s1[2][0] += 100 * t;           /* outside the mask */
  s1[2][7] += 100 * t;
  put_stat("a", s0);
  put_stat("b", s1);
  char dir[512];
  snprintf(dir, sizeof dir, "%s/a", g_root);
  pb_cpu_sample_take_cpus(a, dir, two_cpus, 2);
  snprintf(dir, sizeof dir, "%s/b", g_root);
  pb_cpu_sample_take_cpus(b, dir, two_cpus, 2);
  assert_true(a->ok);
  assert_true(b->ok);
  assert_int_equal(a->cpus, 2);
  assert_int_equal(b->busy_ticks - a->busy_ticks, 3 * t);
  assert_int_equal(b->steal_ticks - a->steal_ticks, t / 2);
  a->t_ns = 10000000000ull, b->t_ns = 12000000000ull;
  a->self_cpu_ns = 1000000000ull, b->self_cpu_ns = 3000000000ull;
}

static void assert_near(double got, double want) {
  if (!(fabs(got - want) < 1e-9)) fail_msg("%.6f, expected %.6f", got, want);
}

static void test_stat_known_others(void **state) {
  pb_cpu_sample a, b;
  take_known_samples(&a, &b);
  pb_cpu_others o = pb_cpu_taken_by_others(&a, &b);
  assert_true(o.ok);
  assert_near(o.others_cores, 0.5);
  assert_near(o.steal_cores, 0.25);
  assert_near(o.total_cores, 0.75);
}

/* Our own CPU time over the busy ticks (tick rounding): others clamps at 0, steal stays. */
static void test_stat_clamped(void **state) {
  pb_cpu_sample a, b;
  take_known_samples(&a, &b);
  b.self_cpu_ns = a.self_cpu_ns + 3100000000ull;
  pb_cpu_others o = pb_cpu_taken_by_others(&a, &b);
  assert_true(o.ok);
  assert_near(o.others_cores, 0.0);
  assert_near(o.total_cores, 0.25);
}

static void assert_not_ok(const pb_cpu_sample *a, const pb_cpu_sample *b) {
  pb_cpu_others o = pb_cpu_taken_by_others(a, b);
  assert_false(o.ok);
  assert_nan(o.others_cores);
  assert_nan(o.steal_cores);
  assert_nan(o.total_cores);
}

static void test_stat_not_comparable(void **state) {
  pb_cpu_sample a, b, c;
  take_known_samples(&a, &b);
  assert_not_ok(&b, &a); /* reversed: time and counters go backwards */
  c = b, c.t_ns = a.t_ns;
  assert_not_ok(&a, &c);
  c = b, c.cpus = 3;
  assert_not_ok(&a, &c);
  c = b, c.ok = false;
  assert_not_ok(&a, &c);
  pb_cpu_sample_take_cpus(&c, g_root, two_cpus, 2); /* no proc/stat at this root */
  assert_false(c.ok);
  assert_not_ok(&a, &c);
  put("proc/stat", "cpu 1 2 3 4\ncpu0 x y\ncpu1 -1 2 3 4\ncpu2 1 2 3\n"); /* no good per-CPU line */
  pb_cpu_sample_take_cpus(&c, g_root, two_cpus, 2);
  assert_false(c.ok);
}

/* Older kernels (before steal and guest) write 7 fields; a NULL list takes every CPU listed. */
static void test_stat_short_lines_and_all_cpus(void **state) {
  put("proc/stat", "cpu  9 9 9 9 9 9 9\ncpu0 10 1 2 100 5 3 4\ncpu1 20 0 0 100 0 0 0\ncpu5 1 1 1 1 1 1 1 7\n");
  pb_cpu_sample s;
  pb_cpu_sample_take_cpus(&s, g_root, two_cpus, 2);
  assert_true(s.ok);
  assert_int_equal(s.cpus, 2);
  assert_int_equal(s.busy_ticks, 10 + 1 + 2 + 3 + 4 + 20);
  assert_int_equal(s.steal_ticks, 0);
  pb_cpu_sample_take_cpus(&s, g_root, NULL, 0);
  assert_int_equal(s.cpus, 3);
  assert_int_equal(s.busy_ticks, 40 + 5);
  assert_int_equal(s.steal_ticks, 7);
}

/* ---------- the real system ---------- */

static void spin_cpu_ns(uint64_t ns) {
  struct timespec t0, t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
  do clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  while ((uint64_t)(t.tv_sec - t0.tv_sec) * 1000000000ull + (uint64_t)t.tv_nsec - (uint64_t)t0.tv_nsec < ns);
}

static void test_real_probe(void **state) {
  pb_cores c;
  pb_cores_probe(&c, "");
  printf("real probe: usable %.2f cores (online %d, affinity %d, quota %.2f): %s\n", c.usable_cores, c.online,
         c.affinity, c.quota_cores, c.limited_by);
  assert_int_cmp(c.online, >=, 1);
  assert_int_between(c.affinity, 1, c.online);
  assert_double_between(c.usable_cores, 0.01, c.online);
  assert_true(isnan(c.quota_cores) || c.quota_cores > 0);
}

static void test_real_sample(void **state) {
  pb_cpu_sample a, b;
  pb_cpu_sample_take(&a, "");
  spin_cpu_ns(200000000ull);
  pb_cpu_sample_take(&b, "");
  assert_true(a.ok);
  assert_true(b.ok);
  assert_true(b.self_cpu_ns - a.self_cpu_ns >= 200000000ull);
  pb_cpu_others o = pb_cpu_taken_by_others(&a, &b);
  printf("real sample over %.3f s on %d CPUs: others %.3f cores, steal %.3f cores\n",
         (double)(b.t_ns - a.t_ns) / 1e9, a.cpus, o.others_cores, o.steal_cores);
  assert_true(o.ok);
  assert_double_cmp(o.others_cores, >=, 0);
  assert_double_cmp(o.steal_cores, >=, 0);
  assert_double_cmp(o.total_cores, <=, a.cpus + 1);
}

/* Pins this thread to one CPU of its mask: the probe and the sample see that one CPU. */
static void test_real_affinity_one_cpu(void **state) {
  cpu_set_t saved, one;
  assert_int_equal(sched_getaffinity(0, sizeof saved, &saved), 0);
  if (CPU_COUNT(&saved) < 2) skip();
  int cpu = 0;
  while (!CPU_ISSET(cpu, &saved)) cpu++;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
  pb_cores c;
  pb_cores_probe(&c, "");
  pb_cpu_sample s;
  pb_cpu_sample_take(&s, "");
  assert_int_equal(sched_setaffinity(0, sizeof saved, &saved), 0);
  assert_int_equal(c.affinity, 1);
  assert_true(c.usable_cores <= 1.0);
  char want[64];
  snprintf(want, sizeof want, "CPU affinity: 1 of %d CPUs", c.online);
  if (isnan(c.quota_cores) || c.quota_cores >= 1) assert_string_equal(c.limited_by, want);
  assert_true(s.ok);
  assert_int_equal(s.cpus, 1);
}

#define T(f) cmocka_unit_test_setup_teardown(f, make_root, remove_root)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_v2_max),          T(test_v2_quota),           T(test_v2_nested_parent_smaller),
      T(test_v2_container_root), T(test_v2_mount_root_prefix), T(test_v2_path_not_under_mount),
      T(test_v1_no_quota),     T(test_v1_quota),           T(test_v1_bind_mounted),
      T(test_hybrid),          T(test_no_cgroup_files),    T(test_malformed_cpu_max),
      T(test_malformed_v1),    T(test_garbage_proc_files), T(test_stat_known_others),
      T(test_stat_clamped),    T(test_stat_not_comparable), T(test_stat_short_lines_and_all_cpus),
      cmocka_unit_test(test_real_probe), cmocka_unit_test(test_real_sample),
      cmocka_unit_test(test_real_affinity_one_cpu),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
