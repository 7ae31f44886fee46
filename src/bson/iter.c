/*
 * iter.c -- the lean element walk of iter.h: sizes from the type byte and
 * length prefixes, bounds checked against the enclosing document, values
 * decoded for the common types and handed to libbson for the rare ones.
 */
#include "bson/iter.h"

#include <string.h>


const uint8_t biter_fixed_size1[256] = {
	[BSON_TYPE_DOUBLE] = 9, [BSON_TYPE_UNDEFINED] = 1, [BSON_TYPE_OID] = 13, [BSON_TYPE_BOOL] = 2,
	[BSON_TYPE_DATE_TIME] = 9, [BSON_TYPE_NULL] = 1, [BSON_TYPE_INT32] = 5, [BSON_TYPE_TIMESTAMP] = 9,
	[BSON_TYPE_INT64] = 9, [BSON_TYPE_DECIMAL128] = 17, [BSON_TYPE_MAXKEY] = 1, [BSON_TYPE_MINKEY] = 1,
};

static uint64_t
rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return BSON_UINT64_FROM_LE(v);
}

bool
biter_init(biter_t *it, const uint8_t *data, uint32_t len)
{
	memset(it, 0, sizeof(*it));
	it->doc = data;
	it->doc_len = len;
	it->next = 4;
	if (data == NULL || len < 5 || biter_rd32(data) != len || data[len - 1] != 0) {
		it->doc_len = 5;   /* nothing to walk */
		it->next = 4;
		return false;
	}
	return true;
}

bool
biter_init_value(biter_t *it, const bson_value_t *v)
{
	if (v->value_type != BSON_TYPE_DOCUMENT && v->value_type != BSON_TYPE_ARRAY) {
		biter_init(it, NULL, 0);
		return false;
	}
	return biter_init(it, v->value.v_doc.data, v->value.v_doc.data_len);
}

bool
biter_next(biter_t *it)
{
	return biter_next_inline(it);
}

bool
biter_find(biter_t *it, const char *key, uint32_t key_len)
{
	biter_t c = *it;

	while (biter_next_inline(&c)) {
		if (c.key_len == key_len && (key_len == 0 || c.key[0] == key[0]) &&
		    memcmp(c.key, key, key_len) == 0) {
			*it = c;
			return true;
		}
	}
	*it = c;
	return false;
}

void
biter_value(const biter_t *it, bson_value_t *out)
{
	const uint8_t *v = it->val;
	uint64_t u;

	memset(out, 0, sizeof(*out));
	out->value_type = it->type;
	switch ((int)it->type) {
	case BSON_TYPE_DOUBLE:
		u = rd64(v);
		memcpy(&out->value.v_double, &u, 8);
		return;
	case BSON_TYPE_UTF8:
		out->value.v_utf8.str = (char *)(v + 4);
		out->value.v_utf8.len = biter_rd32(v) - 1;
		return;
	case BSON_TYPE_DOCUMENT: case BSON_TYPE_ARRAY:
		out->value.v_doc.data = (uint8_t *)v;
		out->value.v_doc.data_len = it->val_len;
		return;
	case BSON_TYPE_OID:
		memcpy(out->value.v_oid.bytes, v, 12);
		return;
	case BSON_TYPE_BOOL:
		out->value.v_bool = v[0] != 0;
		return;
	case BSON_TYPE_DATE_TIME:
		out->value.v_datetime = (int64_t)rd64(v);
		return;
	case BSON_TYPE_INT32:
		out->value.v_int32 = (int32_t)biter_rd32(v);
		return;
	case BSON_TYPE_INT64:
		out->value.v_int64 = (int64_t)rd64(v);
		return;
	case BSON_TYPE_NULL: case BSON_TYPE_UNDEFINED: case BSON_TYPE_MINKEY: case BSON_TYPE_MAXKEY:
		return;
	default: {
		/* the rare types, as libbson decodes them */
		bson_iter_t bi;
		if (bson_iter_init_from_data_at_offset(&bi, it->doc, it->doc_len, it->off, it->key_len))
			*out = *bson_iter_value(&bi);
		else
			out->value_type = BSON_TYPE_EOD;
		return;
	}
	}
}
