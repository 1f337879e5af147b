/* A sweep's grid and what its intervals allow to claim about the best (sweep_grid.h): pure, no I/O. */
#include "sweep_grid.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---------- the lists ---------- */

static int add_axis(pb_axis *a, const char *set, size_t path_len, const char *list, pb_err *err) {
  memset(a, 0, sizeof *a);
  if (path_len >= sizeof a->path) return pb_err_set(err, "--set %s: path too long (expected a dotted config path)", set);
  memcpy(a->path, set, path_len);
  for (const char *v = list;; v++) {
    size_t len = strcspn(v, ",");
    if (len == 0) return pb_err_set(err, "--set %s: empty value in the list (expected PATH=V1,V2,..)", set);
    if (len >= sizeof a->values[0] || a->nvalues == PB_SWEEP_MAX_VALUES)
      return pb_err_set(err, "--set %s: too many or too long values (expected at most %d values of %zu characters)",
                        set, PB_SWEEP_MAX_VALUES, sizeof a->values[0] - 1);
    memcpy(a->values[a->nvalues], v, len);
    a->values[a->nvalues++][len] = '\0';
    v += len;
    if (!*v) break;
  }
  return 0;
}

/* A path given one value and also a list: the list's values would silently replace the one value in every
 * combination, so the user's intent is unclear; refuse it. */
static int fixed_not_swept(const char *const *fixed, int nfixed, const pb_axis *axes, int naxes, pb_err *err) {
  for (int i = 0; i < nfixed; i++) {
    size_t len = strcspn(fixed[i], "=");
    for (int a = 0; a < naxes; a++)
      if (strlen(axes[a].path) == len && strncmp(axes[a].path, fixed[i], len) == 0)
        return pb_err_set(err, "--set %s: %s is also given a list (expected one value or one list per path)",
                          fixed[i], axes[a].path);
  }
  return 0;
}

int pb_sweep_split_sets(const char *const *sets, int nsets, pb_axis *axes, int *naxes, const char **fixed,
                        int *nfixed, pb_err *err) {
  *naxes = *nfixed = 0;
  for (int i = 0; i < nsets; i++) {
    const char *eq = strchr(sets[i], '=');
    const char *v = eq ? eq + 1 : NULL;
    bool list = v && strchr(v, ',') && v[0] != '[' && v[0] != '{' && v[0] != '"';
    if (!list) {
      fixed[(*nfixed)++] = sets[i];
      continue;
    }
    if (*naxes == PB_SWEEP_MAX_AXES)
      return pb_err_set(err, "--set %s: more than %d lists (expected fewer swept paths)", sets[i], PB_SWEEP_MAX_AXES);
    int rc = add_axis(&axes[*naxes], sets[i], (size_t)(eq - sets[i]), v, err);
    if (rc) return rc;
    for (int a = 0; a < *naxes; a++)
      if (strcmp(axes[a].path, axes[*naxes].path) == 0)
        return pb_err_set(err, "--set %s: %s has a list already (expected one list per path)", sets[i],
                          axes[a].path);
    ++*naxes;
  }
  return fixed_not_swept(fixed, *nfixed, axes, *naxes, err);
}

/* ---------- the grid ---------- */

long pb_sweep_combinations(const pb_axis *axes, int naxes) {
  long n = 1;
  for (int a = 0; a < naxes && n <= PB_SWEEP_MAX_TRIALS; a++) n *= axes[a].nvalues;
  return n;
}

/* Trial t's value index on axis a: the last axis varies fastest. */
int pb_sweep_value_index(const pb_axis *axes, int naxes, int t, int a) {
  for (int b = naxes - 1; b > a; b--) t /= axes[b].nvalues;
  return t % axes[a].nvalues;
}

/* ---------- the best ---------- */

int pb_sweep_best(const pb_run_figures *rows, const int *status, int ntrials) {
  int best = -1;
  for (int t = 0; t < ntrials; t++) {
    bool measured = status[t] == 0 && rows[t].have && !isnan(rows[t].samples_per_s); /* all its repeats completed */
    if (measured && (best < 0 || rows[t].samples_per_s > rows[best].samples_per_s)) best = t;
  }
  return best;
}

pb_sweep_decision pb_sweep_decide(const pb_interval *rate, const bool *ran, int n, int best, char *why, size_t len) {
  if (len) why[0] = '\0';
  if (best < 0 || best >= n) return PB_SWEEP_NO_BEST;
  if (!pb_interval_decisive(&rate[best])) {
    pb_interval_undecided_text(&rate[best], why, len);
    return PB_SWEEP_UNDECIDED;
  }
  for (int u = 0; u < n; u++) /* one decisive overlap settles it, whatever the others */
    if (u != best && ran[u] && pb_interval_compare(&rate[best], &rate[u]) == PB_DIFF_OVERLAP) return PB_SWEEP_NO_DIFFERENCE;
  int others = 0;
  for (int u = 0; u < n; u++) {
    if (u == best || !ran[u]) continue;
    others++;
    if (pb_interval_decisive(&rate[u])) continue;
    char what[96];
    pb_interval_undecided_text(&rate[u], what, sizeof what);
    if (len) snprintf(why, len, "trial %d: %s", u + 1, what);
    return PB_SWEEP_UNDECIDED;
  }
  if (others == 0) {
    if (len) snprintf(why, len, "no other trial ran to compare it with");
    return PB_SWEEP_UNDECIDED;
  }
  return PB_SWEEP_BEST;
}
