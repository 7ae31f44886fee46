/*
 * update.c -- compiling an update (operators, replacement, pipeline) and
 * applying it to one document.
 *
 * Operator updates become a tree (update_private.h) built as mongod builds
 * its UpdateObjectNode tree: paths are checked (empty parts, positional
 * rules), conflicts are found while merging ("Updating the path 'a.b' would
 * create a conflict at 'a'"), and children are kept in MongoDB's order
 * (names compared as strings, all-digit names numerically) so that new
 * fields appear in that order.  Applying builds the new document bottom-up,
 * copying untouched fields as they are.
 *
 * Not here: the operators themselves (op_field.c, op_array.c), pipelines
 * (pipeline.c), upsert documents (upsert.c).
 */
#include "update/update_private.h"

#include <stdlib.h>
#include <string.h>

#include "bson/path.h"
#include "bson/value.h"
#include "common/opctx.h"
#include "query/match.h"

/* ------------------------------------------------------------------ */
/* small helpers                                                       */

void
update_res_set_copy(ures_t *r, const bson_value_t *v)
{
	r->kind = UR_SET;
	bson_value_copy(v, &r->val);
}

void
update_res_set_steal_doc(ures_t *r, bson_t *doc, bool is_array)
{
	uint8_t *buf = bson_malloc(doc->len);

	memcpy(buf, bson_get_data(doc), doc->len);
	r->kind = UR_SET;
	r->val.value_type = is_array ? BSON_TYPE_ARRAY : BSON_TYPE_DOCUMENT;
	r->val.value.v_doc.data = buf;
	r->val.value.v_doc.data_len = doc->len;
	bson_destroy(doc);
}

static void
res_clear(ures_t *r)
{
	if (r->kind == UR_SET)
		bson_value_destroy(&r->val);
	r->kind = UR_KEEP;
}

bool
update_value_identical(const bson_value_t *a, const bson_value_t *b)
{
	bson_t da, db;
	bool eq;

	if (a->value_type != b->value_type)
		return false;
	switch (a->value_type) {
	case BSON_TYPE_DOCUMENT:
	case BSON_TYPE_ARRAY:
		return a->value.v_doc.data_len == b->value.v_doc.data_len &&
		       memcmp(a->value.v_doc.data, b->value.v_doc.data, a->value.v_doc.data_len) == 0;
	case BSON_TYPE_DOUBLE:
		return memcmp(&a->value.v_double, &b->value.v_double, sizeof(double)) == 0;
	default:
		break;
	}
	/* Everything else: compare the encoded bytes. */
	bson_init(&da);
	bson_init(&db);
	bson_append_value(&da, "", 0, a);
	bson_append_value(&db, "", 0, b);
	eq = da.len == db.len && memcmp(bson_get_data(&da), bson_get_data(&db), da.len) == 0;
	bson_destroy(&da);
	bson_destroy(&db);
	return eq;
}

static int
depth_data(const uint8_t *data, uint32_t len)
{
	bson_iter_t it;
	int max = 0;
	bool any = false;

	if (!bson_iter_init_from_data(&it, data, len))
		return 0;
	while (bson_iter_next(&it)) {
		any = true;
		if (BSON_ITER_HOLDS_DOCUMENT(&it) || BSON_ITER_HOLDS_ARRAY(&it)) {
			const uint8_t *d;
			uint32_t l;
			int x;

			if (BSON_ITER_HOLDS_DOCUMENT(&it))
				bson_iter_document(&it, &l, &d);
			else
				bson_iter_array(&it, &l, &d);
			x = depth_data(d, l);
			if (x > max)
				max = x;
		}
	}
	return any ? max + 1 : 0;
}

int
update_value_depth(const bson_value_t *v)
{
	if (v->value_type != BSON_TYPE_DOCUMENT && v->value_type != BSON_TYPE_ARRAY)
		return 0;
	return depth_data(v->value.v_doc.data, v->value.v_doc.data_len);
}

static void
st_push(uapply_t *st, const char *name)
{
	if (st->ncomp == st->capcomp) {
		st->capcomp = st->capcomp ? st->capcomp * 2 : 8;
		st->comp = bson_realloc(st->comp, st->capcomp * sizeof(char *));
	}
	st->comp[st->ncomp++] = name;
}

static void
st_pop(uapply_t *st)
{
	st->ncomp--;
}

char *
update_path_str(const uapply_t *st, const char *last)
{
	bson_string_t *s = bson_string_new(NULL);

	for (size_t i = 0; i < st->ncomp; i++) {
		if (i)
			bson_string_append_c(s, '.');
		bson_string_append(s, st->comp[i]);
	}
	if (last != NULL) {
		if (st->ncomp)
			bson_string_append_c(s, '.');
		bson_string_append(s, last);
	}
	return bson_string_free(s, false);
}

char *
update_id_str(const uapply_t *st, const char *missing)
{
	bson_iter_t it;
	char *v, *s;

	if (!bson_iter_init_find(&it, st->root, "_id"))
		return bson_strdup(missing);
	v = bv_to_mongo_string(bson_iter_value(&it));
	s = bson_strdup_printf("_id: %s", v);
	bson_free(v);
	return s;
}

/* MongoDB orders update children as strings, except that two all-digit
 * names of different lengths compare by length (so "10" after "9"). */
static int
name_cmp(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	if (la != lb && la > 0 && lb > 0 && strspn(a, "0123456789") == la &&
	    strspn(b, "0123456789") == lb)
		return la < lb ? -1 : 1;
	return strcmp(a, b);
}

/* ------------------------------------------------------------------ */
/* tree                                                                */

static void
node_free(unode_t *n)
{
	if (n == NULL)
		return;
	for (size_t i = 0; i < n->n; i++) {
		bson_free(n->names[i]);
		node_free(n->kids[i]);
	}
	bson_free(n->names);
	bson_free(n->lens);
	bson_free(n->kids);
	tm_nameidx_free(&n->idx);
	node_free(n->positional);
	if (n->kind == UNODE_LEAF) {
		if (n->op != NULL && n->op->free != NULL && n->priv != NULL)
			n->op->free(n->priv);
		bson_value_destroy(&n->arg);
	}
	bson_free(n->path);
	bson_free(n->from);
	bson_free(n);
}

static unode_t *
node_new(unode_kind_t kind)
{
	unode_t *n = bson_malloc0(sizeof *n);

	n->kind = kind;
	n->arg.value_type = BSON_TYPE_NULL;
	return n;
}

static const char *
node_name(const void *ctx, uint32_t i, size_t *len)
{
	const unode_t *n = ctx;

	*len = n->lens[i];
	return n->names[i];
}

static ssize_t
node_find_len(const unode_t *n, const char *name, size_t len)
{
	size_t lo = 0, hi = n->n;

	if (n->unsorted)
		return (ssize_t)tm_nameidx_find((tm_nameidx_t *)&n->idx, (uint32_t)n->n, name, len, node_name, n);
	if (n->n <= 8) {
		for (size_t i = 0; i < n->n; i++)
			if (n->lens[i] == len && memcmp(n->names[i], name, len) == 0)
				return (ssize_t)i;
		return -1;
	}

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = name_cmp(n->names[mid], name);

		if (c == 0)
			return (ssize_t)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static ssize_t
node_find(const unode_t *n, const char *name)
{
	return node_find_len(n, name, strlen(name));
}

static unode_t *
node_get(const unode_t *n, const char *name)
{
	ssize_t i;

	if (n->kind == UNODE_OBJECT && strcmp(name, "$") == 0)
		return n->positional;
	i = node_find(n, name);
	return i < 0 ? NULL : n->kids[i];
}

static void
node_set(unode_t *n, const char *name, unode_t *kid)
{
	size_t pos = 0;

	if (n->kind == UNODE_OBJECT && strcmp(name, "$") == 0) {
		n->positional = kid;
		return;
	}
	{
		/* binary search for the insertion point (names are sorted) */
		size_t lo = 0, hi = n->n;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (name_cmp(n->names[mid], name) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		pos = lo;
	}
	if (n->n == n->cap) {
		n->cap = n->cap ? n->cap * 2 : 4;
		n->names = bson_realloc(n->names, n->cap * sizeof(char *));
		n->lens = bson_realloc(n->lens, n->cap * sizeof(uint32_t));
		n->kids = bson_realloc(n->kids, n->cap * sizeof(unode_t *));
	}
	memmove(n->names + pos + 1, n->names + pos, (n->n - pos) * sizeof(char *));
	memmove(n->lens + pos + 1, n->lens + pos, (n->n - pos) * sizeof(uint32_t));
	n->lens[pos] = (uint32_t)strlen(name);
	n->first[(uint8_t)name[0] >> 3] |= (uint8_t)(1u << ((uint8_t)name[0] & 7));
	memmove(n->kids + pos + 1, n->kids + pos, (n->n - pos) * sizeof(unode_t *));
	n->names[pos] = bson_strdup(name);
	n->kids[pos] = kid;
	n->n++;
}

/* While compiling: append a child (sorted at the end by node_sort_all). */
static void
node_add(unode_t *n, const char *name, unode_t *kid)
{
	if (n->kind == UNODE_OBJECT && strcmp(name, "$") == 0) {
		n->positional = kid;
		return;
	}
	if (n->n == n->cap) {
		n->cap = n->cap ? n->cap * 2 : 4;
		n->names = bson_realloc(n->names, n->cap * sizeof(char *));
		n->lens = bson_realloc(n->lens, n->cap * sizeof(uint32_t));
		n->kids = bson_realloc(n->kids, n->cap * sizeof(unode_t *));
	}
	n->lens[n->n] = (uint32_t)strlen(name);
	n->first[(uint8_t)name[0] >> 3] |= (uint8_t)(1u << ((uint8_t)name[0] & 7));
	n->names[n->n] = bson_strdup(name);
	n->kids[n->n] = kid;
	n->n++;
	n->unsorted = true;
}

static int
perm_cmp(const void *a, const void *b, void *ctx)
{
	const unode_t *n = ctx;

	return name_cmp(n->names[*(const size_t *)a], n->names[*(const size_t *)b]);
}

/* The end of compiling: every node's children in MongoDB's order (the
 * order updates apply in), found by binary search from now on.  One sort
 * per node: O(n log n) for n fields, where sorted insertion was O(n^2). */
static void
node_sort_all(unode_t *n)
{
	if (n == NULL)
		return;
	if (n->unsorted && n->n > 1) {
		size_t *perm = bson_malloc(n->n * sizeof(size_t));
		char **names = bson_malloc(n->n * sizeof(char *));
		uint32_t *lens = bson_malloc(n->n * sizeof(uint32_t));
		unode_t **kids = bson_malloc(n->n * sizeof(unode_t *));

		for (size_t i = 0; i < n->n; i++)
			perm[i] = i;
		qsort_r(perm, n->n, sizeof(size_t), perm_cmp, n);
		for (size_t i = 0; i < n->n; i++) {
			names[i] = n->names[perm[i]];
			lens[i] = n->lens[perm[i]];
			kids[i] = n->kids[perm[i]];
		}
		memcpy(n->names, names, n->n * sizeof(char *));
		memcpy(n->lens, lens, n->n * sizeof(uint32_t));
		memcpy(n->kids, kids, n->n * sizeof(unode_t *));
		bson_free(perm);
		bson_free(names);
		bson_free(lens);
		bson_free(kids);
	}
	n->unsorted = false;
	tm_nameidx_free(&n->idx);
	for (size_t i = 0; i < n->n; i++)
		node_sort_all(n->kids[i]);
	node_sort_all(n->positional);
}

static bool
is_identifier_part(const char *p, size_t len)
{
	return len >= 3 && p[0] == '$' && p[1] == '[' && p[len - 1] == ']';
}

/* Split path into parts (owned array of owned strings). */
static char **
split_path(const char *path, size_t *n)
{
	size_t cnt = 1, k = 0;
	char **parts;
	const char *s = path;

	for (const char *p = path; *p; p++)
		if (*p == '.')
			cnt++;
	parts = bson_malloc0(cnt * sizeof(char *));
	for (;;) {
		const char *dot = strchr(s, '.');
		size_t len = dot ? (size_t)(dot - s) : strlen(s);

		parts[k++] = bson_strndup(s, len);
		if (!dot)
			break;
		s = dot + 1;
	}
	*n = cnt;
	return parts;
}

static void
free_parts(char **parts, size_t n)
{
	for (size_t i = 0; i < n; i++)
		bson_free(parts[i]);
	bson_free(parts);
}

static ufilter_t *
filter_find(update_t *u, const char *id)
{
	for (size_t i = 0; i < u->nfilters; i++)
		if (strcmp(u->filters[i].id, id) == 0)
			return &u->filters[i];
	return NULL;
}

/* The child name for part i: identifiers "$[x]" -> "x" (checked). */
static int
part_name(update_t *u, const char *path, char **parts, size_t i, char **out, terr_t *err)
{
	const char *p = parts[i];
	size_t len = strlen(p);
	ufilter_t *f;

	if (!is_identifier_part(p, len)) {
		*out = bson_strdup(p);
		return 0;
	}
	if (i == 0)
		return terr_set(err, TERR_BAD_VALUE,
		                "Cannot have array filter identifier (i.e. '$[<id>]') element in the "
		                "first position in path '%s'", path);
	*out = bson_strndup(p + 2, len - 3);
	if (**out != '\0') {
		f = filter_find(u, *out);
		if (f == NULL) {
			terr_set(err, TERR_BAD_VALUE,
			         "No array filter found for identifier '%s' in path '%s'", *out, path);
			bson_free(*out);
			*out = NULL;
			return -1;
		}
		f->used = true;
	}
	return 0;
}

/* Merge one (operator, path, argument) into the tree. */
static int
tree_add(update_t *u, const uop_t *op, const char *path, const bson_value_t *arg,
         const char *from, terr_t *err)
{
	size_t n = 0, npos = 0, firstpos = 0;
	char **parts = NULL;
	unode_t *leaf = NULL, *cur = u->root;
	char *name = NULL;
	int ret = -1;

	if (*path == '\0') {
		terr_set(err, TERR_EMPTY_FIELD_NAME, "An empty update path is not valid.");
		goto err;
	}
	parts = split_path(path, &n);
	if (n > UPDATE_MAX_PATH_PARTS) {
		terr_set(err, TERR_OVERFLOW, "Document exceeds maximum nesting depth of %d",
		         UPDATE_MAX_DEPTH);
		goto err;
	}
	for (size_t i = 0; i < n; i++) {
		if (parts[i][0] == '\0') {
			terr_set(err, TERR_EMPTY_FIELD_NAME,
			         "The update path '%s' contains an empty field name, which is not allowed.",
			         path);
			goto err;
		}
		if (strcmp(parts[i], "$") == 0) {
			if (npos++ == 0)
				firstpos = i;
		}
	}
	if (npos > 1) {
		terr_set(err, TERR_BAD_VALUE, "Too many positional (i.e. '$') elements found in path '%s'",
		         path);
		goto err;
	}
	if (npos == 1 && firstpos == 0) {
		terr_set(err, TERR_BAD_VALUE,
		         "Cannot have positional (i.e. '$') element in the first position in path '%s'",
		         path);
		goto err;
	}
	leaf = node_new(UNODE_LEAF);
	leaf->op = op;
	leaf->path = bson_strdup(path);
	if (from != NULL)
		leaf->from = bson_strdup(from);
	bson_value_copy(arg, &leaf->arg);
	leaf->coll = u->coll;
	if (op->parse != NULL && op->parse(leaf, &leaf->arg, err) != 0)
		goto err;

	for (size_t i = 0; i + 1 < n; i++) {
		bool want_array = is_identifier_part(parts[i + 1], strlen(parts[i + 1]));
		unode_t *kid;

		if (part_name(u, path, parts, i, &name, err) != 0)
			goto err;
		kid = node_get(cur, name);
		if (kid != NULL) {
			if (kid->kind != (want_array ? UNODE_ARRAY : UNODE_OBJECT)) {
				bson_string_t *pre = bson_string_new(NULL);

				for (size_t k = 0; k <= i; k++) {
					if (k)
						bson_string_append_c(pre, '.');
					bson_string_append(pre, parts[k]);
				}
				terr_set(err, TERR_CONFLICTING_UPDATE_OPERATORS,
				         "Updating the path '%s' would create a conflict at '%s'", path, pre->str);
				bson_string_free(pre, true);
				goto err;
			}
		} else {
			kid = node_new(want_array ? UNODE_ARRAY : UNODE_OBJECT);
			node_add(cur, name, kid);
		}
		bson_free(name);
		name = NULL;
		cur = kid;
	}
	if (part_name(u, path, parts, n - 1, &name, err) != 0)
		goto err;
	if (node_get(cur, name) != NULL) {
		terr_set(err, TERR_CONFLICTING_UPDATE_OPERATORS,
		         "Updating the path '%s' would create a conflict at '%s'", path, path);
		goto err;
	}
	node_add(cur, name, leaf);
	leaf = NULL;
	if (npos)
		u->positional = true;
	ret = 0;
err:
	bson_free(name);
	node_free(leaf);
	if (parts)
		free_parts(parts, n);
	return ret;
}

const uop_t *
update_op_find(const char *name)
{
	for (const uop_t *o = update_ops_field; o->name; o++)
		if (strcmp(o->name, name) == 0)
			return o;
	for (const uop_t *o = update_ops_array; o->name; o++)
		if (strcmp(o->name, name) == 0)
			return o;
	return NULL;
}

/* ------------------------------------------------------------------ */
/* arrayFilters                                                        */

static bool
valid_identifier(const char *s)
{
	if (!(*s >= 'a' && *s <= 'z'))
		return false;
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
			return false;
	return true;
}

static int
compile_filters(update_t *u, const bson_t *af, terr_t *err)
{
	bson_iter_t it;
	size_t cnt = 0;

	if (!bson_iter_init(&it, af))
		return terr_set(err, TERR_FAILED_TO_PARSE, "arrayFilters is not valid BSON");
	while (bson_iter_next(&it))
		cnt++;
	u->filters = bson_malloc0((cnt ? cnt : 1) * sizeof(ufilter_t));
	bson_iter_init(&it, af);
	while (bson_iter_next(&it)) {
		bson_t fdoc;
		bson_iter_t fi;
		const uint8_t *d;
		uint32_t l;
		char *id = NULL;
		terr_t sub = TERR_INIT;

		if (!BSON_ITER_HOLDS_DOCUMENT(&it))
			return terr_set(err, TERR_TYPE_MISMATCH,
			                "BSON field 'update.updates.arrayFilters' is the wrong type '%s', "
			                "expected type 'object'", bv_type_name(bson_iter_type(&it)));
		bson_iter_document(&it, &l, &d);
		bson_init_static(&fdoc, d, l);
		bson_iter_init(&fi, &fdoc);
		while (bson_iter_next(&fi)) {
			const char *key = bson_iter_key(&fi);
			const char *dot = strchr(key, '.');
			size_t klen = dot ? (size_t)(dot - key) : strlen(key);

			if (key[0] == '$' && strcmp(key, "$comment") != 0 && klen == strlen(key) &&
			    (strcmp(key, "$and") == 0 || strcmp(key, "$or") == 0 ||
			     strcmp(key, "$nor") == 0)) {
				/* logical operators: the identifier comes from their children;
				 * take the first path found inside */
				bson_iter_t arr, cl, ck;

				if (BSON_ITER_HOLDS_ARRAY(&fi) && bson_iter_recurse(&fi, &arr) &&
				    bson_iter_next(&arr) && BSON_ITER_HOLDS_DOCUMENT(&arr) &&
				    bson_iter_recurse(&arr, &cl) && bson_iter_next(&cl)) {
					const char *k2 = bson_iter_key(&cl);
					const char *d2 = strchr(k2, '.');
					char *cand = bson_strndup(k2, d2 ? (size_t)(d2 - k2) : strlen(k2));

					(void)ck;
					if (id == NULL)
						id = cand;
					else
						bson_free(cand);
				}
				continue;
			}
			if (key[0] == '$') {
				bson_free(id);
				return terr_set(err, TERR_FAILED_TO_PARSE,
				                "Cannot use an expression without a top-level field name in "
				                "arrayFilters");
			}
			if (id == NULL) {
				id = bson_strndup(key, klen);
			} else if (strlen(id) != klen || strncmp(id, key, klen) != 0) {
				char *other = bson_strndup(key, klen);

				terr_set(err, TERR_FAILED_TO_PARSE,
				         "Error parsing array filter :: caused by :: Expected a single top-level "
				         "field name, found '%s' and '%s'", id, other);
				bson_free(other);
				bson_free(id);
				return -1;
			}
		}
		if (id == NULL)
			return terr_set(err, TERR_FAILED_TO_PARSE,
			                "Cannot use an expression without a top-level field name in "
			                "arrayFilters");
		if (!valid_identifier(id)) {
			terr_set(err, TERR_BAD_VALUE,
			         "Error parsing array filter :: caused by :: The top-level field name must "
			         "be an alphanumeric string beginning with a lowercase letter, found '%s'", id);
			bson_free(id);
			return -1;
		}
		if (filter_find(u, id) != NULL) {
			terr_set(err, TERR_FAILED_TO_PARSE,
			         "Found multiple array filters with the same top-level field name %s", id);
			bson_free(id);
			return -1;
		}
		match_options_t fo = {0};

		fo.coll = u->coll;
		if (match_compile(&fdoc, &fo, &u->filters[u->nfilters].m, &sub) != 0) {
			terr_move(err, &sub);
			terr_wrap(err, "Error parsing array filter");
			bson_free(id);
			return -1;
		}
		u->filters[u->nfilters++].id = id;
	}
	return 0;
}

int
update_match_value(const match_t *m, const char *wrap, const bson_value_t *elem, bool *out,
                   terr_t *err)
{
	bson_t w;
	int r;

	bson_init(&w);
	bson_append_value(&w, wrap, -1, elem);
	r = match_exec(m, &w, NULL, err);
	bson_destroy(&w);
	if (r < 0)
		return -1;
	*out = r == 1;
	return 0;
}

int
update_filter_matches(const uapply_t *st, const char *id, const bson_value_t *elem, bool *out,
                      terr_t *err)
{
	ufilter_t *f = filter_find((update_t *)st->u, id);

	if (f == NULL) { /* cannot happen: checked at compile time */
		*out = false;
		return 0;
	}
	return update_match_value(f->m, id, elem, out, err);
}

/* ------------------------------------------------------------------ */
/* compile                                                             */

static int
compile_operators(update_t *u, const bson_t *doc, const update_options_t *opts, terr_t *err)
{
	bson_iter_t it;

	u->root = node_new(UNODE_OBJECT);
	if (opts != NULL && opts->array_filters != NULL)
		RET(compile_filters(u, opts->array_filters, err));
	bson_iter_init(&it, doc);
	while (bson_iter_next(&it)) {
		const char *opname = bson_iter_key(&it);
		const uop_t *op = update_op_find(opname);
		bson_iter_t fi;

		if (op == NULL)
			return terr_set(err, TERR_FAILED_TO_PARSE,
			                "Unknown modifier: %s. Expected a valid update modifier or "
			                "pipeline-style update specified as an array", opname);
		if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
			char *v = bv_to_mongo_string(bson_iter_value(&it));

			terr_set(err, TERR_FAILED_TO_PARSE,
			         "Modifiers operate on fields but we found type %s instead. For example: "
			         "{$mod: {<field>: ...}} not {%s: %s}",
			         bv_type_name(bson_iter_type(&it)), opname, v);
			bson_free(v);
			return -1;
		}
		bson_iter_recurse(&it, &fi);
		while (bson_iter_next(&fi)) {
			const char *path = bson_iter_key(&fi);
			const bson_value_t *arg = bson_iter_value(&fi);

			RET(tm_interrupt_check(err));
			if (strcmp(opname, "$rename") == 0) {
				char *v;

				RET(tree_add(u, &update_op_rename_from, path, arg, NULL, err));
				if (arg->value_type != BSON_TYPE_UTF8) {
					v = bv_to_mongo_string(arg);
					terr_set(err, TERR_BAD_VALUE,
					         "The 'to' field for $rename must be a string: %s: %s", path, v);
					bson_free(v);
					return -1;
				}
				RET(tree_add(u, op, arg->value.v_utf8.str, arg, path, err));
			} else {
				RET(tree_add(u, op, path, arg, NULL, err));
			}
		}
	}
	for (size_t i = 0; i < u->nfilters; i++) {
		if (!u->filters[i].used) {
			char *s = bv_doc_to_mongo_string(doc);

			terr_set(err, TERR_FAILED_TO_PARSE,
			         "The array filter for identifier '%s' was not used in the update %s",
			         u->filters[i].id, s);
			bson_free(s);
			return -1;
		}
	}
	node_sort_all(u->root);
	return 0;
}

int
update_compile(const bson_value_t *uv, const update_options_t *opts, update_t **out, terr_t *err)
{
	update_t *u = bson_malloc0(sizeof *u);
	bson_t doc;
	bson_iter_t it;
	int ret = -1;

	u->repl = bson_new();
	u->coll = opts != NULL ? opts->coll : NULL;
	if (uv->value_type == BSON_TYPE_ARRAY) {
		u->kind = UPDATE_KIND_PIPELINE;
		if (opts != NULL && opts->array_filters != NULL && !bson_empty(opts->array_filters)) {
			terr_set(err, TERR_FAILED_TO_PARSE,
			         "arrayFilters may not be specified for pipeline-style updates");
			goto err;
		}
		ERR(update_pipe_compile(uv, opts ? opts->let : NULL, u->coll, &u->pipe, err));
		*out = u;
		return 0;
	}
	if (uv->value_type != BSON_TYPE_DOCUMENT) {
		terr_set(err, TERR_FAILED_TO_PARSE,
		         "Update argument must be either an object or an array");
		goto err;
	}
	if (!bson_init_static(&doc, uv->value.v_doc.data, uv->value.v_doc.data_len) ||
	    !bson_iter_init(&it, &doc)) {
		terr_set(err, TERR_INVALID_BSON, "invalid BSON in update");
		goto err;
	}
	if (bson_iter_next(&it) && bson_iter_key(&it)[0] == '$') {
		u->kind = UPDATE_KIND_OPERATORS;
		ERR(compile_operators(u, &doc, opts, err));
	} else {
		u->kind = UPDATE_KIND_REPLACEMENT;
		if (opts != NULL && opts->array_filters != NULL && !bson_empty(opts->array_filters)) {
			/* mongod: arrayFilters with a replacement are refused by the
			 * command layer's parser; keep the same check here. */
			terr_set(err, TERR_FAILED_TO_PARSE,
			         "arrayFilters may not be specified for replacement-style updates");
			goto err;
		}
		bson_concat(u->repl, &doc);
	}
	*out = u;
	return 0;
err:
	update_free(u);
	return ret ? ret : -1;
}

void
update_free(update_t *u)
{
	if (u == NULL)
		return;
	node_free(u->root);
	if (u->repl)
		bson_destroy(u->repl);
	update_pipe_free(u->pipe);
	for (size_t i = 0; i < u->nfilters; i++) {
		bson_free(u->filters[i].id);
		match_free(u->filters[i].m);
	}
	bson_free(u->filters);
	bson_free(u);
}

update_kind_t
update_kind(const update_t *u)
{
	return u->kind;
}

bool
update_is_replacement(const update_t *u)
{
	return u->kind == UPDATE_KIND_REPLACEMENT;
}

static void
node_each_path(const unode_t *n, update_path_fn fn, void *ctx)
{
	if (n == NULL)
		return;
	if (n->kind == UNODE_LEAF) {
		if (n->op == &update_op_rename_from)
			fn(n->path, "$rename", NULL, ctx);
		else
			fn(n->path, n->op->name, &n->arg, ctx);
		return;
	}
	for (size_t i = 0; i < n->n; i++)
		node_each_path(n->kids[i], fn, ctx);
	node_each_path(n->positional, fn, ctx);
}

bool
update_for_each_path(const update_t *u, update_path_fn fn, void *ctx)
{
	if (u == NULL || u->kind != UPDATE_KIND_OPERATORS)
		return false;
	node_each_path(u->root, fn, ctx);
	return true;
}

bool
update_uses_positional(const update_t *u)
{
	return u->positional;
}

/* ------------------------------------------------------------------ */
/* apply                                                               */

static int apply_node(const unode_t *n, const bson_value_t *cur, uapply_t *st, ures_t *out,
                      terr_t *err);

static int
not_viable(uapply_t *st, const char *child, const bson_value_t *cur, terr_t *err)
{
	char *v = bv_to_mongo_string(cur);
	const char *name = st->ncomp ? st->comp[st->ncomp - 1] : "";

	terr_set(err, TERR_PATH_NOT_VIABLE, "Cannot create field '%s' in element {%s: %s}", child,
	         name, v);
	bson_free(v);
	return -1;
}

static int
apply_child(const unode_t *kid, const char *name, const bson_value_t *cur, uapply_t *st,
            ures_t *out, terr_t *err)
{
	size_t saved = st->missing_at;
	int r;

	if (cur == NULL && st->missing_at == SIZE_MAX)
		st->missing_at = st->ncomp;
	st_push(st, name);
	r = apply_node(kid, cur, st, out, err);
	st_pop(st);
	st->missing_at = saved;
	return r;
}

/* Append a child's result (or the original value) to the output. */
static void
emit(bson_t *b, const char *key, size_t keylen, const bson_value_t *orig, const ures_t *r,
     bool in_array)
{
	if (r->kind == UR_SET) {
		bson_append_value(b, key, (int)keylen, &r->val);
	} else if (r->kind == UR_REMOVE) {
		if (in_array)
			bson_append_null(b, key, (int)keylen);
	} else if (orig != NULL) {
		bson_append_value(b, key, (int)keylen, orig);
	}
}

static const char *
positional_name(uapply_t *st, terr_t *err)
{
	if (st->ctx->matched_pos < 0) {
		terr_set(err, TERR_BAD_VALUE,
		         "The positional operator did not find the match needed from the query.");
		return NULL;
	}
	bson_snprintf(st->scratch, sizeof st->scratch, "%d", st->ctx->matched_pos);
	return st->scratch;
}

/* When n has a positional ('$') child: its name copied into buf (scratch is
 * reused below n) and *pname set to buf; *pname is left as it is otherwise. */
static int
positional_name_copy(const unode_t *n, uapply_t *st, char *buf, size_t size, const char **pname, terr_t *err)
{
	const char *p;

	if (n->positional == NULL)
		return 0;
	if ((p = positional_name(st, err)) == NULL)
		return -1;
	bson_strncpy(buf, p, size);
	*pname = buf;
	return 0;
}

/* Append elements data[from, to) of an encoded document to b as they are
 * (one copy instead of one append per field). */
static void
append_raw(bson_t *b, const uint8_t *data, uint32_t from, uint32_t to)
{
	uint8_t stackbuf[1024], *buf = stackbuf;
	uint32_t n = to - from, total = n + 5;
	bson_t tmp;

	if (n == 0)
		return;
	if (total > sizeof stackbuf)
		buf = bson_malloc(total);
	buf[0] = (uint8_t)(total & 0xff);
	buf[1] = (uint8_t)((total >> 8) & 0xff);
	buf[2] = (uint8_t)((total >> 16) & 0xff);
	buf[3] = (uint8_t)((total >> 24) & 0xff);
	memcpy(buf + 4, data + from, n);
	buf[4 + n] = 0;
	if (bson_init_static(&tmp, buf, total))
		bson_concat(b, &tmp);
	if (buf != stackbuf)
		bson_free(buf);
}

/* Object node over a document (or the root), written into b (initialised
 * by the caller); *changed tells whether any child changed. */
static int
object_doc_into(const unode_t *n, const bson_value_t *cur, uapply_t *st, bson_t *b_,
                bool *changed_out, terr_t *err)
{
	bson_t in;
	bson_iter_t it;
	bool *seen = NULL, changed = false;
	bool stack_seen[64];
	uint32_t run_start = 0, run_end = 0;

	*changed_out = false;
	const char *pname = NULL;
	char pbuf[32];
	int ret = -1;

	RET(positional_name_copy(n, st, pbuf, sizeof pbuf, &pname, err));
	bson_init_static(&in, cur->value.v_doc.data, cur->value.v_doc.data_len);
	if (n->n + 1 <= sizeof stack_seen) {
		seen = stack_seen;
		memset(seen, 0, n->n + 1);
	} else {
		seen = bson_malloc0(n->n + 1);
	}
	bson_iter_init(&it, &in);
	while (bson_iter_next(&it)) {
		const char *key = bson_iter_key(&it);
		const unode_t *kid = NULL;
		ssize_t k;
		ures_t r = {UR_KEEP};

		if (pname != NULL && !seen[n->n] && strcmp(key, pname) == 0) {
			kid = n->positional;
			seen[n->n] = true;
		} else if ((n->first[(uint8_t)key[0] >> 3] & (1u << ((uint8_t)key[0] & 7))) &&
		           (k = node_find_len(n, key, bson_iter_key_len(&it))) >= 0 && !seen[k]) {
			kid = n->kids[k];
			seen[k] = true;
		}
		if (kid == NULL) {
			/* untouched: extend the run of raw elements */
			if (run_end == 0)
				run_start = it.off;
			run_end = it.next_off;
			continue;
		}
		if (run_end != 0) {
			append_raw(b_, cur->value.v_doc.data, run_start, run_end);
			run_end = 0;
		}
		if (apply_child(kid, key, bson_iter_value(&it), st, &r, err) != 0)
			goto err;
		if (r.kind != UR_KEEP)
			changed = true;
		emit(b_, key, bson_iter_key_len(&it), bson_iter_value(&it), &r, false);
		res_clear(&r);
	}
	if (run_end != 0)
		append_raw(b_, cur->value.v_doc.data, run_start, run_end);
	/* children naming fields that do not exist: created in tree order */
	for (size_t i = 0; i <= n->n; i++) {
		const unode_t *kid = i < n->n ? n->kids[i] : n->positional;
		const char *name = i < n->n ? n->names[i] : pname;
		ures_t r = {UR_KEEP};

		if (kid == NULL || seen[i])
			continue;
		if (apply_child(kid, name, NULL, st, &r, err) != 0)
			goto err;
		if (r.kind == UR_SET) {
			bson_append_value(b_, name, -1, &r.val);
			changed = true;
		}
		res_clear(&r);
	}
	*changed_out = changed;
	ret = 0;
err:
	if (seen != stack_seen)
		bson_free(seen);
	return ret;
}

static int
apply_object_doc(const unode_t *n, const bson_value_t *cur, uapply_t *st, ures_t *out,
                 terr_t *err)
{
	bson_t b;
	bool changed = false;

	bson_init(&b);
	if (object_doc_into(n, cur, st, &b, &changed, err) != 0) {
		bson_destroy(&b);
		return -1;
	}
	if (changed)
		update_res_set_steal_doc(out, &b, false);
	else
		bson_destroy(&b);
	return 0;
}

/* Object node over an array: children name positions. */
static int
apply_object_array(const unode_t *n, const bson_value_t *cur, uapply_t *st, ures_t *out,
                   terr_t *err)
{
	bson_t in, b;
	bson_iter_t it;
	bool changed = false;
	uint32_t len = 0, maxidx = 0;
	bool have_new = false;
	const char *pname = NULL;
	char pbuf[32];
	int ret = -1;

	RET(positional_name_copy(n, st, pbuf, sizeof pbuf, &pname, err));
	bson_init_static(&in, cur->value.v_doc.data, cur->value.v_doc.data_len);
	bson_init(&b);
	bson_iter_init(&it, &in);
	while (bson_iter_next(&it)) {
		char key[16];
		const char *kp;
		const unode_t *kid;
		ures_t r = {UR_KEEP};

		bson_uint32_to_string(len, &kp, key, sizeof key);
		kid = (pname && strcmp(kp, pname) == 0) ? n->positional : node_get(n, kp);
		if (kid == NULL) {
			bson_append_value(&b, kp, -1, bson_iter_value(&it));
		} else {
			if (apply_child(kid, kp, bson_iter_value(&it), st, &r, err) != 0)
				goto err;
			if (r.kind != UR_KEEP)
				changed = true;
			emit(&b, kp, strlen(kp), bson_iter_value(&it), &r, true);
			res_clear(&r);
		}
		len++;
	}
	/* children beyond the end (or not positions at all) */
	for (size_t i = 0; i <= n->n; i++) {
		const unode_t *kid = i < n->n ? n->kids[i] : n->positional;
		const char *name = i < n->n ? n->names[i] : pname;
		uint32_t idx;
		ures_t r = {UR_KEEP};

		if (kid == NULL)
			continue;
		if (bpath_is_array_index(name, strlen(name), &idx) && idx < len)
			continue;
		if (apply_child(kid, name, NULL, st, &r, err) != 0)
			goto err;
		if (r.kind == UR_SET) {
			res_clear(&r);
			if (!bpath_is_array_index(name, strlen(name), &idx)) {
				not_viable(st, name, cur, err);
				goto err;
			}
			have_new = true;
			if (idx + 1 > maxidx)
				maxidx = idx + 1;
		}
		res_clear(&r);
	}
	if (have_new) {
		if (maxidx - len > UPDATE_MAX_PADDING) {
			terr_set(err, TERR_CANNOT_BACKFILL_ARRAY, "can't backfill more than %d elements",
			         UPDATE_MAX_PADDING);
			goto err;
		}
		for (uint32_t i = len; i < maxidx; i++) {
			char key[16];
			const char *kp;
			const unode_t *kid;
			ures_t r = {UR_KEEP};

			bson_uint32_to_string(i, &kp, key, sizeof key);
			kid = (pname && strcmp(kp, pname) == 0) ? n->positional : node_get(n, kp);
			if (kid != NULL && apply_child(kid, kp, NULL, st, &r, err) != 0)
				goto err;
			if (r.kind == UR_SET)
				bson_append_value(&b, kp, -1, &r.val);
			else
				bson_append_null(&b, kp, -1);
			res_clear(&r);
		}
		changed = true;
	}
	if (changed)
		update_res_set_steal_doc(out, &b, true);
	else
		bson_destroy(&b);
	return 0;
err:
	bson_destroy(&b);
	return ret;
}

/* Object node where nothing exists yet: build what the leaves create. */
static int
apply_object_missing(const unode_t *n, uapply_t *st, ures_t *out, terr_t *err)
{
	bson_t b;
	bool any = false;
	const char *pname = NULL;
	char pbuf[32];

	RET(positional_name_copy(n, st, pbuf, sizeof pbuf, &pname, err));
	bson_init(&b);
	for (size_t i = 0; i <= n->n; i++) {
		const unode_t *kid = i < n->n ? n->kids[i] : n->positional;
		const char *name = i < n->n ? n->names[i] : pname;
		ures_t r = {UR_KEEP};

		if (kid == NULL)
			continue;
		if (apply_child(kid, name, NULL, st, &r, err) != 0) {
			bson_destroy(&b);
			return -1;
		}
		if (r.kind == UR_SET) {
			bson_append_value(&b, name, -1, &r.val);
			any = true;
		}
		res_clear(&r);
	}
	if (any)
		update_res_set_steal_doc(out, &b, false);
	else
		bson_destroy(&b);
	return 0;
}

static int
apply_object_scalar(const unode_t *n, const bson_value_t *cur, uapply_t *st, ures_t *out,
                    terr_t *err)
{
	const char *pname = NULL;
	char pbuf[32];

	RET(positional_name_copy(n, st, pbuf, sizeof pbuf, &pname, err));
	for (size_t i = 0; i <= n->n; i++) {
		const unode_t *kid = i < n->n ? n->kids[i] : n->positional;
		const char *name = i < n->n ? n->names[i] : pname;
		ures_t r = {UR_KEEP};

		if (kid == NULL)
			continue;
		if (apply_child(kid, name, NULL, st, &r, err) != 0)
			return -1;
		if (r.kind == UR_SET) {
			res_clear(&r);
			return not_viable(st, name, cur, err);
		}
	}
	(void)out;
	return 0;
}

/*
 * Several $[<id>] children matching one element run as one node, merged as
 * mongod merges them (UpdateNode::createUpdateNodeByMerging): object and
 * array nodes combine their children, two leaves on one path conflict.  The
 * merged nodes are temporary and borrow the real children.
 */
typedef struct tmpnodes {
	unode_t **v;
	size_t n, cap;
} tmpnodes_t;

static unode_t *
tmp_node(tmpnodes_t *t, unode_kind_t kind)
{
	unode_t *m = node_new(kind);

	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 4;
		t->v = bson_realloc(t->v, t->cap * sizeof(unode_t *));
	}
	t->v[t->n++] = m;
	return m;
}

static void
tmp_free(tmpnodes_t *t)
{
	for (size_t i = 0; i < t->n; i++) {
		unode_t *m = t->v[i];

		for (size_t k = 0; k < m->n; k++)
			bson_free(m->names[k]);
		bson_free(m->names);
		bson_free(m->lens);
		bson_free(m->kids);
		bson_free(m);
	}
	bson_free(t->v);
	t->v = NULL;
	t->n = t->cap = 0;
}

static int
merge_nodes(const unode_t *a, const unode_t *b, const char *path, tmpnodes_t *t,
            const unode_t **out, terr_t *err)
{
	unode_t *m;

	if (a->kind == UNODE_LEAF || b->kind == UNODE_LEAF || a->kind != b->kind)
		return terr_set(err, TERR_CONFLICTING_UPDATE_OPERATORS,
		                "Update created a conflict at '%s'", path);
	m = tmp_node(t, a->kind);
	for (size_t i = 0; i < a->n; i++)
		node_set(m, a->names[i], a->kids[i]);
	m->positional = a->positional;
	for (size_t i = 0; i < b->n; i++) {
		ssize_t at = node_find(m, b->names[i]);

		if (at < 0) {
			node_set(m, b->names[i], b->kids[i]);
		} else {
			char *sub = bson_strdup_printf("%s.%s", path, b->names[i]);
			const unode_t *mk;
			int r = merge_nodes(m->kids[at], b->kids[i], sub, t, &mk, err);

			bson_free(sub);
			if (r != 0)
				return -1;
			m->kids[at] = (unode_t *)mk;
		}
	}
	if (b->positional != NULL) {
		if (m->positional == NULL) {
			m->positional = b->positional;
		} else {
			char *sub = bson_strdup_printf("%s.$", path);
			const unode_t *mk;
			int r = merge_nodes(m->positional, b->positional, sub, t, &mk, err);

			bson_free(sub);
			if (r != 0)
				return -1;
			m->positional = (unode_t *)mk;
		}
	}
	*out = m;
	return 0;
}

/* Array node ($[] / $[id]) over the value at its path. */
static int
apply_array_node(const unode_t *n, const bson_value_t *cur, uapply_t *st, ures_t *out,
                 terr_t *err)
{
	bson_t in, b;
	bson_iter_t it;
	uint32_t i = 0;
	bool changed = false;
	const unode_t *stack_hits[8], **hits = stack_hits;
	size_t nhit;
	tmpnodes_t tmp = {0};

	if (cur == NULL) {
		/* mongod names the part of the path that is missing */
		bson_string_t *p = bson_string_new(NULL);
		size_t from = st->missing_at < st->ncomp ? st->missing_at : 0;

		for (size_t i = from; i < st->ncomp; i++) {
			if (i > from)
				bson_string_append_c(p, '.');
			bson_string_append(p, st->comp[i]);
		}
		terr_set(err, TERR_BAD_VALUE,
		         "The path '%s' must exist in the document in order to apply array updates.",
		         p->str);
		bson_string_free(p, true);
		return -1;
	}
	if (cur->value_type != BSON_TYPE_ARRAY) {
		char *v = bv_to_mongo_string(cur);

		terr_set(err, TERR_BAD_VALUE, "Cannot apply array updates to non-array element %s: %s",
		         st->ncomp ? st->comp[st->ncomp - 1] : "", v);
		bson_free(v);
		return -1;
	}
	if (n->n > 8)
		hits = bson_malloc(n->n * sizeof *hits);
	bson_init_static(&in, cur->value.v_doc.data, cur->value.v_doc.data_len);
	bson_init(&b);
	bson_iter_init(&it, &in);
	while (bson_iter_next(&it)) {
		char key[16];
		const char *kp;
		const bson_value_t *orig = bson_iter_value(&it);
		ures_t acc = {UR_KEEP};

		bson_uint32_to_string(i++, &kp, key, sizeof key);
		nhit = 0;
		for (size_t k = 0; k < n->n; k++) {
			bool hit = true;

			if (n->names[k][0] != '\0' &&
			    update_filter_matches(st, n->names[k], orig, &hit, err) != 0)
				goto err;
			if (hit)
				hits[nhit++] = n->kids[k];
		}
		if (nhit > 1) {
			char *p = update_path_str(st, kp);
			const unode_t *m = hits[0];
			int r = 0;

			for (size_t k = 1; k < nhit && r == 0; k++)
				r = merge_nodes(m, hits[k], p, &tmp, &m, err);
			bson_free(p);
			if (r != 0)
				goto err;
			hits[0] = m;
			nhit = 1;
		}
		if (nhit == 1 && apply_child(hits[0], kp, orig, st, &acc, err) != 0)
			goto err;
		tmp_free(&tmp);
		if (acc.kind != UR_KEEP)
			changed = true;
		emit(&b, kp, strlen(kp), orig, &acc, true);
		res_clear(&acc);
	}
	if (changed)
		update_res_set_steal_doc(out, &b, true);
	else
		bson_destroy(&b);
	if (hits != stack_hits)
		bson_free(hits);
	return 0;
err:
	tmp_free(&tmp);
	bson_destroy(&b);
	if (hits != stack_hits)
		bson_free(hits);
	return -1;
}

static int
apply_node(const unode_t *n, const bson_value_t *cur, uapply_t *st, ures_t *out, terr_t *err)
{
	out->kind = UR_KEEP;
	switch (n->kind) {
	case UNODE_LEAF:
		RET(n->op->apply(n, cur, st, out, err));
		if (out->kind != UR_KEEP && st->has_id && st->ncomp > 0 &&
		    strcmp(st->comp[0], "_id") == 0) {
			char *p = update_path_str(st, NULL);

			res_clear(out);
			terr_set(err, TERR_IMMUTABLE_FIELD,
			         "Performing an update on the path '%s' would modify the immutable field "
			         "'_id'", p);
			bson_free(p);
			return -1;
		}
		if (out->kind == UR_SET &&
		    (int)st->ncomp + update_value_depth(&out->val) > UPDATE_MAX_DEPTH) {
			res_clear(out);
			return terr_set(err, TERR_OVERFLOW, "Document exceeds maximum nesting depth of %d",
			                UPDATE_MAX_DEPTH);
		}
		/* a top-level $-prefixed field: refused when it changes a stored
		 * document, allowed in the document an upsert inserts (mongod's
		 * allowTopLevelDollarPrefixes, since 5.0) */
		if (out->kind == UR_SET && st->ncomp == 1 && st->comp[0][0] == '$' &&
		    !(st->ctx != NULL && st->ctx->is_insert)) {
			res_clear(out);
			return terr_set(err, TERR_DOLLAR_PREFIXED_FIELD_NAME,
			                "The dollar ($) prefixed field '%s' in '%s' is not allowed in the "
			                "context of an update's replacement document. Consider using an "
			                "aggregation pipeline with $replaceWith.", st->comp[0], st->comp[0]);
		}
		return 0;
	case UNODE_ARRAY:
		return apply_array_node(n, cur, st, out, err);
	case UNODE_OBJECT:
		if (cur == NULL)
			return apply_object_missing(n, st, out, err);
		if (cur->value_type == BSON_TYPE_DOCUMENT)
			return apply_object_doc(n, cur, st, out, err);
		if (cur->value_type == BSON_TYPE_ARRAY)
			return apply_object_array(n, cur, st, out, err);
		return apply_object_scalar(n, cur, st, out, err);
	}
	return 0;
}

static int
check_size(const bson_t *doc, terr_t *err)
{
	if (doc->len > UPDATE_MAX_BSON_SIZE)
		return terr_set(err, TERR_BSON_OBJECT_TOO_LARGE, "Resulting document after update is larger than %d",
		                UPDATE_MAX_BSON_SIZE);
	return 0;
}


int
update_replace_into(const bson_t *old, const bson_t *repl, bool allow_top_dollar, bson_t *out,
                    bool *modified, terr_t *err)
{
	bson_iter_t it, oid, nid;
	bool old_has = bson_iter_init_find(&oid, old, "_id");
	bool new_has = bson_iter_init_find(&nid, repl, "_id");

	if (!allow_top_dollar) {
		bson_iter_init(&it, repl);
		while (bson_iter_next(&it)) {
			const char *k = bson_iter_key(&it);

			if (k[0] == '$' && strcmp(k, "$ref") != 0 && strcmp(k, "$id") != 0 &&
			    strcmp(k, "$db") != 0)
				return terr_set(err, TERR_DOLLAR_PREFIXED_FIELD_NAME,
				                "The dollar ($) prefixed field '%s' in '%s' is not allowed in "
				                "the context of an update's replacement document. Consider "
				                "using an aggregation pipeline with $replaceWith.", k, k);
		}
	}
	{
		bson_value_t rv;

		rv.value_type = BSON_TYPE_DOCUMENT;
		rv.value.v_doc.data = (uint8_t *)bson_get_data(repl);
		rv.value.v_doc.data_len = repl->len;
		if (update_value_depth(&rv) > UPDATE_MAX_DEPTH)
			return terr_set(err, TERR_OVERFLOW, "Document exceeds maximum nesting depth of %d",
			                UPDATE_MAX_DEPTH);
	}
	if (new_has) {
		bson_type_t t = bson_iter_type(&nid);

		if (t == BSON_TYPE_ARRAY || t == BSON_TYPE_REGEX || t == BSON_TYPE_UNDEFINED)
			return terr_set(err, TERR_INVALID_ID_FIELD, "The '_id' value cannot be of type %s",
			                bv_type_name(t));
		if (old_has && bv_compare(bson_iter_value(&oid), bson_iter_value(&nid)) != 0) {
			char *v = bv_to_mongo_string(bson_iter_value(&nid));

			terr_set(err, TERR_IMMUTABLE_FIELD,
			         "After applying the update, the (immutable) field '_id' was found to have "
			         "been altered to _id: %s", v);
			bson_free(v);
			return -1;
		}
	}
	bson_init(out);
	if (new_has)
		bson_append_value(out, "_id", 3, bson_iter_value(&nid));
	else if (old_has)
		bson_append_value(out, "_id", 3, bson_iter_value(&oid));
	bson_iter_init(&it, repl);
	while (bson_iter_next(&it))
		if (strcmp(bson_iter_key(&it), "_id") != 0)
			bson_append_value(out, bson_iter_key(&it), (int)bson_iter_key_len(&it),
			                  bson_iter_value(&it));
	if (check_size(out, err) != 0) {
		bson_destroy(out);
		return -1;
	}
	/* mongod's no-op test compares the replacement as given (before _id is
	 * restored) with the old document: {a: 1} over {_id: 1, a: 1} counts
	 * as a modification, {_id: 1, a: 1} does not */
	*modified = !(repl->len == old->len &&
	              memcmp(bson_get_data(repl), bson_get_data(old), repl->len) == 0);
	return 0;
}

int
update_apply(const update_t *u, const bson_t *doc, const update_apply_ctx_t *ctx,
             bson_t *out_new_doc, bool *modified, terr_t *err)
{
	static const update_apply_ctx_t defctx = UPDATE_APPLY_CTX_INIT;
	uapply_t st;
	bson_value_t rootv;
	bson_iter_t it;
	bool changed = false;
	int ret = -1;

	if (ctx == NULL)
		ctx = &defctx;
	if (u->kind == UPDATE_KIND_REPLACEMENT)
		return update_replace_into(doc, u->repl, false, out_new_doc, modified, err);
	if (u->kind == UPDATE_KIND_PIPELINE) {
		bson_t t;

		RET(update_pipe_run(u->pipe, doc, ctx, &t, err));
		ret = update_replace_into(doc, &t, true, out_new_doc, modified, err);
		bson_destroy(&t);
		return ret;
	}
	memset(&st, 0, sizeof st);
	st.missing_at = SIZE_MAX;
	st.u = u;
	st.root = doc;
	st.ctx = ctx;
	st.has_id = bson_iter_init_find(&it, doc, "_id");
	rootv.value_type = BSON_TYPE_DOCUMENT;
	rootv.value.v_doc.data = (uint8_t *)bson_get_data(doc);
	rootv.value.v_doc.data_len = doc->len;
	bson_init(out_new_doc);
	ret = object_doc_into(u->root, &rootv, &st, out_new_doc, &changed, err);
	bson_free(st.comp);
	if (ret != 0) {
		bson_destroy(out_new_doc);
		return -1;
	}
	if (!changed) {
		bson_reinit(out_new_doc);
		bson_concat(out_new_doc, doc);
	}
	if (check_size(out_new_doc, err) != 0) {
		bson_destroy(out_new_doc);
		return -1;
	}
	*modified = changed && (st.force_modified ||
	                        !(out_new_doc->len == doc->len &&
	                          memcmp(bson_get_data(out_new_doc), bson_get_data(doc), doc->len) == 0));
	return 0;
}
