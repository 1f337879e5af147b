/* The machine as it is: how many cores this process may use (CPU affinity and the cgroup CPU quota), and
 * how much CPU other processes and the hypervisor took from those cores during a run.
 *
 * Every function takes `root`, a prefix for the /proc and /sys paths it reads: "" for the real system, or a
 * directory holding fake proc/... and sys/fs/cgroup/... trees (the unit test builds them).  Nothing here
 * fails: every file may be missing, unreadable or malformed, and each function fills what it could, with
 * the fallback its comment names.  No allocation, no global state; safe from any thread. */
#ifndef PB_MACHINE_H
#define PB_MACHINE_H

#include <stdbool.h>
#include <stdint.h>

/* ---------- usable cores ---------- */

typedef struct pb_cores {
  int online;           /* sysconf(_SC_NPROCESSORS_ONLN) (the affinity count when that fails) */
  int affinity;         /* CPUs in the calling thread's sched_getaffinity mask (online when it fails) */
  double quota_cores;   /* the tightest cgroup CPU quota over the hierarchy, in cores; NAN when none */
  double usable_cores;  /* min(affinity, quota_cores) */
  char limited_by[128]; /* what sets usable_cores, in words: "CPU affinity: 1 of 2 CPUs",
                         * "cgroup v2 cpu.max: 1.50 cores", "all 2 online CPUs"; a malformed quota file
                         * adds "; malformed <file> ignored" (it counts as no limit) */
} pb_cores;

/* Probes this process's usable cores.  The quota is the minimum of QUOTA/PERIOD over this process's cgroup
 * and every ancestor up to the mount's root, in both cgroup v2 (cpu.max) and v1 (cpu.cfs_quota_us and
 * cpu.cfs_period_us) when both are mounted (hybrid systems: the cpu controller is in one of them).
 * Ancestors above what the mount shows (a container's own cgroup is its mount's root) are not seen. */
void pb_cores_probe(pb_cores *c, const char *root);
/* The same with the affinity mask given as a list of CPU numbers, cpus[0..n_cpus): each CPU counts once,
 * numbers past 1023 are left out, an empty list counts as all online CPUs.  cpus == NULL reads the calling
 * thread's mask as pb_cores_probe does. */
void pb_cores_probe_cpus(pb_cores *c, const char *root, const int *cpus, int n_cpus);

/* ---------- CPU taken by others during a span ---------- */

/* One instant of the CPUs in this process's affinity mask (read from /proc/stat) and of this process. */
typedef struct pb_cpu_sample {
  uint64_t t_ns;        /* CLOCK_MONOTONIC */
  uint64_t busy_ticks;  /* user+nice+system+irq+softirq summed over the CPUs in the mask (guest time is
                         * already in user), USER_HZ ticks */
  uint64_t steal_ticks; /* steal over the same CPUs: time the hypervisor ran something else on them */
  uint64_t self_cpu_ns; /* this process's CPU time, all its threads (CLOCK_PROCESS_CPUTIME_ID) */
  long ticks_per_s;     /* USER_HZ: sysconf(_SC_CLK_TCK), usually 100 */
  int cpus;             /* how many CPUs' lines were summed */
  bool ok;              /* false when /proc/stat gave no CPU line of the mask or a clock failed */
} pb_cpu_sample;

/* Takes a sample over the calling thread's affinity mask (over every CPU when the mask cannot be read). */
void pb_cpu_sample_take(pb_cpu_sample *s, const char *root);
/* The same over the CPUs cpus[0..n_cpus); cpus == NULL: every CPU that /proc/stat lists. */
void pb_cpu_sample_take_cpus(pb_cpu_sample *s, const char *root, const int *cpus, int n_cpus);

/* What others took of the mask's CPUs between two samples, in cores (CPU-seconds per wall second). */
typedef struct pb_cpu_others {
  double others_cores; /* (busy - our own CPU time) / wall: other processes and the kernel's interrupt
                        * work, clamped at >= 0 (ticks are counted whole, so a quiet span can come out
                        * slightly negative) */
  double steal_cores;  /* steal / wall */
  double total_cores;  /* others_cores + steal_cores */
  bool ok;             /* false (and NANs) when a sample is not ok, b is not after a, the CPU count or
                        * the tick rate changed between them, or a counter went backwards */
} pb_cpu_others;

/* An approximation at tick resolution: /proc/stat counts in USER_HZ ticks (10 ms), so each figure is off
 * by up to a tick per CPU over the span (about 0.01 core per CPU over a 1 s span; use spans of seconds).
 * Our own threads' CPU time is subtracted; that assumes they ran on the mask's CPUs (threads that pinned
 * themselves elsewhere make others_cores read low, never high). */
pb_cpu_others pb_cpu_taken_by_others(const pb_cpu_sample *a, const pb_cpu_sample *b);

#endif
