/* Editing a config's own JSON text in place: `tune --write` writes the user's file with only the tuned keys
 * changed (same layout, same order, same everything else), so that a diff shows the tuning (issue 34). */
#ifndef PB_JSON_EDIT_H
#define PB_JSON_EDIT_H

/* `text` with stage `stage`'s `key` set to `value`: the stage is the element of the top-level "stages" array
 * whose "name" is `stage` (or, with no name, whose "type" is); its `key` value is replaced, or the key is
 * added after its last member.  *out is malloc'd (the caller frees it).  0; -ENOENT when there is no such
 * stage; -EINVAL when the text is not a JSON object the scanner follows; -ENOMEM. */
int pb_json_edit_stage_key(const char *text, const char *stage, const char *key, long long value, char **out);

#endif
