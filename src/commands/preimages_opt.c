/*
 * preimages_opt.c -- changeStreamPreAndPostImages: {enabled} on create and
 * collMod (see preimages_opt.h); the pre-images themselves are written by
 * the oplog's observer (repl/preimage.h).
 */
#include "commands/preimages_opt.h"

#include <string.h>

#include "bson/value.h"
#include "repl/preimage.h"

int
cmd_preimages_option(cmd_t *c, const bson_iter_t *it, const char *cmd, bool *enabled, terr_t *err)
{
	bson_iter_t f;
	bool found = false;

	if (!BSON_ITER_HOLDS_DOCUMENT(it))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field '%s.changeStreamPreAndPostImages' is the wrong type '%s', expected type 'object'", cmd,
		    bv_type_name(bson_iter_type(it)));
	bson_iter_recurse(it, &f);
	while (bson_iter_next(&f)) {
		if (strcmp(bson_iter_key(&f), "enabled") != 0)
			return terr_set(err, 40415, "BSON field '%s.changeStreamPreAndPostImages.%s' is an unknown field.", cmd,
			    bson_iter_key(&f));
		if (!BSON_ITER_HOLDS_BOOL(&f))
			return terr_set(err, TERR_TYPE_MISMATCH,
			    "BSON field '%s.changeStreamPreAndPostImages.enabled' is the wrong type '%s', expected type 'bool'",
			    cmd, bv_type_name(bson_iter_type(&f)));
		*enabled = bson_iter_bool(&f);
		found = true;
	}
	if (!found)
		return terr_set(err, 40414,
		    "BSON field '%s.changeStreamPreAndPostImages.enabled' is missing but a required field", cmd);
	if (*enabled) {
		storage_session_t *s = client_session(c->client, err);
		if (s == NULL || repl_preimage_ensure(c->engine->st, s, err) != 0)
			return -1;
	}
	return 0;
}
