/* A TensorFlow Profiler capture named on the command line (capture.h). */
#include "capture.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tfdata_verdict.h"

#define MAX_FILES 256

static bool is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool pb_is_capture(const char *path) {
  if (!is_dir(path)) return pb_ends_with(path, PB_CAPTURE_SUFFIX);
  char profile[PB_PATH_LEN + 32];
  snprintf(profile, sizeof profile, "%s/plugins/profile", path);
  return is_dir(profile);
}

/* The newest run of a log directory: DIR/plugins/profile/<run> with the greatest name (the profiler names
 * runs by their UTC time, so the greatest is the last), into out; false when there is none. */
static bool newest_run(const char *dir, char *out, size_t len) {
  char profile[PB_PATH_LEN];
  snprintf(profile, sizeof profile, "%s/plugins/profile", dir);
  DIR *d = opendir(profile);
  if (!d) return false;
  char best[256] = "";
  for (struct dirent *e; (e = readdir(d));)
    if (e->d_name[0] != '.' && strcmp(e->d_name, best) > 0) snprintf(best, sizeof best, "%s", e->d_name);
  closedir(d);
  int w = best[0] ? snprintf(out, len, "%s/%s", profile, best) : -1;
  return w > 0 && (size_t)w < len; /* a path too long to open is no run */
}

/* The captures (<host>.xplane.pb) of a directory: a log directory's newest run, or the directory itself. */
static int list_captures(const char *dir, char (*paths)[PB_PATH_LEN], int max) {
  char run[PB_PATH_LEN];
  if (!newest_run(dir, run, sizeof run)) snprintf(run, sizeof run, "%s", dir);
  DIR *d = opendir(run);
  if (!d) return 0;
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) && n < max;) {
    if (!pb_ends_with(e->d_name, PB_CAPTURE_SUFFIX)) continue;
    int w = snprintf(paths[n], PB_PATH_LEN, "%s/%s", run, e->d_name);
    n += w > 0 && w < PB_PATH_LEN; /* a path too long to open is left out */
  }
  closedir(d);
  return n;
}

static int read_capture(const char *path, const char *cmd, pb_tfdata *t) {
  pb_xspace *x = NULL;
  pb_err err = {{0}};
  int rc = pb_xspace_load(path, &x, &err);
  if (!rc) rc = pb_tfdata_read(x, path, t, &err);
  pb_xspace_free(x);
  if (rc) fprintf(stderr, "pipebench: %s: %s\n", cmd, err.msg);
  return rc == -ENOMEM ? PB_EXIT_RUNTIME : rc ? PB_EXIT_USAGE : 0;
}

/* A host's line of the table, from its capture's own verdict. */
static void describe_host(const char *path, const pb_tfdata *t, pb_import_host *h) {
  pb_tf_verdict v;
  pb_tfdata_verdict(t, &v);
  const char *slash = strrchr(path, '/');
  snprintf(h->capture, sizeof h->capture, "%s", path);
  snprintf(h->host, sizeof h->host, "%s", t->host[0] ? t->host : slash ? slash + 1 : path);
  if (!t->host[0] && pb_ends_with(h->host, PB_CAPTURE_SUFFIX))
    h->host[strlen(h->host) - strlen(PB_CAPTURE_SUFFIX)] = '\0';
  h->steps = t->nsteps;
  h->input_bound_pct = v.input_bound_pct;
  h->samples_per_s = v.actual_per_s;
  snprintf(h->bottleneck, sizeof h->bottleneck, "%s", v.bottleneck >= 0 ? t->iterators[v.bottleneck].name : "");
}

/* Keeps hosts in order of their input-bound share, the most first (a host without steps last). */
static void insert_host(pb_capture *c, const pb_import_host *h) {
  int n = c->nhosts < PB_MAX_IMPORT_HOSTS ? c->nhosts : PB_MAX_IMPORT_HOSTS, at = n;
  double pct = isnan(h->input_bound_pct) ? -1 : h->input_bound_pct;
  while (at > 0 && (isnan(c->hosts[at - 1].input_bound_pct) ? -1 : c->hosts[at - 1].input_bound_pct) < pct) at--;
  c->nhosts++;
  if (at == PB_MAX_IMPORT_HOSTS) return;
  int last = n < PB_MAX_IMPORT_HOSTS ? n : PB_MAX_IMPORT_HOSTS - 1;
  memmove(&c->hosts[at + 1], &c->hosts[at], (size_t)(last - at) * sizeof *c->hosts);
  c->hosts[at] = *h;
}

/* Of a directory's hosts, the most input-bound one read into c->t (the others only described). */
static int open_dir(const char *arg, const char *cmd, pb_capture *c) {
  static char paths[MAX_FILES][PB_PATH_LEN];
  int n = list_captures(arg, paths, MAX_FILES);
  if (n == 0) {
    fprintf(stderr,
            "pipebench: %s: %s: no *" PB_CAPTURE_SUFFIX
            " in it (expected a TensorFlow Profiler log directory, with "
            "plugins/profile/<run>/<host>" PB_CAPTURE_SUFFIX ", or such a file)\n",
            cmd, arg);
    return PB_EXIT_USAGE;
  }
  bool have = false;
  for (int i = 0; i < n; i++) {
    pb_tfdata h;
    int rc = read_capture(paths[i], cmd, &h);
    if (rc) {
      if (have) pb_tfdata_free(&c->t);
      return rc;
    }
    pb_import_host row;
    describe_host(paths[i], &h, &row);
    insert_host(c, &row);
    if (have && strcmp(c->hosts[0].capture, paths[i]) != 0) { /* not the most input-bound so far */
      pb_tfdata_free(&h);
      continue;
    }
    if (have) pb_tfdata_free(&c->t);
    c->t = h, have = true;
    snprintf(c->path, sizeof c->path, "%.*s", PB_PATH_LEN - 1, paths[i]);
  }
  return 0;
}

int pb_capture_open(const char *arg, const char *cmd, pb_capture *c) {
  memset(c, 0, sizeof *c);
  if (is_dir(arg)) return open_dir(arg, cmd, c);
  snprintf(c->path, sizeof c->path, "%s", arg);
  int rc = read_capture(arg, cmd, &c->t);
  if (!rc) describe_host(arg, &c->t, &c->hosts[c->nhosts++]);
  return rc;
}

void pb_capture_free(pb_capture *c) { pb_tfdata_free(&c->t); }
