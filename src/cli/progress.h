/* Live progress on stderr: one line, redrawn in place, only when stderr is a terminal (never in a pipe or
 * a log file) and neither --quiet nor --no-progress was given.  The line is cut to the terminal's width
 * (TIOCGWINSZ, else $COLUMNS), since a wrapped line cannot be redrawn; under TERM=dumb or no TERM it uses
 * no escape codes, only \r and spaces over what the last line left.  `run` shows its phase, steps, samples/s,
 * device idle % and ETA; `gen` its files; ab, sweep and tune prefix each run's line with the run's label. */
#ifndef PB_PROGRESS_H
#define PB_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "steps.h"

#define PB_PROGRESS_INTERVAL_NS 500000000ull /* redraw twice a second */

typedef struct pb_progress {
  bool on;
  bool drawn;                   /* a line is on the screen (to be cleared at the end) */
  bool ansi;                    /* the terminal takes \033[K (TERM set, and not "dumb") */
  int shown_chars;              /* characters of the line on the screen: a shorter next one blanks the rest */
  uint64_t last_ns;             /* last redraw */
  char label[192];              /* printed before the figures ("" for a plain run) */
} pb_progress;

/* True when progress should be shown: stderr is a terminal, and not quiet. */
bool pb_progress_wanted(bool quiet, bool no_progress);
void pb_progress_init(pb_progress *p, bool on, const char *label);
/* True (and the clock reset) when it is time to redraw. */
bool pb_progress_due(pb_progress *p, uint64_t now_ns);
/* Redraws the line: "\rpipebench: <label> <text>", cut to the terminal's width, and clears the rest of the
 * terminal line. */
void pb_progress_draw(pb_progress *p, const char *text);
/* What pb_progress_draw writes for a terminal `cols` wide (0: unknown, no cut), into out (always
 * terminated); *shown gets the characters the line leaves on screen. */
void pb_progress_render(const pb_progress *p, const char *text, int cols, char *out, size_t len, int *shown);
/* True when a terminal called `term` (getenv("TERM"), may be NULL) takes ANSI escape codes. */
bool pb_progress_term_ansi(const char *term);
/* Columns of the terminal on fd (TIOCGWINSZ), else a positive $COLUMNS, else 0. */
int pb_progress_columns(int fd);
/* Clears the line when one was drawn, so that what is printed next starts on a clean line. */
void pb_progress_end(pb_progress *p);

/* "1:05" (m:ss) or "1:02:05" (h:mm:ss); "?" when unknown (negative, NAN or absurd). */
void pb_progress_eta(char *buf, size_t len, double seconds);

/* The run's line from what the steps have done: phase (warm-up, measuring), steps done / total, samples/s
 * and device idle % of the measured window so far, ETA.  files_fraction (0..1, or < 0 when unknown) is
 * how much of an epochs-limited run the read stage has taken on; it gives that run's ETA. */
void pb_progress_run_text(char *buf, size_t len, const pb_steps_live *l, uint64_t now_ns, uint64_t start_ns,
                          double files_fraction);

#endif
