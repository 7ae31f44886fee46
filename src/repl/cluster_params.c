/*
 * cluster_params.c -- config.clusterParameters (see cluster_params.h): the
 * table of cluster parameters Tamga has, changeStreamOptions' validation as
 * mongod's ChangeStreamOptionsParameter::validate does it, storing a
 * parameter's document in a logged transaction, and reading it back.
 */
#include "repl/cluster_params.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bson/value.h"

/* One cluster parameter: how its value is checked and normalised. */
typedef struct param_def {
	const char *name;
	/* check value; when out is not NULL append the normalised fields */
	int (*check)(const bson_t *value, bson_t *out, terr_t *err);
	/* append the default's fields */
	void (*defaults)(bson_t *out);
} param_def_t;

/* ---- changeStreamOptions --------------------------------------------------- */

#define CSO_FAIL "Failed parsing new changeStreamOptions value"

/* expireAfterSeconds as the IDL's variant [string, safeInt64] reads it:
 * 1 with *secs for a number, 0 with *str for a string, -1 otherwise. */
static int
cso_expire_value(const bson_iter_t *it, int64_t *secs, const char **str)
{
	double d;

	switch (bson_iter_type(it)) {
	case BSON_TYPE_UTF8:
		*str = bson_iter_utf8(it, NULL);
		return 0;
	case BSON_TYPE_INT32:
	case BSON_TYPE_INT64:
		*secs = bson_iter_as_int64(it);
		return 1;
	case BSON_TYPE_DOUBLE:
		d = bson_iter_double(it);
		break;
	case BSON_TYPE_DECIMAL128: {
		bson_decimal128_t dec;
		char buf[BSON_DECIMAL128_STRING];
		bson_iter_decimal128(it, &dec);
		bson_decimal128_to_string(&dec, buf);
		d = strtod(buf, NULL);
		break;
	}
	default:
		return -1;
	}
	/* safeNumberLong: NaN is 0, out of range saturates, fractions truncate */
	if (isnan(d))
		*secs = 0;
	else if (d >= 9223372036854775807.0)
		*secs = INT64_MAX;
	else if (d <= -9223372036854775808.0)
		*secs = INT64_MIN;
	else
		*secs = (int64_t)d;
	return 1;
}

static int
cso_check(const bson_t *value, bson_t *out, terr_t *err)
{
	bson_iter_t it, pp, e;
	bool have_pp = false, have_exp = false;
	int64_t secs = 0;
	const char *str = NULL;
	int kind = -1;

	/* mongod looks for the two required fields before parsing */
	if (bson_iter_init_find(&it, value, "preAndPostImages")) {
		have_pp = true;
		have_exp = BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &e) &&
		    bson_iter_find(&e, "expireAfterSeconds");
	}
	if (!have_pp)
		return terr_set(err, TERR_BAD_VALUE,
		    CSO_FAIL "BSON field 'changeStreamOptions.preAndPostImages' is missing but a required field");
	if (!have_exp)
		return terr_set(err, TERR_BAD_VALUE,
		    CSO_FAIL "BSON field 'changeStreamOptions.expireAfterSeconds' is missing but a required field");
	/* then the IDL parse: strict structs */
	bson_iter_init(&it, value);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strcmp(k, "_id") == 0 || strcmp(k, "clusterParameterTime") == 0)
			continue;
		if (strcmp(k, "preAndPostImages") != 0)
			return terr_set(err, TERR_BAD_VALUE, CSO_FAIL "BSON field 'changeStreamOptions.%s' is an unknown field.",
			    k);
		bson_iter_recurse(&it, &pp);
		while (bson_iter_next(&pp)) {
			const char *pk = bson_iter_key(&pp);
			if (strcmp(pk, "expireAfterSeconds") != 0)
				return terr_set(err, TERR_BAD_VALUE,
				    CSO_FAIL "BSON field 'changeStreamOptions.preAndPostImages.%s' is an unknown field.", pk);
			kind = cso_expire_value(&pp, &secs, &str);
			if (kind < 0)
				return terr_set(err, TERR_BAD_VALUE,
				    CSO_FAIL "BSON field 'changeStreamOptions.preAndPostImages.expireAfterSeconds' is the wrong "
				    "type '%s', expected types '[string, long, int, decimal, double]'",
				    bv_type_name(bson_iter_type(&pp)));
		}
	}
	if (kind == 0 && strcmp(str, "off") != 0)
		return terr_set(err, TERR_BAD_VALUE, "Non-numeric value of 'expireAfterSeconds' should be 'off'");
	if (kind == 1 && secs <= 0)
		return terr_set(err, TERR_BAD_VALUE, "Numeric value of 'expireAfterSeconds' should be positive");
	if (out != NULL) {
		bson_t sub;
		bson_append_document_begin(out, "preAndPostImages", -1, &sub);
		if (kind == 1)
			bson_append_int64(&sub, "expireAfterSeconds", -1, secs);
		else
			bson_append_utf8(&sub, "expireAfterSeconds", -1, "off", 3);
		bson_append_document_end(out, &sub);
	}
	return 0;
}

static void
cso_defaults(bson_t *out)
{
	bson_t sub;

	bson_append_document_begin(out, "preAndPostImages", -1, &sub);
	bson_append_utf8(&sub, "expireAfterSeconds", -1, "off", 3);
	bson_append_document_end(out, &sub);
}

/* ---- the table --------------------------------------------------------------- */

static const param_def_t params[] = {
	{REPL_CS_OPTIONS_PARAM, cso_check, cso_defaults},
};
#define NPARAMS (sizeof(params) / sizeof(params[0]))

static const param_def_t *
find_def(const char *name)
{
	for (size_t i = 0; i < NPARAMS; i++)
		if (strcmp(params[i].name, name) == 0)
			return &params[i];
	return NULL;
}

size_t
repl_cluster_param_count(void)
{
	return NPARAMS;
}

const char *
repl_cluster_param_name(size_t i)
{
	return i < NPARAMS ? params[i].name : NULL;
}

bool
repl_cluster_param_known(const char *name)
{
	return find_def(name) != NULL;
}

int
repl_cluster_param_build(const char *name, const bson_t *value, repl_ts_t time, bson_t *out, terr_t *err)
{
	const param_def_t *d = find_def(name);
	bson_iter_t it;

	if (d == NULL)
		return terr_set(err, TERR_NO_SUCH_KEY, "Unknown server parameter: %s", name);
	if (d->check(value, NULL, err) != 0)
		return -1;
	/* stored as given, after _id and clusterParameterTime (mongod's
	 * replacement document) */
	bson_append_utf8(out, "_id", 3, name, -1);
	bson_append_timestamp(out, "clusterParameterTime", -1, repl_ts_secs(time), repl_ts_inc(time));
	bson_iter_init(&it, value);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strcmp(k, "_id") == 0 || strcmp(k, "clusterParameterTime") == 0)
			continue;
		bson_append_value(out, k, -1, bson_iter_value(&it));
	}
	return 0;
}

/* The stored document of name: 0 with *doc (a copy to destroy), 1 when
 * there is none, -1 with err. */
static int
load(storage_t *st, storage_session_t *s, const char *name, bson_t *doc, terr_t *err)
{
	storage_coll_t *c = NULL;
	bson_value_t id;
	recid_t rid;
	bson_t view;
	int rc;

	if (storage_coll_get(st, REPL_CLUSTER_PARAMS_DB, REPL_CLUSTER_PARAMS_COLL, &c, NULL) != 0 || c == NULL)
		return 1;
	id.value_type = BSON_TYPE_UTF8;
	id.value.v_utf8.str = (char *)name;
	id.value.v_utf8.len = (uint32_t)strlen(name);
	rc = storage_doc_find_id(s, c, &id, &rid, &view, err);
	if (rc == 0)
		bson_copy_to(&view, doc);
	storage_coll_release(c);
	return rc;
}

typedef struct store_arg {
	storage_t *st;
	const bson_t *doc;
} store_arg_t;

static int
store_fn(storage_session_t *s, void *arg, terr_t *err)
{
	store_arg_t *a = arg;
	storage_coll_t *c = NULL;
	bson_iter_t it;
	recid_t rid;
	bson_t old, copy;
	int rc, ret;

	if (storage_coll_get(a->st, REPL_CLUSTER_PARAMS_DB, REPL_CLUSTER_PARAMS_COLL, &c, err) != 0 || c == NULL)
		return c == NULL && err->code == 0 ? terr_set(err, TERR_INTERNAL_ERROR, "config.clusterParameters is missing")
		                                   : -1;
	if (!bson_iter_init_find(&it, a->doc, "_id")) {
		storage_coll_release(c);
		return terr_set(err, TERR_INTERNAL_ERROR, "a cluster parameter document without _id");
	}
	rc = storage_doc_find_id(s, c, bson_iter_value(&it), &rid, &old, err);
	if (rc < 0) {
		ret = -1;
	} else if (rc == 1) {
		ret = storage_doc_insert(s, c, a->doc, NULL, err);
	} else {
		bson_copy_to(&old, &copy);
		ret = storage_doc_update(s, c, rid, &copy, a->doc, err);
		bson_destroy(&copy);
	}
	storage_coll_release(c);
	return ret;
}

int
repl_cluster_param_store(storage_t *st, storage_session_t *s, const bson_t *doc, bool sync, terr_t *err)
{
	storage_coll_t *c = NULL;
	store_arg_t a = {st, doc};

	if (storage_coll_get(st, REPL_CLUSTER_PARAMS_DB, REPL_CLUSTER_PARAMS_COLL, &c, NULL) == 0 && c != NULL) {
		storage_coll_release(c);
	} else if (storage_coll_create(st, s, REPL_CLUSTER_PARAMS_DB, REPL_CLUSTER_PARAMS_COLL, NULL, err) != 0) {
		if (err->code != TERR_NAMESPACE_EXISTS)
			return -1;
		terr_clear(err);
	}
	return storage_txn_run(s, store_fn, &a, sync, err);
}

int
repl_cluster_param_get(storage_t *st, storage_session_t *s, const char *name, bool with_time, bson_t *out,
                       terr_t *err)
{
	const param_def_t *d = find_def(name);
	bson_t doc;
	bson_iter_t it;
	uint32_t t = 0, i = 0;
	int rc;

	if (d == NULL)
		return terr_set(err, TERR_NO_SUCH_KEY, "Unknown server parameter: %s", name);
	if ((rc = load(st, s, name, &doc, err)) < 0)
		return -1;
	bson_append_utf8(out, "_id", 3, name, -1);
	if (rc == 0 && bson_iter_init_find(&it, &doc, "clusterParameterTime") && BSON_ITER_HOLDS_TIMESTAMP(&it))
		bson_iter_timestamp(&it, &t, &i);
	if (with_time)
		bson_append_timestamp(out, "clusterParameterTime", -1, t, i);
	/* a stored document that no longer passes shows the default, as
	 * mongod's in-memory value would have refused it */
	if (rc != 0 || d->check(&doc, out, NULL) != 0)
		d->defaults(out);   /* a failed check appended nothing */
	if (rc == 0)
		bson_destroy(&doc);
	return 0;
}

int64_t
repl_cluster_param_preimage_expire_secs(storage_t *st, storage_session_t *s)
{
	bson_t doc;
	bson_iter_t it, e;
	int64_t secs = 0;
	const char *str = NULL;

	if (load(st, s, REPL_CS_OPTIONS_PARAM, &doc, NULL) != 0)
		return 0;
	if (bson_iter_init_find(&it, &doc, "preAndPostImages") && BSON_ITER_HOLDS_DOCUMENT(&it) &&
	    bson_iter_recurse(&it, &e) && bson_iter_find(&e, "expireAfterSeconds") &&
	    cso_expire_value(&e, &secs, &str) != 1)
		secs = 0;
	bson_destroy(&doc);
	return secs > 0 ? secs : 0;
}
