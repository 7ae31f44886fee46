/*
 * cmd_toolbelt.c -- the schema toolbelt's commands and hooks: validate,
 * profile, tamgaValidationPreview, tamgaInferSchema, tamgaSchemaAdvice; the
 * dispatcher's after-command hook (slow query log, profiler, $queryStats);
 * serverStatus' validation / queryStats sections; $queryStats' spec.
 *
 * The work is src/toolbelt/ (toolbelt.h): this file reads the requests as
 * mongod's IDL does and hands plain values down.
 */
#include "commands/commands_private.h"

#include <math.h>
#include <string.h>
#include <strings.h>

#include "bson/value.h"
#include "common/log.h"
#include "common/opctx.h"
#include "schema/schema_rules.h"
#include "toolbelt/toolbelt.h"

/* ---- the after-command hook ---------------------------------------------------- */

static bool
is_qstats_command(const char *name)
{
	return strcmp(name, "find") == 0 || strcmp(name, "aggregate") == 0 || strcmp(name, "distinct") == 0 ||
	    strcmp(name, "count") == 0;
}

/* The pipeline starts with $queryStats (mongod does not record those). */
static bool
reads_query_stats(const bson_t *body)
{
	bson_iter_t it, st, f;

	return bson_iter_init_find(&it, body, "pipeline") && BSON_ITER_HOLDS_ARRAY(&it) &&
	    bson_iter_recurse(&it, &st) && bson_iter_next(&st) && BSON_ITER_HOLDS_DOCUMENT(&st) &&
	    bson_iter_recurse(&st, &f) && bson_iter_next(&f) && strcmp(bson_iter_key(&f), "$queryStats") == 0;
}

void
cmd_toolbelt_after(cmd_t *c, int rc, const terr_t *err)
{
	int64_t micros = (c->end_us = tm_now_us()) - c->op.start_us;
	bool prof = toolbelt_profile_wanted(micros) && toolbelt_profile_needed(c->db, micros);
	/* a rate limit of 0 ($queryStats off) answers no before the name is
	 * compared (toolbelt_qstats_wanted(0) is false and counts nothing) */
	int64_t qs_lim = atomic_load_explicit(&c->engine->qstats_rate_limit, memory_order_relaxed);
	bool qs = rc == 0 && qs_lim != 0 && is_qstats_command(c->name) && toolbelt_qstats_wanted(qs_lim) &&
	    !(strcmp(c->name, "aggregate") == 0 && reads_query_stats(c->body));
	/* a getMore of a recorded query's cursor adds to its entry */
	bool qs_more = c->name[0] == 'g' && strcmp(c->name, "getMore") == 0 && toolbelt_qstats_cursors_open() &&
	    BSON_ITER_HOLDS_INT64(&c->first);
	toolbelt_op_t op;
	char ns[512], owner[256], app[128];
	const bson_t *md;
	bson_iter_t it;

	if (!prof && !qs && !qs_more)
		return;
	md = c->client != NULL ? client_metadata(c->client) : NULL;
	/* an awaitable hello and an awaitData getMore wait by design: not slow */
	if (prof && ((strcmp(c->name, "hello") == 0 || strcasecmp(c->name, "isMaster") == 0) ?
	             cmd_find_field(c, "maxAwaitTimeMS", &it) :
	             strcmp(c->name, "getMore") == 0 && cmd_find_field(c, "maxTimeMS", &it)))
		prof = false;
	if (!prof && !qs && !qs_more)
		return;
	memset(&op, 0, sizeof(op));
	/* the namespace string: only a profile entry or a log line shows it
	 * ($queryStats reads the command itself) */
	if (!prof)
		ns[0] = '\0';
	else if (strcmp(c->name, "getMore") == 0 && bson_iter_init_find(&it, c->body, "collection") &&
	    BSON_ITER_HOLDS_UTF8(&it))
		cmd_ns(ns, sizeof(ns), c->db, bson_iter_utf8(&it, NULL));
	else if (BSON_ITER_HOLDS_UTF8(&c->first))
		cmd_ns(ns, sizeof(ns), c->db, bson_iter_utf8(&c->first, NULL));
	else
		cmd_ns(ns, sizeof(ns), c->db, "$cmd");
	op.db = c->db;
	op.ns = ns;
	op.name = c->name;
	op.cmd = c->body;
	op.reply = rc == 0 ? c->reply : NULL;
	/* the first batch's counts, when the reply is still exactly it */
	if (op.reply != NULL && c->op.batch_reply == (const void *)c->reply && c->reply->len == c->op.batch_reply_len) {
		op.batch_known = true;
		op.batch_n = c->op.batch_n;
		op.batch_cursor_id = c->op.batch_cursor_id;
	}
	op.code = rc != 0 && err != NULL ? err->code : 0;
	op.errmsg = rc != 0 && err != NULL ? err->msg : NULL;
	op.micros = micros;
	op.keys_examined = c->op.keys_examined;
	op.docs_examined = c->op.docs_examined;
	op.plan_summary = c->op.plan_summary;
	op.client = c->client != NULL ? c->client->remote : NULL;
	/* who and which application: only a profile entry or a log line shows them */
	if (prof) {
		op.user = c->client != NULL ? cmd_cursor_owner(c, owner) : NULL;
		if (md != NULL && bson_iter_init(&it, md) && bson_iter_find_descendant(&it, "application.name", &it) &&
		    BSON_ITER_HOLDS_UTF8(&it)) {
			snprintf(app, sizeof(app), "%s", bson_iter_utf8(&it, NULL));
			op.app_name = app;
		}
	}
	if (prof)
		toolbelt_profile_op(c->engine->st, &op);
	if (qs)
		toolbelt_qstats_record(&op, md);
	if (qs_more)
		toolbelt_qstats_getmore(&op, bson_iter_int64(&c->first));
}

void
cmd_toolbelt_server_status(cmd_t *c)
{
	bson_t sub;

	BSON_APPEND_DOCUMENT_BEGIN(c->reply, "validation", &sub);
	schema_counters_append_all(&sub);
	bson_append_document_end(c->reply, &sub);
	BSON_APPEND_DOCUMENT_BEGIN(c->reply, "queryStats", &sub);
	toolbelt_qstats_status(&sub);
	bson_append_document_end(c->reply, &sub);
}

/* ---- $queryStats --------------------------------------------------------------- */

int
cmd_toolbelt_query_stats(void *ctx, const bson_t *spec, bson_t *out, terr_t *err)
{
	bson_iter_t it, ti;
	const uint8_t *key = NULL;
	uint32_t klen = 0;

	(void)ctx;
	bson_iter_init(&it, spec);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		bool has_alg = false;
		if (strcmp(k, "transformIdentifiers") != 0)
			return terr_set(err, 40415, "BSON field '$queryStats.%s' is an unknown field.", k);
		if (!BSON_ITER_HOLDS_DOCUMENT(&it))
			return terr_set(err, TERR_TYPE_MISMATCH,
			    "BSON field '$queryStats.transformIdentifiers' is the wrong type '%s', expected type 'object'",
			    bv_type_name(bson_iter_type(&it)));
		bson_iter_recurse(&it, &ti);
		while (bson_iter_next(&ti)) {
			const char *tk = bson_iter_key(&ti);
			if (strcmp(tk, "algorithm") == 0) {
				if (!BSON_ITER_HOLDS_UTF8(&ti))
					return terr_set(err, TERR_TYPE_MISMATCH,
					    "BSON field '$queryStats.transformIdentifiers.algorithm' is the wrong type '%s', "
					    "expected type 'string'", bv_type_name(bson_iter_type(&ti)));
				if (strcmp(bson_iter_utf8(&ti, NULL), "hmac-sha-256") != 0)
					return terr_set(err, TERR_BAD_VALUE,
					    "Enumeration value '%s' for field '$queryStats.transformIdentifiers.algorithm' "
					    "is not a valid value.", bson_iter_utf8(&ti, NULL));
				has_alg = true;
			} else if (strcmp(tk, "hmacKey") == 0) {
				bson_subtype_t st;
				if (!BSON_ITER_HOLDS_BINARY(&ti))
					return terr_set(err, TERR_TYPE_MISMATCH,
					    "BSON field '$queryStats.transformIdentifiers.hmacKey' is the wrong type '%s', "
					    "expected type 'binData'", bv_type_name(bson_iter_type(&ti)));
				bson_iter_binary(&ti, &st, &klen, &key);
				if (st != (bson_subtype_t)8)   /* Sensitive */
					return terr_set(err, TERR_TYPE_MISMATCH,
					    "BSON field '$queryStats.transformIdentifiers.hmacKey' is the wrong binData type "
					    "'%d', expected type 'Sensitive'", (int)st);
				if (klen < 32)
					return terr_set(err, TERR_FAILED_TO_PARSE,
					    "The HMAC key provided is too short (%u bytes). It must be at least 32 bytes.",
					    (unsigned)klen);
			} else {
				return terr_set(err, 40415,
				    "BSON field '$queryStats.transformIdentifiers.%s' is an unknown field.", tk);
			}
		}
		if (!has_alg)
			return terr_set(err, 40414,
			    "BSON field '$queryStats.transformIdentifiers.algorithm' is missing but a required field");
	}
	toolbelt_qstats_rows(key, klen, out);
	return 0;
}

/* ---- validate ------------------------------------------------------------------ */

/* validate is not a typed command in mongod: its options are read by name
 * with BSONElement::trueValue (a string or a document is true, 0 / null
 * false) and other fields are ignored -- PyMongo 3's validate_collection
 * still sends the old scandata. */
static bool
validate_flag(cmd_t *c, const char *name)
{
	bson_iter_t it;

	return cmd_find_field(c, name, &it) && bson_iter_as_bool(&it);
}

CMD_HANDLER(cmd_validate)
{
	const char *name;
	storage_coll_t *coll = NULL;
	storage_session_t *s;
	toolbelt_validate_opts_t o = {0};
	bool background, fast_count, check_bson, repair;
	int ret = -1;

	RET(cmd_collection_arg(c, &name, err));
	/* mongod's parseValidateOptions, in its order */
	o.full = validate_flag(c, "full");
	background = validate_flag(c, "background");
	if (background && o.full)
		return terr_set(err, TERR_INVALID_OPTIONS,
		    "Running the validate command with both { background: true } and { full: true } is not supported.");
	fast_count = validate_flag(c, "enforceFastCount");
	if (background && fast_count)
		return terr_set(err, TERR_INVALID_OPTIONS, "Running the validate command with both { background: true } "
		    "and { enforceFastCount: true } is not supported.");
	check_bson = validate_flag(c, "checkBSONConformance");
	repair = validate_flag(c, "repair");
	o.metadata = validate_flag(c, "metadata");
	if (o.metadata && (background || o.full || fast_count || check_bson || repair))
		return terr_set(err, TERR_INVALID_OPTIONS,
		    "Running the validate command with { metadata: true } is not supported with any other options");
	if (repair)
		return terr_set(err, TERR_NOT_IMPLEMENTED, "validate with repair: true is not supported by Tamga");
	o.spec_check = cmd_index_spec_check;
	if (storage_coll_get(c->engine->st, c->db, name, &coll, NULL) != 0) {
		if (view_exists(c, c->db, name))
			return terr_set(err, TERR_COMMAND_NOT_SUPPORTED_ON_VIEW, "Cannot validate a view");
		return terr_set(err, TERR_NAMESPACE_NOT_FOUND, "Collection '%s.%s' does not exist to validate.", c->db,
		    name);
	}
	if ((s = client_session(c->client, err)) == NULL)
		goto err;
	ERR(toolbelt_validate(c->engine->st, s, coll, &o, c->reply, err));
err:
	storage_coll_release(coll);
	return ret;
}

/* ---- profile ------------------------------------------------------------------- */

static const char *const profile_fields[] = {"slowms", "sampleRate", "filter", NULL};

CMD_HANDLER(cmd_profile)
{
	bson_iter_t it;
	int64_t level, slowms = 0;
	double rate = 1.0;
	bool has_slowms = false, has_rate = false, has_filter = false;
	bson_t filter;
	const bson_t *fp = NULL;

	RET(cmd_check_fields(c, profile_fields, err));
	if (!BSON_ITER_HOLDS_NUMBER(&c->first))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field 'profile.profile' is the wrong type '%s', expected types '[long, int, decimal, double]'",
		    bv_type_name(bson_iter_type(&c->first)));
	level = bson_iter_as_int64(&c->first);
	if (cmd_find_field(c, "slowms", &it)) {
		if (!BSON_ITER_HOLDS_NUMBER(&it))
			return terr_set(err, TERR_TYPE_MISMATCH,
			    "BSON field 'profile.slowms' is the wrong type '%s', expected types '[long, int, decimal, double]'",
			    bv_type_name(bson_iter_type(&it)));
		slowms = bson_iter_as_int64(&it);
		if (slowms < INT32_MIN || slowms > INT32_MAX)
			return terr_set(err, TERR_BAD_VALUE, "slowms out of range: %lld", (long long)slowms);
		has_slowms = true;
	}
	if (cmd_find_field(c, "sampleRate", &it)) {
		if (!BSON_ITER_HOLDS_NUMBER(&it))
			return terr_set(err, TERR_TYPE_MISMATCH,
			    "BSON field 'profile.sampleRate' is the wrong type '%s', expected types '[long, int, decimal, double]'",
			    bv_type_name(bson_iter_type(&it)));
		rate = bson_iter_as_double(&it);
		has_rate = true;
	}
	if (cmd_find_field(c, "filter", &it)) {
		has_filter = true;
		if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
			const uint8_t *d;
			uint32_t l;
			bson_iter_document(&it, &l, &d);
			bson_init_static(&filter, d, l);
			fp = &filter;
		} else if (!(BSON_ITER_HOLDS_UTF8(&it) && strcmp(bson_iter_utf8(&it, NULL), "unset") == 0)) {
			return terr_set(err, TERR_BAD_VALUE, "Expected an object, or the string 'unset'.");
		}
	}
	return toolbelt_profile_command(c->db, level, has_slowms, slowms, has_rate, rate, has_filter, fp, c->reply,
	    err);
}

/* ---- the schema tools --------------------------------------------------------- */

/* The collection a tool inspects: 26 when missing, 166 for a view, 72 for
 * a time-series collection (its buckets are not the documents written). */
static int
tool_collection(cmd_t *c, const char *tool, storage_coll_t **out, terr_t *err)
{
	const char *name;
	bson_iter_t it;

	*out = NULL;
	RET(cmd_collection_arg(c, &name, err));
	if (storage_coll_get(c->engine->st, c->db, name, out, NULL) != 0) {
		RET(view_refuse(c, c->db, name, err));
		return terr_set(err, TERR_NAMESPACE_NOT_FOUND, "Collection [%s.%s] not found.", c->db, name);
	}
	if ((*out)->options != NULL && bson_iter_init_find(&it, (*out)->options, "timeseries")) {
		storage_coll_release(*out);
		*out = NULL;
		return terr_set(err, TERR_INVALID_OPTIONS, "%s is not supported on the time-series collection %s.%s", tool,
		    c->db, name);
	}
	return 0;
}

/* An optional positive count field (1 <= n <= max). */
static int
positive(cmd_t *c, const char *field, int64_t max, int64_t *out, bool *found, terr_t *err)
{
	RET(cmd_get_int64(c, field, out, found, err));
	if (*found && (*out < 1 || *out > max))
		return terr_set(err, 51024, "BSON field '%s.%s' value must be >= 1 and <= %lld, actual value '%lld'",
		    c->name, field, (long long)max, (long long)*out);
	return 0;
}

static const char *const preview_fields[] = {"validator", "maxIds", "limit", "resumeAfter", NULL};

CMD_HANDLER(cmd_validation_preview)
{
	storage_coll_t *coll = NULL;
	storage_session_t *s;
	toolbelt_preview_opts_t o = {0};
	bson_t validator;
	bool found;
	bson_iter_t it;
	int ret = -1;

	RET(cmd_check_fields(c, preview_fields, err));
	RET(cmd_get_doc(c, "validator", &validator, &found, err));
	if (found)
		o.validator = &validator;
	RET(positive(c, "maxIds", 1000, &o.max_ids, &found, err));
	RET(positive(c, "limit", INT64_MAX, &o.limit, &found, err));
	if (cmd_find_field(c, "resumeAfter", &it))
		o.resume_after = bson_iter_value(&it);
	RET(tool_collection(c, "tamgaValidationPreview", &coll, err));
	if ((s = client_session(c->client, err)) == NULL)
		goto err;
	ERR(toolbelt_preview(c->engine->st, s, coll, &o, c->reply, err));
err:
	storage_coll_release(coll);
	return ret;
}

static const char *const infer_fields[] = {"sample", "requiredThreshold", "enumMax", "ranges", "discriminator",
	"tighten", NULL};

CMD_HANDLER(cmd_infer_schema)
{
	storage_coll_t *coll = NULL;
	storage_session_t *s;
	toolbelt_infer_opts_t o = {.required_threshold = 1.0, .enum_max = 10};
	bool found;
	bson_iter_t it;
	int64_t count = 0;
	int ret = -1;

	RET(cmd_check_fields(c, infer_fields, err));
	RET(positive(c, "sample", INT64_MAX, &o.sample, &found, err));
	if (cmd_find_field(c, "requiredThreshold", &it)) {
		if (!BSON_ITER_HOLDS_NUMBER(&it) || !(bson_iter_as_double(&it) > 0 && bson_iter_as_double(&it) <= 1))
			return terr_set(err, TERR_BAD_VALUE, "requiredThreshold must be a number in (0, 1]");
		o.required_threshold = bson_iter_as_double(&it);
	}
	if (cmd_find_field(c, "enumMax", &it)) {
		if (!BSON_ITER_HOLDS_NUMBER(&it) || bson_iter_as_int64(&it) < 0 || bson_iter_as_int64(&it) > 1000)
			return terr_set(err, TERR_BAD_VALUE, "enumMax must be a number in [0, 1000]");
		o.enum_max = bson_iter_as_int64(&it);
	}
	RET(cmd_get_bool(c, "ranges", &o.ranges, &found, err));
	if (cmd_find_field(c, "tighten", &it)) {
		/* true: types under 5% of a field's values; a number: that share */
		if (BSON_ITER_HOLDS_BOOL(&it))
			o.tighten = bson_iter_bool(&it) ? 0.05 : 0;
		else if (BSON_ITER_HOLDS_NUMBER(&it) && bson_iter_as_double(&it) >= 0 && bson_iter_as_double(&it) < 1)
			o.tighten = bson_iter_as_double(&it);
		else
			return terr_set(err, TERR_BAD_VALUE, "tighten must be a bool or a share in [0, 1)");
	}
	if (cmd_find_field(c, "discriminator", &it)) {
		if (BSON_ITER_HOLDS_BOOL(&it) && !bson_iter_bool(&it))
			o.no_discriminator = true;
		else if (BSON_ITER_HOLDS_UTF8(&it) && bson_iter_utf8(&it, NULL)[0] != '\0' &&
		         strchr(bson_iter_utf8(&it, NULL), '.') == NULL)
			o.discriminator = bson_iter_utf8(&it, NULL);
		else
			return terr_set(err, TERR_BAD_VALUE, "discriminator must be a top-level field name or false");
	}
	RET(tool_collection(c, "tamgaInferSchema", &coll, err));
	if ((s = client_session(c->client, err)) == NULL)
		goto err;
	ERR(storage_coll_stats(c->engine->st, s, coll, &count, NULL, NULL, err));
	if (o.sample > count) {
		ret = terr_set(err, TERR_BAD_VALUE, "sample %lld is larger than %s (%lld documents)", (long long)o.sample,
		    coll->ns, (long long)count);
		goto err;
	}
	ERR(toolbelt_infer(s, coll, &o, c->reply, err));
err:
	storage_coll_release(coll);
	return ret;
}

static const char *const advice_fields[] = {"arrayMax", "sample", "collectionsMax", NULL};

CMD_HANDLER(cmd_schema_advice)
{
	storage_session_t *s;
	toolbelt_advise_opts_t o = {0};
	const char *coll = NULL;
	storage_coll_t *sc = NULL;
	bool found;

	RET(cmd_check_fields(c, advice_fields, err));
	RET(positive(c, "arrayMax", INT32_MAX, &o.array_max, &found, err));
	RET(positive(c, "sample", INT64_MAX, &o.sample, &found, err));
	RET(positive(c, "collectionsMax", INT32_MAX, &o.collections_max, &found, err));
	if (BSON_ITER_HOLDS_UTF8(&c->first)) {
		RET(tool_collection(c, "tamgaSchemaAdvice", &sc, err));
		coll = sc->name;
	} else if (!(BSON_ITER_HOLDS_NUMBER(&c->first) && bson_iter_as_int64(&c->first) == 1)) {
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "tamgaSchemaAdvice takes a collection name, or 1 for the whole database");
	}
	if ((s = client_session(c->client, err)) == NULL) {
		storage_coll_release(sc);
		return -1;
	}
	BSON_APPEND_UTF8(c->reply, "db", c->db);
	if (toolbelt_advise(c->engine->st, s, c->db, coll, &o, c->reply, err) != 0) {
		storage_coll_release(sc);
		return -1;
	}
	storage_coll_release(sc);
	return 0;
}
