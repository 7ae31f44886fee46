/*
 * tb_infer.c -- tamgaInferSchema (toolbelt.h): a $jsonSchema validator and
 * per-field statistics inferred from the documents.
 *
 * One pass builds a tree of the fields seen: per node how many of its
 * parent objects hold it, how many values of each BSON type, the distinct
 * strings (up to a bound, for enum), numeric and length ranges; arrays get
 * one child node for all their elements.  The schema is read off the tree:
 * bsonType (a union when several types were seen), required (fields in at
 * least required_threshold of their parents), nested properties, items,
 * enum, ranges.  A discriminator (schemaVersion, format, type, kind, _t, or
 * the one asked for) with 2..enum_max values splits the documents into one
 * tree per value, the variants joined by anyOf.
 *
 * _id is left out of the schema (every document has one; its type is the
 * application's choice) but is in the statistics.
 */
#include "toolbelt/toolbelt.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "bson/value.h"
#include "common/mem.h"
#include "common/opctx.h"

#define NTYPES 20
#define DISTINCT_MAX 64
#define DEPTH_MAX 50
/* distinct field names kept per object node: past it, new names are not
 * analysed (the reply says fieldsTruncated), so a document with 100 000
 * different keys costs linear time, not quadratic */
#define KIDS_MAX 1000
static __thread bool kids_truncated;

typedef struct node {
	char *name;
	int64_t count;             /* parent objects holding it (items: elements) */
	int64_t types[NTYPES];
	int64_t objects;           /* values that were documents: the children's denominator */
	struct node **kids;
	int nkids, kidcap;
	struct node *items;        /* elements of array values */
	char **strs;               /* distinct string values, up to DISTINCT_MAX */
	uint64_t *strh;            /* their hashes (compared first) */
	int nstrs;
	int disc;                  /* a top-level field that may be a discriminator: its index, else -1 */
	bool strs_overflow;
	double min, max;
	int64_t minlen, maxlen;
	int64_t minitems, maxitems;
	bool has_num, has_len, has_items;
} node_t;

static const struct { bson_type_t t; const char *name; } type_names[] = {
	{BSON_TYPE_DOUBLE, "double"}, {BSON_TYPE_UTF8, "string"}, {BSON_TYPE_DOCUMENT, "object"},
	{BSON_TYPE_ARRAY, "array"}, {BSON_TYPE_BINARY, "binData"}, {BSON_TYPE_UNDEFINED, "undefined"},
	{BSON_TYPE_OID, "objectId"}, {BSON_TYPE_BOOL, "bool"}, {BSON_TYPE_DATE_TIME, "date"},
	{BSON_TYPE_NULL, "null"}, {BSON_TYPE_REGEX, "regex"}, {BSON_TYPE_CODE, "javascript"},
	{BSON_TYPE_INT32, "int"}, {BSON_TYPE_TIMESTAMP, "timestamp"}, {BSON_TYPE_INT64, "long"},
	{BSON_TYPE_DECIMAL128, "decimal"}, {BSON_TYPE_MINKEY, "minKey"}, {BSON_TYPE_MAXKEY, "maxKey"},
	{BSON_TYPE_SYMBOL, "symbol"}, {BSON_TYPE_CODEWSCOPE, "javascriptWithScope"},
};

static int
type_slot(bson_type_t t)
{
	for (int i = 0; i < NTYPES; i++)
		if (type_names[i].t == t)
			return i;
	return 0;
}

static node_t *
node_new(const char *name)
{
	node_t *n = bson_malloc0(sizeof(*n));

	n->name = bson_strdup(name);
	n->min = DBL_MAX;
	n->max = -DBL_MAX;
	n->minlen = n->minitems = INT64_MAX;
	n->disc = -1;
	return n;
}

static void
node_free(node_t *n)
{
	if (n == NULL)
		return;
	for (int i = 0; i < n->nkids; i++)
		node_free(n->kids[i]);
	bson_free(n->kids);
	node_free(n->items);
	for (int i = 0; i < n->nstrs; i++)
		bson_free(n->strs[i]);
	bson_free(n->strs);
	bson_free(n->strh);
	bson_free(n->name);
	bson_free(n);
}

static node_t *
kid(node_t *n, const char *name, int hint)
{
	/* documents of a collection mostly keep their fields in one order: the
	 * hint-th child is the likely one */
	if (hint < n->nkids && strcmp(n->kids[hint]->name, name) == 0)
		return n->kids[hint];
	for (int i = 0; i < n->nkids; i++)
		if (strcmp(n->kids[i]->name, name) == 0)
			return n->kids[i];
	if (n->nkids >= KIDS_MAX) {
		kids_truncated = true;
		return NULL;
	}
	if (n->nkids == n->kidcap) {
		n->kidcap = n->kidcap ? n->kidcap * 2 : 8;
		n->kids = bson_realloc(n->kids, (size_t)n->kidcap * sizeof(*n->kids));
	}
	return n->kids[n->nkids++] = node_new(name);
}

static void add_doc(node_t *n, const bson_iter_t *children, int depth);

static void
add_value(node_t *n, const bson_iter_t *it, int depth)
{
	bson_type_t t = bson_iter_type(it);
	bson_iter_t c;

	n->count++;
	n->types[type_slot(t)]++;
	if (depth > DEPTH_MAX)
		return;
	if (t == BSON_TYPE_DOCUMENT && bson_iter_recurse(it, &c)) {
		n->objects++;
		add_doc(n, &c, depth + 1);
	} else if (t == BSON_TYPE_ARRAY && bson_iter_recurse(it, &c)) {
		int64_t len = 0;
		if (n->items == NULL)
			n->items = node_new("[]");
		while (bson_iter_next(&c)) {
			add_value(n->items, &c, depth + 1);
			len++;
		}
		n->has_items = true;
		if (len < n->minitems)
			n->minitems = len;
		if (len > n->maxitems)
			n->maxitems = len;
	} else if (BSON_ITER_HOLDS_NUMBER(it)) {
		double d = bson_iter_as_double(it);
		n->has_num = true;
		if (d < n->min)
			n->min = d;
		if (d > n->max)
			n->max = d;
	} else if (t == BSON_TYPE_UTF8) {
		uint32_t l;
		const char *s = bson_iter_utf8(it, &l);
		int64_t chars = 0;
		for (uint32_t i = 0; i < l; i++)
			chars += ((unsigned char)s[i] & 0xC0) != 0x80;   /* code points, as minLength counts */
		n->has_len = true;
		if (chars < n->minlen)
			n->minlen = chars;
		if (chars > n->maxlen)
			n->maxlen = chars;
		if (!n->strs_overflow) {
			uint64_t h = 1469598103934665603ULL;
			int i;
			for (uint32_t k = 0; k < l; k++) {
				h ^= (unsigned char)s[k];
				h *= 1099511628211ULL;
			}
			for (i = 0; i < n->nstrs; i++)
				if (n->strh[i] == h && strcmp(n->strs[i], s) == 0)
					break;
			if (i == n->nstrs) {
				if (n->nstrs == DISTINCT_MAX || l > 256) {
					n->strs_overflow = true;
				} else {
					n->strs = bson_realloc(n->strs, (size_t)(n->nstrs + 1) * sizeof(*n->strs));
					n->strh = bson_realloc(n->strh, (size_t)(n->nstrs + 1) * sizeof(*n->strh));
					n->strh[n->nstrs] = h;
					n->strs[n->nstrs++] = bson_strdup(s);
				}
			}
		}
	}
}

static void
add_doc(node_t *n, const bson_iter_t *children, int depth)
{
	bson_iter_t c = *children;
	int pos = 0;

	while (bson_iter_next(&c)) {
		node_t *k = kid(n, bson_iter_key(&c), pos++);
		if (k != NULL)
			add_value(k, &c, depth);
	}
}

static int64_t
ntypes(const node_t *n)
{
	int64_t k = 0;

	for (int i = 0; i < NTYPES; i++)
		k += n->types[i] > 0;
	return k;
}

static void schema_of(const node_t *n, const toolbelt_infer_opts_t *o, bson_t *out, bool top);

/* The fields of a schema for object values of n (properties, required). */
static void
object_schema(const node_t *n, const toolbelt_infer_opts_t *o, bson_t *out, bool top, const char *skip_field)
{
	bson_t req, props, one;
	int nr = 0;

	BSON_APPEND_UTF8(out, "bsonType", "object");
	BSON_APPEND_ARRAY_BEGIN(out, "required", &req);
	for (int i = 0; i < n->nkids; i++) {
		const node_t *k = n->kids[i];
		char idx[16];
		const char *ik;
		if (top && strcmp(k->name, "_id") == 0)
			continue;
		if (n->objects > 0 && (double)k->count >= o->required_threshold * (double)n->objects) {
			bson_uint32_to_string((uint32_t)nr++, &ik, idx, sizeof(idx));
			BSON_APPEND_UTF8(&req, ik, k->name);
		}
	}
	bson_append_array_end(out, &req);
	BSON_APPEND_DOCUMENT_BEGIN(out, "properties", &props);
	for (int i = 0; i < n->nkids; i++) {
		const node_t *k = n->kids[i];
		if ((top && strcmp(k->name, "_id") == 0) || (skip_field != NULL && strcmp(k->name, skip_field) == 0))
			continue;
		BSON_APPEND_DOCUMENT_BEGIN(&props, k->name, &one);
		schema_of(k, o, &one, false);
		bson_append_document_end(&props, &one);
	}
	bson_append_document_end(out, &props);
}

static void
schema_of(const node_t *n_in, const toolbelt_infer_opts_t *o, bson_t *out, bool top)
{
	node_t tight, *n = (node_t *)n_in;
	int64_t nt;

	/* tightened: the rare types (a legacy string among ints) are left out,
	 * so the validator rejects the documents that carry them */
	if (o->tighten > 0 && ntypes(n) > 1) {
		int64_t kept = 0;
		tight = *n;
		for (int i = 0; i < NTYPES; i++)
			if (tight.types[i] > 0 && (double)tight.types[i] < o->tighten * (double)n->count)
				tight.types[i] = 0;
		for (int i = 0; i < NTYPES; i++)
			kept += tight.types[i];
		if (kept > 0)
			n = &tight;
	}
	nt = ntypes(n);
	bool only_numbers = true, only_strings = n->types[type_slot(BSON_TYPE_UTF8)] > 0 && nt == 1;

	for (int i = 0; i < NTYPES; i++)
		if (n->types[i] > 0 && !(type_names[i].t == BSON_TYPE_INT32 || type_names[i].t == BSON_TYPE_INT64 ||
		                         type_names[i].t == BSON_TYPE_DOUBLE || type_names[i].t == BSON_TYPE_DECIMAL128))
			only_numbers = false;
	if (nt == 1 && n->types[type_slot(BSON_TYPE_DOCUMENT)] > 0) {
		object_schema(n, o, out, top, NULL);
		return;
	}
	if (nt == 1) {
		for (int i = 0; i < NTYPES; i++)
			if (n->types[i] > 0)
				BSON_APPEND_UTF8(out, "bsonType", type_names[i].name);
	} else if (nt > 1) {
		bson_t arr;
		int k = 0;
		BSON_APPEND_ARRAY_BEGIN(out, "bsonType", &arr);
		for (int i = 0; i < NTYPES; i++)
			if (n->types[i] > 0) {
				char idx[16];
				const char *ik;
				bson_uint32_to_string((uint32_t)k++, &ik, idx, sizeof(idx));
				BSON_APPEND_UTF8(&arr, ik, type_names[i].name);
			}
		bson_append_array_end(out, &arr);
	}
	if (n->items != NULL && n->items->count > 0) {
		bson_t it;
		BSON_APPEND_DOCUMENT_BEGIN(out, "items", &it);
		schema_of(n->items, o, &it, false);
		bson_append_document_end(out, &it);
	}
	if (only_strings && o->enum_max > 0 && !n->strs_overflow && n->nstrs >= 1 && n->nstrs <= o->enum_max &&
	    n->count >= 2 * (int64_t)n->nstrs) {
		bson_t e;
		BSON_APPEND_ARRAY_BEGIN(out, "enum", &e);
		for (int i = 0; i < n->nstrs; i++) {
			char idx[16];
			const char *ik;
			bson_uint32_to_string((uint32_t)i, &ik, idx, sizeof(idx));
			BSON_APPEND_UTF8(&e, ik, n->strs[i]);
		}
		bson_append_array_end(out, &e);
	}
	if (o->ranges) {
		if (only_numbers && n->has_num) {
			if (n->min == floor(n->min) && fabs(n->min) < 9e15)
				BSON_APPEND_INT64(out, "minimum", (int64_t)n->min);
			else
				BSON_APPEND_DOUBLE(out, "minimum", n->min);
			if (n->max == floor(n->max) && fabs(n->max) < 9e15)
				BSON_APPEND_INT64(out, "maximum", (int64_t)n->max);
			else
				BSON_APPEND_DOUBLE(out, "maximum", n->max);
		}
		if (only_strings && n->has_len) {
			BSON_APPEND_INT64(out, "minLength", n->minlen);
			BSON_APPEND_INT64(out, "maxLength", n->maxlen);
		}
		if (n->has_items && nt == 1) {
			BSON_APPEND_INT64(out, "minItems", n->minitems);
			BSON_APPEND_INT64(out, "maxItems", n->maxitems);
		}
	}
}

/* Compass-style statistics: one row per path, parents first. */
static void
stats_of(const node_t *n, const char *path, int64_t parents, bson_t *arr, int *i)
{
	char idx[16], p[1024];
	const char *ik;
	bson_t row, types, t;
	int k = 0;

	if (path != NULL) {
		bson_uint32_to_string((uint32_t)(*i)++, &ik, idx, sizeof(idx));
		BSON_APPEND_DOCUMENT_BEGIN(arr, ik, &row);
		BSON_APPEND_UTF8(&row, "path", path);
		BSON_APPEND_INT64(&row, "count", n->count);
		BSON_APPEND_DOUBLE(&row, "probability", parents > 0 ? (double)n->count / (double)parents : 0.0);
		BSON_APPEND_ARRAY_BEGIN(&row, "types", &types);
		for (int j = 0; j < NTYPES; j++)
			if (n->types[j] > 0) {
				bson_uint32_to_string((uint32_t)k++, &ik, idx, sizeof(idx));
				BSON_APPEND_DOCUMENT_BEGIN(&types, ik, &t);
				BSON_APPEND_UTF8(&t, "bsonType", type_names[j].name);
				BSON_APPEND_INT64(&t, "count", n->types[j]);
				BSON_APPEND_DOUBLE(&t, "probability", n->count > 0 ? (double)n->types[j] / (double)n->count : 0.0);
				bson_append_document_end(&types, &t);
			}
		bson_append_array_end(&row, &types);
		if (!n->strs_overflow && n->nstrs > 0)
			BSON_APPEND_INT32(&row, "distinctStrings", n->nstrs);
		if (n->has_items) {
			BSON_APPEND_INT64(&row, "minItems", n->minitems);
			BSON_APPEND_INT64(&row, "maxItems", n->maxitems);
		}
		bson_append_document_end(arr, &row);
	}
	for (int j = 0; j < n->nkids; j++) {
		snprintf(p, sizeof(p), "%s%s%s", path ? path : "", path ? "." : "", n->kids[j]->name);
		stats_of(n->kids[j], p, n->objects, arr, i);
	}
	if (n->items != NULL && path != NULL) {
		snprintf(p, sizeof(p), "%s[]", path);
		stats_of(n->items, p, n->items->count, arr, i);
	}
}

/* ---- discriminators --------------------------------------------------------- */

#define VARIANTS_MAX 16
static const char *const disc_names[] = {"schemaVersion", "format", "type", "kind", "_t", NULL};

typedef struct variant {
	bson_value_t value;        /* owned; BSON_TYPE_EOD: the field is missing */
	node_t *root;
	int64_t docs;
} variant_t;

typedef struct disc {
	const char *field;
	variant_t v[VARIANTS_MAX];
	int n;
	bool dead;                 /* too many values, or not a scalar */
} disc_t;

/* Count the document's value of d's field: it (NULL: the field is missing);
 * doc, in the second pass, is added to its variant's tree. */
static void
disc_add(disc_t *d, const bson_iter_t *it, const bson_t *doc)
{
	bson_iter_t c;
	bson_value_t missing = {.value_type = BSON_TYPE_EOD};
	const bson_value_t *v = &missing;
	bool build = doc != NULL;
	int i;

	if (d->dead)
		return;
	if (it != NULL) {
		if (!(BSON_ITER_HOLDS_UTF8(it) || BSON_ITER_HOLDS_NUMBER(it) || BSON_ITER_HOLDS_BOOL(it))) {
			d->dead = true;
			return;
		}
		v = bson_iter_value((bson_iter_t *)it);
	}
	for (i = 0; i < d->n; i++)
		if ((d->v[i].value.value_type == BSON_TYPE_EOD) == (v->value_type == BSON_TYPE_EOD) &&
		    (v->value_type == BSON_TYPE_EOD || bv_compare(&d->v[i].value, v) == 0))
			break;
	if (i == d->n) {
		if (d->n == VARIANTS_MAX) {
			d->dead = true;
			return;
		}
		if (v->value_type == BSON_TYPE_EOD)
			d->v[i].value.value_type = BSON_TYPE_EOD;
		else
			bson_value_copy(v, &d->v[i].value);
		d->n++;
	}
	d->v[i].docs++;
	if (build) {
		/* the second pass: the variant's own tree */
		if (d->v[i].root == NULL)
			d->v[i].root = node_new("");
		d->v[i].root->count++;
		d->v[i].root->objects++;
		bson_iter_init(&c, doc);
		add_doc(d->v[i].root, &c, 1);
	}
}

static void
disc_free(disc_t *d)
{
	for (int i = 0; i < d->n; i++) {
		if (d->v[i].value.value_type != BSON_TYPE_EOD)
			bson_value_destroy(&d->v[i].value);
		node_free(d->v[i].root);
	}
}

int
toolbelt_infer(storage_session_t *s, storage_coll_t *coll, const toolbelt_infer_opts_t *o_in, bson_t *reply,
               terr_t *err)
{
	toolbelt_infer_opts_t o = *o_in;
	node_t *root = node_new("");
	storage_cursor_t *cur = NULL;
	disc_t discs[8];
	int ndiscs = 0, rc, ret = -1, nrow = 0;
	int64_t n = 0;
	disc_t *chosen = NULL;
	bson_t js, arr, v;

	memset(discs, 0, sizeof(discs));
	kids_truncated = false;
	if (o.required_threshold <= 0 || o.required_threshold > 1)
		o.required_threshold = 1.0;
	if (!o.no_discriminator) {
		if (o.discriminator != NULL)
			discs[ndiscs++].field = o.discriminator;
		else
			for (int i = 0; disc_names[i] != NULL; i++)
				discs[ndiscs++].field = disc_names[i];
	}
	ERR(storage_scan_open(s, coll, false, &cur, err));
	for (;;) {
		bson_t doc;
		bson_iter_t it;
		if (o.sample > 0 && n == o.sample)
			break;
		if ((rc = storage_cursor_next(cur, NULL, &doc, NULL, NULL, err)) < 0)
			goto err;
		if (rc == 0)
			break;
		ERR(tm_interrupt_check(err));
		n++;
		root->count++;
		root->objects++;
		/* the top level by hand: the candidate discriminators are noted on
		 * their nodes once, and read from this same iteration */
		if (bson_iter_init(&it, &doc)) {
			bool present[8] = {false};
			int pos = 0;
			while (bson_iter_next(&it)) {
				int before = root->nkids;
				node_t *k = kid(root, bson_iter_key(&it), pos++);
				if (k == NULL)
					continue;
				if (root->nkids != before)
					for (int i = 0; i < ndiscs; i++)
						if (strcmp(discs[i].field, k->name) == 0)
							k->disc = i;
				add_value(k, &it, 1);
				if (k->disc >= 0 && !present[k->disc]) {
					present[k->disc] = true;
					disc_add(&discs[k->disc], &it, NULL);
				}
			}
			for (int i = 0; i < ndiscs; i++)
				if (!present[i])
					disc_add(&discs[i], NULL, NULL);
		}
	}
	storage_cursor_close(cur);
	cur = NULL;
	/* a discriminator: the first candidate present in most documents with
	 * 2..VARIANTS_MAX values */
	for (int i = 0; i < ndiscs && chosen == NULL; i++) {
		int64_t missing = 0;
		disc_t *d = &discs[i];
		if (d->dead || d->n < 2)
			continue;
		for (int k = 0; k < d->n; k++)
			if (d->v[k].value.value_type == BSON_TYPE_EOD)
				missing = d->v[k].docs;
		if (missing < n)
			chosen = d;
	}
	if (chosen != NULL) {
		/* the second pass over the same documents: one tree per variant */
		int64_t m = 0;
		for (int k = 0; k < chosen->n; k++)
			chosen->v[k].docs = 0;
		ERR(storage_scan_open(s, coll, false, &cur, err));
		for (;;) {
			bson_t doc;
			if (m == n)
				break;
			if ((rc = storage_cursor_next(cur, NULL, &doc, NULL, NULL, err)) < 0)
				goto err;
			if (rc == 0)
				break;
			ERR(tm_interrupt_check(err));
			m++;
			{
				bson_iter_t fit;
				disc_add(chosen, bson_iter_init_find(&fit, &doc, chosen->field) ? &fit : NULL, &doc);
			}
		}
		storage_cursor_close(cur);
		cur = NULL;
		for (int k = 0; k < chosen->n; k++)
			if (chosen->v[k].root == NULL)
				chosen->v[k].root = node_new("");
	}
	BSON_APPEND_UTF8(reply, "ns", coll->ns);
	BSON_APPEND_INT64(reply, "sampled", n);
	BSON_APPEND_DOCUMENT_BEGIN(reply, "validator", &v);
	BSON_APPEND_DOCUMENT_BEGIN(&v, "$jsonSchema", &js);
	if (chosen == NULL) {
		object_schema(root, &o, &js, true, NULL);
	} else {
		bson_t any, one, props, dp, en, req;
		BSON_APPEND_UTF8(&js, "bsonType", "object");
		BSON_APPEND_ARRAY_BEGIN(&js, "anyOf", &any);
		for (int k = 0; k < chosen->n; k++) {
			char idx[16];
			const char *ik;
			bson_uint32_to_string((uint32_t)k, &ik, idx, sizeof(idx));
			BSON_APPEND_DOCUMENT_BEGIN(&any, ik, &one);
			if (chosen->v[k].value.value_type == BSON_TYPE_EOD) {
				/* the variant without the field: it must stay absent */
				bson_t not;
				object_schema(chosen->v[k].root, &o, &one, true, NULL);
				BSON_APPEND_DOCUMENT_BEGIN(&one, "not", &not);
				BSON_APPEND_ARRAY_BEGIN(&not, "required", &req);
				BSON_APPEND_UTF8(&req, "0", chosen->field);
				bson_append_array_end(&not, &req);
				bson_append_document_end(&one, &not);
			} else {
				/* the variant's own schema, its discriminator pinned by enum */
				bson_t tmp = BSON_INITIALIZER;
				bson_iter_t ti;
				object_schema(chosen->v[k].root, &o, &tmp, true, chosen->field);
				bson_iter_init(&ti, &tmp);
				while (bson_iter_next(&ti)) {
					if (strcmp(bson_iter_key(&ti), "properties") == 0) {
						bson_iter_t pi;
						BSON_APPEND_DOCUMENT_BEGIN(&one, "properties", &props);
						BSON_APPEND_DOCUMENT_BEGIN(&props, chosen->field, &dp);
						BSON_APPEND_ARRAY_BEGIN(&dp, "enum", &en);
						bv_append(&en, "0", 1, &chosen->v[k].value);
						bson_append_array_end(&dp, &en);
						bson_append_document_end(&props, &dp);
						bson_iter_recurse(&ti, &pi);
						while (bson_iter_next(&pi))
							bv_append(&props, bson_iter_key(&pi), -1, bson_iter_value(&pi));
						bson_append_document_end(&one, &props);
					} else {
						bv_append(&one, bson_iter_key(&ti), -1, bson_iter_value(&ti));
					}
				}
				bson_destroy(&tmp);
			}
			bson_append_document_end(&any, &one);
		}
		bson_append_array_end(&js, &any);
	}
	bson_append_document_end(&v, &js);
	bson_append_document_end(reply, &v);
	if (chosen != NULL) {
		bson_t vs, one;
		BSON_APPEND_UTF8(reply, "discriminator", chosen->field);
		BSON_APPEND_ARRAY_BEGIN(reply, "variants", &vs);
		for (int k = 0; k < chosen->n; k++) {
			char idx[16];
			const char *ik;
			bson_uint32_to_string((uint32_t)k, &ik, idx, sizeof(idx));
			BSON_APPEND_DOCUMENT_BEGIN(&vs, ik, &one);
			if (chosen->v[k].value.value_type == BSON_TYPE_EOD)
				BSON_APPEND_BOOL(&one, "missing", true);
			else
				bv_append(&one, "value", -1, &chosen->v[k].value);
			BSON_APPEND_INT64(&one, "count", chosen->v[k].docs);
			bson_append_document_end(&vs, &one);
		}
		bson_append_array_end(reply, &vs);
	}
	if (kids_truncated)
		BSON_APPEND_BOOL(reply, "fieldsTruncated", true);
	BSON_APPEND_ARRAY_BEGIN(reply, "fields", &arr);
	stats_of(root, NULL, n, &arr, &nrow);
	bson_append_array_end(reply, &arr);
	ret = 0;
err:
	if (cur != NULL)
		storage_cursor_close(cur);
	for (int i = 0; i < ndiscs; i++)
		disc_free(&discs[i]);
	node_free(root);
	return ret;
}
