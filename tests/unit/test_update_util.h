/*
 * test_update_util.h -- helpers shared by the update engine's unit tests:
 * compile an update written as JSON, apply it to a JSON document, and
 * return the result as relaxed Extended JSON (or the error code/message).
 */
#ifndef TAMGA_TEST_UPDATE_UTIL_H
#define TAMGA_TEST_UPDATE_UTIL_H

#include "tt.h"
#include "update/update.h"

typedef struct uresult {
	char *json;        /* result document, NULL on error */
	bool modified;
	int code;          /* error code, 0 on success */
	char msg[1024];
} uresult_t;

/* u: JSON of the update (document or array); af: JSON array of array
 * filters or NULL; pos: matched position. */
static inline uresult_t
tu_apply_ex(const char *doc, const char *u, const char *af, int pos, bool insert)
{
	uresult_t r;
	char *wrapped = bson_strdup_printf("{\"u\": %s}", u);
	bson_t *w = tt_json(wrapped), *d = tt_json(doc), *afd = NULL, out;
	bson_iter_t it;
	update_t *up = NULL;
	update_options_t opts = {0};
	update_apply_ctx_t ctx = UPDATE_APPLY_CTX_INIT;
	terr_t err = TERR_INIT;

	memset(&r, 0, sizeof r);
	if (af != NULL) {
		char *aw = bson_strdup_printf("{\"a\": %s}", af);
		bson_t *a = tt_json(aw);
		bson_iter_t ai, sub;
		const uint8_t *data;
		uint32_t len;

		bson_iter_init_find(&ai, a, "a");
		bson_iter_array(&ai, &len, &data);
		afd = bson_new_from_data(data, len);
		(void)sub;
		bson_destroy(a);
		bson_free(aw);
		opts.array_filters = afd;
	}
	ctx.matched_pos = pos;
	ctx.is_insert = insert;
	ctx.now_ms = 1782813600000LL; /* 2026-06-30T10:00:00Z */
	bson_iter_init_find(&it, w, "u");
	if (update_compile(bson_iter_value(&it), &opts, &up, &err) != 0 ||
	    update_apply(up, d, &ctx, &out, &r.modified, &err) != 0) {
		r.code = err.code;
		bson_strncpy(r.msg, err.msg ? err.msg : "", sizeof r.msg);
	} else {
		r.json = bson_as_relaxed_extended_json(&out, NULL);
		bson_destroy(&out);
	}
	terr_clear(&err);
	update_free(up);
	bson_destroy(w);
	bson_destroy(d);
	if (afd)
		bson_destroy(afd);
	bson_free(wrapped);
	return r;
}

static inline uresult_t
tu_apply(const char *doc, const char *u)
{
	return tu_apply_ex(doc, u, NULL, -1, false);
}

#define TU_OK(doc, u, want) do { uresult_t r_ = tu_apply((doc), (u)); \
	if (r_.json == NULL) TT_FAIL_("%s on %s: error %d %s", (u), (doc), r_.code, r_.msg); \
	else { TT_EQ_STR(r_.json, (want)); } bson_free(r_.json); } while (0)
#define TU_NOOP(doc, u) do { uresult_t r_ = tu_apply((doc), (u)); \
	if (r_.json == NULL) TT_FAIL_("%s: error %d %s", (u), r_.code, r_.msg); \
	else if (r_.modified) TT_FAIL_("%s on %s: modified, want no-op", (u), (doc)); \
	bson_free(r_.json); } while (0)
#define TU_ERR(doc, u, wcode, wmsg) do { uresult_t r_ = tu_apply((doc), (u)); \
	if (r_.json != NULL) { TT_FAIL_("%s: want error %d, got %s", (u), (wcode), r_.json); bson_free(r_.json); } \
	else { TT_EQ_INT(r_.code, (wcode)); if ((wmsg) != NULL) TT_EQ_STR(r_.msg, (const char *)(wmsg)); } } while (0)

#endif
