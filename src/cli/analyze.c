/* `pipebench analyze PATH`: load the record from trace.json, compute the report exactly as a run does,
 * print it and, with --out DIR, write it. */
#include "analyze.h"
#include "json_text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture.h"
#include "capture_record.h"
#include "metrics.h"
#include "record.h"
#include "report.h"
#include "trace_json.h"

/* PATH itself, or PATH/trace.json when PATH is a directory.  0, or the exit status after an error line. */
static int resolve(const char *path, char *out, size_t len) {
  struct stat st;
  if (stat(path, &st) != 0) { /* a PATH that is not there is a usage error, as a missing --config is */
    int e = errno;
    fprintf(stderr, "pipebench: %s: cannot read: %s (expected a trace.json or a run directory holding one)\n",
            path, strerror(e));
    return e == ENOENT || e == ENOTDIR ? PB_EXIT_USAGE : PB_EXIT_RUNTIME;
  }
  if (!S_ISDIR(st.st_mode)) {
    snprintf(out, len, "%s", path);
    return 0;
  }
  size_t n = strlen(path);
  snprintf(out, len, "%s%strace.json", path, n && path[n - 1] == '/' ? "" : "/");
  if (stat(out, &st) != 0) {
    fprintf(stderr,
            "pipebench: %s: no trace.json in this directory (expected a run directory written with the trace "
            "format and without --no-trace, or a trace.json)\n",
            path);
    return PB_EXIT_USAGE; /* a PATH that holds no trace is named wrong, as one that is not there */
  }
  return 0;
}

/* --out DIR: made if missing; it must end up a directory we can write in. */
static int make_out_dir(const char *dir) {
  int rc = pb_mkdir_p(dir);
  struct stat st;
  if (!rc && stat(dir, &st) != 0) rc = -errno;
  if (!rc && !S_ISDIR(st.st_mode)) rc = -ENOTDIR;
  if (!rc && access(dir, W_OK) != 0) rc = -errno;
  if (rc)
    fprintf(stderr, "pipebench: %s: cannot create the output directory: %s (expected a writable directory)\n", dir,
            strerror(-rc));
  return rc ? PB_EXIT_RUNTIME : 0;
}

static int write_outputs(pb_report *r, const pb_record *rec, const pb_run_opts *o) {
  int rc = make_out_dir(o->out_dir);
  if (rc) return rc;
  snprintf(r->out_dir, sizeof r->out_dir, "%s", o->out_dir);
  char path[PB_PATH_LEN + 32];
  if (o->formats & PB_FMT_TRACE) { /* the same record again (asked for with --format ..,trace) */
    snprintf(path, sizeof path, "%s/trace.json", o->out_dir);
    int wrc = pb_trace_write_file(rec, path);
    if (wrc == -ECANCELED) return PB_EXIT_INTERRUPTED; /* a signal's time budget ran out while writing it */
    if (wrc) {
      fprintf(stderr, "pipebench: %s: cannot write the trace: %s\n", path, strerror(-wrc));
      return PB_EXIT_RUNTIME;
    }
  }
  if (o->formats & PB_FMT_JSON) {
    snprintf(path, sizeof path, "%s/report.json", o->out_dir);
    int wrc = pb_report_write_json(r, path);
    if (wrc) {
      fprintf(stderr, "pipebench: %s: cannot write the report: %s\n", path, strerror(-wrc));
      return PB_EXIT_RUNTIME;
    }
  }
  return pb_run_write_views(o->formats, o->out_dir, r, rec);
}

static int print_report(const pb_report *r, const pb_run_opts *o) {
  if (o->json_stdout) {
    cJSON *json = pb_report_to_json(r);
    char *text = json ? pb_json_print(json, true) : NULL;
    cJSON_Delete(json);
    if (!text) {
      fprintf(stderr, "pipebench: out of memory for the JSON report\n");
      return PB_EXIT_RUNTIME;
    }
    printf("%s\n", text);
    free(text);
  } else if ((o->formats & PB_FMT_TEXT) && !o->quiet) {
    pb_report_print_text(r, stdout);
  } else if (o->result_line) {
    pb_report_print_line(r, stdout);
  }
  return 0;
}

/* The record of a TensorFlow Profiler capture's tf.data job (src/import/capture_record.h), its config the twin. */
static int load_capture(const char *path, pb_record *rec, char *file, size_t len) {
  pb_capture *c = calloc(1, sizeof *c);
  if (!c) return fprintf(stderr, "pipebench: out of memory\n"), PB_EXIT_RUNTIME;
  int rc = pb_capture_open(path, "analyze", c);
  if (!rc) {
    char name[160];
    snprintf(name, sizeof name, "twin-%.100s", c->hosts[0].host);
    for (char *p = name; *p; p++) /* a config's name is plain text */
      if ((unsigned char)*p < 0x20 || *p == '"' || *p == '\\') *p = '_';
    pb_err err = {{0}};
    int brc = pb_capture_record(&c->t, c->path, name, rec, &err);
    if (brc) fprintf(stderr, "pipebench: analyze: %s\n", err.msg);
    rc = brc == -ENOMEM ? PB_EXIT_RUNTIME : brc ? PB_EXIT_USAGE : 0;
  }
  if (!rc) {
    rec->source.nhosts = c->nhosts;
    memcpy(rec->source.hosts, c->hosts, sizeof rec->source.hosts);
    snprintf(file, len, "%s", c->path);
  }
  pb_capture_free(c);
  free(c);
  return rc;
}

int pb_analyze(const char *path, const pb_run_opts *opts) {
  char file[PB_PATH_LEN + 16];
  bool capture = pb_is_capture(path);
  int rc = capture ? 0 : resolve(path, file, sizeof file);
  if (rc) return rc;
  pb_record *rec = calloc(1, sizeof *rec);
  pb_report *r = calloc(1, sizeof *r);
  if (!rec || !r) {
    free(rec);
    free(r);
    fprintf(stderr, "pipebench: out of memory\n");
    return PB_EXIT_RUNTIME;
  }
  pb_err err;
  int lrc = 0;
  if (capture) {
    rc = load_capture(path, rec, file, sizeof file);
    if (rc) goto out;
  } else {
    lrc = pb_trace_load_file(rec, file, &err);
  }
  if (lrc) {
    fprintf(stderr, "pipebench: %s\n", err.msg);
    rc = lrc == -EINVAL ? PB_EXIT_USAGE : PB_EXIT_RUNTIME;
    goto out;
  }
  pb_metrics_compute(r, rec);
  r->config = pb_config_to_json(rec->cfg);
  if (!r->config) {
    fprintf(stderr, "pipebench: out of memory for the resolved config\n");
    rc = PB_EXIT_RUNTIME;
    goto out;
  }
  if (!r->balanced && !opts->quiet)
    fprintf(stderr, "pipebench: %s: note: the sample accounting of this run does not balance (see report)\n", file);
  if (opts->out_dir) rc = write_outputs(r, rec, opts);
  if (!rc) rc = print_report(r, opts);
out:
  cJSON_Delete(r->config);
  pb_record_free(rec);
  free(rec);
  free(r);
  return rc;
}
