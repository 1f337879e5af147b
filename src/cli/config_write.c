/* Writing a config as the presets are written (config_write.h). */
#include "config_write.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common.h"
#include "config.h"
#include "files.h"
#include "json_text.h"

/* One value on one line: {"a": 1, "b": [2, 3]}. */
static void put_inline(FILE *f, const cJSON *v) {
  if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
    bool obj = cJSON_IsObject(v);
    fputs(obj ? "{ " : "[ ", f);
    for (const cJSON *c = v->child; c; c = c->next) {
      if (obj) pb_json_fput_str(f, c->string), fputs(": ", f);
      put_inline(f, c);
      fputs(c->next ? ", " : "", f);
    }
    fputs(obj ? " }" : " ]", f);
    return;
  }
  char *text = cJSON_PrintUnformatted(v);
  fputs(text ? text : "null", f);
  free(text);
}

/* One value inline, wrapped after ", " (outside strings) so that no line passes WIDTH columns; continuation
 * lines indented by `indent` spaces. */
#define WIDTH 110
static void put_wrapped(FILE *f, const cJSON *v, int column, int indent) {
  char *text = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&text, &len);
  if (!m) return put_inline(f, v);
  put_inline(m, v);
  fclose(m);
  bool quoted = false;
  int col = column;
  for (size_t i = 0; i < len; i++) {
    quoted ^= text[i] == '"' && (i == 0 || text[i - 1] != '\\');
    size_t next = i + 2; /* the next break: the next ", " outside a string */
    bool brk = !quoted && text[i] == ',' && text[i + 1] == ' ';
    while (brk && next < len && !(text[next] == ',' && text[next + 1] == ' ')) next++;
    if (brk && col + (int)(next - i) > WIDTH) {
      fprintf(f, ",\n%*s", indent, "");
      col = indent, i++;
      continue;
    }
    fputc(text[i], f), col++;
  }
  free(text);
}

/* The top level one key a line; dataset one key a line; stages one stage a line. */
static void put_config(FILE *f, const cJSON *cfg) {
  fputs("{\n", f);
  for (const cJSON *k = cfg->child; k; k = k->next) {
    fputs("  ", f);
    pb_json_fput_str(f, k->string);
    fputs(": ", f);
    bool stages = strcmp(k->string, "stages") == 0, dataset = strcmp(k->string, "dataset") == 0;
    if (stages || dataset) {
      fputs(stages ? "[\n" : "{\n", f);
      for (const cJSON *c = k->child; c; c = c->next) {
        fputs("    ", f);
        if (dataset) pb_json_fput_str(f, c->string), fputs(": ", f);
        put_wrapped(f, c, 4, 6);
        fputs(c->next ? ",\n" : "\n", f);
      }
      fputs(stages ? "  ]" : "  }", f);
    } else {
      put_inline(f, k);
    }
    fputs(k->next ? ",\n" : "\n", f);
  }
  fputs("}\n", f);
}

static int put_config_body(FILE *f, const void *cfg) {
  put_config(f, cfg);
  return ferror(f) ? -EIO : 0;
}

/* Writes FILE whole or not at all (pb_write_atomic: FILE.tmp, renamed); an existing FILE only with --force. */
int pb_config_write(const char *who, const char *file, const cJSON *cfg, bool force) {
  struct stat st;
  if (!force && stat(file, &st) == 0) {
    fprintf(stderr, "pipebench: %s: %s exists (expected a new file, or --force to replace it)\n", who, file);
    return PB_EXIT_USAGE;
  }
  int rc = pb_write_atomic(file, put_config_body, cfg);
  if (!rc) return 0;
  fprintf(stderr, "pipebench: %s: cannot write the config: %s (expected a writable directory)\n", file, strerror(-rc));
  return PB_EXIT_RUNTIME;
}

/* The config just written loads as any config does (a failure here is pipebench's bug, said as such). */
int pb_config_check_written(const char *who, const char *file) {
  pb_config *cfg = calloc(1, sizeof *cfg);
  pb_err err;
  int rc = cfg ? pb_config_load(cfg, file, NULL, 0, &err) : -ENOMEM;
  if (rc)
    fprintf(stderr, "pipebench: %s: %s: the written config does not load: %s\n", who, file,
            cfg ? err.msg : "out of memory");
  free(cfg);
  return rc ? PB_EXIT_RUNTIME : 0;
}

