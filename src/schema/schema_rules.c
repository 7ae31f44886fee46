/*
 * schema_rules.c -- rule names of a validator and of an errInfo, and the
 * per-collection violation counters (schema_rules.h).
 *
 * Both walks build the same dotted names so that a preview's per-rule
 * counts and the write counters line up with the validator a person wrote.
 */
#include "schema/schema_rules.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "common/mem.h"

#define RULE_NAME_MAX 512
#define RULE_DEPTH_MAX 100

/* ---- names from the validator document ----------------------------------- */

static void emit(schema_rule_fn fn, void *ctx, const char *prefix, const char *leaf)
{
	char name[RULE_NAME_MAX];

	snprintf(name, sizeof(name), "%s%s", prefix, leaf);
	fn(ctx, name);
}

static bool
sub_doc(const bson_iter_t *it, bson_t *out)
{
	const uint8_t *d;
	uint32_t l;

	if (!BSON_ITER_HOLDS_DOCUMENT(it) && !BSON_ITER_HOLDS_ARRAY(it))
		return false;
	if (BSON_ITER_HOLDS_DOCUMENT(it))
		bson_iter_document(it, &l, &d);
	else
		bson_iter_array(it, &l, &d);
	return bson_init_static(out, d, l);
}

static void schema_walk(const bson_t *s, const char *prefix, int depth, schema_rule_fn fn, void *ctx);

/* Each member of a {name: schema} map under prefix + kw + "." + name + ".". */
static void
schema_map(const bson_iter_t *it, const char *prefix, const char *kw, int depth, schema_rule_fn fn, void *ctx)
{
	bson_t m, sub;
	bson_iter_t mi;
	char p[RULE_NAME_MAX];

	if (!sub_doc(it, &m) || !bson_iter_init(&mi, &m))
		return;
	while (bson_iter_next(&mi)) {
		snprintf(p, sizeof(p), "%s%s.%s.", prefix, kw, bson_iter_key(&mi));
		if (sub_doc(&mi, &sub))
			schema_walk(&sub, p, depth + 1, fn, ctx);
	}
}

static void
schema_walk(const bson_t *s, const char *prefix, int depth, schema_rule_fn fn, void *ctx)
{
	bson_iter_t it;
	bson_t sub;
	char p[RULE_NAME_MAX];

	if (depth > RULE_DEPTH_MAX || !bson_iter_init(&it, s))
		return;
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strcmp(k, "title") == 0 || strcmp(k, "description") == 0 || strcmp(k, "$comment") == 0)
			continue;
		if (strcmp(k, "properties") == 0 || strcmp(k, "patternProperties") == 0) {
			schema_map(&it, prefix, k, depth, fn, ctx);
		} else if ((strcmp(k, "items") == 0 || strcmp(k, "additionalItems") == 0 ||
		            strcmp(k, "additionalProperties") == 0) && BSON_ITER_HOLDS_DOCUMENT(&it)) {
			snprintf(p, sizeof(p), "%s%s.", prefix, k);
			if (sub_doc(&it, &sub))
				schema_walk(&sub, p, depth + 1, fn, ctx);
		} else if (strcmp(k, "items") == 0 && BSON_ITER_HOLDS_ARRAY(&it)) {
			schema_map(&it, prefix, k, depth, fn, ctx);
		} else if (strcmp(k, "allOf") == 0 && BSON_ITER_HOLDS_ARRAY(&it)) {
			schema_map(&it, prefix, k, depth, fn, ctx);
		} else if (strcmp(k, "dependencies") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it)) {
			bson_iter_t di;
			if (sub_doc(&it, &sub) && bson_iter_init(&di, &sub))
				while (bson_iter_next(&di)) {
					snprintf(p, sizeof(p), "dependencies.%s", bson_iter_key(&di));
					emit(fn, ctx, prefix, p);
				}
		} else {
			emit(fn, ctx, prefix, k);
		}
	}
}

static void query_walk(const bson_t *q, const char *prefix, int depth, schema_rule_fn fn, void *ctx);

static void
query_walk(const bson_t *q, const char *prefix, int depth, schema_rule_fn fn, void *ctx)
{
	bson_iter_t it, ci;
	bson_t sub, clause;
	char p[RULE_NAME_MAX];

	if (depth > RULE_DEPTH_MAX || !bson_iter_init(&it, q))
		return;
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strcmp(k, "$jsonSchema") == 0) {
			if (sub_doc(&it, &sub))
				schema_walk(&sub, prefix, depth + 1, fn, ctx);
		} else if (strcmp(k, "$and") == 0) {
			if (!sub_doc(&it, &sub) || !bson_iter_init(&ci, &sub))
				continue;
			while (bson_iter_next(&ci)) {
				snprintf(p, sizeof(p), "%s$and.%s.", prefix, bson_iter_key(&ci));
				if (sub_doc(&ci, &clause))
					query_walk(&clause, p, depth + 1, fn, ctx);
			}
		} else if (k[0] == '$') {
			emit(fn, ctx, prefix, k);        /* $or, $nor, $expr, ... : one rule */
		} else if (BSON_ITER_HOLDS_DOCUMENT(&it) && sub_doc(&it, &sub) && bson_iter_init(&ci, &sub) &&
		           bson_iter_next(&ci) && bson_iter_key(&ci)[0] == '$') {
			bson_iter_init(&ci, &sub);
			while (bson_iter_next(&ci)) {
				snprintf(p, sizeof(p), "%s.%s", k, bson_iter_key(&ci));
				emit(fn, ctx, prefix, p);
			}
		} else {
			snprintf(p, sizeof(p), "%s.$eq", k);
			emit(fn, ctx, prefix, p);
		}
	}
}

void
schema_rules_list(const bson_t *validator, schema_rule_fn fn, void *ctx)
{
	query_walk(validator, "", 0, fn, ctx);
}

/* ---- names from an errInfo ------------------------------------------------- */

static const char *
str_field(const bson_t *d, const char *k)
{
	bson_iter_t it;

	return bson_iter_init_find(&it, d, k) && BSON_ITER_HOLDS_UTF8(&it) ? bson_iter_utf8(&it, NULL) : NULL;
}

static void detail_walk(const bson_t *d, const char *prefix, int depth, schema_rule_fn fn, void *ctx);

/* Each element (a detail document) of array field k of d. */
static void
details_walk(const bson_t *d, const char *k, const char *prefix, int depth, schema_rule_fn fn, void *ctx)
{
	bson_iter_t it, ai;
	bson_t arr, el;

	if (!bson_iter_init_find(&it, d, k) || !sub_doc(&it, &arr) || !bson_iter_init(&ai, &arr))
		return;
	while (bson_iter_next(&ai))
		if (BSON_ITER_HOLDS_DOCUMENT(&ai) && sub_doc(&ai, &el))
			detail_walk(&el, prefix, depth + 1, fn, ctx);
}

/* An array of {<namekey>: n, details: [...]} (propertiesNotSatisfied,
 * clausesNotSatisfied...): each entry's details under prefix + kw.n. */
static void
named_walk(const bson_t *d, const char *arrk, const char *namek, const char *kw, const char *prefix, int depth,
           schema_rule_fn fn, void *ctx)
{
	bson_iter_t it, ai, ni;
	bson_t arr, el;
	char p[RULE_NAME_MAX], num[24];

	if (!bson_iter_init_find(&it, d, arrk) || !sub_doc(&it, &arr) || !bson_iter_init(&ai, &arr))
		return;
	while (bson_iter_next(&ai)) {
		const char *n = NULL;
		if (!BSON_ITER_HOLDS_DOCUMENT(&ai) || !sub_doc(&ai, &el) || !bson_iter_init_find(&ni, &el, namek))
			continue;
		if (BSON_ITER_HOLDS_UTF8(&ni)) {
			n = bson_iter_utf8(&ni, NULL);
		} else if (BSON_ITER_HOLDS_NUMBER(&ni)) {
			snprintf(num, sizeof(num), "%lld", (long long)bson_iter_as_int64(&ni));
			n = num;
		}
		if (n == NULL)
			continue;
		snprintf(p, sizeof(p), "%s%s.%s.", prefix, kw, n);
		/* a clause's details is one document ($and), a property's an array */
		if (bson_iter_init_find(&ni, &el, "details") && BSON_ITER_HOLDS_DOCUMENT(&ni)) {
			bson_t one;
			if (sub_doc(&ni, &one))
				detail_walk(&one, p, depth + 1, fn, ctx);
		} else {
			details_walk(&el, "details", p, depth, fn, ctx);
		}
	}
}

static void
detail_walk(const bson_t *d, const char *prefix, int depth, schema_rule_fn fn, void *ctx)
{
	const char *op = str_field(d, "operatorName");
	char p[RULE_NAME_MAX];
	bson_iter_t it;

	if (op == NULL || depth > RULE_DEPTH_MAX)
		return;
	if (strcmp(op, "$jsonSchema") == 0) {
		if (bson_iter_init_find(&it, d, "schemaRulesNotSatisfied"))
			details_walk(d, "schemaRulesNotSatisfied", prefix, depth, fn, ctx);
		else
			emit(fn, ctx, prefix, "bsonType");   /* the top-level type excludes objects */
	} else if (strcmp(op, "properties") == 0) {
		named_walk(d, "propertiesNotSatisfied", "propertyName", "properties", prefix, depth, fn, ctx);
	} else if (strcmp(op, "patternProperties") == 0) {
		named_walk(d, "propertiesNotSatisfied", "regex", "patternProperties", prefix, depth, fn, ctx);
	} else if (strcmp(op, "allOf") == 0) {
		named_walk(d, "schemasNotSatisfied", "index", "allOf", prefix, depth, fn, ctx);
	} else if (strcmp(op, "$and") == 0) {
		named_walk(d, "clausesNotSatisfied", "index", "$and", prefix, depth, fn, ctx);
	} else if ((strcmp(op, "items") == 0 || strcmp(op, "additionalItems") == 0 ||
	            strcmp(op, "additionalProperties") == 0) && bson_iter_init_find(&it, d, "details")) {
		snprintf(p, sizeof(p), "%s%s.", prefix, op);
		details_walk(d, "details", p, depth, fn, ctx);
	} else if (strcmp(op, "dependencies") == 0 && bson_iter_init_find(&it, d, "failingDependencies")) {
		bson_iter_t ai, ci;
		bson_t arr, el;
		if (sub_doc(&it, &arr) && bson_iter_init(&ai, &arr))
			while (bson_iter_next(&ai))
				if (sub_doc(&ai, &el) && bson_iter_init_find(&ci, &el, "conditionalProperty") &&
				    BSON_ITER_HOLDS_UTF8(&ci)) {
					snprintf(p, sizeof(p), "dependencies.%s", bson_iter_utf8(&ci, NULL));
					emit(fn, ctx, prefix, p);
				}
	} else if (op[0] == '$' && strcmp(op, "$or") != 0 && strcmp(op, "$nor") != 0 && strcmp(op, "$expr") != 0 &&
	           strcmp(op, "$not") != 0 && bson_iter_init_find(&it, d, "specifiedAs") &&
	           BSON_ITER_HOLDS_DOCUMENT(&it)) {
		/* a query leaf: {operatorName: "$gte", specifiedAs: {rating: {$gte: 1}}} */
		bson_t sa;
		bson_iter_t si;
		if (sub_doc(&it, &sa) && bson_iter_init(&si, &sa) && bson_iter_next(&si)) {
			snprintf(p, sizeof(p), "%s.%s", bson_iter_key(&si), op);
			emit(fn, ctx, prefix, p);
		} else {
			emit(fn, ctx, prefix, op);
		}
	} else {
		emit(fn, ctx, prefix, op);
	}
}

void
schema_rules_failed(const bson_t *errinfo, schema_rule_fn fn, void *ctx)
{
	bson_iter_t it;
	bson_t d;

	if (bson_iter_init_find(&it, errinfo, "details") && BSON_ITER_HOLDS_DOCUMENT(&it) && sub_doc(&it, &d))
		detail_walk(&d, "", 0, fn, ctx);
	else
		detail_walk(errinfo, "", 0, fn, ctx);
}

/* ---- counters -------------------------------------------------------------- */

typedef struct rule_count {
	char *name;
	int64_t failed, warned;
} rule_count_t;

struct schema_counters {
	uint8_t uuid[16];
	char ns[256];
	atomic_llong passed, failed, warned;
	pthread_mutex_t mu;          /* rules */
	rule_count_t *rules;
	int nrules, cap;
	struct schema_counters *next;
};

static pthread_mutex_t all_mu = PTHREAD_MUTEX_INITIALIZER;
static schema_counters_t *all_head;

/* At most this many distinct rule names per collection: a validator with
 * more leaves counts the rest under "(other)". */
#define RULES_MAX 1024

schema_counters_t *
schema_counters_find(const uint8_t uuid[16])
{
	schema_counters_t *c;

	pthread_mutex_lock(&all_mu);
	for (c = all_head; c != NULL; c = c->next)
		if (memcmp(c->uuid, uuid, 16) == 0)
			break;
	pthread_mutex_unlock(&all_mu);
	return c;
}

schema_counters_t *
schema_counters_get(const uint8_t uuid[16], const char *ns)
{
	schema_counters_t *c;

	pthread_mutex_lock(&all_mu);
	for (c = all_head; c != NULL; c = c->next)
		if (memcmp(c->uuid, uuid, 16) == 0)
			break;
	if (c == NULL) {
		c = tm_alloc0(sizeof(*c));
		memcpy(c->uuid, uuid, 16);
		pthread_mutex_init(&c->mu, NULL);
		c->next = all_head;
		all_head = c;
	}
	if (ns != NULL && strcmp(c->ns, ns) != 0)
		snprintf(c->ns, sizeof(c->ns), "%s", ns);
	pthread_mutex_unlock(&all_mu);
	return c;
}

void
schema_counters_passed(schema_counters_t *c)
{
	if (c != NULL)
		atomic_fetch_add_explicit(&c->passed, 1, memory_order_relaxed);
}

typedef struct fail_ctx {
	schema_counters_t *c;
	bool warned;
	char **seen;                 /* names counted for this write */
	int nseen, cap;
} fail_ctx_t;

static void
count_rule(void *arg, const char *name)
{
	fail_ctx_t *f = arg;
	schema_counters_t *c = f->c;
	rule_count_t *r = NULL;

	for (int i = 0; i < f->nseen; i++)
		if (strcmp(f->seen[i], name) == 0)
			return;
	if (f->nseen == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 8;
		f->seen = bson_realloc(f->seen, (size_t)f->cap * sizeof(*f->seen));
	}
	f->seen[f->nseen++] = bson_strdup(name);
	for (int i = 0; i < c->nrules; i++)
		if (strcmp(c->rules[i].name, name) == 0) {
			r = &c->rules[i];
			break;
		}
	if (r == NULL && c->nrules >= RULES_MAX) {
		for (int i = 0; i < c->nrules; i++)
			if (strcmp(c->rules[i].name, "(other)") == 0)
				r = &c->rules[i];
		if (r == NULL)
			r = &c->rules[c->nrules - 1];
	}
	if (r == NULL) {
		if (c->nrules == c->cap) {
			c->cap = c->cap ? c->cap * 2 : 8;
			c->rules = bson_realloc(c->rules, (size_t)c->cap * sizeof(*c->rules));
		}
		r = &c->rules[c->nrules++];
		r->name = bson_strdup(c->nrules == RULES_MAX ? "(other)" : name);
		r->failed = r->warned = 0;
	}
	if (f->warned)
		r->warned++;
	else
		r->failed++;
}

void
schema_counters_failed(schema_counters_t *c, const bson_t *errinfo, bool warned)
{
	fail_ctx_t f = {.c = c, .warned = warned};

	if (c == NULL)
		return;
	atomic_fetch_add_explicit(warned ? &c->warned : &c->failed, 1, memory_order_relaxed);
	if (errinfo == NULL)
		return;
	pthread_mutex_lock(&c->mu);
	schema_rules_failed(errinfo, count_rule, &f);
	pthread_mutex_unlock(&c->mu);
	for (int i = 0; i < f.nseen; i++)
		bson_free(f.seen[i]);
	bson_free(f.seen);
}

void
schema_counters_append(const schema_counters_t *cc, bson_t *out)
{
	schema_counters_t *c = (schema_counters_t *)cc;
	bson_t rules, one;

	BSON_APPEND_INT64(out, "passed", c ? (int64_t)atomic_load(&c->passed) : 0);
	BSON_APPEND_INT64(out, "failed", c ? (int64_t)atomic_load(&c->failed) : 0);
	BSON_APPEND_INT64(out, "warned", c ? (int64_t)atomic_load(&c->warned) : 0);
	BSON_APPEND_DOCUMENT_BEGIN(out, "rules", &rules);
	if (c != NULL) {
		pthread_mutex_lock(&c->mu);
		for (int i = 0; i < c->nrules; i++) {
			BSON_APPEND_DOCUMENT_BEGIN(&rules, c->rules[i].name, &one);
			BSON_APPEND_INT64(&one, "failed", c->rules[i].failed);
			BSON_APPEND_INT64(&one, "warned", c->rules[i].warned);
			bson_append_document_end(&rules, &one);
		}
		pthread_mutex_unlock(&c->mu);
	}
	bson_append_document_end(out, &rules);
}

void
schema_counters_append_all(bson_t *out)
{
	bson_t colls, one;
	int64_t p = 0, f = 0, w = 0;

	BSON_APPEND_DOCUMENT_BEGIN(out, "collections", &colls);
	pthread_mutex_lock(&all_mu);
	for (schema_counters_t *c = all_head; c != NULL; c = c->next) {
		bool dup = false;
		/* a name dropped and created again: its newest collection only */
		for (schema_counters_t *d = all_head; d != c && !dup; d = d->next)
			dup = strcmp(d->ns, c->ns) == 0;
		if (dup)
			continue;
		p += atomic_load(&c->passed);
		f += atomic_load(&c->failed);
		w += atomic_load(&c->warned);
		BSON_APPEND_DOCUMENT_BEGIN(&colls, c->ns, &one);
		schema_counters_append(c, &one);
		bson_append_document_end(&colls, &one);
	}
	pthread_mutex_unlock(&all_mu);
	bson_append_document_end(out, &colls);
	BSON_APPEND_INT64(out, "passed", p);
	BSON_APPEND_INT64(out, "failed", f);
	BSON_APPEND_INT64(out, "warned", w);
}
