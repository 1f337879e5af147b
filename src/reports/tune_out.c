/* tune.json and tune's summary (tune_out.h). */
#include "tune_out.h"

#include <math.h>
#include <string.h>

#include "common.h"
#include "multirun_out.h"
#include "repeat_out.h"

/* The trial's figures: its run's, or with repeats the medians and the median repeat's bottleneck. */
static cJSON *trial_figures_json(const pb_tune_trial *tr, const char *dir) {
  if (!tr->runs) return pb_multi_run_json(NULL, tr->status, dir);
  pb_run_figures f;
  pb_repeat_figures(tr->runs, tr->nruns, &tr->sum, &f);
  f.status = tr->status;
  return pb_multi_figures_json(&f, dir);
}

#define CEILING_NOTE                                                                                      \
  "predicted up to the device's rate, and measured within the run's noise of it (at least 1 %, at most\n" \
  "  5 %): not a check of the model"

/* The trial's note: how close to the ceiling it measured, and the tolerance that makes it "reached". */
static void ceiling_note(const pb_tune_trial *tr, char *out, size_t len) {
  double m = pb_tune_trial_measured(tr);
  snprintf(out, len,
           "predicted up to the device's rate (%.1f samples/s) and measured %.1f, %.1f %% below it, within the "
           "tolerance of %.1f %% (the run's noise, at least 1 %%, at most 5 %%): not a check of the model",
           tr->predicted, m, 100 * (tr->predicted - m) / tr->predicted,
           100 * pb_tune_ceiling_tolerance(pb_tune_trial_noise_pct(tr)));
}

static cJSON *trial_json(const pb_tune_result *r, int i) {
  const pb_tune_trial *tr = &r->trials[i];
  char dir[PB_PATH_LEN + 32];
  snprintf(dir, sizeof dir, "%s/trial-%03d", r->out_dir, i + 1);
  cJSON *o = trial_figures_json(tr, dir);
  cJSON_AddNumberToObject(o, "trial", i + 1);
  cJSON_AddStringToObject(o, "change", tr->change);
  cJSON *sets = cJSON_AddObjectToObject(o, "sets");
  for (int k = 0; k < r->nknobs; k++) cJSON_AddNumberToObject(sets, r->knobs[k].path, tr->p.v[k]);
  pb_multi_add_number(o, "predicted_samples_per_s", tr->predicted, 1);
  cJSON_AddBoolToObject(o, "predicted_up_to", tr->up_to);
  pb_multi_add_number(o, "prediction_error_pct", pb_tune_trial_error_pct(tr), 2);
  char note[320];
  if (pb_tune_trial_reached_ceiling(tr)) ceiling_note(tr, note, sizeof note);
  if (pb_tune_trial_reached_ceiling(tr))
    cJSON_AddStringToObject(o, "prediction_note", note);
  else
    cJSON_AddNullToObject(o, "prediction_note");
  cJSON_AddBoolToObject(o, "best", i == r->best);
  if (r->repeats > 1 && tr->runs)
    cJSON_AddItemToObject(o, "repeats", pb_repeat_json(tr->runs, tr->nruns, &tr->sum));
  else
    cJSON_AddNullToObject(o, "repeats");
  return o;
}

/* A boolean the re-measure decides: null where it decided nothing (not run, interrupted, too few). */
static void add_decided(cJSON *o, const char *key, const pb_tune_remeasure *re, bool v) {
  bool decided =
      re->outcome == PB_TUNE_GAIN || re->outcome == PB_TUNE_NO_DIFFERENCE || re->outcome == PB_TUNE_BASE_FASTER;
  if (decided)
    cJSON_AddBoolToObject(o, key, v);
  else
    cJSON_AddNullToObject(o, key);
}

/* tune.json's "remeasure": null when the base config is the best; else what it found (outcome), each side's
 * repeats object (with its trial; null when it did not run), the booleans and the gain of the medians. */
static cJSON *remeasure_json(const pb_tune_result *r) {
  const pb_tune_remeasure *re = r->re;
  if (!re->needed) return cJSON_CreateNull();
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddNumberToObject(o, "pairs", re->pairs);
  cJSON_AddStringToObject(o, "outcome", pb_tune_outcome_name(re->outcome));
  if (re->skipped)
    cJSON_AddStringToObject(o, "not_remeasured_reason", re->why_not);
  else
    cJSON_AddNullToObject(o, "not_remeasured_reason");
  pb_multi_add_number(o, "estimate_s", re->estimate_s, 3);
  pb_multi_add_number(o, "wall_s", re->started ? re->wall_s : NAN, 3);
  static const char *const keys[] = {"base", "tuned"};
  for (int side = PB_TUNE_RE_BASE; side <= PB_TUNE_RE_BEST; side++) {
    cJSON *rj = re->started ? pb_repeat_json(re->runs[side], re->done[side], &re->sum[side]) : cJSON_CreateNull();
    if (re->started && rj) cJSON_AddNumberToObject(rj, "trial", side == PB_TUNE_RE_BASE ? 1 : r->best + 1);
    cJSON_AddItemToObject(o, keys[side], rj);
  }
  add_decided(o, "no_measurable_difference", re, re->outcome == PB_TUNE_NO_DIFFERENCE);
  add_decided(o, "gain_measurable", re, re->outcome == PB_TUNE_GAIN);
  add_decided(o, "base_measurably_faster", re, re->outcome == PB_TUNE_BASE_FASTER);
  pb_multi_add_number(o, "gain_pct", re->started ? pb_tune_remeasured_gain_pct(re) : NAN, 2);
  cJSON_AddBoolToObject(o, "interrupted", re->interrupted);
  return o;
}

/* The gain tune.json claims: the re-measure's when it found one (else null: unconfirmed, none, or the base
 * faster), 0 when the base config is the best (nothing to re-measure). */
static double claimed_gain_pct(const pb_tune_result *r) {
  if (r->re->outcome == PB_TUNE_NOT_NEEDED) return r->best == 0 ? 0 : NAN;
  return r->re->outcome == PB_TUNE_GAIN ? pb_tune_remeasured_gain_pct(r->re) : NAN;
}

static void add_num(cJSON *o, const char *key, double v, int decimals) { pb_multi_add_number(o, key, v, decimals); }

static cJSON *space_json(const pb_tune_result *r) {
  cJSON *space = cJSON_CreateArray();
  for (int k = 0; k < r->nknobs; k++) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "path", r->knobs[k].path);
    if (r->knobs[k].nvalues)
      cJSON_AddItemToObject(o, "values", cJSON_CreateIntArray(r->knobs[k].values, r->knobs[k].nvalues));
    else
      cJSON_AddItemToObject(o, "range", cJSON_CreateIntArray((const int[]){1, PB_TUNE_RANGE_MAX}, 2));
    cJSON_AddItemToArray(space, o);
  }
  return space;
}

cJSON *pb_tune_out_json(const pb_tune_result *r, const char *tuned_path, bool interrupted) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "command", "tune");
  cJSON_AddStringToObject(o, "config", r->config_file);
  cJSON_AddItemToObject(o, "space", space_json(r));
  if (r->listed)
    cJSON_AddNumberToObject(o, "space_size", (double)r->space_size);
  else
    cJSON_AddNullToObject(o, "space_size");
  cJSON_AddNumberToObject(o, "ncpu", r->ncpu);
  cJSON_AddNumberToObject(o, "max_trials", r->max_trials);
  cJSON_AddNumberToObject(o, "budget_s", r->budget_s);
  pb_multi_add_number(o, "elapsed_s", r->elapsed_s, 3);
  pb_multi_add_number(o, "search_elapsed_s", r->search_s, 3);
  cJSON *trials = cJSON_AddArrayToObject(o, "trials");
  for (int i = 0; i < r->ntrials; i++) cJSON_AddItemToArray(trials, trial_json(r, i));
  bool have = r->ntrials && r->best >= 0;
  if (have)
    cJSON_AddItemToObject(o, "best", trial_json(r, r->best));
  else
    cJSON_AddNullToObject(o, "best");
  double base = r->ntrials ? pb_tune_trial_measured(&r->trials[0]) : NAN,
         tuned = have ? pb_tune_trial_measured(&r->trials[r->best]) : NAN;
  add_num(o, "base_samples_per_s", base, 1);
  add_num(o, "tuned_samples_per_s", tuned, 1);
  add_num(o, "search_gain_pct", base > 0 ? (tuned - base) / base * 100 : NAN, 2);
  add_num(o, "gain_pct", claimed_gain_pct(r), 2);
  cJSON_AddNumberToObject(o, "repeat", r->repeats);
  cJSON_AddItemToObject(o, "remeasure", remeasure_json(r));
  add_decided(o, "no_measurable_difference", r->re, r->re->outcome == PB_TUNE_NO_DIFFERENCE);
  double med, max;
  int n = pb_tune_error_summary(r->trials, r->ntrials, &med, &max);
  cJSON *pe = cJSON_AddObjectToObject(o, "prediction_error_pct");
  cJSON_AddNumberToObject(pe, "trials", n);
  add_num(pe, "median_abs", med, 2);
  add_num(pe, "max_abs", max, 2);
  cJSON_AddStringToObject(o, "stop_reason", r->stop_reason);
  if (tuned_path)
    cJSON_AddStringToObject(o, "tuned_config", tuned_path);
  else
    cJSON_AddNullToObject(o, "tuned_config");
  if (tuned_path)
    cJSON_AddNumberToObject(o, "tuned_trial", pb_tune_written_trial(r) + 1);
  else
    cJSON_AddNullToObject(o, "tuned_trial");
  cJSON_AddBoolToObject(o, "interrupted", interrupted);
  return o;
}

/* The best row's mark: "<- best", unless the re-measure did not confirm it ("<- highest"); the base row's
 * when the re-measure found it measurably faster (its config is the one written). */
static const char *best_mark(const pb_tune_result *r, int i) {
  pb_tune_outcome o = r->re->outcome;
  if (i == 0 && i != r->best && o == PB_TUNE_BASE_FASTER) return "  <- written (faster when re-measured)";
  if (i != r->best) return "";
  return o == PB_TUNE_NOT_NEEDED || o == PB_TUNE_GAIN ? "  <- best" : "  <- highest";
}

static void print_row(const pb_tune_result *r, int i, FILE *out) {
  const pb_tune_trial *tr = &r->trials[i];
  char pred[48] = "-", meas[32] = "failed", err[32] = "-";
  if (tr->status == PB_EXIT_INTERRUPTED) snprintf(meas, sizeof meas, "interrupted");
  if (!isnan(tr->predicted)) snprintf(pred, sizeof pred, "%s%.1f", tr->up_to ? "up to " : "", tr->predicted);
  if (!isnan(pb_tune_trial_measured(tr))) snprintf(meas, sizeof meas, "%.1f", pb_tune_trial_measured(tr));
  if (!isnan(pb_tune_trial_error_pct(tr)))
    snprintf(err, sizeof err, "%+.1f", pb_tune_trial_error_pct(tr));
  else if (pb_tune_trial_reached_ceiling(tr))
    snprintf(err, sizeof err, "n/a *");
  fprintf(out, "%-5d %-44.44s", i + 1, tr->change);
  for (int k = 0; k < r->nknobs; k++) fprintf(out, " %*d", (int)PB_MAX(6, strlen(r->knobs[k].path) - 7), tr->p.v[k]);
  fprintf(out, " %16s %10s %8s  %s%s\n", pred, meas, err, tr->status ? "-" : pb_multi_bottleneck(tr->rep),
          best_mark(r, i));
}

static void print_table(const pb_tune_result *r, FILE *out) {
  fprintf(out, "%-5s %-44s", "trial", "change");
  for (int k = 0; k < r->nknobs; k++)
    fprintf(out, " %*s", (int)PB_MAX(6, strlen(r->knobs[k].path) - 7), r->knobs[k].path + 7); /* no "stages." */
  fprintf(out, " %16s %10s %8s  %s\n", "predicted", "measured", "error %", "bottleneck");
  bool note = false;
  for (int i = 0; i < r->ntrials; i++) {
    print_row(r, i, out);
    note = note || pb_tune_trial_reached_ceiling(&r->trials[i]);
  }
  if (note) fprintf(out, "* %s\n", CEILING_NOTE);
}

static int ceilings_reached(const pb_tune_result *r) {
  int n = 0;
  for (int i = 0; i < r->ntrials; i++) n += pb_tune_trial_reached_ceiling(&r->trials[i]);
  return n;
}

/* The re-measure's lines: the gain only when the best's interval lies above the base's (both covering at
 * least 90 %); no claim when it was not run, was interrupted or has too few runs. */
static void print_remeasure(const pb_tune_result *r, FILE *out) {
  const pb_tune_remeasure *re = r->re;
  char a[160], b[160], why[96];
  int pairs = PB_MIN(re->done[PB_TUNE_RE_BASE], re->done[PB_TUNE_RE_BEST]),
      begun = PB_MAX(re->done[PB_TUNE_RE_BASE], re->done[PB_TUNE_RE_BEST]);
  if (re->outcome == PB_TUNE_NOT_REMEASURED) {
    fprintf(out, "not re-measured: %s; the search's %+.1f %% is not confirmed\n", re->why_not,
            (pb_tune_trial_measured(&r->trials[r->best]) / pb_tune_trial_measured(&r->trials[0]) - 1) * 100);
    return;
  }
  if (re->outcome == PB_TUNE_INTERRUPTED) {
    if (re->started)
      fprintf(out,
              "re-measure interrupted in pair %d of %d: no claim (trial %d, the search's highest, is written "
              "unconfirmed)\n",
              begun, re->pairs, r->best + 1);
    else
      fprintf(out, "not re-measured (interrupted): no claim (trial %d, the search's highest, is written unconfirmed)\n",
              r->best + 1);
    return;
  }
  fprintf(out, "re-measured, %d pairs interleaved in %.1f s (samples/s):\n  base %s, tuned %s\n", pairs, re->wall_s,
          pb_interval_text(&re->sum[PB_TUNE_RE_BASE].samples_per_s, 1, a, sizeof a),
          pb_interval_text(&re->sum[PB_TUNE_RE_BEST].samples_per_s, 1, b, sizeof b));
  if (re->outcome == PB_TUNE_GAIN)
    fprintf(out, "  gain %+.1f %%: the tuned config's interval lies above the base config's\n",
            pb_tune_remeasured_gain_pct(re));
  else if (re->outcome == PB_TUNE_BASE_FASTER)
    fprintf(out,
            "  no gain: the base config is measurably faster (its interval lies above trial %d's; the search's "
            "lead was noise), so the base config is the one written\n",
            r->best + 1);
  else if (re->outcome == PB_TUNE_NO_DIFFERENCE)
    fprintf(out,
            "  no measurable difference: the intervals overlap, so the tuned config is not shown to be faster "
            "(it is written all the same)\n");
  else
    fprintf(out, "  no claim: %s; runs that failed do not count, and trial %d is written unconfirmed\n",
            pb_interval_undecided_text(pb_interval_decisive(&re->sum[PB_TUNE_RE_BASE].samples_per_s)
                                           ? &re->sum[PB_TUNE_RE_BEST].samples_per_s
                                           : &re->sum[PB_TUNE_RE_BASE].samples_per_s,
                                       why, sizeof why),
            r->best + 1);
}

void pb_tune_out_text(FILE *out, const pb_tune_result *r, const char *tuned_path) {
  print_table(r, out);
  double base = pb_tune_trial_measured(&r->trials[0]), tuned = pb_tune_trial_measured(&r->trials[r->best]);
  char pt[1024];
  pb_tune_point_text(r->knobs, r->nknobs, &r->trials[r->best].p, pt, sizeof pt);
  if (r->re->needed)
    fprintf(out,
            "\ntuned: %s\n  searched: %.1f samples/s against the base config's %.1f (%+.1f %%); %d trials in "
            "%.1f s\n  stopped: %s\n",
            pt, tuned, base, (tuned - base) / base * 100, r->ntrials, r->search_s, r->stop_reason);
  else
    fprintf(out,
            "\ntuned: %s\n  %.1f samples/s, %+.1f %% over the base config's %.1f; %d trials in %.1f s; stopped: %s\n",
            pt, tuned, (tuned - base) / base * 100, base, r->ntrials, r->search_s, r->stop_reason);
  if (r->re->needed) print_remeasure(r, out);
  double med, max;
  int n = pb_tune_error_summary(r->trials, r->ntrials, &med, &max);
  if (n)
    fprintf(out, "prediction error: median |error| %.1f %%, max %.1f %% over %d trials (target 15 %%)\n", med, max, n);
  else if (ceilings_reached(r))
    fprintf(out, "prediction error: none to check (every prediction measured was the device's rate, and reached)\n");
  if (tuned_path)
    fprintf(out, "tuned config: %s%s\n", tuned_path,
            pb_tune_written_trial(r) == 0 && r->best != 0 ? " (the base config)" : "");
}
