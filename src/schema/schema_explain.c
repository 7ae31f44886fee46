/*
 * schema_explain.c -- mongod's errInfo details for a document that fails a
 * $jsonSchema.
 *
 * mongod builds these by walking its match-expression tree; here the same
 * output is produced straight from the compiled schema: one entry per failing
 * keyword, in mongod's keyword order (string, number, array, encryption,
 * object, logical keywords, then the type), with mongod's field names, field
 * order, reasons and number types.  Only the slow path (a write that is
 * about to be rejected) comes here.  It does not decide whether to reject.
 */
#include <string.h>

#include "bson/value.h"
#include "schema/schema_private.h"

/* mongod's second attempt for an oversized error: leave out specifiedAs and
 * the considered values that echo the document (set for one explain call). */
static _Thread_local bool tl_truncate;

/* An array being appended to: keys "0", "1", ... */
typedef struct {
	bson_t *arr;
	uint32_t n;
} abuf_t;

static void
ab_doc_begin(abuf_t *a, bson_t *child)
{
	char buf[16];
	const char *key;
	size_t kl = bson_uint32_to_string(a->n++, &key, buf, sizeof buf);
	bson_append_document_begin(a->arr, key, (int)kl, child);
}

static void
ab_value(abuf_t *a, const bson_value_t *v)
{
	char buf[16];
	const char *key;
	size_t kl = bson_uint32_to_string(a->n++, &key, buf, sizeof buf);
	bson_append_value(a->arr, key, (int)kl, v);
}

static void
ab_utf8(abuf_t *a, const char *s)
{
	char buf[16];
	const char *key;
	size_t kl = bson_uint32_to_string(a->n++, &key, buf, sizeof buf);
	bson_append_utf8(a->arr, key, (int)kl, s, -1);
}

static const char *
tname(bson_type_t t)
{
	const char *s = bv_type_name(t);
	return s ? s : "unknown";
}

static bool
has_path(const bson_value_t *doc, const char *name)
{
	bson_value_t x;
	return sch_path_get(doc, name, &x);
}

/* Appends title and description of a subschema, in that order. */
static void
append_annotations(bson_t *b, const snode_t *n)
{
	if (n->title)
		bson_append_utf8(b, "title", -1, n->title, -1);
	if (n->description)
		bson_append_utf8(b, "description", -1, n->description, -1);
}

/* specifiedAs: {<kw>: <value as written>} */
static void
append_specified(bson_t *b, const snode_t *n, const char *kw)
{
	bson_t sa;
	bson_iter_t it;

	if (tl_truncate)
		return;
	bson_append_document_begin(b, "specifiedAs", -1, &sa);
	if (bson_iter_init_find(&it, n->raw, kw))
		bson_append_value(&sa, kw, -1, bson_iter_value(&it));
	bson_append_document_end(b, &sa);
}

/* {operatorName, specifiedAs, reason} start shared by most leaf keywords. */
static void
leaf_begin(abuf_t *out, bson_t *e, const snode_t *n, const char *kw, const char *reason)
{
	ab_doc_begin(out, e);
	bson_append_utf8(e, "operatorName", -1, kw, -1);
	append_specified(e, n, kw);
	if (reason)
		bson_append_utf8(e, "reason", -1, reason, -1);
}

/* consideredValue of a leaf keyword (left out of truncated errors). */
static void
append_considered(bson_t *e, const bson_value_t *v)
{
	if (!tl_truncate)
		bson_append_value(e, "consideredValue", -1, v);
}

/* The {$jsonSchema: ...} specifiedAs of an always-false top-level schema. */
static void
append_specified_schema(bson_t *d, const snode_t *n)
{
	bson_t sa;

	if (tl_truncate)
		return;
	bson_append_document_begin(d, "specifiedAs", -1, &sa);
	bson_append_document(&sa, "$jsonSchema", -1, n->raw);
	bson_append_document_end(d, &sa);
}

static void explain_node(const snode_t *n, const bson_value_t *v, abuf_t *out);

/* A subschema's failure under key: an array of keyword errors, or (for a
 * top-level subschema whose type excludes objects) one object. */
static void
explain_details(const snode_t *n, const bson_value_t *v, bson_t *parent, const char *key)
{
	if (n->always_false) {
		bson_t d;
		bson_append_document_begin(parent, key, -1, &d);
		bson_append_utf8(&d, "operatorName", -1, "$jsonSchema", -1);
		append_specified_schema(&d, n);
		bson_append_utf8(&d, "reason", -1, "expression always evaluates to false", -1);
		bson_append_document_end(parent, &d);
	} else {
		bson_t arr;
		abuf_t ab = {&arr, 0};
		bson_append_array_begin(parent, key, -1, &arr);
		explain_node(n, v, &ab);
		bson_append_array_end(parent, &arr);
	}
}

static void
explain_string(const snode_t *n, const bson_value_t *v, abuf_t *out)
{
	const char *s = v->value.v_utf8.str;
	uint32_t len = v->value.v_utf8.len;
	int64_t cp = 0;
	bson_t e;

	for (uint32_t i = 0; i < len; i++)
		if (((unsigned char)s[i] & 0xC0) != 0x80)
			cp++;
	if (n->pattern && !sch_regex_search(n->pattern, s, len)) {
		leaf_begin(out, &e, n, "pattern", "regular expression did not match");
		append_considered(&e, v);
		bson_append_document_end(out->arr, &e);
	}
	if (n->max_len >= 0 && cp > n->max_len) {
		leaf_begin(out, &e, n, "maxLength", "specified string length was not satisfied");
		append_considered(&e, v);
		bson_append_document_end(out->arr, &e);
	}
	if (n->min_len >= 0 && cp < n->min_len) {
		leaf_begin(out, &e, n, "minLength", "specified string length was not satisfied");
		append_considered(&e, v);
		bson_append_document_end(out->arr, &e);
	}
}

static void
explain_bound(const snode_t *n, const bson_value_t *v, abuf_t *out, bool is_max)
{
	const char *kw = is_max ? "maximum" : "minimum";
	bool excl = is_max ? n->excl_max : n->excl_min;
	bson_t e, sa;
	bson_iter_t it;

	ab_doc_begin(out, &e);
	bson_append_utf8(&e, "operatorName", -1, kw, -1);
	if (!tl_truncate) {
		bson_append_document_begin(&e, "specifiedAs", -1, &sa);
		if (bson_iter_init_find(&it, n->raw, kw))
			bson_append_value(&sa, kw, -1, bson_iter_value(&it));
		if (excl)
			bson_append_bool(&sa, is_max ? "exclusiveMaximum" : "exclusiveMinimum", -1, true);
		bson_append_document_end(&e, &sa);
	}
	bson_append_utf8(&e, "reason", -1, "comparison failed", -1);
	append_considered(&e, v);
	bson_append_document_end(out->arr, &e);
}

static void
explain_number(const snode_t *n, const bson_value_t *v, abuf_t *out)
{
	snode_t probe;
	bson_t e;

	/* Evaluate each numeric keyword alone with a one-keyword probe. */
	if (n->has_multiple_of) {
		memset(&probe, 0, sizeof probe);
		probe.min_len = probe.max_len = probe.min_items = probe.max_items = -1;
		probe.min_props = probe.max_props = -1;
		probe.has_multiple_of = true;
		probe.multiple_of = n->multiple_of;
		if (!sch_node_match(&probe, v)) {
			leaf_begin(out, &e, n, "multipleOf",
				   "considered value is not a multiple of the specified value");
			append_considered(&e, v);
			bson_append_document_end(out->arr, &e);
		}
	}
	if (n->has_max) {
		memset(&probe, 0, sizeof probe);
		probe.min_len = probe.max_len = probe.min_items = probe.max_items = -1;
		probe.min_props = probe.max_props = -1;
		probe.has_max = true;
		probe.maximum = n->maximum;
		probe.excl_max = n->excl_max;
		if (!sch_node_match(&probe, v))
			explain_bound(n, v, out, true);
	}
	if (n->has_min) {
		memset(&probe, 0, sizeof probe);
		probe.min_len = probe.max_len = probe.min_items = probe.max_items = -1;
		probe.min_props = probe.max_props = -1;
		probe.has_min = true;
		probe.minimum = n->minimum;
		probe.excl_min = n->excl_min;
		if (!sch_node_match(&probe, v))
			explain_bound(n, v, out, false);
	}
}

static void
explain_items_len(const snode_t *n, const bson_value_t *v, abuf_t *out, const char *kw,
		  int32_t count)
{
	bson_t e;

	leaf_begin(out, &e, n, kw, "array did not match specified length");
	bson_append_value(&e, "consideredValue", -1, v);
	bson_append_int32(&e, "numberOfItems", -1, count);
	bson_append_document_end(out->arr, &e);
}

static void
explain_array(const snode_t *n, const bson_value_t *v, abuf_t *out)
{
	bson_iter_t it;
	int32_t count = 0;
	bson_t e;

	sch_iter_of(v, &it);
	while (bson_iter_next(&it))
		count++;
	if (n->min_items >= 0 && count < n->min_items)
		explain_items_len(n, v, out, "minItems", count);
	if (n->max_items >= 0 && count > n->max_items)
		explain_items_len(n, v, out, "maxItems", count);
	if (n->unique_items) {
		bson_value_t dup;
		if (sch_find_duplicate(v, &dup) >= 0) {
			leaf_begin(out, &e, n, "uniqueItems", "found a duplicate item");
			bson_append_value(&e, "consideredValue", -1, v);
			bson_append_value(&e, "duplicatedValue", -1, &dup);
			bson_append_document_end(out->arr, &e);
		}
	}
	if (n->items_kind == SCH_ITEMS_SCHEMA) {
		int32_t i = 0;
		sch_iter_of(v, &it);
		while (bson_iter_next(&it)) {
			bson_value_t x = *bson_iter_value(&it);
			if (!sch_node_match(n->items, &x)) {
				ab_doc_begin(out, &e);
				bson_append_utf8(&e, "operatorName", -1, "items", -1);
				append_annotations(&e, n->items);
				bson_append_utf8(&e, "reason", -1,
						 "At least one item did not match the sub-schema", -1);
				bson_append_int32(&e, "itemIndex", -1, i);
				explain_details(n->items, &x, &e, "details");
				bson_append_document_end(out->arr, &e);
				break;
			}
			i++;
		}
	} else if (n->items_kind == SCH_ITEMS_ARRAY) {
		bson_t arr;
		abuf_t ab = {&arr, 0};
		int64_t i = 0;
		bool any = false;

		sch_iter_of(v, &it);
		while (bson_iter_next(&it) && i < n->nitems) {
			bson_value_t x = *bson_iter_value(&it);
			if (!sch_node_match(n->items_arr[i], &x)) {
				any = true;
				break;
			}
			i++;
		}
		if (any) {
			ab_doc_begin(out, &e);
			bson_append_utf8(&e, "operatorName", -1, "items", -1);
			bson_append_array_begin(&e, "details", -1, &arr);
			i = 0;
			sch_iter_of(v, &it);
			while (bson_iter_next(&it) && i < n->nitems) {
				bson_value_t x = *bson_iter_value(&it);
				if (!sch_node_match(n->items_arr[i], &x)) {
					bson_t d;
					ab_doc_begin(&ab, &d);
					bson_append_int64(&d, "itemIndex", -1, i);
					explain_details(n->items_arr[i], &x, &d, "details");
					bson_append_document_end(&arr, &d);
				}
				i++;
			}
			bson_append_array_end(&e, &arr);
			bson_append_document_end(out->arr, &e);
		}
		if (n->addl_items_kind == SCH_ADDL_FALSE && count > (int32_t)n->nitems) {
			leaf_begin(out, &e, n, "additionalItems", "found additional items");
			bson_append_array_begin(&e, "additionalItems", -1, &arr);
			ab.n = 0;
			i = 0;
			sch_iter_of(v, &it);
			while (bson_iter_next(&it)) {
				if (i++ >= n->nitems)
					ab_value(&ab, bson_iter_value(&it));
			}
			bson_append_array_end(&e, &arr);
			bson_append_document_end(out->arr, &e);
		} else if (n->addl_items_kind == SCH_ADDL_SCHEMA) {
			i = 0;
			sch_iter_of(v, &it);
			while (bson_iter_next(&it)) {
				bson_value_t x = *bson_iter_value(&it);
				if (i >= n->nitems && !sch_node_match(n->addl_items, &x)) {
					ab_doc_begin(out, &e);
					bson_append_utf8(&e, "operatorName", -1, "additionalItems", -1);
					append_annotations(&e, n->addl_items);
					bson_append_utf8(&e, "reason", -1,
							 "At least one additional item did not match the sub-schema", -1);
					bson_append_int32(&e, "itemIndex", -1, (int32_t)i);
					explain_details(n->addl_items, &x, &e, "details");
					bson_append_document_end(out->arr, &e);
					break;
				}
				i++;
			}
		}
	}
}

static void
explain_encrypt(const snode_t *n, const bson_value_t *v, abuf_t *out)
{
	bson_t e;
	bool is_enc = v->value_type == BSON_TYPE_BINARY &&
		      v->value.v_binary.subtype == BSON_SUBTYPE_ENCRYPTED;

	if (!is_enc) {
		ab_doc_begin(out, &e);
		bson_append_utf8(&e, "operatorName", -1, "encrypt", -1);
		bson_append_utf8(&e, "reason", -1, "value was not encrypted", -1);
		bson_append_document_end(out->arr, &e);
		return;
	}
	if (n->encrypt_type_mask) {
		snode_t probe;
		memset(&probe, 0, sizeof probe);
		probe.min_len = probe.max_len = probe.min_items = probe.max_items = -1;
		probe.min_props = probe.max_props = -1;
		probe.encrypt = true;
		probe.encrypt_type_mask = n->encrypt_type_mask;
		if (!sch_node_match(&probe, v)) {
			ab_doc_begin(out, &e);
			bson_append_utf8(&e, "operatorName", -1, "encrypt", -1);
			bson_append_utf8(&e, "reason", -1, "encrypted value has wrong type", -1);
			bson_append_document_end(out->arr, &e);
		}
	}
}

static void
explain_properties(const snode_t *n, const bson_value_t *v, abuf_t *out)
{
	bson_t e, arr;
	abuf_t ab = {&arr, 0};
	bool opened = false;

	for (uint32_t i = 0; i < n->nprops; i++) {
		const sch_prop_t *p = &n->props[i];
		bson_value_t x;
		bson_t pe, det;
		abuf_t dab = {&det, 0};
		bson_t tmp = BSON_INITIALIZER;

		if (!sch_path_get(v, p->name, &x))
			continue;
		if (sch_node_match(p->schema, &x))
			continue;
		/* Build the details first: a property whose failure nobody
		 * reports (rare) is left out, as mongod does. */
		bson_append_array_begin(&tmp, "d", -1, &det);
		explain_node(p->schema, &x, &dab);
		bson_append_array_end(&tmp, &det);
		if (dab.n == 0) {
			bson_destroy(&tmp);
			continue;
		}
		if (!opened) {
			ab_doc_begin(out, &e);
			bson_append_utf8(&e, "operatorName", -1, "properties", -1);
			bson_append_array_begin(&e, "propertiesNotSatisfied", -1, &arr);
			opened = true;
		}
		ab_doc_begin(&ab, &pe);
		bson_append_utf8(&pe, "propertyName", -1, p->name, (int)p->len);
		append_annotations(&pe, p->schema);
		{
			bson_iter_t ti;
			bson_iter_init_find(&ti, &tmp, "d");
			bson_append_value(&pe, "details", -1, bson_iter_value(&ti));
		}
		bson_append_document_end(&arr, &pe);
		bson_destroy(&tmp);
	}
	if (opened) {
		bson_append_array_end(&e, &arr);
		bson_append_document_end(out->arr, &e);
	}
}

static void
explain_allowed(const snode_t *n, const bson_value_t *v, abuf_t *out)
{
	bson_iter_t it;
	bson_t e, arr;
	abuf_t ab = {&arr, 0};

	if (n->addl_props_kind == SCH_ADDL_FALSE) {
		bool any = false;
		sch_iter_of(v, &it);
		while (bson_iter_next(&it))
			if (sch_field_is_additional(n, bson_iter_key(&it), bson_iter_key_len(&it))) {
				any = true;
				break;
			}
		if (any) {
			bson_t sa;
			ab_doc_begin(out, &e);
			bson_append_utf8(&e, "operatorName", -1, "additionalProperties", -1);
			/* mongod writes this specifiedAs itself, even when truncating */
			bson_append_document_begin(&e, "specifiedAs", -1, &sa);
			bson_append_bool(&sa, "additionalProperties", -1, false);
			bson_append_document_end(&e, &sa);
			bson_append_array_begin(&e, "additionalProperties", -1, &arr);
			sch_iter_of(v, &it);
			while (bson_iter_next(&it))
				if (sch_field_is_additional(n, bson_iter_key(&it), bson_iter_key_len(&it)))
					ab_utf8(&ab, bson_iter_key(&it));
			bson_append_array_end(&e, &arr);
			bson_append_document_end(out->arr, &e);
		}
	} else if (n->addl_props_kind == SCH_ADDL_SCHEMA) {
		sch_iter_of(v, &it);
		while (bson_iter_next(&it)) {
			bson_value_t x;
			if (!sch_field_is_additional(n, bson_iter_key(&it), bson_iter_key_len(&it)))
				continue;
			x = *bson_iter_value(&it);
			if (sch_node_match(n->addl_props, &x))
				continue;
			ab_doc_begin(out, &e);
			bson_append_utf8(&e, "operatorName", -1, "additionalProperties", -1);
			append_annotations(&e, n->addl_props);
			bson_append_utf8(&e, "reason", -1,
					 "at least one additional property did not match the subschema", -1);
			bson_append_utf8(&e, "failingProperty", -1, bson_iter_key(&it), -1);
			explain_details(n->addl_props, &x, &e, "details");
			bson_append_document_end(out->arr, &e);
			break;
		}
	}
	if (n->npats) {
		bool opened = false;
		for (uint32_t p = 0; p < n->npats; p++) {
			const sch_pat_t *pat = &n->pats[p];
			sch_iter_of(v, &it);
			while (bson_iter_next(&it)) {
				bson_value_t x;
				bson_t pe;
				if (!sch_regex_search(pat->re, bson_iter_key(&it), bson_iter_key_len(&it)))
					continue;
				x = *bson_iter_value(&it);
				if (sch_node_match(pat->schema, &x))
					continue;
				if (!opened) {
					ab_doc_begin(out, &e);
					bson_append_utf8(&e, "operatorName", -1, "patternProperties", -1);
					bson_append_array_begin(&e, "details", -1, &arr);
					ab.n = 0;
					opened = true;
				}
				ab_doc_begin(&ab, &pe);
				bson_append_utf8(&pe, "propertyName", -1, bson_iter_key(&it), -1);
				append_annotations(&pe, pat->schema);
				bson_append_utf8(&pe, "regexMatched", -1, pat->src, -1);
				explain_details(pat->schema, &x, &pe, "details");
				bson_append_document_end(&arr, &pe);
				break;
			}
		}
		if (opened) {
			bson_append_array_end(&e, &arr);
			bson_append_document_end(out->arr, &e);
		}
	}
}

static void
explain_object(const snode_t *n, const bson_value_t *v, abuf_t *out)
{
	bson_iter_t it;
	int32_t nfields = 0;
	bson_t e, arr;
	abuf_t ab = {&arr, 0};

	if (n->nprops)
		explain_properties(n, v, out);
	if (n->has_allowed)
		explain_allowed(n, v, out);
	if (n->nrequired) {
		bool any = false;
		for (uint32_t i = 0; i < n->nrequired && !any; i++)
			any = !has_path(v, n->required[i]);
		if (any) {
			ab_doc_begin(out, &e);
			bson_append_utf8(&e, "operatorName", -1, "required", -1);
			append_specified(&e, n, "required");
			bson_append_array_begin(&e, "missingProperties", -1, &arr);
			for (uint32_t i = 0; i < n->nrequired; i++)
				if (!has_path(v, n->required[i]))
					ab_utf8(&ab, n->required[i]);
			bson_append_array_end(&e, &arr);
			bson_append_document_end(out->arr, &e);
		}
	}
	sch_iter_of(v, &it);
	while (bson_iter_next(&it))
		nfields++;
	if (n->min_props >= 0 && nfields < n->min_props) {
		leaf_begin(out, &e, n, "minProperties", "specified number of properties was not satisfied");
		bson_append_int32(&e, "numberOfProperties", -1, nfields);
		bson_append_document_end(out->arr, &e);
	}
	if (n->max_props >= 0 && nfields > n->max_props) {
		leaf_begin(out, &e, n, "maxProperties", "specified number of properties was not satisfied");
		bson_append_int32(&e, "numberOfProperties", -1, nfields);
		bson_append_document_end(out->arr, &e);
	}
}

static void
explain_deps(const snode_t *n, const bson_value_t *v, abuf_t *out)
{
	bson_t e, arr;
	abuf_t ab = {&arr, 0};
	bool opened = false;
	bson_iter_t it;

	for (uint32_t i = 0; i < n->ndeps; i++) {
		const sch_dep_t *d = &n->deps[i];
		bson_t de;
		bool fails = false;

		if (!has_path(v, d->name))
			continue;
		if (d->schema) {
			fails = !sch_node_match(d->schema, v);
		} else {
			for (uint32_t j = 0; j < d->nprops && !fails; j++)
				fails = !has_path(v, d->props[j]);
		}
		if (!fails)
			continue;
		if (!opened) {
			ab_doc_begin(out, &e);
			bson_append_utf8(&e, "operatorName", -1, "dependencies", -1);
			/* title/description written inside the dependencies object */
			if (bson_iter_init_find(&it, n->raw, "dependencies") &&
			    BSON_ITER_HOLDS_DOCUMENT(&it)) {
				bson_iter_t c;
				if (bson_iter_recurse(&it, &c) && bson_iter_find(&c, "title") &&
				    BSON_ITER_HOLDS_UTF8(&c))
					bson_append_utf8(&e, "title", -1, bson_iter_utf8(&c, NULL), -1);
				if (bson_iter_recurse(&it, &c) && bson_iter_find(&c, "description") &&
				    BSON_ITER_HOLDS_UTF8(&c))
					bson_append_utf8(&e, "description", -1, bson_iter_utf8(&c, NULL), -1);
			}
			bson_append_array_begin(&e, "failingDependencies", -1, &arr);
			opened = true;
		}
		ab_doc_begin(&ab, &de);
		bson_append_utf8(&de, "conditionalProperty", -1, d->name, -1);
		if (d->schema) {
			explain_details(d->schema, v, &de, "details");
		} else {
			bson_t mp;
			abuf_t mab = {&mp, 0};
			bson_append_array_begin(&de, "missingProperties", -1, &mp);
			for (uint32_t j = 0; j < d->nprops; j++)
				if (!has_path(v, d->props[j]))
					ab_utf8(&mab, d->props[j]);
			bson_append_array_end(&de, &mp);
		}
		bson_append_document_end(&arr, &de);
	}
	if (opened) {
		bson_append_array_end(&e, &arr);
		bson_append_document_end(out->arr, &e);
	}
}

/* allOf / anyOf / oneOf with no match: schemasNotSatisfied. */
static void
explain_clauses(const char *kw, snode_t *const *subs, uint32_t nsubs, bool only_failing,
		const bson_value_t *v, abuf_t *out)
{
	bson_t e, arr;
	abuf_t ab = {&arr, 0};

	ab_doc_begin(out, &e);
	bson_append_utf8(&e, "operatorName", -1, kw, -1);
	bson_append_array_begin(&e, "schemasNotSatisfied", -1, &arr);
	for (uint32_t i = 0; i < nsubs; i++) {
		bson_t c;
		if (only_failing && sch_node_match(subs[i], v))
			continue;
		ab_doc_begin(&ab, &c);
		bson_append_int32(&c, "index", -1, (int32_t)i);
		if (!subs[i]->always_false)
			append_annotations(&c, subs[i]);
		explain_details(subs[i], v, &c, "details");
		bson_append_document_end(&arr, &c);
	}
	bson_append_array_end(&e, &arr);
	bson_append_document_end(out->arr, &e);
}

static void
explain_logic(const snode_t *n, const bson_value_t *v, abuf_t *out)
{
	bson_t e, arr;

	if (n->nall_of) {
		bool fails = false;
		for (uint32_t i = 0; i < n->nall_of && !fails; i++)
			fails = !sch_node_match(n->all_of[i], v);
		if (fails)
			explain_clauses("allOf", n->all_of, n->nall_of, true, v, out);
	}
	if (n->nany_of) {
		bool ok = false;
		for (uint32_t i = 0; i < n->nany_of && !ok; i++)
			ok = sch_node_match(n->any_of[i], v);
		if (!ok)
			explain_clauses("anyOf", n->any_of, n->nany_of, false, v, out);
	}
	if (n->none_of) {
		uint32_t hits = 0;
		for (uint32_t i = 0; i < n->none_of; i++)
			if (sch_node_match(n->one_of[i], v))
				hits++;
		if (hits == 0) {
			explain_clauses("oneOf", n->one_of, n->none_of, false, v, out);
		} else if (hits > 1) {
			abuf_t ab = {&arr, 0};
			ab_doc_begin(out, &e);
			bson_append_utf8(&e, "operatorName", -1, "oneOf", -1);
			bson_append_utf8(&e, "reason", -1, "more than one subschema matched", -1);
			bson_append_array_begin(&e, "matchingSchemaIndexes", -1, &arr);
			for (uint32_t i = 0; i < n->none_of; i++)
				if (sch_node_match(n->one_of[i], v)) {
					char buf[16];
					const char *key;
					size_t kl = bson_uint32_to_string(ab.n++, &key, buf, sizeof buf);
					bson_append_int32(&arr, key, (int)kl, (int32_t)i);
				}
			bson_append_array_end(&e, &arr);
			bson_append_document_end(out->arr, &e);
		}
	}
	if (n->not_ && sch_node_match(n->not_, v)) {
		ab_doc_begin(out, &e);
		bson_append_utf8(&e, "operatorName", -1, "not", -1);
		bson_append_utf8(&e, "reason", -1, "child expression matched", -1);
		bson_append_document_end(out->arr, &e);
	}
	if (n->enum_arr) {
		if (n->enum_always_false) {
			leaf_begin(out, &e, n, "enum", "expression always evaluates to false");
			bson_append_document_end(out->arr, &e);
		} else if (!sch_enum_contains(n, v)) {
			leaf_begin(out, &e, n, "enum", "value was not found in enum");
			append_considered(&e, v);
			bson_append_document_end(out->arr, &e);
		}
	}
}

static void
explain_node(const snode_t *n, const bson_value_t *v, abuf_t *out)
{
	bson_type_t t = v->value_type;
	bson_t e;

	if (t == BSON_TYPE_UTF8 && !n->off_string)
		explain_string(n, v, out);
	else if (sch_is_num(t) && !n->off_number)
		explain_number(n, v, out);
	else if (t == BSON_TYPE_ARRAY && !n->off_array)
		explain_array(n, v, out);
	if (n->encrypt)
		explain_encrypt(n, v, out);
	if (t == BSON_TYPE_DOCUMENT) {
		if (!n->off_object)
			explain_object(n, v, out);
		if (n->has_deps)
			explain_deps(n, v, out);
	}
	explain_logic(n, v, out);
	if (!n->top && n->has_type && !(n->type_mask & sch_type_bit(t))) {
		ab_doc_begin(out, &e);
		bson_append_utf8(&e, "operatorName", -1, n->type_is_json ? "type" : "bsonType", -1);
		append_specified(&e, n, n->type_is_json ? "type" : "bsonType");
		bson_append_utf8(&e, "reason", -1, "type did not match", -1);
		append_considered(&e, v);
		bson_append_utf8(&e, "consideredType", -1, tname(t), -1);
		bson_append_document_end(out->arr, &e);
	}
}

/* The fields of mongod's {operatorName: "$jsonSchema", ...} object. */
static void
explain_root_fields(const snode_t *root, const bson_value_t *v, bson_t *d)
{
	bson_append_utf8(d, "operatorName", -1, "$jsonSchema", -1);
	if (root->always_false) {
		append_specified_schema(d, root);
		bson_append_utf8(d, "reason", -1, "expression always evaluates to false", -1);
	} else {
		bson_t arr;
		abuf_t ab = {&arr, 0};
		append_annotations(d, root);
		bson_append_array_begin(d, "schemaRulesNotSatisfied", -1, &arr);
		explain_node(root, v, &ab);
		bson_append_array_end(d, &arr);
	}
}

bool
schema_explain_flags(const schema_t *s, const bson_t *doc, unsigned flags, bson_t *details)
{
	bson_value_t v;

	sch_doc_value(doc, &v);
	if (sch_node_match(s->root, &v))
		return true;
	tl_truncate = (flags & SCHEMA_EXPLAIN_TRUNCATE) != 0;
	explain_root_fields(s->root, &v, details);
	tl_truncate = false;
	return false;
}

bool
schema_explain(const schema_t *s, const bson_t *doc, bson_t *details)
{
	return schema_explain_flags(s, doc, 0, details);
}

bool
schema_explain_append(const schema_t *s, const bson_t *doc, bson_t *parent, const char *key)
{
	bson_value_t v;
	bson_t d;

	sch_doc_value(doc, &v);
	if (sch_node_match(s->root, &v))
		return true;
	bson_append_document_begin(parent, key, -1, &d);
	explain_root_fields(s->root, &v, &d);
	bson_append_document_end(parent, &d);
	return false;
}

bool
schema_explain_inverted_append(const schema_t *s, const bson_t *doc, bson_t *parent,
			       const char *key)
{
	bson_value_t v;
	bson_t d;

	sch_doc_value(doc, &v);
	if (!sch_node_match(s->root, &v))
		return false;
	bson_append_document_begin(parent, key, -1, &d);
	bson_append_utf8(&d, "operatorName", -1, "$jsonSchema", -1);
	bson_append_utf8(&d, "reason", -1, "schema matched", -1);
	bson_append_document_end(parent, &d);
	return true;
}
