#include "common.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void err_vset(pb_err *err, const char *fmt, va_list ap) {
  if (err) vsnprintf(err->msg, sizeof err->msg, fmt, ap);
}

int pb_err_setc(pb_err *err, int rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  err_vset(err, fmt, ap);
  va_end(ap);
  return rc;
}

int pb_err_set(pb_err *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  err_vset(err, fmt, ap);
  va_end(ap);
  return -EINVAL;
}

const char *pb_fmt_double(pb_numbuf *b, const char *fmt, double v) {
  if (!isfinite(v)) return "n/a";
  snprintf(b->s, sizeof b->s, fmt, v);
  return b->s;
}

bool pb_starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

bool pb_ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

uint64_t pb_now_ns(void) { /* what libuv's uv_hrtime reads on Linux, without making the core layer need libuv */
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t pb_unix_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

_Thread_local uint64_t pb_thread_waits;

bool pb_thread_sched_stat(pb_sched_stat *s) {
  /* "<on-cpu ns> <run-queue wait ns> <timeslices>" (Documentation/scheduler/sched-stats.rst); read twice
   * per worker, at its start and its exit, so the open and read cost nothing that matters. */
  FILE *f = fopen("/proc/thread-self/schedstat", "r");
  if (!f) return false;
  unsigned long long run_ns, delay_ns, slices;
  int n = fscanf(f, "%llu %llu %llu", &run_ns, &delay_ns, &slices);
  fclose(f);
  *s = (pb_sched_stat){.run_ns = run_ns, .delay_ns = delay_ns, .slices = slices};
  /* All zero: statistics off.  A new thread reads "0 <delay> 1": its on-core time is not counted in yet. */
  return n == 3 && (run_ns || delay_ns || slices);
}

void pb_sleep_until_ns(uint64_t deadline_ns) {
  /* pb_now_ns() is CLOCK_MONOTONIC, so an absolute clock_nanosleep on it is exact and immune to
   * early wake-ups (EINTR just loops). */
  struct timespec ts = {.tv_sec = (time_t)(deadline_ns / 1000000000u),
                        .tv_nsec = (long)(deadline_ns % 1000000000u)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
}

void pb_spin_until_ns(uint64_t deadline_ns) {
  while (pb_now_ns() < deadline_ns) {
  }
}

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void pb_spin_cpu_ns(uint64_t cpu_ns) {
  uint64_t end = thread_cpu_ns() + cpu_ns;
  while (thread_cpu_ns() < end) {
  }
}

void pb_thread_precise_timers(void) {
  /* The default 50 us slack would make every emulated copy/step overshoot by tens of microseconds. */
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
}

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void pb_rng_seed(pb_rng *r, uint64_t seed) {
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t pb_rng_next(pb_rng *r) {
  uint64_t *s = r->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

double pb_rng_uniform(pb_rng *r) { return (double)(pb_rng_next(r) >> 11) * 0x1.0p-53; }

double pb_rng_normal(pb_rng *r, double mean, double stdev) {
  /* Box-Muller; one value per call keeps the state simple. */
  double u1 = pb_rng_uniform(r), u2 = pb_rng_uniform(r);
  if (u1 < 1e-300) u1 = 1e-300;
  return mean + stdev * sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

int pb_edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 63 || lb > 63) return 99;
  int row[64];
  for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    int diag = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= lb; j++) {
      int up = row[j];
      int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      int best = PB_MIN(row[j] + 1, row[j - 1] + 1);
      row[j] = PB_MIN(best, diag + cost);
      diag = up;
    }
  }
  return row[lb];
}

int pb_mkdir_p(const char *path) {
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(buf, 0777) && errno != EEXIST) return -errno;
    *p = '/';
  }
  if (mkdir(buf, 0777) == 0) return 0;
  if (errno != EEXIST) return -errno;
  struct stat st; /* EEXIST: a directory is what was asked for; a file of that name is not */
  return stat(buf, &st) == 0 && !S_ISDIR(st.st_mode) ? -ENOTDIR : 0;
}

/* PB_DEBUG_HOLD_TMP_MS (common.h): a write held with its temporary file open, in slices (TSan delivers a
 * signal only at its next intercepted call). */
static void debug_hold_tmp(void) {
  const char *ms = getenv("PB_DEBUG_HOLD_TMP_MS");
  uint64_t end = ms && atoi(ms) > 0 ? pb_now_ns() + (uint64_t)atoi(ms) * 1000000u : 0;
  while (pb_now_ns() < end) pb_sleep_until_ns(PB_MIN(end, pb_now_ns() + 10000000u));
}

static pb_written_hook g_written_hook;

void pb_set_written_hook(pb_written_hook hook) { g_written_hook = hook; }

int pb_write_atomic(const char *path, pb_write_body body, const void *arg) {
  size_t len = strlen(path) + sizeof ".tmp";
  char *tmp = malloc(len);
  if (!tmp) return -ENOMEM;
  snprintf(tmp, len, "%s.tmp", path);
  if (g_written_hook) g_written_hook(path); /* recorded before it exists: a kill after the rename leaves it known */
  int slot = pb_cleanup_on_exit(tmp); /* before it exists: a second signal at any point removes it */
  FILE *f = fopen(tmp, "we");
  int rc = f ? 0 : -errno;
  if (!rc) {
    errno = 0; /* stdio sets it on a failed write; anything older is not this failure */
    rc = body(f, arg);
    debug_hold_tmp();
    if (!rc && (fflush(f) != 0 || ferror(f))) rc = errno ? -errno : -EIO;
    if (fclose(f) != 0 && !rc) rc = errno ? -errno : -EIO;
    if (!rc && rename(tmp, path) != 0) rc = -errno;
    if (rc) remove(tmp);
  }
  pb_cleanup_forget(slot);
  free(tmp);
  return rc;
}

int pb_read_file(const char *path, size_t max_bytes, char **out, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return -errno;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap + 1);
  while (buf && !ferror(f) && !feof(f) && n <= max_bytes) {
    if (n == cap) {
      char *bigger = realloc(buf, 2 * cap + 1);
      if (!bigger) break;
      buf = bigger, cap *= 2;
    }
    n += fread(buf + n, 1, cap - n, f);
  }
  int rc = ferror(f) ? (errno ? -errno : -EIO) : !buf || !feof(f) ? -ENOMEM : 0;
  if (!rc && n > max_bytes) rc = -EFBIG;
  fclose(f);
  if (rc) {
    free(buf);
    return rc;
  }
  buf[n] = '\0';
  *out = buf;
  *len = n;
  return 0;
}

/* ---------- files removed on an abrupt exit ---------- */

/* A slot is FREE, FILLING (its owner is writing the path), HELD (the path stands) or TAKEN by the handler.
 * Owner and handler each claim a HELD slot with a compare-and-swap, so the handler never reads a path
 * that its owner is freeing or rewriting in another thread. */
enum { SLOT_FREE, SLOT_FILLING, SLOT_HELD, SLOT_TAKEN };
#define CLEANUP_PATH_LEN (4096 + 64) /* PB_PATH_LEN and a file name under it */
static atomic_int g_cleanup_state[PB_CLEANUP_SLOTS];
static char g_cleanup_path[PB_CLEANUP_SLOTS][CLEANUP_PATH_LEN];

int pb_cleanup_on_exit(const char *path) {
  if (strlen(path) >= CLEANUP_PATH_LEN) return -1;
  for (int i = 0; i < PB_CLEANUP_SLOTS; i++) {
    int expected = SLOT_FREE;
    if (!atomic_compare_exchange_strong(&g_cleanup_state[i], &expected, SLOT_FILLING)) continue;
    memcpy(g_cleanup_path[i], path, strlen(path) + 1);
    atomic_store_explicit(&g_cleanup_state[i], SLOT_HELD, memory_order_release);
    return i;
  }
  return -1;
}

void pb_cleanup_forget(int slot) {
  if (slot < 0 || slot >= PB_CLEANUP_SLOTS) return;
  int expected = SLOT_HELD; /* fails only when the handler took it: the process is ending */
  atomic_compare_exchange_strong(&g_cleanup_state[slot], &expected, SLOT_FREE);
}

/* From the handler, just before _exit. */
static void cleanup_now(void) {
  for (int i = 0; i < PB_CLEANUP_SLOTS; i++) {
    int expected = SLOT_HELD;
    if (atomic_compare_exchange_strong(&g_cleanup_state[i], &expected, SLOT_TAKEN)) unlink(g_cleanup_path[i]);
  }
}

/* ---------- signals ---------- */

/* Lock-free atomics (asserted below) are safe in a handler; the time is stored before the flag (release),
 * so a thread that sees the flag (acquire) sees the time too.  Threads other than the one the signal
 * lands on read the flag: plain volatile would be a data race. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2 && ATOMIC_LLONG_LOCK_FREE == 2, "signal flags must be lock-free");
static atomic_int g_signalled;
static atomic_ullong g_signal_ns;

/* write(2) of a literal from the handler: stdio is not async-signal-safe. */
static void say(const char *msg) {
  ssize_t ignored = write(STDERR_FILENO, msg, strlen(msg));
  (void)ignored;
}

static void on_signal(int sig) {
  (void)sig;
  struct timespec ts; /* clock_gettime is async-signal-safe (POSIX); the same clock as pb_now_ns */
  clock_gettime(CLOCK_MONOTONIC, &ts);
  unsigned long long now_ns = (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
  if (atomic_load_explicit(&g_signalled, memory_order_acquire)) {
    /* `timeout` and job runners signal the process and then its group: one event, two deliveries */
    if (now_ns - atomic_load_explicit(&g_signal_ns, memory_order_relaxed) < PB_SIGNAL_REPEAT_NS) return;
    cleanup_now(); /* a half-written NAME.tmp (a trace of tens of MB) must not stay behind */
    say("pipebench: second signal: exiting at once, without finishing the report\n");
    _exit(130); /* PB_EXIT_INTERRUPTED */
  }
  atomic_store_explicit(&g_signal_ns, now_ns, memory_order_relaxed);
  atomic_store_explicit(&g_signalled, 1, memory_order_release);
}

bool pb_signalled(void) { return atomic_load_explicit(&g_signalled, memory_order_acquire) != 0; }

bool pb_signal_overdue(void) {
  return pb_signalled() && pb_now_ns() - atomic_load_explicit(&g_signal_ns, memory_order_relaxed) > PB_SIGNAL_BUDGET_NS;
}

void pb_signals_install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL); /* a closed terminal: stop and write the report, as for SIGTERM */
  /* Their default is to kill the process mid-write without a word: ignored, the write fails instead
   * (EPIPE on a closed stdout pipe, EFBIG past `ulimit -f`), and the error names the file. */
  sa.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &sa, NULL);
  sigaction(SIGXFSZ, &sa, NULL);
}
