/*
 * cmd_repl_oplog.c -- replSetResizeOplog read as mongod's IDL
 * (resize_oplog.idl: size and minRetentionHours, both optional doubles with
 * validators; strict: false) and applied through repl_oplog_resize; the
 * live oplog's protections against drop and rename (mongod's messages).
 *
 * Not here: the oplog itself (repl/oplog.c).
 */
#include "commands/cmd_repl_oplog.h"

#include <math.h>
#include <string.h>

#include "bson/value.h"
#include "common/log.h"

#define PB_IN_MB 1073741824.0

static bool
live_oplog(engine_t *e)
{
	return e->oplog != NULL && repl_oplog_exists(e->oplog);
}

int
cmd_repl_oplog_guard(engine_t *e, const char *db, const char *coll, const char *to_db, const char *to_coll,
                     terr_t *err)
{
	bool is_oplog = strcmp(db, REPL_OPLOG_DB) == 0 && coll != NULL && strcmp(coll, REPL_OPLOG_COLL) == 0;

	if (!live_oplog(e))
		return 0;
	if (to_db != NULL) {
		if (is_oplog)
			return terr_set(err, TERR_ILLEGAL_OPERATION, "can't rename live oplog while replicating");
		if (strcmp(to_db, REPL_OPLOG_DB) == 0 && to_coll != NULL && strcmp(to_coll, REPL_OPLOG_COLL) == 0)
			return terr_set(err, TERR_ILLEGAL_OPERATION, "can't rename to live oplog while replicating");
		return 0;
	}
	if (coll == NULL && strcmp(db, REPL_OPLOG_DB) == 0)
		return terr_set(err, TERR_ILLEGAL_OPERATION, "Cannot drop 'local' database while replication is active");
	if (is_oplog)
		return terr_set(err, TERR_ILLEGAL_OPERATION, "can't drop live oplog while replicating");
	return 0;
}

/* A double field with an IDL validator [lo, hi] (hi NAN = none): *out NAN
 * when absent.  14 for another type, 2 BadValue past a bound (mongod 7.1+
 * answers IDL validator failures with BadValue). */
static int
double_arg(cmd_t *c, const char *field, double lo, double hi, double *out, terr_t *err)
{
	bson_iter_t it;
	double v;

	*out = NAN;
	if (!cmd_find_field(c, field, &it))
		return 0;
	if (!BSON_ITER_HOLDS_DOUBLE(&it))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field 'replSetResizeOplog.%s' is the wrong type '%s', expected type 'double'", field,
		    bv_type_name(bson_iter_type(&it)));
	v = bson_iter_double(&it);
	if (!(v >= lo))
		return terr_set(err, TERR_BAD_VALUE,
		    "BSON field 'replSetResizeOplog.%s' value must be >= %g, actual value '%g'", field, lo, v);
	if (!isnan(hi) && !(v <= hi))
		return terr_set(err, TERR_BAD_VALUE,
		    "BSON field 'replSetResizeOplog.%s' value must be <= %.0f, actual value '%g'", field, hi, v);
	*out = v;
	return 0;
}

CMD_HANDLER(cmd_repl_set_resize_oplog)
{
	double size, hours;
	bson_t attr;

	/* mongod looks for the collection first, then parses the request */
	if (!live_oplog(c->engine))
		return terr_set(err, TERR_NAMESPACE_NOT_FOUND, "oplog does not exist");
	RET(double_arg(c, "size", REPL_OPLOG_MIN_MB, PB_IN_MB, &size, err));
	RET(double_arg(c, "minRetentionHours", 0, NAN, &hours, err));
	RET(repl_oplog_resize(c->engine->oplog, size, isnan(hours) ? -1 : hours, err));
	bson_init(&attr);
	BSON_APPEND_INT64(&attr, "size", repl_oplog_max_bytes(c->engine->oplog));
	if (!isnan(hours))
		BSON_APPEND_DOUBLE(&attr, "minRetentionHours", hours);
	tlog('I', "STORAGE", 20497, "replSetResizeOplog success", &attr);
	bson_destroy(&attr);
	return 0;
}
