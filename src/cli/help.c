/* pipebench's help texts: the global usage and one page per command (`pipebench help CMD`, `CMD --help`),
 * and the names the command line knows, for "did you mean" on a mistyped command or option. */
#include "help.h"

#include <stdio.h>
#include <string.h>

#include "common.h"

static const char k_usage[] =
    "usage:\n"
    "  pipebench [run] [--config] FILE [OPTIONS]   run the pipeline and write the report\n"
    "  pipebench validate --config FILE [--set ..] check a config, print the resolved config\n"
    "  pipebench gen --config FILE [--force] [--json] [--out DIR]\n"
    "                                              write the dataset of the config's dataset.generate\n"
    "  pipebench analyze PATH [--out DIR] [--format LIST] [--json] [--quiet]\n"
    "                                              recompute the report from a saved trace.json (or the run\n"
    "                                              directory holding one), or make it from a TensorFlow\n"
    "                                              Profiler capture; --out DIR writes DIR/report.json\n"
    "  pipebench ab --config FILE [OPTIONS]        synthetic vs real (cold cache) vs real (warm cache)\n"
    "  pipebench sweep --config FILE --set PATH=V1,V2,.. [...]   every combination, one table\n"
    "  pipebench tune --config FILE [--budget-s N] [--write FILE] [--set PATH=V1,V2,..]\n"
    "                                              search thread counts and prefetch depth; --set lists\n"
    "                                              narrow the search to those values\n"
    "  pipebench calibrate [--config FILE] [--force] [--out DIR] [--format text,json] [--json]\n"
    "                                              measure this machine's ceilings (memcpy, cores, GPU copies;\n"
    "                                              with a config, its dataset's decode and read rates), kept in\n"
    "                                              the machine's calibration.json for every later run\n"
    "  pipebench init --data DIR [--preset NAME] [--out FILE]\n"
    "                                              probe your own data and write a config for it\n"
    "  pipebench twin CAPTURE.. [--out FILE]       a config emulating the tf.data pipeline of a TensorFlow\n"
    "                                              Profiler capture (<host>.xplane.pb or its log directory)\n"
    "  pipebench help [COMMAND] | COMMAND --help   a command's own options\n"
    "  pipebench --help | --version\n"
    "\n"
    "options:\n"
    "  -c, --config FILE        the pipeline config (JSON; see docs/CONFIG.md); the config may also come\n"
    "                           as the first argument that is not an option: pipebench run my.json\n"
    "  -s, --set PATH=VALUE     override a config value, e.g. stages.decode.threads=4 (repeatable)\n"
    "  --data real|synthetic    synthetic: in-memory samples replace every per-sample stage (default real)\n"
    "  --device auto|gpu|emulated   default auto (a CUDA GPU if usable, else emulated)\n"
    "  -o, --out DIR            output directory (default pipebench-out/<name>-<UTC time>)\n"
    "  --format LIST            comma list of text,json,csv,html,trace (default text,json,html,trace)\n"
    "  -j, --json               print the JSON report on stdout instead of the text summary\n"
    "  -q, --quiet, --no-progress, --no-trace   less output\n"
    "  --seed N                 overrides the config's seed\n"
    "  --repeat N               run, ab, sweep, tune: each measurement N times (1..100, default 1): the median\n"
    "                           with a 95 % interval, or what n allows (n <= 5: min..max, 50 % at n = 2); \"no\n"
    "                           measurable difference\" where intervals overlap, and \"too few repeats to tell\"\n"
    "                           below 90 % (n <= 4)\n"
    "\n"
    "exit status: 0 ok, 1 runtime failure, 2 usage or config error, 130 interrupted\n";

/* The options every measuring command (run, ab, sweep, tune) takes. */
#define RUN_OPTIONS                                                                                    \
  "  -c, --config FILE        the pipeline config (JSON; see docs/CONFIG.md), or FILE as the first\n"  \
  "                           argument that is not an option\n"                                        \
  "  -s, --set PATH=VALUE     override a config value, e.g. stages.decode.threads=4 (repeatable)\n"    \
  "  --data real|synthetic    synthetic: in-memory samples replace every per-sample stage\n"           \
  "  --device auto|gpu|emulated   default auto (a CUDA GPU if usable, else emulated)\n"                \
  "  -o, --out DIR            output directory (default pipebench-out/<name>-<UTC time>)\n"            \
  "  --format LIST            comma list of text,json,csv,html,trace (default text,json,html,trace)\n" \
  "  -j, --json               print the JSON report on stdout instead of the text summary\n"           \
  "  -q, --quiet              no progress and no lines on stderr but errors\n"                         \
  "  --no-progress            no live progress line\n"                                                 \
  "  --no-trace               no per-event trace (the analysis then uses counters only)\n"             \
  "  --seed N                 overrides the config's seed\n"                                           \
  "  --repeat N               each measurement N times (1..100), interleaved: the median and its interval\n"

static const pb_cli_help k_help[] = {
    {"run",
     "usage: pipebench [run] [--config] FILE [OPTIONS]\n"
     "\n"
     "Runs the pipeline of the config, measures every stage and the device, and writes the report into the\n"
     "output directory (report.json, report.html, trace.json; stages.csv and steps.csv with --format csv).\n"
     "A preset whose dataset is missing generates it first.\n"
     "\n"
     "options:\n" RUN_OPTIONS},
    {"validate",
     "usage: pipebench validate [--config] FILE [--set PATH=VALUE ..] [--seed N] [--quiet]\n"
     "\n"
     "Checks the config and its memory plan without running anything: prints each stage's per-sample output\n"
     "on stderr (not with --quiet) and the resolved config, every default filled in, on stdout.\n"},
    {"gen",
     "usage: pipebench gen [--config] FILE [--set ..] [--force] [--json] [--out DIR] [--format text,json]\n"
     "\n"
     "Writes the dataset that the config's dataset.generate describes into dataset.path.\n"
     "\n"
     "options:\n"
     "  --force                  write it again even when the files are there\n"
     "  -j, --json               print the summary as JSON on stdout\n"
     "  -o, --out DIR            also write DIR/gen.json\n"
     "  --format text,json       text: the summary line on stderr; json: DIR/gen.json (both by default)\n"
     "  -q, --quiet, --no-progress   less output\n"},
    {"analyze",
     "usage: pipebench analyze PATH [--out DIR] [--format LIST] [--json] [--quiet]\n"
     "\n"
     "Recomputes the report from a saved trace.json, or from the run directory holding one.  A directory of\n"
     "repeats (--repeat) analyzes its median repeat; a directory of ab, sweep or tune runs lists them.\n"
     "A TensorFlow Profiler capture (<host>.xplane.pb, or a log directory: its newest run, of several hosts\n"
     "the most input-bound) gives the report of its tf.data job, its stages the twin's (pipebench twin), with\n"
     "the capture's own verdict and advice in tf.data's terms (docs/IMPORT.md).\n"
     "\n"
     "options:\n"
     "  -o, --out DIR            write the report files into DIR\n"
     "  --format LIST            comma list of text,json,csv,html,trace (default text,json,html)\n"
     "  -j, --json               print the JSON report on stdout instead of the text summary\n"
     "  -q, --quiet              no lines on stderr but errors\n"},
    {"ab",
     "usage: pipebench ab [--config] FILE [OPTIONS]\n"
     "\n"
     "Runs the config three ways, side by side: synthetic data (what the device could do without the input\n"
     "pipeline), real data with a cold page cache, and real data with a warm one; writes ab.json.\n"
     "\n"
     "options:\n" RUN_OPTIONS},
    {"sweep",
     "usage: pipebench sweep [--config] FILE --set PATH=V1,V2,.. [--set ..] [OPTIONS]\n"
     "\n"
     "Runs every combination of the --set lists (the last list varies fastest), each into <out>/trial-NNN,\n"
     "and prints one table; writes sweep.json.\n"
     "\n"
     "options:\n" RUN_OPTIONS},
    {"tune",
     "usage: pipebench tune [--config] FILE [--budget-s N] [--write FILE] [--set PATH=V1,V2,..] [OPTIONS]\n"
     "\n"
     "Searches the thread counts of the read, decode, map and batch stages and the prefetch depth, guided by\n"
     "the model of each trial's record; writes tune.json.\n"
     "\n"
     "options:\n"
     "  --budget-s N             stop searching after about N seconds (default 600)\n"
     "  --write FILE             write the best config found to FILE\n"
     "  -s, --set PATH=V1,V2,..  narrow a knob's search to these values\n" RUN_OPTIONS},
    {"init",
     "usage: pipebench init [--data] DIR [--preset resnet|unet3d|cosmoflow|bert] [--out FILE] [--force] [--quiet]\n"
     "\n"
     "Probes DIR (its files by format; JPEG sizes, subsampling and colour spaces from a sample of headers; a\n"
     "TFRecord file's features and records; npy dtypes and shapes; npz members), says what it found, and writes\n"
     "a config of the preset's pipeline reading that data, its shapes and memory plan from the files themselves.\n"
     "The preset is chosen from the data unless given: resnet for images, unet3d for arrays, cosmoflow or bert\n"
     "for other TFRecord samples (large or small).\n"
     "\n"
     "options:\n"
     "  --data DIR               the data: a directory, a glob or @FILE listing paths (as dataset.path)\n"
     "  --preset NAME            the pipeline to start from\n"
     "  -o, --out FILE           where to write the config (default <directory name>.json here)\n"
     "  --force                  replace FILE when it exists\n"
     "  -q, --quiet              no summary of what was found\n"},
    {"twin",
     "usage: pipebench twin CAPTURE [CAPTURE ...] [--out FILE] [--force] [--quiet]\n"
     "\n"
     "Reads a TensorFlow Profiler capture of a tf.data job (a <host>.xplane.pb, or a log directory: its newest\n"
     "run, the most input-bound host), prints its input pipeline (each iterator's parallelism, own time, user\n"
     "functions and elements/s) and the share of the steps spent waiting for input, and writes a pipebench\n"
     "config that emulates it with synthetic data: a stage per iterator spinning for its measured time, the\n"
     "same parallelism, batch size and prefetch depth, and the device's measured step time.  run, tune, sweep\n"
     "and ab then work on it without TensorFlow or the data.  Several captures of one job (the same pipeline):\n"
     "the twin is made from the one whose job ran fastest, since the profiler only slows a job down and by\n"
     "amounts that vary from capture to capture.  docs/IMPORT.md says what is read.\n"
     "\n"
     "options:\n"
     "  -o, --out FILE           where to write the config (default <host>-twin.json here)\n"
     "  --force                  replace FILE when it exists\n"
     "  -q, --quiet              no summary, only the file\n"},
    {"calibrate",
     "usage: pipebench calibrate [[--config] FILE] [--set ..] [--force] [--out DIR] [--format text,json]\n"
     "                           [--json] [--quiet]\n"
     "\n"
     "Measures this machine's ceilings (memcpy, cores, GPU copies; with a config, its dataset's decode and\n"
     "read rates) and keeps them in the machine's calibration.json, which every later run reads.\n"
     "\n"
     "options:\n"
     "  --force                  measure again even when this machine's figures are kept\n"
     "  -o, --out DIR            also write DIR/calibration.json\n"
     "  --format text,json       text: the summary on stdout; json: DIR/calibration.json (both by default)\n"
     "  -j, --json               print the figures as JSON on stdout\n"
     "  -q, --quiet              no lines on stderr but errors\n"},
};

const char *pb_cli_usage(void) { return k_usage; }

const pb_cli_help *pb_cli_help_for(const char *command) {
  for (size_t i = 0; i < PB_ARRAY_LEN(k_help); i++)
    if (strcmp(k_help[i].command, command) == 0) return &k_help[i];
  return NULL;
}

static const char *const k_commands[] = {"run",  "validate",  "gen",  "analyze", "ab",  "sweep",
                                         "tune", "calibrate", "init", "twin",    "help"};

static const char *const k_options[] = {
    "--config",      "--set",      "--data", "--device", "--out",   "--format",   "--json",  "--quiet", "--preset",
    "--no-progress", "--no-trace", "--seed", "--repeat", "--force", "--budget-s", "--write", "--help",  "--version"};

/* The name nearest `word` within max(2, len/3) edits (the rule of the config's key suggestions), or NULL. */
static const char *nearest(const char *word, const char *const *names, size_t n) {
  size_t len = strcspn(word, "=");
  char w[64];
  if (len >= sizeof w) return NULL;
  memcpy(w, word, len);
  w[len] = '\0';
  const char *best = NULL;
  int best_dist = PB_MAX(2, (int)(len / 3)) + 1;
  for (size_t i = 0; i < n; i++) {
    int d = pb_edit_distance(w, names[i]);
    if (d < best_dist) best = names[i], best_dist = d;
  }
  return best;
}

const char *pb_cli_nearest_command(const char *word) { return nearest(word, k_commands, PB_ARRAY_LEN(k_commands)); }

const char *pb_cli_nearest_option(const char *word) { return nearest(word, k_options, PB_ARRAY_LEN(k_options)); }

const char *pb_cli_long_option(const char *arg) {
  static const char *const k_short[][2] = {{"-c", "--config"}, {"-s", "--set"},  {"-o", "--out"},
                                           {"-q", "--quiet"},  {"-j", "--json"}, {"-h", "--help"}};
  for (size_t i = 0; i < PB_ARRAY_LEN(k_short); i++)
    if (strcmp(arg, k_short[i][0]) == 0) return k_short[i][1];
  return arg;
}
