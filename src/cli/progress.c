#include "progress.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "common.h"

bool pb_progress_wanted(bool quiet, bool no_progress) {
  return !quiet && !no_progress && isatty(STDERR_FILENO);
}

void pb_progress_init(pb_progress *p, bool on, const char *label) {
  memset(p, 0, sizeof *p);
  p->on = on;
  p->ansi = pb_progress_term_ansi(getenv("TERM"));
  p->last_ns = pb_now_ns(); /* the first line after one interval: a phase shorter than that shows none */
  snprintf(p->label, sizeof p->label, "%s", label ? label : "");
}

bool pb_progress_due(pb_progress *p, uint64_t now_ns) {
  if (!p->on) return false;
  if (now_ns - p->last_ns < PB_PROGRESS_INTERVAL_NS) return false;
  p->last_ns = now_ns;
  return true;
}

/* A dumb terminal (Emacs' shell, a serial console) prints escape codes as text. */
bool pb_progress_term_ansi(const char *term) { return term && term[0] && strcmp(term, "dumb") != 0; }

#define MAX_COLUMNS 4096 /* a $COLUMNS past this is not a terminal's width */

int pb_progress_columns(int fd) {
  struct winsize ws;
  if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  const char *env = getenv("COLUMNS");
  if (!env || !env[0]) return 0;
  char *end;
  long n = strtol(env, &end, 10);
  return *end == '\0' && n > 0 && n <= MAX_COLUMNS ? (int)n : 0;
}

/* Bytes of s that hold at most max_chars characters, never ending inside one (UTF-8: a continuation byte
 * starts none); *chars gets how many they hold. */
static size_t prefix_bytes(const char *s, int max_chars, int *chars) {
  size_t i = 0;
  int n = 0;
  for (; s[i]; i++) {
    bool starts = ((unsigned char)s[i] & 0xC0) != 0x80;
    if (starts && n == max_chars) break;
    n += starts;
  }
  *chars = n;
  return i;
}

void pb_progress_render(const pb_progress *p, const char *text, int cols, char *out, size_t len, int *shown) {
  char line[512];
  snprintf(line, sizeof line, "pipebench: %s%s%s", p->label, p->label[0] ? "  " : "", text);
  /* A line that wraps could not be redrawn in place (\r goes back to the start of its last row only):
   * cut it to the terminal's width, less one column (a character in the last one wraps on some terminals),
   * however narrow the terminal is. */
  int chars;
  size_t n = prefix_bytes(line, cols > 0 ? cols - 1 : INT_MAX, &chars);
  /* \033[K clears to the end of the line, so a shorter line leaves nothing of the longer one behind; a
   * dumb terminal gets spaces over what the last line had past this one's end instead. */
  int blank = p->ansi || p->shown_chars <= chars ? 0 : p->shown_chars - chars;
  snprintf(out, len, "\r%.*s%*s%s", (int)n, line, blank, "", p->ansi ? "\033[K" : "");
  *shown = chars;
}

void pb_progress_draw(pb_progress *p, const char *text) {
  if (!p->on) return;
  char out[1200]; /* the line (511 bytes at most), spaces over the last one (at most as many), the escape */
  pb_progress_render(p, text, pb_progress_columns(STDERR_FILENO), out, sizeof out, &p->shown_chars);
  fputs(out, stderr);
  fflush(stderr);
  p->drawn = true;
}

void pb_progress_end(pb_progress *p) {
  if (!p->drawn) return;
  if (p->ansi) fputs("\r\033[K", stderr);
  else fprintf(stderr, "\r%*s\r", p->shown_chars, "");
  fflush(stderr);
  p->drawn = false;
  p->shown_chars = 0;
}

void pb_progress_eta(char *buf, size_t len, double seconds) {
  if (!(seconds >= 0) || seconds > 1e7) {
    snprintf(buf, len, "?");
    return;
  }
  long s = lround(seconds);
  if (s >= 3600) snprintf(buf, len, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else snprintf(buf, len, "%ld:%02ld", s / 60, s % 60);
}

/* Seconds left of the measured window, from how far it has come: NAN when it cannot be told. */
static double eta_s(const pb_steps_live *l, double window_s, double files_fraction, double elapsed_s) {
  if (l->target > 0) {
    if (!l->measured || window_s <= 0) return NAN;
    double per_step_s = window_s / (double)l->measured;
    return (double)(l->target - (int64_t)l->measured) * per_step_s;
  }
  if (l->duration_ns) return fmax(0.0, (double)l->duration_ns / 1e9 - window_s); /* the last step may overrun */
  if (files_fraction > 0.01 && files_fraction <= 1.0) return elapsed_s * (1.0 - files_fraction) / files_fraction;
  return NAN;
}

void pb_progress_run_text(char *buf, size_t len, const pb_steps_live *l, uint64_t now_ns, uint64_t start_ns,
                          double files_fraction) {
  double elapsed_s = now_ns > start_ns ? (double)(now_ns - start_ns) / 1e9 : 0;
  if (!l->measuring) {
    if (l->warmup > 0) snprintf(buf, len, "warm-up  step %zu/%lld  %.1f s", l->done, (long long)l->warmup, elapsed_s);
    else snprintf(buf, len, "starting  %.1f s", elapsed_s);
    return;
  }
  double window_s = now_ns > l->window_start_ns ? (double)(now_ns - l->window_start_ns) / 1e9 : 0;
  char steps[64], rate[48] = "", idle[32] = "", eta[24];
  if (l->target > 0) snprintf(steps, sizeof steps, "step %llu/%lld", (unsigned long long)l->measured, (long long)l->target);
  else if (l->duration_ns)
    snprintf(steps, sizeof steps, "step %llu  %.0f/%.0f s", (unsigned long long)l->measured, window_s,
             (double)l->duration_ns / 1e9);
  else snprintf(steps, sizeof steps, "step %llu", (unsigned long long)l->measured);
  if (window_s > 0 && l->measured) {
    snprintf(rate, sizeof rate, "  %.1f samples/s", (double)l->measured_samples / window_s);
    double busy = (double)l->measured_compute_ns / 1e9 / (window_s * (l->devices > 0 ? l->devices : 1));
    double idle_pct = 100.0 * (1.0 - (busy > 1.0 ? 1.0 : busy));
    snprintf(idle, sizeof idle, "  device idle %.1f%%", idle_pct);
  }
  pb_progress_eta(eta, sizeof eta, eta_s(l, window_s, files_fraction, elapsed_s));
  snprintf(buf, len, "measuring  %s%s%s  ETA %s", steps, rate, idle, eta);
}
