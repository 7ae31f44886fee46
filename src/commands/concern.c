/*
 * concern.c -- readConcern / writeConcern parsing and mongod's checks (see
 * concern.h).  The level names are a table; the messages are mongod's.
 */
#include "commands/concern.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *
type_name(bson_type_t t)
{
	switch (t) {
	case BSON_TYPE_DOUBLE: return "double";
	case BSON_TYPE_UTF8: return "string";
	case BSON_TYPE_DOCUMENT: return "object";
	case BSON_TYPE_ARRAY: return "array";
	case BSON_TYPE_BOOL: return "bool";
	case BSON_TYPE_NULL: return "null";
	case BSON_TYPE_INT32: return "int";
	case BSON_TYPE_INT64: return "long";
	case BSON_TYPE_DECIMAL128: return "decimal";
	case BSON_TYPE_OID: return "objectId";
	case BSON_TYPE_DATE_TIME: return "date";
	case BSON_TYPE_TIMESTAMP: return "timestamp";
	case BSON_TYPE_UNDEFINED: return "undefined";
	default: return "unknown";
	}
}

static const struct {
	const char *name;
	concern_level_t level;
} levels[] = {
	{"local", RC_LOCAL},
	{"majority", RC_MAJORITY},
	{"linearizable", RC_LINEARIZABLE},
	{"available", RC_AVAILABLE},
	{"snapshot", RC_SNAPSHOT},
};

static bool
is_num(const bson_iter_t *it)
{
	return BSON_ITER_HOLDS_INT32(it) || BSON_ITER_HOLDS_INT64(it) || BSON_ITER_HOLDS_DOUBLE(it) ||
	    BSON_ITER_HOLDS_DECIMAL128(it);
}

int
concern_read_parse(const bson_iter_t *rc, concern_read_t *out, terr_t *err)
{
	bson_iter_t it;

	memset(out, 0, sizeof(*out));
	if (!BSON_ITER_HOLDS_DOCUMENT(rc))
		return terr_set(err, TERR_TYPE_MISMATCH, "BSON field 'readConcern' is the wrong type '%s', expected type 'object'",
		    type_name(bson_iter_type(rc)));
	out->present = true;
	bson_iter_recurse(rc, &it);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strcmp(k, "level") == 0) {
			const char *v;
			size_t i;
			if (!BSON_ITER_HOLDS_UTF8(&it))
				return terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field 'readConcern.level' is the wrong type '%s', expected type 'string'",
				    type_name(bson_iter_type(&it)));
			v = bson_iter_utf8(&it, NULL);
			for (i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
				if (strcmp(levels[i].name, v) == 0)
					break;
			if (i == sizeof(levels) / sizeof(levels[0]))
				return terr_set(err, TERR_BAD_VALUE,
				    "Enumeration value '%s' for field 'readConcern.level' is not a valid value.", v);
			out->level = levels[i].level;
		} else if (strcmp(k, "afterClusterTime") == 0 || strcmp(k, "atClusterTime") == 0) {
			bool after = k[1] == 'f';
			if (!BSON_ITER_HOLDS_TIMESTAMP(&it))
				return terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field 'readConcern.%s' is the wrong type '%s', expected type 'timestamp'", k,
				    type_name(bson_iter_type(&it)));
			if (after) {
				out->has_after_cluster_time = true;
				bson_iter_timestamp(&it, &out->after_secs, &out->after_inc);
			} else {
				out->has_at_cluster_time = true;
				bson_iter_timestamp(&it, &out->at_secs, &out->at_inc);
			}
		} else if (strcmp(k, "afterOpTime") == 0) {
			bson_iter_t o;
			if (!BSON_ITER_HOLDS_DOCUMENT(&it))
				return terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field 'readConcern.afterOpTime' is the wrong type '%s', expected type 'object'",
				    type_name(bson_iter_type(&it)));
			bson_iter_recurse(&it, &o);
			if (!bson_iter_find(&o, "ts") || !BSON_ITER_HOLDS_TIMESTAMP(&o))
				return terr_set(err, TERR_NO_SUCH_KEY, "Missing expected field \"ts\"");
			bson_iter_timestamp(&o, &out->after_secs, &out->after_inc);
			out->has_after_op_time = true;
		} else if (strcmp(k, "provenance") == 0) {
			if (!BSON_ITER_HOLDS_UTF8(&it))
				return terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field 'readConcern.provenance' is the wrong type '%s', expected type 'string'",
				    type_name(bson_iter_type(&it)));
		} else if (strcmp(k, "allowTransactionTableSnapshot") == 0 ||
		    strcmp(k, "$_allowTransactionTableSnapshot") == 0 ||
		    strcmp(k, "$_waitLastStableRecoveryTimestamp") == 0) {
			/* internal options: accepted as mongod's IDL does */
		} else {
			return terr_set(err, 40415, "BSON field 'readConcern.%s' is an unknown field.", k);
		}
	}
	if (out->has_after_cluster_time && out->has_after_op_time)
		return terr_set(err, TERR_INVALID_OPTIONS, "Can not specify both afterClusterTime and afterOpTime");
	if (out->has_after_cluster_time && out->has_at_cluster_time)
		return terr_set(err, TERR_INVALID_OPTIONS,
		    "Specifying a timestamp for readConcern snapshot in a causally consistent session is not allowed. See https://docs.mongodb.com/manual/core/read-isolation-consistency-recency/#causal-consistency");
	if (out->has_after_cluster_time && out->level != RC_NONE && out->level != RC_LOCAL &&
	    out->level != RC_MAJORITY && out->level != RC_SNAPSHOT)
		return terr_set(err, TERR_INVALID_OPTIONS,
		    "afterClusterTime field can be set only if level is equal to majority, local, or snapshot");
	if (out->has_after_op_time && out->level == RC_SNAPSHOT)
		return terr_set(err, TERR_INVALID_OPTIONS, "afterOpTime field cannot be set if level is equal to snapshot");
	if (out->has_at_cluster_time && out->level != RC_SNAPSHOT)
		return terr_set(err, TERR_INVALID_OPTIONS, "atClusterTime field can be set only if level is equal to snapshot");
	if (out->has_at_cluster_time && out->at_secs == 0 && out->at_inc == 0)
		return terr_set(err, TERR_INVALID_OPTIONS, "atClusterTime cannot be a null timestamp");
	return 0;
}

int
concern_write_parse(const bson_iter_t *wc, concern_write_t *out, terr_t *err)
{
	bson_iter_t it;

	memset(out, 0, sizeof(*out));
	out->w_num = 1;
	if (!BSON_ITER_HOLDS_DOCUMENT(wc))
		return terr_set(err, TERR_TYPE_MISMATCH, "BSON field 'writeConcern' is the wrong type '%s', expected type 'object'",
		    type_name(bson_iter_type(wc)));
	out->present = true;
	bson_iter_recurse(wc, &it);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strcmp(k, "w") == 0) {
			if (is_num(&it)) {
				double d = bson_iter_as_double(&it);
				int64_t n = BSON_ITER_HOLDS_DOUBLE(&it) ? (isfinite(d) ? (d > 9e18 ? INT64_MAX : d < -9e18 ? INT64_MIN : (int64_t)d) : 0) :
				    bson_iter_as_int64(&it);
				if (n < 0 || n > 50)
					return terr_set(err, TERR_FAILED_TO_PARSE,
					    "w has to be a non-negative number and not greater than 50; found: %lld", (long long)n);
				out->has_w = true;
				out->w_num = n;
			} else if (BSON_ITER_HOLDS_UTF8(&it)) {
				out->has_w = true;
				bson_strncpy(out->w_mode, bson_iter_utf8(&it, NULL), sizeof(out->w_mode));
			} else if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
				out->has_w = true;
				out->w_tags = true;
			} else if (!BSON_ITER_HOLDS_NULL(&it) && !BSON_ITER_HOLDS_UNDEFINED(&it)) {
				return terr_set(err, TERR_FAILED_TO_PARSE, "w has to be a number, string, or object");
			}
		} else if (strcmp(k, "j") == 0 || strcmp(k, "fsync") == 0) {
			bool v;
			if (BSON_ITER_HOLDS_BOOL(&it))
				v = bson_iter_bool(&it);
			else if (is_num(&it))
				v = bson_iter_as_double(&it) != 0;
			else if (BSON_ITER_HOLDS_NULL(&it) || BSON_ITER_HOLDS_UNDEFINED(&it))
				continue;
			else
				return terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field 'writeConcern.%s' is the wrong type '%s', expected types '[bool, long, int, decimal, double]'",
				    k, type_name(bson_iter_type(&it)));
			if (k[0] == 'j')
				out->j = v;
			else
				out->fsync = v;
		} else if (strcmp(k, "wtimeout") == 0 || strcmp(k, "wTimeout") == 0) {
			if (is_num(&it))
				out->wtimeout = bson_iter_as_int64(&it);
			else if (!BSON_ITER_HOLDS_NULL(&it) && !BSON_ITER_HOLDS_UNDEFINED(&it))
				return terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field 'writeConcern.wtimeout' is the wrong type '%s', expected types '[long, int, decimal, double]'",
				    type_name(bson_iter_type(&it)));
		}
		/* other fields (provenance, getLastError, wOpTime, wElectionId)
		 * are accepted and ignored, as mongod's IDL does */
	}
	if (out->j && out->fsync)
		return terr_set(err, TERR_FAILED_TO_PARSE, "fsync and j options cannot be used together");
	return 0;
}

int
concern_write_validate(const concern_write_t *wc, const concern_node_t *node, terr_t *err)
{
	if (!wc->present)
		return 0;
	if ((wc->j || wc->fsync) && node->ephemeral && wc->j)
		return terr_set(err, TERR_BAD_VALUE, "cannot use 'j' option when a host does not have journaling enabled");
	if (!node->repl_set) {
		if (wc->has_w && wc->w_mode[0] == '\0' && !wc->w_tags && wc->w_num > 1)
			return terr_set(err, TERR_BAD_VALUE, "cannot use 'w' > 1 when a host is not replicated");
		if (wc->w_mode[0] != '\0' && strcmp(wc->w_mode, "majority") != 0)
			return terr_set(err, TERR_BAD_VALUE,
			    "cannot use non-majority 'w' mode \"%s\" when a host is not a member of a replica set", wc->w_mode);
		if (wc->w_tags)
			return terr_set(err, TERR_BAD_VALUE,
			    "cannot use non-majority 'w' mode \"{}\" when a host is not a member of a replica set");
	}
	return 0;
}

/* How many distinct values tag `key` has among the members. */
static int
tag_values(const bson_t *config, const char *key)
{
	bson_iter_t it, m, f, t;
	const char *seen[64];
	int n = 0;

	if (config == NULL || !bson_iter_init_find(&it, config, "members") || !bson_iter_recurse(&it, &m))
		return 0;
	while (bson_iter_next(&m)) {
		if (!BSON_ITER_HOLDS_DOCUMENT(&m) || !bson_iter_recurse(&m, &f) || !bson_iter_find(&f, "tags") ||
		    !BSON_ITER_HOLDS_DOCUMENT(&f) || !bson_iter_recurse(&f, &t) || !bson_iter_find(&t, key) ||
		    !BSON_ITER_HOLDS_UTF8(&t))
			continue;
		{
			const char *v = bson_iter_utf8(&t, NULL);
			bool dup = false;
			for (int i = 0; i < n; i++)
				if (strcmp(seen[i], v) == 0)
					dup = true;
			if (!dup && n < 64)
				seen[n++] = v;
		}
	}
	return n;
}

int
concern_write_satisfiable(const concern_write_t *wc, const concern_node_t *node, terr_t *err)
{
	bson_iter_t it, s, modes, mode;

	if (!wc->present || !node->repl_set)
		return 0;
	if (wc->has_w && wc->w_mode[0] == '\0' && !wc->w_tags) {
		if (wc->w_num > node->data_members)
			return terr_set(err, TERR_UNSATISFIABLE_WRITE_CONCERN, "Not enough data-bearing nodes");
		return 0;
	}
	if (wc->w_mode[0] == '\0' || strcmp(wc->w_mode, "majority") == 0)
		return 0;
	if (node->config == NULL || !bson_iter_init_find(&it, node->config, "settings") ||
	    !bson_iter_recurse(&it, &s) || !bson_iter_find(&s, "getLastErrorModes") ||
	    !bson_iter_recurse(&s, &modes) || !bson_iter_find(&modes, wc->w_mode))
		return terr_set(err, TERR_UNKNOWN_REPL_WRITE_CONCERN,
		    "No write concern mode named '%s' found in replica set configuration", wc->w_mode);
	if (BSON_ITER_HOLDS_DOCUMENT(&modes) && bson_iter_recurse(&modes, &mode)) {
		while (bson_iter_next(&mode)) {
			int64_t need = BSON_ITER_HOLDS_NUMBER(&mode) ? bson_iter_as_int64(&mode) : 1;
			if (tag_values(node->config, bson_iter_key(&mode)) < need)
				return terr_set(err, TERR_UNSATISFIABLE_WRITE_CONCERN,
				    "Not enough nodes match write concern mode \"%s\"", wc->w_mode);
		}
	}
	return 0;
}

int
concern_read_validate(const concern_read_t *rc, const concern_node_t *node, terr_t *err)
{
	if (!rc->present)
		return 0;
	if (rc->level == RC_LINEARIZABLE) {
		if (!node->repl_set)
			return terr_set(err, TERR_NOT_A_REPLICA_SET, "node needs to be a replica set member to use read concern");
		if (rc->has_after_op_time)
			return terr_set(err, TERR_FAILED_TO_PARSE, "afterOpTime not compatible with linearizable read concern");
		if (!node->primary)
			return terr_set(err, TERR_NOT_WRITABLE_PRIMARY, "cannot satisfy linearizable read concern on non-primary node");
	}
	if (rc->level == RC_SNAPSHOT && !node->repl_set)
		return terr_set(err, TERR_NOT_A_REPLICA_SET, "node needs to be a replica set member to use readConcern: snapshot");
	if (rc->has_after_cluster_time || rc->has_at_cluster_time) {
		if (!node->repl_set)
			return terr_set(err, TERR_ILLEGAL_OPERATION, "Cannot specify %s readConcern without replication enabled",
			    rc->has_after_cluster_time ? "afterClusterTime" : "atClusterTime");
	}
	if (rc->has_after_op_time && !node->repl_set)
		return terr_set(err, TERR_NOT_A_REPLICA_SET, "node needs to be a replica set member to use read concern");
	if (node->repl_set && !node->initiated && (rc->has_after_cluster_time || rc->has_at_cluster_time ||
	    rc->has_after_op_time))
		return terr_set(err, TERR_NOT_YET_INITIALIZED,
		    "Cannot use non-local read concern until replica set is finished initializing.");
	return 0;
}
