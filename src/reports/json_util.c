/* The shared cJSON helpers (json_util.h). */
#include "json_util.h"

bool pb_json_put(cJSON *obj, const char *key, cJSON *v, bool *ok) {
  if (!v || !obj || !cJSON_AddItemToObject(obj, key, v)) {
    cJSON_Delete(v);
    *ok = false;
  }
  return *ok;
}

bool pb_json_push(cJSON *arr, cJSON *v, bool *ok) {
  if (!v || !arr || !cJSON_AddItemToArray(arr, v)) {
    cJSON_Delete(v);
    *ok = false;
  }
  return *ok;
}

cJSON *pb_json_finish(cJSON *obj, bool ok) {
  if (ok && obj) return obj;
  cJSON_Delete(obj);
  return NULL;
}
