/* The one set of cJSON tree-building helpers every JSON writer uses (report.json, report.html's data,
 * trace.json's header).
 *
 * A section is built by one small function: it creates its object, adds every value with pb_json_put or
 * pb_json_push, which carry one `ok` flag through (a NULL value, from an allocation that failed, clears it),
 * and returns pb_json_finish(obj, ok): the complete object or NULL, never one that silently lacks keys.
 * A NULL child then makes its parent's put fail, so a failure anywhere reaches the top. */
#ifndef PB_JSON_UTIL_H
#define PB_JSON_UTIL_H

#include <stdbool.h>

#include <cJSON.h>

/* Adds v under key in obj.  On any failure (v or obj NULL, or the add itself) frees v and clears *ok.
 * Returns *ok, so that a chain can stop at the first failure. */
bool pb_json_put(cJSON *obj, const char *key, cJSON *v, bool *ok);

/* Appends v to the array arr, as pb_json_put does. */
bool pb_json_push(cJSON *arr, cJSON *v, bool *ok);

/* obj when ok (and obj not NULL), else frees obj and returns NULL. */
cJSON *pb_json_finish(cJSON *obj, bool ok);

#endif
