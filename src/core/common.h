/* Small helpers shared by every module: error text, clocks, a seeded RNG. */
#ifndef PB_COMMON_H
#define PB_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PB_VERSION "0.1.0"

/* Exit statuses of docs/CONTRACT.md §1. */
enum { PB_EXIT_OK = 0, PB_EXIT_RUNTIME = 1, PB_EXIT_USAGE = 2, PB_EXIT_INTERRUPTED = 130 };

/* One error line, without the leading "pipebench: ".  Functions that can fail on user input fill one and
 * return a negative errno; the caller prints "pipebench: <msg>" once. */
typedef struct pb_err {
  char msg[1024];
} pb_err;

/* The error convention: a library function returns 0 or a negative errno and, on failure, fills its pb_err
 * with one line.  pb_err_setc does both: `return pb_err_setc(err, -ENOMEM, "out of memory for %s", what);`.
 * pb_err_set is the same with -EINVAL (bad input: the common case).  Command files (main.c, run.c, ab.c, ...)
 * turn these into the contract's PB_EXIT_* statuses at their edge. */
int pb_err_setc(pb_err *err, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int pb_err_set(pb_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One double as text for a table or a summary: printf with `fmt`, or "n/a" when it is not finite (NAN is
 * how the report says "not available").  The one number formatter of the text views (src/reports/text.c, ab). */
typedef struct pb_numbuf {
  char s[32];
} pb_numbuf;
const char *pb_fmt_double(pb_numbuf *b, const char *fmt, double v);

/* Does s begin with prefix, end with suffix. */
bool pb_starts_with(const char *s, const char *prefix);
bool pb_ends_with(const char *s, const char *suffix);

/* Monotonic nanoseconds (CLOCK_MONOTONIC, the clock libuv's uv_hrtime reads). */
uint64_t pb_now_ns(void);
/* The wall clock (CLOCK_REALTIME), ns since 1970: comparable between processes and NTP-synced hosts. */
uint64_t pb_unix_ns(void);
/* Length of the overlap of [a0, a1) and [b0, b1), 0 when they do not meet. */
static inline uint64_t pb_overlap_ns(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1) {
  uint64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
  return hi > lo ? hi - lo : 0;
}
/* Sleep until an absolute pb_now_ns() deadline (no-op when already past). */
void pb_sleep_until_ns(uint64_t deadline_ns);
/* Busy-wait until an absolute deadline: burns CPU on purpose. */
void pb_spin_until_ns(uint64_t deadline_ns);
/* The calling thread's scheduler figures so far, from /proc/thread-self/schedstat: the time it was
 * runnable but waiting for a core (run-queue delay), and how many times it was put on a core.  false
 * when the kernel does not say (no file, or all zero: scheduler statistics switched off). */
typedef struct pb_sched_stat {
  uint64_t run_ns, delay_ns, slices;
} pb_sched_stat;
bool pb_thread_sched_stat(pb_sched_stat *s);

/* Sleeps of the calling thread on a queue's or pool's condition variable: each ends with a wake-up,
 * and so with one trip through the run queue that is not part of any service time. */
extern _Thread_local uint64_t pb_thread_waits;

/* Burns cpu_ns of this thread's own CPU time (the `spin` op).  Unlike a wall-clock deadline, a thread
 * that loses its core to another keeps spinning until it has done the whole work, as real compute
 * would: on a saturated machine the op takes longer, and more threads than cores gain nothing. */
void pb_spin_cpu_ns(uint64_t cpu_ns);
/* Ask the kernel for ~1 us timer slack on this thread so emulated sleeps end on time. */
void pb_thread_precise_timers(void);

/* splitmix64-seeded xoshiro256** : deterministic, fast, good enough for sampling. */
typedef struct pb_rng {
  uint64_t s[4];
} pb_rng;
void pb_rng_seed(pb_rng *r, uint64_t seed);
uint64_t pb_rng_next(pb_rng *r);
double pb_rng_uniform(pb_rng *r);               /* [0, 1) */
double pb_rng_normal(pb_rng *r, double mean, double stdev);

/* Writes path through path.tmp renamed into place, so a reader never sees half a file: body(f, arg)
 * writes the content (it may set f's buffer first) and returns 0 or -errno; a failed write, flush or
 * close counts.  On failure the temporary file is removed, and so it is when a second signal ends the
 * process while it is written (pb_cleanup_on_exit).  0 or -errno.
 * PB_DEBUG_HOLD_TMP_MS=N holds each write N ms with its temporary file open, deaf to signals, standing in
 * for a long trace so the end-to-end tests can signal mid-write (test_e2e_signals.c). */
typedef int (*pb_write_body)(FILE *f, const void *arg);
int pb_write_atomic(const char *path, pb_write_body body, const void *arg);
/* Called with each path pb_write_atomic has put in place (the output directory's record of what pipebench
 * wrote there: src/cli/outdir.c); NULL for none.  Set once, before any thread writes. */
typedef void (*pb_written_hook)(const char *path);
void pb_set_written_hook(pb_written_hook hook);

/* Files that must not outlive the process: a temporary file being written, the output directory's lock.
 * A second signal ends the process from its handler (below), which then unlinks each one named here
 * (unlink is async-signal-safe; nothing else runs after it).  Returns a slot for pb_cleanup_forget, or -1
 * when the path is too long or all PB_CLEANUP_SLOTS are taken (the file is then not removed on such an
 * exit, as before).  Thread-safe. */
#define PB_CLEANUP_SLOTS 8
int pb_cleanup_on_exit(const char *path);
void pb_cleanup_forget(int slot);

/* SIGINT/SIGTERM/SIGHUP (docs/CONTRACT.md §1: exit 130; SIGHUP, a closed terminal, is one more way to stop a run
 * and is treated as SIGTERM).  main installs the handlers before any command: the first signal
 * only sets a flag that every long loop polls (the run's wait, gen's workers, the trace writer, the
 * multi-run commands between runs); a second one exits at once with 130, unless it follows the first within
 * PB_SIGNAL_REPEAT_NS: `timeout` and job runners send one signal to the process and then to its group, and
 * that pair must not cost the report.  SIGPIPE and SIGXFSZ are ignored: a closed stdout pipe or a file past
 * `ulimit -f` then fails its write (EPIPE, EFBIG), and the command names the file and exits 1 instead of
 * dying silently with a half-written file. */
#define PB_SIGNAL_REPEAT_NS 200000000ull
void pb_signals_install(void);
bool pb_signalled(void);
/* A signal came more than PB_SIGNAL_BUDGET_NS ago: what is left to write (a long trace, the HTML page) is
 * skipped so that the process ends within a second of the signal; report.json is always written. */
#define PB_SIGNAL_BUDGET_NS 500000000ull
bool pb_signal_overdue(void);

/* Reads a whole file into a new buffer with a NUL after it (*len excludes the NUL).  0, or -errno when it
 * cannot be opened or read, -EFBIG when it holds more than max_bytes, -ENOMEM. */
int pb_read_file(const char *path, size_t max_bytes, char **out, size_t *len);

/* mkdir -p: creates path and its missing parents.  0 (also when it exists as a directory), -ENOTDIR when
 * it names something else, or -errno. */
int pb_mkdir_p(const char *path);

/* Levenshtein distance, for "did you mean" suggestions. */
int pb_edit_distance(const char *a, const char *b);

#define PB_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define PB_MIN(a, b) ((a) < (b) ? (a) : (b))
#define PB_MAX(a, b) ((a) > (b) ? (a) : (b))

#endif
