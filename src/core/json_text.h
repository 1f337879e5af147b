/* JSON text is UTF-8 (RFC 8259): every string pipebench writes into report.json, trace.json and the other
 * JSON outputs passes through here.  File names and --out paths are bytes, not text: one in Latin-1 would
 * make the whole file unreadable to a JSON parser, so invalid bytes are written as U+FFFD instead. */
#ifndef PB_JSON_TEXT_H
#define PB_JSON_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <cJSON.h>

/* Bytes of the well-formed UTF-8 character at p (RFC 3629: no overlongs, no surrogates, at most
 * U+10FFFF), or 0 when p does not start one.  p[0] != 0. */
size_t pb_utf8_char_bytes(const unsigned char *p);
/* The first byte of s that does not start a well-formed character, or NULL when s is all UTF-8. */
const char *pb_utf8_first_invalid(const char *s);

/* Copies src into dst[cap] as well-formed UTF-8, each invalid byte as U+FFFD, cut before the first
 * character that would not fit (never inside one): what JSON writes is then exactly what is kept, and a
 * fixed-size field read back from a trace holds it.  Returns the bytes written, before the NUL. */
size_t pb_utf8_copy(char *dst, size_t cap, const char *src);

/* Replaces every string value in the tree (and its keys) that is not well-formed UTF-8 by one that is,
 * each invalid byte becoming U+FFFD.  false when out of memory. */
bool pb_json_fix_utf8(cJSON *item);

/* cJSON_Print (pretty) or cJSON_PrintUnformatted of the tree after pb_json_fix_utf8; NULL when out of
 * memory.  The caller frees the text. */
char *pb_json_print(cJSON *item, bool pretty);

/* Writes s as a JSON string literal (quotes, escapes, U+FFFD for invalid bytes). */
void pb_json_fput_str(FILE *f, const char *s);

#endif
