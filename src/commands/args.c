/*
 * args.c -- reading command arguments with mongod's IDL errors.
 *
 * A handler asks for a dozen or more optional fields of the same command
 * (find: filter, sort, projection, skip, limit, batchSize, hint, ...); a
 * libbson search per field walks the command each time.  Instead the first
 * lookup indexes the command's top-level fields once, into the cmd_t itself
 * (libbson's own iterator, so a malformed command ends the index where
 * bson_iter_find would stop), and the others compare a few keys.  The index
 * belongs to one body: a cmd_t copied for a sub-command with another body
 * (explain) indexes that body again.
 */
#include "commands/commands_private.h"
#include "auth/auth.h"

#include <string.h>

#include "bson/value.h"

#define key_bit cmd_args_key_bit

/* The size of an element's value of type t at data[o] (len bytes in
 * all), or 0 when this walk does not know the type or the value is not
 * one libbson's iterator would accept: the caller then indexes with
 * libbson, which decides where a malformed command ends. */
static uint32_t
value_size(uint8_t t, const uint8_t *data, uint32_t o, uint32_t len)
{
	uint32_t l;

	switch (t) {
	case BSON_TYPE_DOUBLE: case BSON_TYPE_INT64: case BSON_TYPE_DATE_TIME: case BSON_TYPE_TIMESTAMP:
		return len - o >= 8 ? 8 : 0;
	case BSON_TYPE_INT32:
		return len - o >= 4 ? 4 : 0;
	case BSON_TYPE_BOOL:
		return len - o >= 1 && data[o] <= 1 ? 1 : 0;
	case BSON_TYPE_OID:
		return len - o >= 12 ? 12 : 0;
	case BSON_TYPE_DECIMAL128:
		return len - o >= 16 ? 16 : 0;
	case BSON_TYPE_UTF8:
		if (len - o < 5)
			return 0;
		memcpy(&l, data + o, 4);
		l = BSON_UINT32_FROM_LE(l);
		if (l < 1 || l > len - o - 4 || data[o + 4 + l - 1] != 0)
			return 0;
		return 4 + l;
	case BSON_TYPE_DOCUMENT: case BSON_TYPE_ARRAY:
		if (len - o < 5)
			return 0;
		memcpy(&l, data + o, 4);
		l = BSON_UINT32_FROM_LE(l);
		return l >= 5 && l <= len - o ? l : 0;
	default:
		return 0;                        /* null and the rest: libbson's walk */
	}
}

/* The index of a well-formed command of common types in one pass over
 * its bytes (libbson's bson_iter_next costs ~100 instructions per field);
 * false, leaving ix to be rebuilt, at anything else. */
static bool
args_index_fast(cmd_args_t *ix, const uint8_t *data, uint32_t len)
{
	uint32_t o = 4, doclen;

	if (len < 5)
		return false;
	memcpy(&doclen, data, 4);
	if (BSON_UINT32_FROM_LE(doclen) != len || data[len - 1] != 0)
		return false;
	while (o < len - 1) {
		uint32_t start = o, k = o + 1, sz;
		const uint8_t *nul;

		if (data[o] == 0 || ix->n == CMD_ARGS_MAX)
			return false;
		if ((nul = memchr(data + k, 0, len - 1 - k)) == NULL)
			return false;
		o = (uint32_t)(nul - data) + 1;
		if ((sz = value_size(data[start], data, o, len - 1)) == 0)
			return false;
		ix->f[ix->n].key = (const char *)data + k;
		ix->f[ix->n].keylen = o - 1 - k;
		ix->f[ix->n].off = start;
		if (o - 1 - k > 0)
			ix->present |= key_bit((const char *)data + k, o - 1 - k);
		ix->n++;
		o += sz;
	}
	return o == len - 1;
}

static __attribute__((noinline)) const cmd_args_t *
args_index_build(cmd_t *c)
{
	cmd_args_t *ix = &c->args;
	const uint8_t *data;
	uint32_t len = c->body->len;
	bson_iter_t it;

	data = bson_get_data(c->body);
	ix->body = c->body;
	ix->data = data;
	ix->len = len;
	ix->n = 0;
	ix->present = 0;
	if (args_index_fast(ix, data, len))
		return ix;
	ix->n = 0;
	ix->present = 0;
	if (!bson_iter_init_from_data(&it, data, len)) {
		ix->n = -1;
		return ix;
	}
	while (bson_iter_next(&it)) {
		if (ix->n == CMD_ARGS_MAX) {
			ix->n = -1;
			break;
		}
		ix->f[ix->n].key = bson_iter_key(&it);
		ix->f[ix->n].keylen = bson_iter_key_len(&it);
		ix->f[ix->n].off = bson_iter_offset(&it);
		if (ix->f[ix->n].keylen > 0)
			ix->present |= key_bit(ix->f[ix->n].key, ix->f[ix->n].keylen);
		ix->n++;
	}
	return ix;
}

/* The index of c's body, built by its first lookup (a command asks for
 * ~30 fields: the check is inline, the build is not). */
static inline const cmd_args_t *
args_index(cmd_t *c)
{
	const cmd_args_t *ix = &c->args;

	if (ix->body == c->body && ix->len == c->body->len)
		return ix;
	return args_index_build(c);
}

const cmd_args_t *
cmd_args_index(cmd_t *c)
{
	return args_index(c);
}

/* bson_iter_init_find(it, c->body, field), from the index; flen is
 * strlen(field). */
bool
cmd_find_field_indexed(cmd_t *c, const char *field, size_t flen, bson_iter_t *it)
{
	const cmd_args_t *ix = args_index(c);

	if (ix->n < 0)
		return bson_iter_init_find(it, c->body, field);
	if (flen > 0 && !(ix->present & key_bit(field, flen)))
		return false;
	for (int i = 0; i < ix->n; i++)
		if (ix->f[i].keylen == flen && memcmp(ix->f[i].key, field, flen) == 0)
			return bson_iter_init_from_data_at_offset(it, ix->data, ix->len, ix->f[i].off,
			    ix->f[i].keylen);
	return false;
}

static bool
arg_find(cmd_t *c, const char *field, bson_iter_t *it)
{
	return cmd_find_field(c, field, it);
}

/* Fields any command may carry; the dispatcher or transport handles them. */
#define GENERIC_FIELDS(X) \
	X("$db") X("lsid") X("$clusterTime") X("$readPreference") X("readConcern") X("writeConcern") \
	X("comment") X("maxTimeMS") X("txnNumber") X("autocommit") X("startTransaction") \
	X("apiVersion") X("apiStrict") X("apiDeprecationErrors") X("$audit") X("$client") \
	X("$configServerState") X("$gleStats") X("$oplogQueryData") X("$queryOptions") \
	X("$replData") X("databaseVersion") X("shardVersion") X("mayBypassWriteBlocking") \
	X("$configTime") X("$topologyTime") X("clientOperationKey") X("readOnly")
#define GF_NAME(n) n,
#define GF_LEN(n) (uint8_t)(sizeof(n) - 1),
static const char *const generic_fields[] = {GENERIC_FIELDS(GF_NAME) NULL};
static const uint8_t generic_lens[] = {GENERIC_FIELDS(GF_LEN)};

static bool
in_list(const char *const *list, const char *k)
{
	for (; *list != NULL; list++)
		if (strcmp(*list, k) == 0)
			return true;
	return false;
}

/* A key of known length among the generic fields: the names of that length
 * only are compared (a driver's find carries several: lsid, $db,
 * $readPreference, $clusterTime, ...). */
static bool
is_generic_len(const char *k, size_t len)
{
	for (size_t i = 0; i < sizeof generic_lens; i++)
		if (generic_lens[i] == len && memcmp(generic_fields[i], k, len) == 0)
			return true;
	return false;
}

bool
cmd_is_generic_field(const char *k)
{
	return in_list(generic_fields, k);
}

int
cmd_check_fields(cmd_t *c, const char *const *known, terr_t *err)
{
	const cmd_args_t *ix = args_index(c);
	bson_iter_t it;
	bool first = true;

	if (ix->n >= 0) {
		for (int i = 1; i < ix->n; i++) {
			const char *k = ix->f[i].key;
			if ((known && in_list(known, k)) || in_list(generic_fields, k))
				continue;
			return terr_set(err, 40415, "BSON field '%s.%s' is an unknown field.", c->name, k);
		}
		return 0;
	}
	if (!bson_iter_init(&it, c->body))
		return 0;
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (first) {
			first = false;
			continue;
		}
		if ((known && in_list(known, k)) || in_list(generic_fields, k))
			continue;
		return terr_set(err, 40415, "BSON field '%s.%s' is an unknown field.", c->name, k);
	}
	return 0;
}

bool
cmd_args_only(cmd_t *c, const char *const *allowed, bson_value_t *found, bool *present)
{
	const cmd_args_t *ix = args_index(c);
	int na = 0;

	if (ix->n < 0)
		return false;
	for (; allowed[na] != NULL; na++)
		present[na] = false;
	for (int i = 1; i < ix->n; i++) {
		bson_iter_t it;
		int a;

		for (a = 0; a < na; a++)
			/* the first byte, then the name up to the key's length (strncmp
			 * stops at the allowed name's end) and that it ends there */
			if (ix->f[i].keylen > 0 && ix->f[i].key[0] == allowed[a][0] &&
			    strncmp(ix->f[i].key, allowed[a], ix->f[i].keylen) == 0 && allowed[a][ix->f[i].keylen] == '\0')
				break;
		if (a == na) {
			if (!is_generic_len(ix->f[i].key, ix->f[i].keylen))
				return false;
			continue;
		}
		if (present[a])
			return false;
		present[a] = true;
		{
			/* a document or array (filter, sort, projection): its
			 * length was checked when the field was indexed */
			uint8_t t = ix->data[ix->f[i].off];
			uint32_t voff = ix->f[i].off + 1 + ix->f[i].keylen + 1, vlen;

			if (t == BSON_TYPE_DOCUMENT || t == BSON_TYPE_ARRAY) {
				memcpy(&vlen, ix->data + voff, 4);
				found[a].value_type = (bson_type_t)t;
				found[a].value.v_doc.data = (uint8_t *)ix->data + voff;
				found[a].value.v_doc.data_len = BSON_UINT32_FROM_LE(vlen);
				continue;
			}
			/* the fixed-size scalars a driver adds (limit, singleBatch,
			 * batchSize), read as libbson's iterator would: the index
			 * checked that their bytes are there */
			if (t == BSON_TYPE_INT32) {
				int32_t v;
				memcpy(&v, ix->data + voff, 4);
				found[a].value_type = BSON_TYPE_INT32;
				found[a].value.v_int32 = BSON_UINT32_FROM_LE((uint32_t)v);
				continue;
			}
			if (t == BSON_TYPE_INT64 || t == BSON_TYPE_DOUBLE) {
				uint64_t v;
				memcpy(&v, ix->data + voff, 8);
				v = BSON_UINT64_FROM_LE(v);
				found[a].value_type = (bson_type_t)t;
				if (t == BSON_TYPE_INT64)
					found[a].value.v_int64 = (int64_t)v;
				else
					memcpy(&found[a].value.v_double, &v, 8);
				continue;
			}
			if (t == BSON_TYPE_BOOL) {
				found[a].value_type = BSON_TYPE_BOOL;
				found[a].value.v_bool = ix->data[voff] != 0;
				continue;
			}
		}
		if (!bson_iter_init_from_data_at_offset(&it, ix->data, ix->len, ix->f[i].off, ix->f[i].keylen))
			return false;
		found[a] = *bson_iter_value(&it);
	}
	return true;
}

const char *
cmd_cursor_owner(cmd_t *c, char buf[256])
{
	char user[128], db[120];

	if (!auth_client_user(&c->client->auth, user, sizeof(user), db, sizeof(db)))
		return NULL;
	snprintf(buf, 256, "%s@%s", user, db);
	return buf;
}

void
cmd_ns(char *buf, size_t len, const char *db, const char *coll)
{
	size_t dl = strlen(db), cl = strlen(coll);

	if (len == 0)
		return;
	if (dl + 1 + cl >= len) {       /* too long: truncated, as snprintf would */
		snprintf(buf, len, "%s.%s", db, coll);
		return;
	}
	memcpy(buf, db, dl);
	buf[dl] = '.';
	memcpy(buf + dl + 1, coll, cl + 1);
}

int
cmd_collection_arg(cmd_t *c, const char **name, terr_t *err)
{
	if (!BSON_ITER_HOLDS_UTF8(&c->first))
		return terr_set(err, TERR_INVALID_NAMESPACE, "collection name has invalid type %s",
		    bv_type_name(bson_iter_type(&c->first)));
	*name = bson_iter_utf8(&c->first, NULL);
	if ((*name)[0] == '\0')
		return terr_set(err, TERR_INVALID_NAMESPACE, "Invalid namespace specified '%s.'", c->db);
	return 0;
}

static int
wrong_type(cmd_t *c, const char *field, bson_type_t got, const char *want, terr_t *err)
{
	return terr_set(err, TERR_TYPE_MISMATCH,
	    "BSON field '%s.%s' is the wrong type '%s', expected type '%s'",
	    c->name, field, bv_type_name(got), want);
}

int
cmd_get_bool(cmd_t *c, const char *field, bool *out, bool *found, terr_t *err)
{
	bson_iter_t it;

	*found = false;
	if (!arg_find(c, field, &it))
		return 0;
	*found = true;
	switch (bson_iter_type(&it)) {
	case BSON_TYPE_BOOL:
		*out = bson_iter_bool(&it);
		return 0;
	case BSON_TYPE_INT32:
	case BSON_TYPE_INT64:
	case BSON_TYPE_DOUBLE:
	case BSON_TYPE_DECIMAL128:
		/* IDL "safeBool": numbers are accepted as truthiness. */
		*out = bson_iter_as_bool(&it);
		return 0;
	case BSON_TYPE_NULL:
	case BSON_TYPE_UNDEFINED:
		*found = false;
		return 0;
	default:
		return wrong_type(c, field, bson_iter_type(&it), "bool", err);
	}
}

int
cmd_get_allow_disk_use(cmd_t *c, bool *out, terr_t *err)
{
	bool found = false;

	RET(cmd_get_bool(c, "allowDiskUse", out, &found, err));
	if (!found)
		*out = atomic_load(&c->engine->allow_disk_use_by_default);
	return 0;
}

uint64_t
cmd_sort_memory_limit(const cmd_t *c)
{
	long long n = atomic_load(&c->engine->sort_memory_limit);

	/* the sorter reads 0 as its default; one byte holds no document either */
	return n > 0 ? (uint64_t)n : 1;
}

int
cmd_get_int64(cmd_t *c, const char *field, int64_t *out, bool *found, terr_t *err)
{
	bson_iter_t it;
	bson_value_t v;

	*found = false;
	if (!arg_find(c, field, &it))
		return 0;
	if (BSON_ITER_HOLDS_NULL(&it))
		return 0;
	*found = true;
	v = *bson_iter_value(&it);
	if (!bv_is_number(&v))
		return wrong_type(c, field, v.value_type, "long", err);
	if (!bv_as_int64_exact(&v, out)) {
		if (v.value_type == BSON_TYPE_DOUBLE) {
			/* mongod truncates a double batchSize/limit toward zero */
			double d = v.value.v_double;
			if (d != d || d > 9.2e18 || d < -9.2e18)
				return terr_set(err, TERR_BAD_VALUE, "BSON field '%s.%s' value must be a number in range", c->name, field);
			*out = (int64_t)d;
			return 0;
		}
		return terr_set(err, TERR_BAD_VALUE, "BSON field '%s.%s' value must be an integer", c->name, field);
	}
	return 0;
}

static int
get_sub(cmd_t *c, const char *field, bson_type_t want_type, const char *want, bson_t *out,
    bool *found, terr_t *err)
{
	bson_iter_t it;
	const uint8_t *data;
	uint32_t len;

	*found = false;
	{
		/* a document or array from the index: its length was checked
		 * when the field was indexed (a libbson iterator and its
		 * bson_iter_array were ~180 instructions) */
		const cmd_args_t *ix = args_index(c);
		size_t flen = strlen(field);

		if (ix->n >= 0) {
			int i;

			if (flen > 0 && !(ix->present & key_bit(field, flen)))
				return 0;
			for (i = 0; i < ix->n; i++) {
				uint8_t t;
				uint32_t voff, vlen;

				if (ix->f[i].keylen != flen || memcmp(ix->f[i].key, field, flen) != 0)
					continue;
				t = ix->data[ix->f[i].off];
				if (t != (uint8_t)want_type)
					break;       /* the error below, from libbson's iterator */
				voff = ix->f[i].off + 1 + ix->f[i].keylen + 1;
				memcpy(&vlen, ix->data + voff, 4);
				*found = true;
				if (!bson_init_static(out, ix->data + voff, BSON_UINT32_FROM_LE(vlen)))
					return terr_set(err, TERR_INVALID_BSON, "invalid BSON in field '%s'", field);
				return 0;
			}
			if (i == ix->n)
				return 0;    /* absent */
		}
	}
	if (!arg_find(c, field, &it))
		return 0;
	if (bson_iter_type(&it) != want_type)
		return wrong_type(c, field, bson_iter_type(&it), want, err);
	*found = true;
	if (want_type == BSON_TYPE_ARRAY)
		bson_iter_array(&it, &len, &data);
	else
		bson_iter_document(&it, &len, &data);
	if (!bson_init_static(out, data, len))
		return terr_set(err, TERR_INVALID_BSON, "invalid BSON in field '%s'", field);
	return 0;
}

int
cmd_get_doc(cmd_t *c, const char *field, bson_t *out_view, bool *found, terr_t *err)
{
	return get_sub(c, field, BSON_TYPE_DOCUMENT, "object", out_view, found, err);
}

int
cmd_get_array(cmd_t *c, const char *field, bson_t *out_view, bool *found, terr_t *err)
{
	return get_sub(c, field, BSON_TYPE_ARRAY, "array", out_view, found, err);
}

int
cmd_get_string(cmd_t *c, const char *field, const char **out, bool *found, terr_t *err)
{
	bson_iter_t it;

	*found = false;
	if (!arg_find(c, field, &it))
		return 0;
	if (!BSON_ITER_HOLDS_UTF8(&it))
		return wrong_type(c, field, bson_iter_type(&it), "string", err);
	*found = true;
	*out = bson_iter_utf8(&it, NULL);
	return 0;
}
