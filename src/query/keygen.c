/*
 * keygen.c -- index keys for one document (see keygen.h for the rules).
 *
 * The walk keeps, for each key-pattern field, the value reached so far and
 * the part of the path still to follow.  Fields first descend through
 * embedded documents; when some stop at an array, that one array (every
 * such field must stop at the same one) is expanded: each element becomes
 * the fields' new value and the walk recurses.  Fields that reached no array
 * keep their value in every key, which gives the cartesian product MongoDB
 * produces for an array and scalars.
 */
#include "query/keygen.h"

#include <pthread.h>
#include <string.h>

#include "bson/keystring.h"
#include "query/match.h"

typedef struct kg_field {
	const char *rest;        /* path still to follow, NULL once at the end */
	const char *name;        /* last component followed (for error messages) */
	uint32_t name_len;
	bson_value_t val;        /* BSON_TYPE_EOD = missing */
	bool desc;
	bool expanded;           /* val is an element of an expanded leaf array */
} kg_field_t;

typedef struct kg_ctx {
	int n;
	bool sparse;
	storage_key_add_fn add;
	void *add_ctx;
	keystring_t ks;
	terr_t *err;
} kg_ctx_t;

/* Follow f's path through embedded documents until the end, a scalar in the
 * middle (missing), or an array. */
static void
field_descend(kg_field_t *f)
{
	while (f->rest != NULL) {
		const char *dot = strchr(f->rest, '.');
		size_t len = dot ? (size_t)(dot - f->rest) : strlen(f->rest);
		bson_iter_t it;

		if (f->val.value_type == BSON_TYPE_ARRAY) {
			uint32_t pos;
			char key[16];
			/* A positional component selects that element without
			 * expanding the array ("a.0"). */
			if (len == 0 || len > 10 || f->rest[0] < '0' || f->rest[0] > '9' ||
			    (len > 1 && f->rest[0] == '0'))
				return;
			pos = (uint32_t)strtoul(f->rest, NULL, 10);
			bson_snprintf(key, sizeof(key), "%u", pos);
			if (!bson_iter_init_from_data(&it, f->val.value.v_doc.data, f->val.value.v_doc.data_len) ||
			    !bson_iter_find_w_len(&it, key, (int)strlen(key))) {
				f->val.value_type = BSON_TYPE_EOD;
				f->rest = NULL;
				return;
			}
		} else if (f->val.value_type == BSON_TYPE_DOCUMENT) {
			if (!bson_iter_init_from_data(&it, f->val.value.v_doc.data, f->val.value.v_doc.data_len) ||
			    !bson_iter_find_w_len(&it, f->rest, (int)len)) {
				f->val.value_type = BSON_TYPE_EOD;
				f->rest = NULL;
				return;
			}
		} else {
			f->val.value_type = BSON_TYPE_EOD;
			f->rest = NULL;
			return;
		}
		f->name = f->rest;
		f->name_len = (uint32_t)len;
		f->val = *bson_iter_value(&it);
		f->rest = dot ? dot + 1 : NULL;
	}
}

static bool
field_at_array(const kg_field_t *f)
{
	return f->val.value_type == BSON_TYPE_ARRAY && (f->rest != NULL || !f->expanded);
}

static void
emit(kg_ctx_t *g, const kg_field_t *fields)
{
	bson_value_t null_v;
	int i;
	bool any = false;

	null_v.value_type = BSON_TYPE_NULL;
	keystring_reset(&g->ks);
	for (i = 0; i < g->n; i++) {
		const bson_value_t *v = &fields[i].val;
		if (v->value_type == BSON_TYPE_EOD)
			v = &null_v;
		else
			any = true;
		keystring_append_value(&g->ks, v, fields[i].desc);
	}
	if (g->sparse && !any)
		return;
	g->add(g->add_ctx, g->ks.buf, g->ks.len);
}

static int
gen(kg_ctx_t *g, kg_field_t *fields)
{
	kg_field_t next[KEYGEN_MAX_FIELDS];
	const uint8_t *arr = NULL;
	uint32_t arr_len = 0;
	int i, first = -1;
	bson_iter_t it;

	for (i = 0; i < g->n; i++) {
		field_descend(&fields[i]);
		if (!field_at_array(&fields[i]))
			continue;
		if (arr == NULL) {
			arr = fields[i].val.value.v_doc.data;
			arr_len = fields[i].val.value.v_doc.data_len;
			first = i;
		} else if (fields[i].val.value.v_doc.data != arr) {
			return terr_set(g->err, 171, "cannot index parallel arrays [%.*s] [%.*s]",
			    (int)fields[i].name_len, fields[i].name, (int)fields[first].name_len,
			    fields[first].name);
		}
	}
	if (arr == NULL) {
		emit(g, fields);
		return 0;
	}
	if (!bson_iter_init_from_data(&it, arr, arr_len))
		return terr_set(g->err, TERR_INVALID_BSON, "invalid BSON array in document");
	if (arr_len <= 5) {
		/* []: undefined at the end of a path, null (missing) inside one. */
		memcpy(next, fields, sizeof(kg_field_t) * g->n);
		for (i = 0; i < g->n; i++) {
			if (!field_at_array(&fields[i]) || fields[i].val.value.v_doc.data != arr)
				continue;
			next[i].val.value_type = next[i].rest == NULL ? BSON_TYPE_UNDEFINED : BSON_TYPE_EOD;
			next[i].rest = NULL;
			next[i].expanded = true;
		}
		return gen(g, next);
	}
	while (bson_iter_next(&it)) {
		const bson_value_t *elem = bson_iter_value(&it);
		memcpy(next, fields, sizeof(kg_field_t) * g->n);
		for (i = 0; i < g->n; i++) {
			if (!field_at_array(&fields[i]) || fields[i].val.value.v_doc.data != arr)
				continue;
			next[i].val = *elem;
			if (next[i].rest == NULL) {
				next[i].expanded = true;
			} else if (elem->value_type != BSON_TYPE_DOCUMENT) {
				next[i].val.value_type = BSON_TYPE_EOD;
				next[i].rest = NULL;
			}
		}
		if (gen(g, next) != 0)
			return -1;
	}
	return 0;
}

static bool
spec_flag(const bson_t *spec, const char *name)
{
	bson_iter_t it;

	return spec != NULL && bson_iter_init_find(&it, spec, name) && bson_iter_as_bool(&it);
}

/*
 * Compiled partial filters, shared by every write: keyed by the filter's
 * bytes, never freed (a process sees few distinct partial filters, and a
 * match_t stays valid for evaluations running while others are added).
 */
typedef struct pf_entry {
	struct pf_entry *next;
	uint8_t *bytes;
	uint32_t len;
	match_t *m;
} pf_entry_t;

static pf_entry_t *pf_cache;
static pthread_mutex_t pf_mu = PTHREAD_MUTEX_INITIALIZER;

static const match_t *
pf_lookup(const uint8_t *data, uint32_t len, terr_t *err)
{
	pf_entry_t *e;
	bson_t filter;
	match_t *m = NULL;

	pthread_mutex_lock(&pf_mu);
	for (e = pf_cache; e != NULL; e = e->next)
		if (e->len == len && memcmp(e->bytes, data, len) == 0)
			break;
	pthread_mutex_unlock(&pf_mu);
	if (e != NULL)
		return e->m;
	if (!bson_init_static(&filter, data, len)) {
		terr_set(err, TERR_INVALID_BSON, "invalid partialFilterExpression");
		return NULL;
	}
	if (match_compile(&filter, NULL, &m, err) != 0)
		return NULL;
	e = bson_malloc0(sizeof(*e));
	e->bytes = bson_malloc(len);
	memcpy(e->bytes, data, len);
	e->len = len;
	e->m = m;
	pthread_mutex_lock(&pf_mu);
	e->next = pf_cache;
	pf_cache = e;
	pthread_mutex_unlock(&pf_mu);
	return m;
}

/* Does doc pass idx's partialFilterExpression (1), not (0), error (-1)? */
static int
partial_pass(const storage_index_t *idx, const bson_t *doc, terr_t *err)
{
	bson_iter_t it;
	const uint8_t *data;
	uint32_t len;
	const match_t *m;

	if (idx->spec == NULL || !bson_iter_init_find(&it, idx->spec, "partialFilterExpression") ||
	    !BSON_ITER_HOLDS_DOCUMENT(&it))
		return 1;
	bson_iter_document(&it, &len, &data);
	if ((m = pf_lookup(data, len, err)) == NULL)
		return -1;
	return match_exec(m, doc, NULL, err);
}

int
query_keygen(const storage_index_t *idx, const bson_t *doc, storage_key_add_fn add, void *ctx,
             terr_t *err)
{
	kg_field_t fields[KEYGEN_MAX_FIELDS];
	kg_ctx_t g;
	bson_iter_t it;
	int ret = 0, rc;

	memset(&g, 0, sizeof(g));
	g.add = add;
	g.add_ctx = ctx;
	g.err = err;
	g.sparse = spec_flag(idx->spec, "sparse");
	if ((rc = partial_pass(idx, doc, err)) <= 0)
		return rc;
	if (!bson_iter_init(&it, idx->key))
		return terr_set(err, TERR_INVALID_BSON, "invalid index key pattern");
	while (bson_iter_next(&it)) {
		kg_field_t *f;
		if (g.n == KEYGEN_MAX_FIELDS || BSON_ITER_HOLDS_UTF8(&it))
			return terr_set(err, TERR_NOT_IMPLEMENTED,
			    "index %s: this kind of index is not supported by Tamga yet", idx->name);
		f = &fields[g.n++];
		memset(f, 0, sizeof(*f));
		f->rest = bson_iter_key(&it);
		f->desc = bson_iter_as_double(&it) < 0;
		f->val.value_type = BSON_TYPE_DOCUMENT;
		f->val.value.v_doc.data = (uint8_t *)bson_get_data(doc);
		f->val.value.v_doc.data_len = doc->len;
	}
	keystring_init(&g.ks);
	ret = gen(&g, fields);
	keystring_destroy(&g.ks);
	return ret;
}

void
query_keygen_register(storage_t *st)
{
	storage_set_keygen(st, query_keygen);
}
