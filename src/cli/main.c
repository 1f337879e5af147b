/* pipebench: the command line (docs/CONTRACT.md §1).  Parses arguments, loads the config and hands over to the
 * subcommand.  Every error is one line on stderr and the contract's exit status. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ab.h"
#include "analyze.h"
#include "calibrate.h"
#include "common.h"
#include "config.h"
#include "engine.h"
#include "gen.h"
#include "help.h"
#include "init.h"
#include "twin_cmd.h"
#include "json_text.h"
#include "multirun.h"
#include "outdir.h"
#include "ranks.h"
#include "repeat.h"
#include "run.h"
#include "sweep.h"
#include "tune.h"
#include "world.h"

#define MAX_SETS 256

typedef struct cli {
  const char *command;
  const char *config;
  const char *path;             /* analyze: the trace.json or run directory */
  const char *sets[MAX_SETS + 2];
  int nsets;
  char seed_set[64];
  char device_set[32];
  bool device_given;
  bool force;
  int repeat;                   /* --repeat; 0: not given (one) */
  pb_tune_opts tune;
  pb_run_opts run;
} cli;

static int usage_error(const char *fmt, const char *arg) {
  char clean[256]; /* a control character in an argument must not break the one-line error */
  fprintf(stderr, "pipebench: ");
  fprintf(stderr, fmt, pb_cfg_clean(arg, 160, clean, sizeof clean));
  fputc('\n', stderr);
  return PB_EXIT_USAGE;
}

static bool is_command(const char *s) {
  static const char *cmds[] = {"run",     "validate",  "gen",  "ab",  "tune", "sweep",
                               "analyze", "calibrate", "init", "twin"};
  for (size_t i = 0; i < PB_ARRAY_LEN(cmds); i++)
    if (strcmp(s, cmds[i]) == 0) return true;
  return false;
}

/* "--opt VALUE" or "--opt=VALUE": returns the value and advances *i, or NULL when absent. */
static const char *option_value(int argc, char **argv, int *i, const char *name) {
  size_t len = strlen(name);
  const char *a = argv[*i];
  if (strncmp(a, name, len) != 0) return NULL;
  if (a[len] == '=') return a + len + 1;
  if (a[len] != '\0') return NULL;
  if (*i + 1 >= argc) return "";
  return argv[++*i];
}

static int set_device(cli *c, const char *v) {
  if (strcmp(v, "auto") == 0) c->run.device = PB_DEVICE_AUTO;
  else if (strcmp(v, "gpu") == 0) c->run.device = PB_DEVICE_GPU;
  else if (strcmp(v, "emulated") == 0) c->run.device = PB_DEVICE_EMULATED;
  else return usage_error("--device: unknown device \"%s\" (expected auto, gpu or emulated)", v);
  c->device_given = true;
  snprintf(c->device_set, sizeof c->device_set, "device.kind=%s", v);
  return 0;
}

static int set_data(cli *c, const char *v) {
  if (strcmp(v, "synthetic") == 0) c->run.synthetic = true;
  else if (strcmp(v, "real") == 0) c->run.synthetic = false;
  else return usage_error("--data: unknown data \"%s\" (expected real or synthetic)", v);
  return 0;
}

static int set_seed(cli *c, const char *v) {
  char *end;
  errno = 0;
  unsigned long long seed = strtoull(v, &end, 10);
  if (!*v || *end || (errno && errno != ERANGE) || v[0] == '-' || v[0] == '+' || v[0] == ' ')
    return usage_error("--seed: \"%s\" is not a number (expected an integer from 0 to 10^15)", v);
  /* the config's own limit for seed (every unbounded integer), checked here so the error names --seed */
  if (errno == ERANGE || (double)seed > PB_CFG_INT_MAX)
    return usage_error("--seed: %s is too large (expected an integer from 0 to 10^15)", v);
  snprintf(c->seed_set, sizeof c->seed_set, "seed=%llu", seed);
  return 0;
}

static int set_budget(cli *c, const char *v) {
  char *end;
  bool decimal = strspn(v, "0123456789.eE+-") == strlen(v); /* strtod also reads hex, inf and nan */
  double s = decimal ? strtod(v, &end) : 0;
  if (!decimal || !*v || *end || !(s > 0))
    return usage_error("--budget-s: \"%s\" is not a positive number of seconds (expected e.g. 600)", v);
  if (s > 1e7) return usage_error("--budget-s: %s is too long (expected at most 10^7 seconds)", v);
  c->tune.budget_s = s;
  return 0;
}

/* --repeat N: the commands that measure (run, ab, sweep, tune) take it. */
static bool takes_repeat(const char *command) {
  return strcmp(command, "run") == 0 || strcmp(command, "ab") == 0 || strcmp(command, "sweep") == 0 ||
         strcmp(command, "tune") == 0;
}

static int set_repeat(cli *c, const char *v) {
  pb_err err;
  if (pb_repeat_parse(v, &c->repeat, &err)) return fprintf(stderr, "pipebench: %s\n", err.msg), PB_EXIT_USAGE;
  return 0;
}

/* Options that take a value; returns 1 when argv[*i] was not one of them. */
static int parse_valued(cli *c, int argc, char **argv, int *i) {
  const char *v;
  pb_err err;
  if ((v = option_value(argc, argv, i, "--config"))) c->config = v;
  else if ((v = option_value(argc, argv, i, "--set"))) {
    if (c->nsets == MAX_SETS) return usage_error("--set: more than %s overrides (expected fewer)", "256");
    c->sets[c->nsets++] = v;
  } else if ((v = option_value(argc, argv, i, "--data"))) return set_data(c, v);
  else if ((v = option_value(argc, argv, i, "--device"))) return set_device(c, v);
  else if ((v = option_value(argc, argv, i, "--out"))) {
    c->run.out_dir = v;
    /* room for the files under it (trial-NNN/report.json and the like): a longer one would be cut */
    if (strlen(v) > PB_PATH_LEN - 64) return usage_error("--out: \"%s\" is too long (expected at most 4032 bytes)", v);
  }
  else if ((v = option_value(argc, argv, i, "--seed"))) return set_seed(c, v);
  else if (strcmp(c->command, "tune") == 0 && (v = option_value(argc, argv, i, "--budget-s"))) return set_budget(c, v);
  else if (strcmp(c->command, "tune") == 0 && (v = option_value(argc, argv, i, "--write"))) c->tune.write_file = v;
  else if (takes_repeat(c->command) && (v = option_value(argc, argv, i, "--repeat"))) return set_repeat(c, v);
  else if ((v = option_value(argc, argv, i, "--format"))) {
    c->run.formats_given = true;
    if (pb_parse_formats(v, &c->run.formats, &err)) return fprintf(stderr, "pipebench: %s\n", err.msg), PB_EXIT_USAGE;
  } else return 1;
  /* argv[*i] is the value itself when it came as a separate argument: name the option */
  const char *option = v == argv[*i] && *i ? argv[*i - 1] : argv[*i];
  if (!*v) return usage_error("%s: missing value (expected a value after it)", option);
  return 0;
}

/* An option of another command names the commands that take it; anything else is unknown. */
static int unknown_option(const char *command, const char *a) {
  static const char *const owned[][2] = {
      {"--force", "gen or calibrate"}, {"--budget-s", "tune"}, {"--write", "tune"},
      {"--repeat", "run, ab, sweep or tune"}};
  if (strncmp(a, "--force=", 8) == 0 && (strcmp(command, "gen") == 0 || strcmp(command, "calibrate") == 0))
    return usage_error("--force takes no value (\"%s\"; expected --force alone)", a);
  for (size_t i = 0; i < PB_ARRAY_LEN(owned); i++) {
    size_t len = strlen(owned[i][0]);
    if (strncmp(a, owned[i][0], len) == 0 && (a[len] == '\0' || a[len] == '=')) {
      fprintf(stderr, "pipebench: %s: option \"%s\" does not apply (expected it with %s)\n", command, owned[i][0],
              owned[i][1]);
      return PB_EXIT_USAGE;
    }
  }
  if (is_command(a)) { /* a command name (known, so safe to print) placed after the options */
    fprintf(stderr, "pipebench: \"%s\" is a command: it comes first (expected pipebench %s --config FILE ...)\n", a, a);
    return PB_EXIT_USAGE;
  }
  const char *near = a[0] == '-' && a[1] == '-' ? pb_cli_nearest_option(a) : NULL;
  char clean[256];
  fprintf(stderr, "pipebench: unknown option \"%s\"%s%s%s (expected an option that pipebench help %s lists)\n",
          pb_cfg_clean(a, 160, clean, sizeof clean), near ? "; did you mean \"" : "", near ? near : "",
          near ? "\"?" : "", command);
  return PB_EXIT_USAGE;
}

static int parse_flag(cli *c, const char *a) {
  if (strcmp(a, "--json") == 0) c->run.json_stdout = true;
  else if (strcmp(a, "--quiet") == 0) c->run.quiet = true;
  else if (strcmp(a, "--no-progress") == 0) c->run.no_progress = true;
  else if (strcmp(a, "--no-trace") == 0) c->run.no_trace = true;
  else if (strcmp(a, "--force") == 0 && (strcmp(c->command, "gen") == 0 || strcmp(c->command, "calibrate") == 0))
    c->force = true;
  else return unknown_option(c->command, a);
  return 0;
}

/* analyze takes one PATH and only --out, --format, --json and --quiet: -1 for the PATH, 0 for an option it
 * takes, else the usage error's exit status. */
/* Which of names[0..n) option `a` is ("--out" and "--out=DIR" alike), or -1. */
static int option_index(const char *a, const char *const *names, size_t n) {
  size_t len = strcspn(a, "=");
  for (size_t i = 0; i < n; i++)
    if (strlen(names[i]) == len && strncmp(a, names[i], len) == 0) return (int)i;
  return -1;
}

static int analyze_arg(cli *c, const char *a) {
  static const char *allowed[] = {"--out", "--format", "--json", "--quiet"};
  if (a[0] != '-' || !a[1]) {
    if (c->path)
      return usage_error("analyze: more than one PATH (\"%s\"; expected one trace.json, run directory or capture)", a);
    c->path = a;
    return -1;
  }
  if (option_index(a, allowed, PB_ARRAY_LEN(allowed)) >= 0) return 0;
  return usage_error("analyze: option \"%s\" does not apply (expected --out, --format, --json or --quiet)", a);
}

/* Options about a run (--data, --device, --no-trace; and for calibrate --seed; and for validate, which writes
 * nothing, --out and --format) do not apply to calibrate, gen and validate: saying so beats ignoring them.
 * 0, or the usage error's status. */
static int run_only_arg(const char *command, const char *a) {
  static const char *refused[] = {"--data", "--device", "--no-trace", "--seed", "--out", "--format"};
  /* bit i: refused[i] refused by the command */
  unsigned mask = strcmp(command, "calibrate") == 0 ? 0x0f : strcmp(command, "gen") == 0 ? 0x07
                  : strcmp(command, "validate") == 0 ? 0x37 : 0;
  int i = option_index(a, refused, PB_ARRAY_LEN(refused));
  if (i < 0 || !(mask & (1u << i))) return 0;
  fprintf(stderr, "pipebench: %s: option \"%s\" does not apply (expected it with %s)\n", command, refused[i],
          i < 3 ? "run, ab, tune or sweep" : i == 3 ? "run, ab, tune, sweep, validate or gen"
                                                    : "a command that writes files");
  return PB_EXIT_USAGE;
}

static bool is_file(const char *path);

/* `pipebench my.json`: a first argument that is no command but names a config runs it. */
static bool looks_like_config(const char *a) {
  size_t n = strlen(a);
  return (n > 5 && strcmp(a + n - 5, ".json") == 0) || is_file(a) || strchr(a, '/');
}

static int unknown_command(const char *a) {
  const char *near = pb_cli_nearest_command(a);
  char clean[256];
  fprintf(stderr,
          "pipebench: unknown command \"%s\"%s%s%s (expected run, validate, gen, ab, tune, sweep, analyze, init, "
          "twin, calibrate or help, or a config FILE)\n",
          pb_cfg_clean(a, 160, clean, sizeof clean), near ? "; did you mean \"" : "", near ? near : "",
          near ? "\"?" : "");
  return PB_EXIT_USAGE;
}

/* The config as an argument of its own (`pipebench run my.json`), as --config FILE would give it. */
static int positional_config(cli *c, const char *a) {
  if (c->config) return usage_error("more than one config (\"%s\"; expected one FILE, or --config FILE)", a);
  c->config = a;
  return 0;
}

static int parse_args(cli *c, int argc, char **argv) {
  c->command = "run";
  c->run.formats = PB_FMT_TEXT | PB_FMT_JSON | PB_FMT_HTML | PB_FMT_TRACE;
  c->run.device = PB_DEVICE_AUTO;
  int first = 1;
  if (argc > 1 && argv[1][0] != '-') {
    if (is_command(argv[1]))
      c->command = argv[1], first = 2;
    else if (!looks_like_config(argv[1]))
      return unknown_command(argv[1]);
  }
  bool analyze = strcmp(c->command, "analyze") == 0;
  c->run.result_line = analyze || strcmp(c->command, "run") == 0;
  for (int i = first; i < argc; i++) {
    argv[i] = (char *)pb_cli_long_option(argv[i]); /* -c, -s, -o, -q, -j */
    if (argv[i][0] == '-' && run_only_arg(c->command, argv[i])) return PB_EXIT_USAGE;
    if (!analyze && argv[i][0] != '-' && !is_command(argv[i])) {
      int rc = positional_config(c, argv[i]);
      if (rc) return rc;
      continue;
    }
    if (analyze) {
      int rc = analyze_arg(c, argv[i]);
      if (rc < 0) continue; /* the PATH */
      if (rc) return rc;
    }
    int rc = parse_valued(c, argc, argv, &i);
    if (rc == 1) rc = parse_flag(c, argv[i]);
    if (rc) return rc;
  }
  if (c->run.no_trace && c->run.formats_given && (c->run.formats & PB_FMT_TRACE))
    return usage_error("--no-trace: --format names %s too (expected one or the other)", "trace");
  if (c->seed_set[0]) c->sets[c->nsets++] = c->seed_set; /* --seed is applied last, like a --set */
  /* --device is device.kind's override: applied last too, so the report's config says the device it ran */
  if (c->device_set[0]) c->sets[c->nsets++] = c->device_set;
  return 0;
}

/* On stderr, so stdout stays the resolved config: what each stage emits per sample. */
static void print_shapes(const pb_config *cfg) {
  fprintf(stderr, "pipebench: %s: valid; per-sample output of each stage:\n", cfg->file);
  int b = pb_config_batch_index(cfg);
  for (int i = 0; i < cfg->nstages; i++) {
    char shape[96], batch[32] = "";
    const pb_stage_cfg *s = &cfg->stages[i];
    if (i >= b) snprintf(batch, sizeof batch, "%lld x ", (long long)cfg->stages[b].size);
    fprintf(stderr, "  %-12s %-9s threads %-4d %s%s\n", s->name, pb_stage_type_name(s->type), s->threads,
            batch, pb_shape_str(&s->out_shape, shape, sizeof shape));
  }
}

/* What run refuses with exit 2 after loading the config, validate refuses too: a stage type not built
 * yet, and a pipeline over limits.max_memory_mb.  The memory plan needs the dataset (a cache holds an
 * epoch of it); one not there yet is generated by run first and planned then, so here it is skipped. */
static int validate_plan(const pb_config *cfg) {
  pb_err err;
  if (pb_engine_check(cfg, false, &err)) {
    fprintf(stderr, "pipebench: %s\n", err.msg);
    return PB_EXIT_USAGE;
  }
  /* a plan that cannot be made yet is fine only when run will generate the dataset first; without a
   * generate section, run refuses a dataset.path that lists nothing, and so does validate */
  return pb_run_plan_memory(cfg, false, cfg->dataset.generate.present);
}

static int cmd_validate(const pb_config *cfg, bool quiet) {
  int rc = validate_plan(cfg);
  if (rc) return rc;
  if (!quiet) print_shapes(cfg);
  cJSON *json = pb_config_to_json(cfg);
  char *text = json ? pb_json_print(json, true) : NULL;
  if (!text) return PB_EXIT_RUNTIME;
  printf("%s\n", text);
  free(text);
  cJSON_Delete(json);
  return PB_EXIT_OK;
}

/* A preset's first run generates its small default dataset (and says so). */
static int cmd_run(cli *c, pb_config *cfg) {
  if (!c->device_given) c->run.device = cfg->device.kind;
  pb_err err;
  if (pb_engine_check(cfg, c->run.synthetic, &err)) { /* before generating data it could not use */
    fprintf(stderr, "pipebench: %s\n", err.msg);
    return PB_EXIT_USAGE;
  }
  int rc = c->run.synthetic ? 0 : pb_gen_if_missing(cfg, c->run.quiet, c->run.no_progress);
  return rc ? rc : pb_run(cfg, &c->run);
}

/* run --repeat N (N > 1): N runs of one config, the median and its interval (src/cli/multirun.h). */
static int cmd_run_repeated(cli *c) {
  pb_multi m = {.command = "run", .config_file = c->config, .base_sets = c->sets, .nbase_sets = c->nsets,
                .run = c->run, .device_given = c->device_given, .repeat = c->repeat};
  m.run.result_line = false; /* each repeat is a run of its own: the median's summary is what gets printed */
  return pb_multi_run_repeated(&m);
}

/* --format for calibrate: text (the summary on stdout) and json (DIR/calibration.json with --out), both
 * by default; a report format it has no use for is a usage error. */
static int cmd_calibrate(cli *c, const pb_config *cfg) {
  unsigned formats = c->run.formats_given ? c->run.formats : PB_FMT_TEXT | PB_FMT_JSON;
  if (formats & ~(unsigned)(PB_FMT_TEXT | PB_FMT_JSON))
    return usage_error("calibrate: --format: %s does not apply (expected text, json or both)",
                       formats & PB_FMT_CSV ? "csv" : formats & PB_FMT_HTML ? "html" : "trace");
  pb_calibrate_opts o = {.cfg = cfg, .out_dir = formats & PB_FMT_JSON ? c->run.out_dir : NULL, .force = c->force,
                         .json_stdout = c->run.json_stdout, .quiet = c->run.quiet,
                         .no_text = !(formats & PB_FMT_TEXT)};
  return pb_calibrate(&o);
}

/* gen's --format: text (the summary line on stderr) and json (with --out, DIR/gen.json), both by
 * default; --json prints the JSON summary on stdout. */
static int cmd_gen(cli *c, const pb_config *cfg) {
  unsigned formats = c->run.formats_given ? c->run.formats : PB_FMT_TEXT | PB_FMT_JSON;
  if (formats & ~(unsigned)(PB_FMT_TEXT | PB_FMT_JSON))
    return usage_error("gen: --format: %s does not apply (expected text, json or both)",
                       formats & PB_FMT_CSV ? "csv" : formats & PB_FMT_HTML ? "html" : "trace");
  pb_gen_opts g = {.force = c->force, .quiet = c->run.quiet || !(formats & PB_FMT_TEXT),
                   .no_progress = c->run.no_progress, .json_stdout = c->run.json_stdout,
                   .out_dir = formats & PB_FMT_JSON ? c->run.out_dir : NULL};
  return pb_gen(cfg, &g);
}

static bool is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* repeats.median_repeat of <dir>/report.json (1-based), or 0 when there is none. */
static int median_repeat_of(const char *dir) {
  char path[PB_PATH_LEN + 32];
  snprintf(path, sizeof path, "%s/report.json", dir);
  FILE *f = fopen(path, "rb");
  char *text = f ? malloc(1 << 22) : NULL; /* report.json is tens of KB */
  size_t n = text ? fread(text, 1, (1 << 22) - 1, f) : 0;
  if (f) fclose(f);
  if (!text) return 0;
  text[n] = '\0';
  cJSON *j = cJSON_Parse(text);
  free(text);
  cJSON *k = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "repeats"), "median_repeat");
  int r = cJSON_IsNumber(k) && k->valuedouble >= 1 && k->valuedouble <= PB_REPEAT_MAX ? (int)k->valuedouble : 0;
  cJSON_Delete(j);
  return r;
}

/* A directory of repeats (run --repeat; a measurement of ab, sweep or tune with --repeat) has no trace.json
 * of its own: analyze takes its median repeat's, <dir>/repeat-K (report.json's repeats.median_repeat), and
 * says so on stderr.  Without a median repeat with a trace it names the repeats' directories (exit 2).
 * 0 with out empty: not such a directory (analyze goes on with PATH as it is). */
static int repeats_dir(const cli *c, char *out, size_t len) {
  char path[PB_PATH_LEN + 64];
  out[0] = '\0';
  snprintf(path, sizeof path, "%s/trace.json", c->path);
  if (!is_dir(c->path) || is_file(path)) return 0;
  snprintf(path, sizeof path, "%s/repeat-1", c->path);
  if (!is_dir(path)) return 0;
  int k = median_repeat_of(c->path), n = 1;
  snprintf(path, sizeof path, "%s/repeat-%d/trace.json", c->path, k);
  if (k && is_file(path)) {
    snprintf(out, len, "%s/repeat-%d", c->path, k);
    if (!c->run.quiet)
      fprintf(stderr, "pipebench: analyze: %s holds repeats (--repeat): analyzing the median one, %s\n", c->path, out);
    return 0;
  }
  for (;; n++) {
    snprintf(path, sizeof path, "%s/repeat-%d", c->path, n + 1);
    if (!is_dir(path)) break;
  }
  char clean[256];
  fprintf(stderr, "pipebench: %s: a directory of %d repeats (--repeat) with no trace.json of its own and no median "
          "repeat's to take (expected one of its repeats: %s/repeat-1 .. repeat-%d)\n",
          pb_cfg_clean(c->path, 160, clean, sizeof clean), n, clean, n);
  return PB_EXIT_USAGE;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A directory of ab, sweep or tune runs (synthetic/, real-cold/, trial-001/, ...) has no trace.json of its
 * own: analyze names the runs it can take instead of only "no trace.json" (exit 2).  0 when PATH is not
 * such a directory. */
static int runs_dir(const cli *c) {
  char path[PB_PATH_LEN + 300];
  snprintf(path, sizeof path, "%s/trace.json", c->path);
  DIR *d = is_dir(c->path) && !is_file(path) ? opendir(c->path) : NULL;
  if (!d) return 0;
  char *names[64];
  size_t n = 0, more = 0;
  for (struct dirent *e; (e = readdir(d));) {
    snprintf(path, sizeof path, "%s/%.255s/trace.json", c->path, e->d_name);
    if (e->d_name[0] == '.' || !is_file(path)) continue;
    if (n < PB_ARRAY_LEN(names) && (names[n] = strdup(e->d_name)))
      n++;
    else
      more++;
  }
  closedir(d);
  if (n == 0) return 0;
  qsort(names, n, sizeof names[0], by_name);
  char list[1024] = "", clean[256];
  for (size_t i = 0, used = 0; i < n; i++) {
    if (used + strlen(names[i]) + 8 < sizeof list)
      used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                               pb_cfg_clean(names[i], 80, clean, sizeof clean));
    else
      more++;
  }
  fprintf(stderr,
          "pipebench: %s: a directory of %zu runs (ab, sweep or tune) with no trace.json of its own "
          "(expected one of its runs, e.g. pipebench analyze %s/%s; its runs: %s%s)\n",
          pb_cfg_clean(c->path, 160, clean, sizeof clean), n + more, clean, names[0], list, more ? ", ..." : "");
  for (size_t i = 0; i < n; i++) free(names[i]);
  return PB_EXIT_USAGE;
}

static int cmd_analyze(cli *c) {
  if (!c->path) return usage_error("%s: no PATH (expected pipebench analyze TRACE.json|RUN_DIR)", c->command);
  static char median[PB_PATH_LEN + 64];
  int rc = repeats_dir(c, median, sizeof median);
  if (rc) return rc;
  if (median[0]) c->path = median;
  else if ((rc = runs_dir(c)))
    return rc;
  if (!c->run.formats_given) c->run.formats = PB_FMT_TEXT | PB_FMT_JSON | PB_FMT_HTML;
  /* files asked for by name, with nowhere to write them: say so rather than write nothing */
  unsigned files = c->run.formats & (unsigned)(PB_FMT_JSON | PB_FMT_CSV | PB_FMT_HTML | PB_FMT_TRACE);
  if (c->run.formats_given && files && !c->run.out_dir)
    return usage_error("analyze: --format %s names files, and there is no --out (expected --out DIR with it, or "
                       "--format text)", files & PB_FMT_JSON ? "json" : files & PB_FMT_CSV ? "csv"
                                         : files & PB_FMT_HTML ? "html" : "trace");
  return pb_analyze(c->path, &c->run);
}

/* ab, sweep and tune load the config themselves: sweep and tune read lists in --set values. */
static int cmd_multi(cli *c) {
  pb_multi m = {.command = c->command, .config_file = c->config, .base_sets = c->sets, .nbase_sets = c->nsets,
                .run = c->run, .repeat = c->repeat};
  m.device_given = c->device_given;
  if (strcmp(c->command, "ab") == 0) return pb_ab(&m);
  if (strcmp(c->command, "sweep") == 0) return pb_sweep(&m);
  return pb_tune(&m, &c->tune);
}

/* `run` as one rank of an MPI job (src/cli/ranks.h).  Every step ends in a collective that every rank reaches,
 * so a rank that fails (a config it cannot read, a dataset it cannot generate) fails the job, never hangs it. */
static int cmd_world(cli *c) {
  const pb_world *w = pb_world_get();
  if (strcmp(c->command, "run") != 0)
    return usage_error("%s: runs in one process (expected mpirun only around `pipebench run`)", c->command);
  if (c->repeat > 1) /* each repeat is a whole job: mpirun around each one */
    return usage_error("--repeat: not under mpirun around `pipebench %s` (expected one run per job: repeat the "
                       "mpirun instead)", c->command);
  if (!c->config) return usage_error("%s: no config (expected --config FILE)", c->command);
  pb_config *cfg = calloc(1, sizeof *cfg);
  pb_err err;
  int rc = cfg ? 0 : PB_EXIT_RUNTIME;
  if (!rc && pb_config_load(cfg, c->config, c->sets, c->nsets, &err)) {
    fprintf(stderr, "pipebench: rank %d: %s\n", w->rank, err.msg);
    rc = PB_EXIT_USAGE;
  }
  if (!rc && !c->device_given) c->run.device = cfg->device.kind;
  if (!rc && pb_engine_check(cfg, c->run.synthetic, &err)) {
    fprintf(stderr, "pipebench: rank %d: %s\n", w->rank, err.msg);
    rc = PB_EXIT_USAGE;
  }
  rc = pb_world_max_status(rc);
  if (!rc && w->rank == 0 && !c->run.synthetic) /* one writer; the others wait */
    rc = pb_gen_if_missing(cfg, c->run.quiet, c->run.no_progress);
  rc = pb_world_max_status(rc);
  if (!rc) rc = pb_ranks_run(cfg, &c->run);
  free(cfg);
  return rc;
}

/* init takes only --data DIR, --preset NAME, --out FILE, --force and --quiet (its --data is a directory,
 * not run's real|synthetic). */
static int cmd_init(int argc, char **argv) {
  static const char *const valued[] = {"--data", "--preset", "--out"};
  pb_init_opts o = {0};
  const char **slot[] = {&o.data_dir, &o.preset, &o.out_file};
  for (int i = 2; i < argc; i++) {
    const char *a = pb_cli_long_option(argv[i]), *v = NULL;
    int k = option_index(a, valued, PB_ARRAY_LEN(valued));
    if (k >= 0) {
      char *eq = strchr(a, '=');
      v = eq ? eq + 1 : i + 1 < argc ? argv[++i] : "";
      if (!*v) return usage_error("init: %s: missing value (expected a value after it)", valued[k]);
      *slot[k] = v;
    } else if (strcmp(a, "--force") == 0)
      o.force = true;
    else if (strcmp(a, "--quiet") == 0)
      o.quiet = true;
    else if (a[0] != '-' && !o.data_dir)
      o.data_dir = a; /* pipebench init DIR */
    else
      return usage_error(
          "init: option \"%s\" does not apply (expected --data DIR, --preset NAME, --out FILE, "
          "--force or --quiet)",
          a);
  }
  if (!o.data_dir) return usage_error("%s: no data (expected pipebench init --data DIR)", "init");
  return pb_init(&o);
}

/* twin takes only captures, --out FILE, --force and --quiet. */
static int cmd_twin(int argc, char **argv) {
  pb_twin_opts o = {0};
  for (int i = 2; i < argc; i++) {
    const char *a = pb_cli_long_option(argv[i]);
    if (strcmp(a, "--out") == 0 || strncmp(a, "--out=", 6) == 0) {
      const char *v = a[5] == '=' ? a + 6 : i + 1 < argc ? argv[++i] : "";
      if (!*v) return usage_error("twin: %s: missing value (expected a value after it)", "--out");
      o.out_file = v;
    } else if (strcmp(a, "--force") == 0) {
      o.force = true;
    } else if (strcmp(a, "--quiet") == 0) {
      o.quiet = true;
    } else if (a[0] != '-') {
      if (o.ncaptures == PB_TWIN_MAX_CAPTURES)
        return usage_error("twin: %s: more than 16 captures (expected at most 16 of one job)", a);
      o.captures[o.ncaptures++] = a;
    } else {
      return usage_error("twin: option \"%s\" does not apply (expected a capture, --out FILE, --force or --quiet)", a);
    }
  }
  if (!o.ncaptures)
    return usage_error("%s: no capture (expected pipebench twin <host>.xplane.pb, or a TensorFlow Profiler log "
                       "directory)", "twin");
  return pb_twin_cmd(&o);
}

static int dispatch(cli *c) {
  if (pb_world_get()->size > 1) return cmd_world(c);
  if (strcmp(c->command, "analyze") == 0) return cmd_analyze(c);
  if (strcmp(c->command, "calibrate") == 0 && !c->config) {
    if (c->nsets) return usage_error("calibrate: --set %s without --config (expected a config to apply it to)", c->sets[0]);
    return cmd_calibrate(c, NULL);
  }
  if (!c->config) return usage_error("%s: no config (expected --config FILE)", c->command);
  if (strcmp(c->command, "ab") == 0 || strcmp(c->command, "sweep") == 0 || strcmp(c->command, "tune") == 0)
    return cmd_multi(c);
  if (strcmp(c->command, "run") == 0 && c->repeat > 1) return cmd_run_repeated(c);
  pb_config *cfg = calloc(1, sizeof *cfg);
  if (!cfg) return PB_EXIT_RUNTIME;
  pb_err err;
  int rc;
  if (pb_config_load(cfg, c->config, c->sets, c->nsets, &err)) {
    fprintf(stderr, "pipebench: %s\n", err.msg);
    rc = PB_EXIT_USAGE;
  } else if (strcmp(c->command, "validate") == 0) {
    rc = cmd_validate(cfg, c->run.quiet);
  } else if (strcmp(c->command, "calibrate") == 0) {
    rc = cmd_calibrate(c, cfg);
  } else if (strcmp(c->command, "gen") == 0) {
    rc = cmd_gen(c, cfg);
  } else {
    rc = cmd_run(c, cfg);
  }
  free(cfg);
  return rc;
}

/* What we printed must have reached stdout: `pipebench --json > /dev/full` (a full disk, a closed pipe)
 * is a failure with one line, not a silent success (coreutils' close_stdout). */
static int finish_stdout(int rc) {
  errno = 0;
  if (fflush(stdout) == 0 && !ferror(stdout)) return rc;
  fprintf(stderr, "pipebench: stdout: write error: %s (expected a writable standard output)\n",
          errno ? strerror(errno) : "I/O error");
  return rc ? rc : PB_EXIT_RUNTIME;
}

/* `pipebench help [CMD]`, `pipebench [CMD] --help|-h`, `--version`, and bare `pipebench` (the usage, on
 * stderr, exit 2): the exit status, or -1 when the command line asks for none of them. */
static int help_or_version(int argc, char **argv) {
  if (argc < 2) return fputs(pb_cli_usage(), stderr), PB_EXIT_USAGE;
  const pb_cli_help *h = pb_cli_help_for(argv[1]);
  if (strcmp(argv[1], "help") == 0) {
    if (argc > 3)
      return usage_error("help: more than one command (\"%s\"; expected pipebench help [COMMAND])", argv[3]);
    if (argc == 2) return fputs(pb_cli_usage(), stdout), PB_EXIT_OK;
    if (!(h = pb_cli_help_for(argv[2]))) return unknown_command(argv[2]);
    return fputs(h->text, stdout), PB_EXIT_OK;
  }
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
      return fputs(h ? h->text : pb_cli_usage(), stdout), PB_EXIT_OK;
    if (strcmp(argv[i], "--version") == 0) return printf("pipebench %s\n", PB_VERSION), PB_EXIT_OK;
  }
  return -1;
}

int main(int argc, char **argv) {
  /* Redirected stdout keeps everything in one buffer until finish_stdout, so a failing write is seen with
   * its errno (ENOSPC, EIO) instead of as a bare error flag from an earlier printf. */
  static char stdout_buf[1 << 20]; /* glibc ignores the size unless given the buffer */
  if (!isatty(STDOUT_FILENO)) setvbuf(stdout, stdout_buf, _IOFBF, sizeof stdout_buf);
  int rc = help_or_version(argc, argv);
  if (rc >= 0) return finish_stdout(rc);
  if (strcmp(argv[1], "init") == 0) return finish_stdout(cmd_init(argc, argv)); /* arguments of its own */
  if (strcmp(argv[1], "twin") == 0) return finish_stdout(cmd_twin(argc, argv));
  rc = pb_world_init(&argc, &argv); /* joins the MPI job under mpirun; a world of one otherwise */
  if (rc) return rc;
  pb_signals_install(); /* every command, from here: gen, warm-up, measuring, report writing */
  cli c = {0};
  rc = parse_args(&c, argc, argv);
  if (!rc) rc = dispatch(&c);
  if (pb_signalled() && rc != PB_EXIT_USAGE) rc = PB_EXIT_INTERRUPTED; /* any command, e.g. a long analyze */
  pb_outdir_unlock_all(); /* a multi-run command's directory, held to the end (pb_run_make_out_dir) */
  pb_world_finalize();
  return finish_stdout(rc);
}
