#include "json_text.h"

#include <stdlib.h>
#include <string.h>

size_t pb_utf8_char_bytes(const unsigned char *p) {
  if (*p < 0x80) return 1;
  size_t n = (*p & 0xE0) == 0xC0 ? 2 : (*p & 0xF0) == 0xE0 ? 3 : (*p & 0xF8) == 0xF0 ? 4 : 0;
  if (!n || *p == 0xC0 || *p == 0xC1 || *p > 0xF4) return 0;
  for (size_t i = 1; i < n; i++)
    if ((p[i] & 0xC0) != 0x80) return 0; /* also stops at the NUL */
  if ((*p == 0xE0 && p[1] < 0xA0) || (*p == 0xED && p[1] > 0x9F) || (*p == 0xF0 && p[1] < 0x90) ||
      (*p == 0xF4 && p[1] > 0x8F))
    return 0; /* overlong, surrogate, or past U+10FFFF */
  return n;
}

const char *pb_utf8_first_invalid(const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    size_t n = pb_utf8_char_bytes(p);
    if (!n) return (const char *)p;
    p += n;
  }
  return NULL;
}

size_t pb_utf8_copy(char *dst, size_t cap, const char *src) {
  size_t n = 0;
  for (const unsigned char *p = (const unsigned char *)src; *p;) {
    size_t c = pb_utf8_char_bytes(p);
    const char *piece = c ? (const char *)p : "\xEF\xBF\xBD";
    size_t len = c ? c : 3;
    if (n + len + 1 > cap) break; /* a whole character or none */
    memcpy(dst + n, piece, len);
    n += len;
    p += c ? c : 1;
  }
  if (cap) dst[n] = '\0';
  return n;
}

/* A new copy of s with each invalid byte replaced by U+FFFD (3 bytes, so 3x the length is room enough). */
static char *fixed_copy(const char *s) {
  size_t cap = 3 * strlen(s) + 1;
  char *out = malloc(cap);
  if (out) pb_utf8_copy(out, cap, s);
  return out;
}

static bool fix_string(char **s) {
  if (!*s || !pb_utf8_first_invalid(*s)) return true;
  char *f = fixed_copy(*s);
  if (!f) return false;
  /* cJSON allocates with the default hooks (malloc/free): the same as ours */
  free(*s);
  *s = f;
  return true;
}

bool pb_json_fix_utf8(cJSON *item) {
  bool ok = true;
  for (; item; item = item->next) {
    if (!(item->type & cJSON_StringIsConst)) ok &= fix_string(&item->string);
    if (cJSON_IsString(item) || cJSON_IsRaw(item)) ok &= fix_string(&item->valuestring);
    if (item->child) ok &= pb_json_fix_utf8(item->child);
  }
  return ok;
}

char *pb_json_print(cJSON *item, bool pretty) {
  if (!item || !pb_json_fix_utf8(item)) return NULL;
  return pretty ? cJSON_Print(item) : cJSON_PrintUnformatted(item);
}

void pb_json_fput_str(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    size_t n = pb_utf8_char_bytes(p);
    if (!n) {
      fputs("\xEF\xBF\xBD", f);
      p++;
    } else if (*p == '"' || *p == '\\') {
      fprintf(f, "\\%c", *p++);
    } else if (*p < 0x20) {
      fprintf(f, "\\u%04x", *p++);
    } else {
      fwrite(p, 1, n, f);
      p += n;
    }
  }
  fputc('"', f);
}
