/*
 * planner.c -- predicates out of the compiled filter tree (match_private.h),
 * bounds per index,
 * the choice among indexes, and the KeyString ranges the executor scans.
 * See planner.h for the rules.
 */
#include "query/planner.h"

#include <math.h>
#include <string.h>

#include <stdalign.h>

#include "bson/keystring.h"
#include "bson/value.h"
#include "common/arena.h"
#include "common/mem.h"
#include "query/keygen.h"
#include "query/match_private.h"

#define MAX_PREDS 64
#define MAX_RANGES 1000
#define MAX_REJECTED 16

/* Everything one plan holds -- the solution, its rejected plans and $or
 * branches, their fields, intervals and ranges -- lives in one arena, freed
 * at once by planner_solution_free.  The first block is inline: a plan on
 * one or two indexes costs one allocation. */
struct planner_region {
	tm_arena_t arena;
	alignas(16) uint8_t first[960];   /* with the header, under glibc's tcache limit */
};

static planner_solution_t *
region_solution(struct planner_region *r)
{
	planner_solution_t *s = tm_arena_alloc0(&r->arena, sizeof(*s));

	s->region = r;
	return s;
}

/* A new plan's region and its (collection scan) solution. */
static planner_solution_t *
solution_new(void)
{
	struct planner_region *r = bson_malloc(sizeof(*r));

	tm_arena_init(&r->arena, r->first, sizeof(r->first));
	return region_solution(r);
}

static tm_arena_t *
sol_arena(const planner_solution_t *s)
{
	return &s->region->arena;
}

typedef struct pred {
	const char *path;          /* borrowed from the match_t, or ps->names */
	match_pred_t op;
	match_pred_t rop;          /* NOT_RANGE: the negated range operator */
	bson_value_t val;          /* EQ and ranges: the operand, borrowed from the match_t */
	const bson_value_t *in;    /* $in: its non-regex values in the filter's collation order (borrowed) */
	uint32_t nin;
	bool in_regex;             /* the $in also lists regexes (in_re, nre: borrowed) */
	const mregex_t *in_re;
	uint32_t nre;
	bool in_re_exact;          /* ... each of them an anchored literal (regex_prefix) */
	int group;                 /* $elemMatch group (0 = top level) */
	const char *gpath;         /* the $elemMatch's path ("" at top level) */
	/* $regex (val: the pattern and flags as a BSON regex, borrowed): the
	 * literal prefix every match starts with (mongod's simple-regex rule,
	 * in ps->names; length 0: none), and whether starting with it is the
	 * whole test */
	const char *re_prefix;
	size_t re_prefix_len;
	bool re_exact;
	bool has_null;             /* EQ/$in/$ne/$nin: null is (one of) the operand(s) */
	bool has_array;            /* EQ/$in/$ne/$nin: an array is (one of) the operand(s) */
	bool exists;               /* $exists: its truth value */
	int top;                   /* the filter's top-level conjunct it belongs to (match_exec_skip), or -1 */
} pred_t;

/* The predicates of one filter.  Lives on the caller's stack (~8 KB): only
 * the header is cleared, entries are written before they are read. */
typedef struct preds {
	int n;
	int ngroups;
	int skipped;               /* leaves or logical nodes not collected */
	int cur_top;               /* the top-level conjunct being collected (-1: none) */
	uint64_t skipped_top;      /* top-level conjuncts (< 64) with leaves not collected */
	const coll_t *coll;        /* the query's collation: bounds are encoded by it */
	tm_arena_t *arena;         /* the plan's (bounds built from these predicates live there) */
	uint64_t allowed;          /* index filter: the positions of the indexes a plan may use */
	/* The caller decided which partial indexes the query implies (a
	 * time-series read: mongod's bucket-level rule, ts_partial.c): bit i of
	 * partial_ok for index i, instead of partial_implied's own test. */
	bool partial_set;
	uint64_t partial_ok;
	size_t nused;              /* bytes of names in use */
	pred_t p[MAX_PREDS];
	char names[2048];          /* "prefix.path" of $elemMatch members */
} preds_t;

static void
preds_init(preds_t *ps, const coll_t *coll, tm_arena_t *arena)
{
	ps->n = 0;
	ps->ngroups = 0;
	ps->skipped = 0;
	ps->cur_top = -1;
	ps->skipped_top = 0;
	ps->coll = coll;
	ps->arena = arena;
	ps->allowed = PLANNER_ALL_INDEXES;
	ps->partial_set = false;
	ps->partial_ok = 0;
	ps->nused = 0;
}

/* prefix.path in ps's name space (path itself without a prefix); NULL when
 * the space is used up. */
static const char *
pred_join(preds_t *ps, const char *prefix, const char *path)
{
	size_t a, b;
	char *s;

	if (prefix == NULL)
		return path;
	a = strlen(prefix);
	b = strlen(path);
	if (ps->nused + a + b + 2 > sizeof(ps->names))
		return NULL;
	s = ps->names + ps->nused;
	memcpy(s, prefix, a);
	s[a] = '.';
	memcpy(s + a + 1, path, b + 1);
	ps->nused += a + b + 2;
	return s;
}

/* Could a '|' in s be an alternation (mongod's best-effort test: false
 * positives, never false negatives)? */
static bool
may_have_unescaped_pipe(const char *s)
{
	size_t n = strlen(s);

	if (n > 0 && s[0] == '|')
		return true;
	if (n > 1 && s[1] == '|' && s[0] != '\\')
		return true;
	for (size_t i = 2; i < n; i++)
		if (s[i] == '|' && (s[i - 1] != '\\' || s[i - 2] == '\\'))
			return true;
	return false;
}

static bool
ascii_alnum(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/*
 * mongod's simple-regex rule: the literal prefix every string matching
 * re (with flags) starts with, written to out (at most strlen(re) bytes);
 * returns its length (0: no usable prefix).  *exact when the regex is that
 * prefix and nothing more, so starting with it is the whole test.  Only an
 * anchored regex (^ or \A) has one; an alternation, or a flag other than
 * s, x and (with \A) m, leaves none.  The prefix ends at the first
 * metacharacter or escape class; a quantifier *, ? or {n,m} drops the
 * character before it.
 */
static size_t
regex_prefix(const char *re, const char *flags, char *out, bool *exact)
{
	bool multiline_ok, extended = false;
	size_t n = 0;

	*exact = false;
	if (re[0] == '\\' && re[1] == 'A') {
		multiline_ok = true;
		re += 2;
	} else if (re[0] == '^') {
		multiline_ok = false;
		re += 1;
	} else {
		return 0;
	}
	if (may_have_unescaped_pipe(re))
		return 0;
	for (; *flags != '\0'; flags++) {
		if (*flags == 'm' && multiline_ok)
			continue;
		if (*flags == 's')
			continue;
		if (*flags == 'x')
			extended = true;
		else
			return 0;
	}
	while (*re != '\0') {
		char c = *re++;
		/* the last character is optional; mongod keeps it before a
		 * {n,m} quantifier, which misses "ac" for /^ab{0}c/: dropped here */
		if (c == '*' || c == '?' || c == '{')
			return n > 0 ? n - 1 : 0;
		if (c == '\\') {
			c = *re;
			if (c == '\0' || (c != 'Q' && ascii_alnum(c)))
				return n;                   /* a class like \d, or a back-reference */
			re++;
			if (c != 'Q') {
				out[n++] = c;               /* an escaped character stands for itself */
				continue;
			}
			while (*re != '\0') {              /* \Q...\E quotes everything inside */
				c = *re++;
				if (c == '\\' && *re == 'E') {
					re++;
					break;
				}
				out[n++] = c;
			}
			continue;
		}
		if (strchr("^$.[()+{", c) != NULL || (extended && c == '#'))
			return n;
		if (extended && (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'))
			continue;
		out[n++] = c;
	}
	*exact = n > 0;
	return n;
}

/* A leaf or node the bounds cannot use: the plan is inexact, and so is the
 * top-level conjunct it belongs to. */
static void
pred_skip(preds_t *ps)
{
	ps->skipped++;
	if (ps->cur_top >= 0 && ps->cur_top < 64)
		ps->skipped_top |= 1ull << ps->cur_top;
}

/* One leaf (value form: its operator applies to path).  Leaves the bounds
 * cannot use, and any past MAX_PREDS, count as skipped: the executor applies
 * the whole filter anyway, skipped leaves only make the bounds looser and
 * the plan inexact. */
static void
pred_leaf(preds_t *ps, const mnode_t *n, const char *path, int group, const char *gpath)
{
	static const struct {
		mkind_t kind;
		match_pred_t op;
	} ops[] = {
		{MK_EQ, MATCH_PRED_EQ}, {MK_LT, MATCH_PRED_LT}, {MK_LTE, MATCH_PRED_LTE},
		{MK_GT, MATCH_PRED_GT}, {MK_GTE, MATCH_PRED_GTE}, {MK_IN, MATCH_PRED_IN},
		{MK_REGEX, MATCH_PRED_REGEX}, {MK_EXISTS, MATCH_PRED_EXISTS}, {MK_MOD, MATCH_PRED_MOD},
	};
	const mnode_t *leaf = n;
	match_pred_t op;
	pred_t *p;
	size_t i;

	if (n->kind == MK_NOT) {
		/* $ne, $nin, $exists: false: NOT of one equality, $in, $exists;
		 * $not of one range: its complement (mongod's NOT bounds) */
		mkind_t k = n->nkids == 1 ? n->kids[0]->kind : MK_AND;
		bool range = k == MK_LT || k == MK_LTE || k == MK_GT || k == MK_GTE;
		if (n->nkids != 1 || (k != MK_EQ && k != MK_IN && k != MK_EXISTS && !range)) {
			pred_skip(ps);
			return;
		}
		leaf = n->kids[0];
		op = range ? MATCH_PRED_NOT_RANGE : leaf->kind == MK_EQ ? MATCH_PRED_NE :
		    leaf->kind == MK_IN ? MATCH_PRED_NIN : MATCH_PRED_EXISTS;
	} else {
		for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
			if (ops[i].kind == n->kind)
				break;
		if (i == sizeof(ops) / sizeof(ops[0])) {
			pred_skip(ps);
			return;
		}
		op = ops[i].op;
	}
	if (path == NULL || ps->n == MAX_PREDS) {
		pred_skip(ps);
		return;
	}
	p = &ps->p[ps->n++];
	p->path = path;
	p->op = op;
	p->rop = leaf->kind == MK_LT ? MATCH_PRED_LT : leaf->kind == MK_LTE ? MATCH_PRED_LTE :
	    leaf->kind == MK_GT ? MATCH_PRED_GT : MATCH_PRED_GTE;
	p->top = ps->cur_top;
	p->val = leaf->val;
	p->in = leaf->kind == MK_IN ? leaf->u.in.sorted : NULL;
	p->nin = leaf->kind == MK_IN ? leaf->u.in.n : 0;
	p->in_regex = leaf->kind == MK_IN && leaf->u.in.nre > 0;
	p->in_re = p->in_regex ? leaf->u.in.re : NULL;
	p->nre = p->in_regex ? leaf->u.in.nre : 0;
	p->in_re_exact = true;
	for (i = 0; i < p->nre; i++) {
		const char *pat = p->in_re[i].pattern != NULL ? p->in_re[i].pattern : "";
		char *tmp = bson_malloc(strlen(pat) + 1);
		bool exact;
		regex_prefix(pat, p->in_re[i].flags != NULL ? p->in_re[i].flags : "", tmp, &exact);
		p->in_re_exact = p->in_re_exact && exact;
		bson_free(tmp);
	}
	p->has_null = leaf->kind == MK_IN ? leaf->u.in.has_null :
	    leaf->kind == MK_EQ && leaf->val.value_type == BSON_TYPE_NULL;
	p->has_array = leaf->kind == MK_EQ && leaf->val.value_type == BSON_TYPE_ARRAY;
	for (i = 0; leaf->kind == MK_IN && i < leaf->u.in.n; i++)
		if (leaf->u.in.sorted[i].value_type == BSON_TYPE_ARRAY)
			p->has_array = true;
	p->exists = leaf->kind == MK_EXISTS && (leaf->u.exists != (n->kind == MK_NOT));
	p->group = group;
	p->gpath = gpath != NULL ? gpath : "";
	p->re_prefix = NULL;
	p->re_prefix_len = 0;
	p->re_exact = false;
	if (n->kind == MK_REGEX) {
		const char *pat = n->u.re.pattern != NULL ? n->u.re.pattern : "";
		size_t cap = strlen(pat);
		memset(&p->val, 0, sizeof(p->val));
		p->val.value_type = BSON_TYPE_REGEX;
		p->val.value.v_regex.regex = (char *)pat;
		p->val.value.v_regex.options = n->u.re.flags != NULL ? n->u.re.flags : (char *)"";
		if (ps->nused + cap + 1 <= sizeof(ps->names)) {
			char *out = ps->names + ps->nused;
			p->re_prefix_len = regex_prefix(pat, p->val.value.v_regex.options, out, &p->re_exact);
			out[p->re_prefix_len] = '\0';
			p->re_prefix = out;
			ps->nused += p->re_prefix_len + 1;
		}
	}
}

static void collect_node(preds_t *ps, const mnode_t *n, const char *prefix, int group,
                         const char *gpath);

/* A value-form node applying to path: a leaf operator, or an $elemMatch
 * (each one a new group: the index holds the elements under the same path). */
static void
collect_value(preds_t *ps, const mnode_t *n, const char *path, int group, const char *gpath)
{
	uint32_t i;
	int g;

	switch (n->kind) {
	case MK_ELEM_VAL:
		g = ++ps->ngroups;
		for (i = 0; i < n->nkids; i++)
			collect_value(ps, n->kids[i], path, g, path);
		return;
	case MK_ELEM_OBJ:
		g = ++ps->ngroups;
		if (n->nkids > 0 && path != NULL)
			collect_node(ps, n->kids[0], path, g, path);
		else
			pred_skip(ps);
		return;
	default:
		pred_leaf(ps, n, path, group, gpath);
		return;
	}
}

/* The conjunctive leaves of n (paths under prefix, when inside an
 * $elemMatch); everything else ($or, $nor, $not, $expr, ...) is skipped. */
static void
collect_node(preds_t *ps, const mnode_t *n, const char *prefix, int group, const char *gpath)
{
	uint32_t i;

	if (n->kind == MK_AND) {
		for (i = 0; i < n->nkids; i++)
			collect_node(ps, n->kids[i], prefix, group, gpath);
		return;
	}
	if (n->kind == MK_NOT && n->nkids == 1 && n->kids[0]->has_path &&
	    (n->kids[0]->kind == MK_EQ || n->kids[0]->kind == MK_IN || n->kids[0]->kind == MK_EXISTS ||
	     n->kids[0]->kind == MK_LT || n->kids[0]->kind == MK_LTE || n->kids[0]->kind == MK_GT ||
	     n->kids[0]->kind == MK_GTE)) {
		collect_value(ps, n, pred_join(ps, prefix, n->kids[0]->path.full), group, gpath);
		return;
	}
	if (!n->has_path || n->kind == MK_NOT) {
		pred_skip(ps);
		return;
	}
	collect_value(ps, n, pred_join(ps, prefix, n->path.full), group, gpath);
}

/* The predicates of a whole filter, each tagged with the top-level
 * conjunct it comes from (the root's clauses, or the root as conjunct 0:
 * match_exec_skip's numbering). */
static void
collect_filter(preds_t *ps, const mnode_t *root)
{
	uint32_t i;

	if (root->kind == MK_AND) {
		for (i = 0; i < root->nkids; i++) {
			ps->cur_top = (int)i;
			collect_node(ps, root->kids[i], NULL, 0, NULL);
		}
	} else {
		ps->cur_top = 0;
		collect_node(ps, root, NULL, 0, NULL);
	}
	ps->cur_top = -1;
}

/* ---- value intervals ------------------------------------------------------ */

/* Intervals are built over borrowed values (the filter's operands, static
 * bracket ends); iv_own copies one into the plan's arena when a field keeps
 * it. */
static void
iv_set(planner_interval_t *iv, const bson_value_t *lo, bool lo_incl, const bson_value_t *hi,
       bool hi_incl)
{
	iv->lo = *lo;
	iv->hi = *hi;
	iv->lo_incl = lo_incl;
	iv->hi_incl = hi_incl;
}

static void
iv_own(tm_arena_t *a, planner_interval_t *iv)
{
	bson_value_t v;

	tm_arena_value_copy(a, &iv->lo, &v);
	iv->lo = v;
	tm_arena_value_copy(a, &iv->hi, &v);
	iv->hi = v;
}

static bson_value_t
v_minkey(void)
{
	bson_value_t v;

	memset(&v, 0, sizeof(v));
	v.value_type = BSON_TYPE_MINKEY;
	return v;
}

static bson_value_t
v_maxkey(void)
{
	bson_value_t v;

	memset(&v, 0, sizeof(v));
	v.value_type = BSON_TYPE_MAXKEY;
	return v;
}

static bool
v_usable_point(const bson_value_t *v)
{
	switch (v->value_type) {
	case BSON_TYPE_NULL: case BSON_TYPE_UNDEFINED: case BSON_TYPE_ARRAY: case BSON_TYPE_REGEX:
	case BSON_TYPE_MINKEY: case BSON_TYPE_MAXKEY: case BSON_TYPE_EOD:
		return false;
	default:
		return true;
	}
}

/*
 * The type bracket of a range operand: the lowest and highest values of its
 * canonical type (hi exclusive when it is the first value of the next
 * type).  False for types that are not bracketed here.
 */
static bool
bracket(const bson_value_t *v, bson_value_t *lo, bson_value_t *hi, bool *hi_incl)
{
	static const uint8_t empty_doc[5] = {5, 0, 0, 0, 0};

	memset(lo, 0, sizeof(*lo));
	memset(hi, 0, sizeof(*hi));
	*hi_incl = true;
	if (bv_is_number(v)) {
		if (bv_is_nan(v))
			return false;
		lo->value_type = BSON_TYPE_DOUBLE;
		lo->value.v_double = -INFINITY;
		hi->value_type = BSON_TYPE_DOUBLE;
		hi->value.v_double = INFINITY;
		return true;
	}
	switch (v->value_type) {
	case BSON_TYPE_UTF8: case BSON_TYPE_SYMBOL:
		lo->value_type = BSON_TYPE_UTF8;
		lo->value.v_utf8.str = (char *)"";
		hi->value_type = BSON_TYPE_DOCUMENT;
		hi->value.v_doc.data = (uint8_t *)empty_doc;
		hi->value.v_doc.data_len = 5;
		*hi_incl = false;
		return true;
	case BSON_TYPE_DATE_TIME:
		lo->value_type = hi->value_type = BSON_TYPE_DATE_TIME;
		lo->value.v_datetime = INT64_MIN;
		hi->value.v_datetime = INT64_MAX;
		return true;
	case BSON_TYPE_OID:
		lo->value_type = hi->value_type = BSON_TYPE_OID;
		memset(&lo->value.v_oid, 0, 12);
		memset(&hi->value.v_oid, 0xff, 12);
		return true;
	case BSON_TYPE_BOOL:
		lo->value_type = hi->value_type = BSON_TYPE_BOOL;
		lo->value.v_bool = false;
		hi->value.v_bool = true;
		return true;
	case BSON_TYPE_TIMESTAMP:
		lo->value_type = hi->value_type = BSON_TYPE_TIMESTAMP;
		hi->value.v_timestamp.timestamp = UINT32_MAX;
		hi->value.v_timestamp.increment = UINT32_MAX;
		return true;
	default:
		return false;
	}
}

/* Interval of one range predicate, ascending; false when not bracketable. */
static bool
range_interval(const pred_t *p, planner_interval_t *iv)
{
	bson_value_t lo, hi;
	bool hi_incl;

	if (!bracket(&p->val, &lo, &hi, &hi_incl))
		return false;
	if (p->op == MATCH_PRED_GT || p->op == MATCH_PRED_GTE)
		iv_set(iv, &p->val, p->op == MATCH_PRED_GTE, &hi, hi_incl);
	else
		iv_set(iv, &lo, true, &p->val, p->op == MATCH_PRED_LTE);
	return true;
}

static void
enc(keystring_t *ks, const bson_value_t *v, bool desc, const coll_t *coll)
{
	keystring_reset(ks);
	keystring_append_value_coll(ks, v, desc, coll);
}

static int
ks_cmp(const keystring_t *a, const keystring_t *b)
{
	size_t n = a->len < b->len ? a->len : b->len;
	int c = memcmp(a->buf, b->buf, n);

	if (c != 0)
		return c;
	return a->len < b->len ? -1 : a->len > b->len;
}

static int
vcmp(const bson_value_t *a, const bson_value_t *b, const coll_t *coll)
{
	keystring_t ka, kb;
	int c;

	keystring_init(&ka);
	keystring_init(&kb);
	enc(&ka, a, false, coll);
	enc(&kb, b, false, coll);
	c = ks_cmp(&ka, &kb);
	keystring_destroy(&ka);
	keystring_destroy(&kb);
	return c;
}

static int
point_cmp(const void *a, const void *b, void *coll)
{
	const planner_interval_t *x = a, *y = b;

	return vcmp(&x->lo, &y->lo, coll);
}

/* Intersect two ascending intervals into a (false: empty). */
static bool
iv_intersect(planner_interval_t *a, const planner_interval_t *b, const coll_t *coll)
{
	int c = vcmp(&b->lo, &a->lo, coll);

	if (c > 0 || (c == 0 && !b->lo_incl)) {
		a->lo = b->lo;
		a->lo_incl = b->lo_incl;
	}
	c = vcmp(&b->hi, &a->hi, coll);
	if (c < 0 || (c == 0 && !b->hi_incl)) {
		a->hi = b->hi;
		a->hi_incl = b->hi_incl;
	}
	c = vcmp(&a->lo, &a->hi, coll);
	return c < 0 || (c == 0 && a->lo_incl && a->hi_incl);
}

/* The intervals of a $regex on a field of an index with collation ix_coll
 * (into iv[0..2)), as mongod builds them: the strings starting with the
 * regex's prefix -- ["abc", "abd") -- or, without a prefix or on a
 * collated index (whose keys are sort keys, not the strings), every string
 * ["", {}); then the regex itself, which a document may hold as a value. */
static void
regex_intervals_of(tm_arena_t *a, const bson_value_t *re, const char *prefix, size_t plen,
                   const coll_t *ix_coll, planner_interval_t *iv)
{
	static const uint8_t empty_doc[5] = {5, 0, 0, 0, 0};
	bson_value_t lo, hi;

	memset(&lo, 0, sizeof(lo));
	memset(&hi, 0, sizeof(hi));
	lo.value_type = BSON_TYPE_UTF8;
	if (ix_coll == NULL && plen > 0) {
		char *end = tm_arena_memdup(a, prefix, plen + 1);
		end[plen - 1]++;
		lo.value.v_utf8.str = (char *)prefix;
		lo.value.v_utf8.len = (uint32_t)plen;
		hi.value_type = BSON_TYPE_UTF8;
		hi.value.v_utf8.str = end;
		hi.value.v_utf8.len = (uint32_t)plen;
	} else {
		lo.value.v_utf8.str = (char *)"";
		hi.value_type = BSON_TYPE_DOCUMENT;
		hi.value.v_doc.data = (uint8_t *)empty_doc;
		hi.value.v_doc.data_len = sizeof(empty_doc);
	}
	iv_set(&iv[0], &lo, true, &hi, false);
	iv_set(&iv[1], re, true, re, true);
}

static void
regex_intervals(tm_arena_t *a, const pred_t *p, const coll_t *ix_coll, planner_interval_t *iv)
{
	regex_intervals_of(a, &p->val, p->re_prefix, p->re_prefix_len, ix_coll, iv);
}

static int
iv_lo_cmp(const void *a, const void *b, void *coll)
{
	const planner_interval_t *x = a, *y = b;
	int c = vcmp(&x->lo, &y->lo, coll);

	return c != 0 ? c : (int)y->lo_incl - (int)x->lo_incl;
}

/* Sort intervals by their low end and merge those that overlap or touch:
 * the union, ascending and disjoint.  Returns the count. */
static int
intervals_union(planner_interval_t *iv, int n, const coll_t *coll)
{
	int i, k = 0;

	if (n <= 1)
		return n;
	qsort_r(iv, (size_t)n, sizeof(*iv), iv_lo_cmp, (void *)coll);
	for (i = 1; i < n; i++) {
		planner_interval_t *cur = &iv[k];
		int c = vcmp(&iv[i].lo, &cur->hi, coll);
		if (c < 0 || (c == 0 && (cur->hi_incl || iv[i].lo_incl))) {
			int h = vcmp(&iv[i].hi, &cur->hi, coll);
			if (h > 0 || (h == 0 && iv[i].hi_incl)) {
				cur->hi = iv[i].hi;
				cur->hi_incl = iv[i].hi_incl;
			}
			continue;
		}
		iv[++k] = iv[i];
	}
	return k + 1;
}

static int point_intervals(const preds_t *ps, const bson_value_t *vals, int nv, bool arrays,
                           planner_interval_t *iv);

/* A $in listing regexes: its points and each regex's intervals, united
 * (mongod's bounds for it), into iv (room for 2 * (nin + nre)). */
static int
in_regex_intervals(const preds_t *ps, const pred_t *p, const coll_t *ix_coll, planner_interval_t *iv)
{
	int n = 0;

	if (p->nin > 0 && (n = point_intervals(ps, p->in, (int)p->nin, true, iv)) < 0)
		return -1;
	for (uint32_t r = 0; r < p->nre; r++) {
		const char *pat = p->in_re[r].pattern != NULL ? p->in_re[r].pattern : "";
		const char *flags = p->in_re[r].flags != NULL ? p->in_re[r].flags : "";
		char *prefix = tm_arena_alloc(ps->arena, strlen(pat) + 1);
		bson_value_t *re = tm_arena_alloc(ps->arena, sizeof(*re));
		bool exact;
		size_t plen = regex_prefix(pat, flags, prefix, &exact);
		prefix[plen] = '\0';
		memset(re, 0, sizeof(*re));
		re->value_type = BSON_TYPE_REGEX;
		re->value.v_regex.regex = (char *)pat;
		re->value.v_regex.options = (char *)flags;
		regex_intervals_of(ps->arena, re, prefix, plen, ix_coll, &iv[n]);
		n += 2;
	}
	return intervals_union(iv, n, ps->coll);
}

static bool
is_range_op(match_pred_t op)
{
	return op == MATCH_PRED_LT || op == MATCH_PRED_LTE || op == MATCH_PRED_GT || op == MATCH_PRED_GTE;
}

/* The point values of an equality or $in (vals, n), as sorted, distinct
 * point intervals in iv (room for 2n): null stands for null and undefined
 * (a missing field is keyed null, an empty array undefined), as mongod
 * bounds it.  With arrays (an equality or $in, not their negations, as
 * mongod's Indexability), an array value A gives mongod's translateEquality
 * points: [A, A] (A met as an element of an outer array) and its first
 * element, or undefined for [] (the key of an empty array); the bounds are
 * then inexact (pred_exact: has_array).  Returns the count, or -1 when some
 * value gives no point (an array without arrays, a regex,
 * MinKey/MaxKey). */
static int
point_intervals(const preds_t *ps, const bson_value_t *vals, int nv, bool arrays, planner_interval_t *iv)
{
	static const bson_value_t undef = {.value_type = BSON_TYPE_UNDEFINED};
	int i, j, n = 0;

	for (i = 0; i < nv; i++) {
		if (vals[i].value_type == BSON_TYPE_NULL) {
			iv_set(&iv[n++], &undef, true, &undef, true);
			iv_set(&iv[n++], &vals[i], true, &vals[i], true);
		} else if (vals[i].value_type == BSON_TYPE_ARRAY && arrays) {
			bson_iter_t it;
			iv_set(&iv[n++], &vals[i], true, &vals[i], true);
			if (!bson_iter_init_from_data(&it, vals[i].value.v_doc.data, vals[i].value.v_doc.data_len))
				return -1;
			if (bson_iter_next(&it)) {
				const bson_value_t *first = bson_iter_value(&it);   /* a view into the filter */
				iv_set(&iv[n++], first, true, first, true);
			} else {
				iv_set(&iv[n++], &undef, true, &undef, true);
			}
		} else if (v_usable_point(&vals[i])) {
			iv_set(&iv[n++], &vals[i], true, &vals[i], true);
		} else {
			return -1;
		}
	}
	if (n <= 1)
		return n;
	qsort_r(iv, (size_t)n, sizeof(*iv), point_cmp, (void *)ps->coll);
	for (i = 1, j = 1; i < n; i++)
		if (vcmp(&iv[i].lo, &iv[j - 1].lo, ps->coll) != 0)
			iv[j++] = iv[i];
	return j;
}

/* The complement of sorted, distinct points: [MinKey, p0), (p0, p1), ...,
 * (pn, MaxKey] into out (room for n + 1); the bounds of $ne and $nin. */
static int
complement_intervals(const planner_interval_t *pts, int n, planner_interval_t *out)
{
	bson_value_t lo = v_minkey(), hi = v_maxkey();
	bool lo_incl = true;
	int i, k = 0;

	for (i = 0; i < n; i++) {
		iv_set(&out[k++], &lo, lo_incl, &pts[i].lo, false);
		lo = pts[i].lo;
		lo_incl = false;
	}
	iv_set(&out[k++], &lo, lo_incl, &hi, true);
	return k;
}

/* Which kind of predicate bounds a field first on a multikey path, where
 * only one may: points, ranges, $regex, $ne/$nin, $exists, $mod. */
static int
pred_rank(match_pred_t op)
{
	switch (op) {
	case MATCH_PRED_EQ: case MATCH_PRED_IN: return 0;
	case MATCH_PRED_LT: case MATCH_PRED_LTE: case MATCH_PRED_GT: case MATCH_PRED_GTE: return 1;
	case MATCH_PRED_REGEX: return 2;
	case MATCH_PRED_NE: case MATCH_PRED_NIN: case MATCH_PRED_NOT_RANGE: return 3;
	case MATCH_PRED_EXISTS: return 4;
	case MATCH_PRED_MOD: return 5;
	default: return 6;
	}
}

/* The intervals of predicate p alone (ascending, disjoint; values borrowed
 * or in the arena), or -1 when it gives none.  *missing: p also matches a
 * document without the field (null, $ne, $nin, $exists: false).  leaves: a
 * wildcard index, whose keys are leaves only (no $exists bounds). */
static int
pred_intervals(const preds_t *ps, const pred_t *p, const coll_t *ix_coll, bool leaves,
               planner_interval_t **out, bool *missing)
{
	planner_interval_t *iv, *pts;
	bson_value_t lo = v_minkey(), hi = v_maxkey(), nul = {.value_type = BSON_TYPE_NULL};
	int n, np;

	*missing = false;
	switch (p->op) {
	case MATCH_PRED_EQ:
	case MATCH_PRED_IN:
		if (p->op == MATCH_PRED_IN && p->in_regex) {
			if (p->nin > MAX_RANGES || p->nre > 64)
				return -1;
			iv = tm_arena_alloc(ps->arena, sizeof(*iv) * 2 * (size_t)(p->nin + p->nre));
			n = in_regex_intervals(ps, p, ix_coll, iv);
			*missing = p->has_null;
			break;
		}
		if (p->op == MATCH_PRED_IN && (p->nin == 0 || p->nin > MAX_RANGES))
			return -1;
		np = p->op == MATCH_PRED_EQ ? 1 : (int)p->nin;
		iv = tm_arena_alloc(ps->arena, sizeof(*iv) * 2 * (size_t)np);
		n = point_intervals(ps, p->op == MATCH_PRED_EQ ? &p->val : p->in, np, !leaves, iv);
		*missing = p->has_null;
		break;
	case MATCH_PRED_LT: case MATCH_PRED_LTE: case MATCH_PRED_GT: case MATCH_PRED_GTE:
		iv = tm_arena_alloc(ps->arena, sizeof(*iv));
		n = range_interval(p, iv) ? 1 : -1;
		break;
	case MATCH_PRED_REGEX:
		iv = tm_arena_alloc(ps->arena, 2 * sizeof(*iv));
		regex_intervals(ps->arena, p, ix_coll, iv);
		n = 2;
		break;
	case MATCH_PRED_NE:
	case MATCH_PRED_NIN:
		if (p->has_null || (p->op == MATCH_PRED_NIN && (p->in_regex || p->nin > MAX_RANGES)))
			return -1;
		np = p->op == MATCH_PRED_NE ? 1 : (int)p->nin;
		pts = tm_arena_alloc(ps->arena, sizeof(*pts) * 2 * (size_t)(np ? np : 1));
		if ((np = point_intervals(ps, p->op == MATCH_PRED_NE ? &p->val : p->in, np, false, pts)) < 0)
			return -1;
		iv = tm_arena_alloc(ps->arena, sizeof(*iv) * (size_t)(np + 1));
		n = complement_intervals(pts, np, iv);
		*missing = true;
		break;
	case MATCH_PRED_NOT_RANGE: {
		/* everything outside the range's type-bracketed interval: other
		 * types, NaN (outside every numeric range), missing (null) */
		pred_t r = *p;
		planner_interval_t in;
		r.op = p->rop;
		if (!range_interval(&r, &in))
			return -1;
		iv = tm_arena_alloc(ps->arena, 2 * sizeof(*iv));
		iv_set(&iv[0], &lo, true, &in.lo, !in.lo_incl);
		iv_set(&iv[1], &in.hi, !in.hi_incl, &hi, true);
		n = 2;
		*missing = true;
		break;
	}
	case MATCH_PRED_MOD: {
		/* every number, NaN first (mongod's [nan.0, inf.0]); the keys
		 * or the documents decide */
		bson_value_t nan = {.value_type = BSON_TYPE_DOUBLE}, inf = {.value_type = BSON_TYPE_DOUBLE};
		nan.value.v_double = NAN;
		inf.value.v_double = INFINITY;
		iv = tm_arena_alloc(ps->arena, sizeof(*iv));
		iv_set(&iv[0], &nan, true, &inf, true);
		n = 1;
		break;
	}
	case MATCH_PRED_EXISTS:
		if (leaves)
			return -1;
		iv = tm_arena_alloc(ps->arena, sizeof(*iv));
		if (p->exists)
			iv_set(&iv[0], &lo, true, &hi, true);
		else
			iv_set(&iv[0], &nul, true, &nul, true);
		n = 1;
		*missing = !p->exists;
		break;
	default:
		return -1;
	}
	*out = iv;
	return n;
}

/* The intersection of two ascending lists of disjoint intervals, into out
 * (room for na + nb). */
static int
intervals_intersect(const planner_interval_t *a, int na, const planner_interval_t *b, int nb,
                    planner_interval_t *out, const coll_t *coll)
{
	int i = 0, j = 0, n = 0;

	while (i < na && j < nb) {
		planner_interval_t r = a[i];
		int c = vcmp(&a[i].hi, &b[j].hi, coll);
		if (iv_intersect(&r, &b[j], coll))
			out[n++] = r;
		/* the one ending first can meet nothing further */
		if (c < 0 || (c == 0 && !a[i].hi_incl))
			i++;
		else
			j++;
	}
	return n;
}

/* Bounds of one field from the predicates on its path (ascending value
 * order), in ps's arena, for an index whose collation is ix_coll.  Returns
 * the number of intervals (0 = provably empty), or -1 when no predicate
 * gives bounds.  The predicates' intervals are intersected, as mongod
 * does -- but on a multikey path two predicates may hold for different
 * elements, so there only the first kind (pred_rank) bounds it, unless they
 * sit in one value $elemMatch on this very path.  *used gets the
 * predicates taken (bit i: ps->p[i]); *group their $elemMatch group (-1
 * when several); *points whether every interval is a point; *missing
 * whether a predicate taken also matches a document without the field (a
 * sparse or wildcard index cannot answer it); leaves: a wildcard index. */
static int
field_bounds(const preds_t *ps, const char *path, bool multikey, const coll_t *ix_coll, bool leaves,
             planner_interval_t **out, int *group, bool *points, bool *missing, uint64_t *used)
{
	planner_interval_t *iv = NULL, *piv, *tmp;
	int i, k, n = -1, np, first = -1;
	bool miss;

	*points = false;
	*missing = false;
	*group = -2;
	*used = 0;
	*out = NULL;
	for (int rank = 0; rank < 6; rank++) {
		for (i = 0; i < ps->n; i++) {
			const pred_t *p = &ps->p[i];
			if (pred_rank(p->op) != rank || strcmp(p->path, path) != 0)
				continue;
			if (first >= 0 && multikey) {
				const pred_t *f = &ps->p[first];
				if (!(p->group > 0 && p->group == f->group && strcmp(p->gpath, path) == 0 &&
				    strcmp(f->gpath, path) == 0))
					continue;
			}
			if ((np = pred_intervals(ps, p, ix_coll, leaves, &piv, &miss)) < 0)
				continue;
			if (first < 0) {
				iv = piv;
				n = np;
				first = i;
				*group = p->group;
			} else {
				tmp = tm_arena_alloc(ps->arena, sizeof(*tmp) * (size_t)(n + np + 1));
				n = intervals_intersect(iv, n, piv, np, tmp, ps->coll);
				iv = tmp;
				if (*group != p->group)
					*group = -1;
			}
			*missing = *missing || miss;
			*used |= 1ull << i;
		}
	}
	if (n <= 0)
		return n;
	*points = true;
	for (k = 0; k < n; k++) {
		if (!iv[k].lo_incl || !iv[k].hi_incl || vcmp(&iv[k].lo, &iv[k].hi, ps->coll) != 0)
			*points = false;
		iv_own(ps->arena, &iv[k]);
	}
	*out = iv;
	return n;
}

const coll_t *
planner_field_collation(const planner_field_t *f, const coll_t *collation)
{
	return strcmp(f->path, "$_path") == 0 ? NULL : collation;
}

/* ---- candidates ----------------------------------------------------------- */

typedef struct cand {
	int index;
	int nfields;
	planner_field_t *fields;
	int nbounded;       /* leading fields with bounds */
	int npoints;        /* leading fields with point bounds */
	bool empty;         /* some bounded field is provably empty */
	bool provides_sort;
	bool backward;
	bool multikey;
	bool exact;         /* the bounds answer every predicate exactly */
	uint64_t exact_mask;  /* the filter's top-level conjuncts they answer (match_exec_skip) */
	uint64_t key_mask;    /* ... and those the index keys can decide (the IXSCAN filter) */
	bool key_complete;    /* bounds and key filter together answer the whole filter */
	bool typebits;        /* the index's entries carry type bits (keys give back exact values) */
	bool sparse1;       /* a sparse index of one field */
	uint64_t used;      /* the predicates its bounds come from (bit i: ps->p[i]) */
	bool missing;       /* some field's bounds come from a predicate matching a missing field */
	char *wildcard_path;  /* the path a wildcard index is used for */
	const coll_t *collation;  /* the index's: its keys hold this collation's sort keys */
} cand_t;

static size_t
common_prefix(const char *a, const char *b)
{
	size_t i = 0, last = 0;

	for (;; i++) {
		if (a[i] != b[i]) {
			if ((a[i] == '\0' && b[i] == '.') || (a[i] == '.' && b[i] == '\0'))
				return i;
			return last;
		}
		if (a[i] == '\0')
			return i;
		if (a[i] == '.')
			last = i;
	}
}

/* Whether field i of ix met an array at one of the components within the
 * first plen characters of its path (plen = strlen: anywhere), per the
 * index's multiKeyPaths (every field, when they were never tracked). */
static bool
field_multikey(const storage_index_t *ix, int i, const char *path, size_t plen)
{
	uint32_t mask;
	int ncomp = 1;

	if (!ix->multikey)
		return false;
	if (!ix->mkpaths_known || i >= STORAGE_INDEX_MAX_FIELDS)
		return true;
	for (size_t k = 0; k < plen && path[k] != '\0'; k++)
		ncomp += path[k] == '.';
	mask = ncomp >= 32 ? ~0u : (1u << ncomp) - 1;
	return (ix->mkpaths[i] & mask) != 0;
}

/* Any sort field that is a multikey field of the index (its order is then
 * not the index order). */
static bool
sort_on_multikey(const bson_t *sort, const planner_field_t *f, int nf)
{
	bson_iter_t it;

	if (sort == NULL || !bson_iter_init(&it, sort))
		return false;
	while (bson_iter_next(&it))
		for (int i = 0; i < nf; i++)
			if (f[i].multikey && strcmp(f[i].path, bson_iter_key(&it)) == 0)
				return true;
	return false;
}

static bool
path_has_positional(const char *p)
{
	const char *c = p;

	for (;;) {
		const char *dot = strchr(c, '.');
		size_t len = dot ? (size_t)(dot - c) : strlen(c);
		size_t i;
		bool digits = len > 0;
		for (i = 0; i < len; i++)
			if (c[i] < '0' || c[i] > '9')
				digits = false;
		if (digits)
			return true;
		if (dot == NULL)
			return false;
		c = dot + 1;
	}
}

/* Does the query's predicate set imply the index's partial filter? */
/* Do two predicates of one op name the same operand(s)? */
static bool
pred_same_operand(const pred_t *q, const pred_t *p, const coll_t *coll)
{
	uint32_t i;

	if (q->op != p->op)
		return false;
	if (p->op == MATCH_PRED_EXISTS)
		return q->exists == p->exists;
	if (p->op != MATCH_PRED_IN && p->op != MATCH_PRED_NIN)
		return bv_compare_coll(&q->val, &p->val, coll) == 0 && q->val.value_type == p->val.value_type;
	if (q->in_regex || p->in_regex || q->nin != p->nin)
		return false;
	for (i = 0; i < p->nin; i++)
		if (bv_compare_coll(&q->in[i], &p->in[i], coll) != 0)
			return false;
	return true;
}

static bool
partial_implied(const storage_index_t *ix, const preds_t *qp)
{
	bson_iter_t it;
	const uint8_t *d;
	uint32_t l;
	bson_t pf;
	match_t *m = NULL;
	preds_t pp;
	bool ok = true;
	int i, j;

	if (!bson_iter_init_find(&it, ix->spec, "partialFilterExpression") || !BSON_ITER_HOLDS_DOCUMENT(&it))
		return true;
	bson_iter_document(&it, &l, &d);
	bson_init_static(&pf, d, l);
	if (match_compile(&pf, NULL, &m, NULL) != 0)
		return false;
	preds_init(&pp, NULL, NULL);
	collect_node(&pp, m->root, NULL, 0, NULL);
	/* Every leaf of the partial filter must be one we understood. */
	if (pp.n == 0)
		ok = false;
	for (i = 0; ok && i < pp.n; i++) {
		const pred_t *p = &pp.p[i];
		bool implied = false;
		if (p->group != 0) {
			ok = false;
			break;
		}
		for (j = 0; !implied && j < qp->n; j++) {
			const pred_t *q = &qp->p[j];
			planner_interval_t pi, qi;
			if (q->group != 0 || strcmp(q->path, p->path) != 0)
				continue;
			if (pred_same_operand(q, p, qp->coll)) {
				implied = true;
				break;
			}
			/* {$exists: true}: implied by anything a missing field fails */
			if (p->op == MATCH_PRED_EXISTS && p->exists &&
			    (is_range_op(q->op) || q->op == MATCH_PRED_REGEX || (q->op == MATCH_PRED_EXISTS && q->exists) ||
			     ((q->op == MATCH_PRED_EQ || q->op == MATCH_PRED_IN) && !q->has_null))) {
				implied = true;
				break;
			}
			if (!is_range_op(p->op) || (q->op != MATCH_PRED_EQ && !is_range_op(q->op)))
				continue;
			/* q's interval inside p's interval */
			if (!range_interval(p, &pi))
				continue;
			if (q->op == MATCH_PRED_EQ) {
				if (!v_usable_point(&q->val))
					continue;
				iv_set(&qi, &q->val, true, &q->val, true);
			} else if (!range_interval(q, &qi)) {
				continue;
			}
			{
				int lo = vcmp(&qi.lo, &pi.lo, qp->coll), hi = vcmp(&qi.hi, &pi.hi, qp->coll);
				implied = (lo > 0 || (lo == 0 && (pi.lo_incl || !qi.lo_incl))) &&
				    (hi < 0 || (hi == 0 && (pi.hi_incl || !qi.hi_incl)));
			}
		}
		if (!implied)
			ok = false;
	}
	/* A partial filter with leaves we did not collect ($type, $or...)
	 * counts as not implied. */
	if (pp.skipped > 0)
		ok = false;
	match_free(m);
	return ok;
}

/* Sort fields {f: 1|-1, ...} against index fields from `from` on. */
static bool
sort_provided(const bson_t *sort, const planner_field_t *f, int nf, int from, bool *backward)
{
	bson_iter_t it;
	int i = from, dir = 0;

	if (sort == NULL || bson_empty(sort))
		return false;
	if (!bson_iter_init(&it, sort))
		return false;
	while (bson_iter_next(&it)) {
		double d;
		int rel;
		if (!BSON_ITER_HOLDS_NUMBER(&it))
			return false;
		d = bson_iter_as_double(&it);
		if (i >= nf || f[i].hashed || strcmp(bson_iter_key(&it), f[i].path) != 0)
			return false;
		rel = ((d < 0) != f[i].desc) ? -1 : 1;
		if (dir != 0 && rel != dir)
			return false;
		dir = rel;
		i++;
	}
	*backward = dir < 0;
	return true;
}

/* Whether the bounds of c answer predicate p of ps exactly: every key in
 * them belongs to a document p matches.  Only a predicate the bounds were
 * built from can be; then its kind decides. */
static bool
pred_exact(const cand_t *c, const preds_t *ps, const pred_t *p)
{
	int fi, idx = (int)(p - ps->p);

	if (p->group != 0 || idx >= 64 || !(c->used >> idx & 1))
		return false;
	for (fi = 0; fi < c->nfields; fi++)
		if (c->fields[fi].bounded && strcmp(c->fields[fi].path, p->path) == 0)
			break;
	if (fi == c->nfields || c->fields[fi].hashed)
		return false;
	switch (p->op) {
	case MATCH_PRED_EQ: case MATCH_PRED_IN:
		/* a null key may stand for a missing field or an empty array;
		 * regexes listed must be anchored literals on plain strings */
		return !p->has_null && !p->has_array && (!p->in_regex || (p->in_re_exact && c->collation == NULL));
	case MATCH_PRED_REGEX:
		/* the prefix bounds decide it, on the strings themselves */
		return p->re_exact && c->collation == NULL;
	case MATCH_PRED_NE: case MATCH_PRED_NIN:
		/* {a: [1, 2]} has a key outside {$ne: 2}'s bounds */
		return !c->fields[fi].multikey && !p->has_null;
	case MATCH_PRED_NOT_RANGE:
		/* {a: [1, 9]} has a key outside {$not: {$gt: 5}}'s bounds */
		return !c->fields[fi].multikey;
	case MATCH_PRED_EXISTS:
		/* only a one-field sparse index holds exactly the documents with
		 * the field */
		return p->exists && c->sparse1;
	default:
		return is_range_op(p->op);
	}
}

/* Whether p, not answered by the bounds, can be decided from the index key
 * alone (mongod's INEXACT_COVERED, checked in the IXSCAN stage before any
 * fetch): a $regex or $mod on a field of the index that never held an
 * array, the values themselves in the keys (no collation) with their exact
 * types. */
static bool
pred_keyable(const cand_t *c, const pred_t *p)
{
	int fi;

	if ((p->op != MATCH_PRED_REGEX && p->op != MATCH_PRED_MOD) || p->group != 0 || c->collation != NULL ||
	    !c->typebits ||
	    c->wildcard_path != NULL)
		return false;
	for (fi = 0; fi < c->nfields; fi++)
		if (strcmp(c->fields[fi].path, p->path) == 0)
			return !c->fields[fi].multikey && !c->fields[fi].hashed;
	return false;
}

/* c->exact: the bounds answer every predicate (explain then shows no
 * filter on FETCH, as mongod); c->exact_mask: the top-level conjuncts
 * they answer (left out of the FETCH filter, as mongod leaves out the
 * predicates its bounds answer exactly); c->key_mask: the conjuncts the
 * keys decide (every predicate in them keyable). */
static void
cand_exactness(cand_t *c, const preds_t *ps)
{
	uint64_t good = 0, keyed = 0, bad = ps->skipped_top;
	bool all = ps->skipped == 0 && c->nbounded > 0 && ps->n > 0, complete = all;

	for (int i = 0; i < ps->n; i++) {
		const pred_t *p = &ps->p[i];
		bool e = c->nbounded > 0 && pred_exact(c, ps, p), k = !e && c->nbounded > 0 && pred_keyable(c, p);
		all = all && e;
		complete = complete && (e || k);
		if (p->top >= 0 && p->top < 64)
			*(e ? &good : k ? &keyed : &bad) |= 1ull << p->top;
		else if (k)
			complete = false;   /* keyable, but not a conjunct of its own */
	}
	c->exact = all;
	c->exact_mask = good & ~bad & ~keyed;
	c->key_mask = keyed & ~bad & ~good;
	/* a conjunct mixing both kinds is in neither mask: not complete */
	c->key_complete = complete && (good & keyed) == 0 && c->key_mask != 0;
}

static int
i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Bounds of a hashed field (mongod's translateEquality for hashed
 * indexes): the first top-level equality or $in on its path gives one point
 * per value, each the value's hash, sorted and distinct; nothing else
 * bounds it (ranges, $regex, $ne ... scan it whole).  An array, a regex or
 * MinKey/MaxKey among the values (a document, on a collated index) leaves
 * the field unbounded.  Never exact:
 * different values share a hash, so the filter still decides.  *missing: a
 * null was asked for (a missing field is keyed as the hash of null).
 * Returns the number of points, or -1.
 */
static int
hashed_bounds(const preds_t *ps, const char *path, const coll_t *ix_coll, planner_interval_t **out, bool *missing)
{
	int i, k, n = 0, nv;
	const bson_value_t *vals;
	int64_t *h;
	planner_interval_t *iv;

	*missing = false;
	for (i = 0; i < ps->n; i++) {
		const pred_t *p = &ps->p[i];
		if (p->group != 0 || strcmp(p->path, path) != 0)
			continue;
		if (p->op == MATCH_PRED_EQ || (p->op == MATCH_PRED_IN && !p->in_regex && p->nin > 0 &&
		    p->nin <= MAX_RANGES))
			break;
	}
	if (i == ps->n)
		return -1;
	vals = ps->p[i].op == MATCH_PRED_EQ ? &ps->p[i].val : ps->p[i].in;
	nv = ps->p[i].op == MATCH_PRED_EQ ? 1 : (int)ps->p[i].nin;
	h = tm_arena_alloc(ps->arena, sizeof(*h) * (size_t)nv);
	for (k = 0; k < nv; k++) {
		bson_type_t t = vals[k].value_type;
		if (t == BSON_TYPE_ARRAY || t == BSON_TYPE_REGEX || t == BSON_TYPE_MINKEY || t == BSON_TYPE_MAXKEY)
			return -1;
		/* strings inside a document compare by the collation but hash by
		 * their bytes: no point for them on a collated index */
		if (ix_coll != NULL && t == BSON_TYPE_DOCUMENT)
			return -1;
		h[k] = keygen_hash_value(&vals[k], ix_coll);
	}
	qsort(h, (size_t)nv, sizeof(*h), i64_cmp);
	iv = tm_arena_alloc(ps->arena, sizeof(*iv) * (size_t)nv);
	for (k = 0; k < nv; k++) {
		bson_value_t v = {.value_type = BSON_TYPE_INT64};
		if (n > 0 && iv[n - 1].lo.value.v_int64 == h[k])
			continue;
		v.value.v_int64 = h[k];
		iv_set(&iv[n], &v, true, &v, true);
		n++;
	}
	*missing = ps->p[i].has_null;
	*out = iv;
	return n;
}

/* Bounds of index ix for the predicates; false when the index is unusable. */
static bool
cand_build(const storage_coll_t *coll, int ixn, const preds_t *ps, const bson_t *sort, bool hinted,
           cand_t *c)
{
	const storage_index_t *ix = &coll->indexes[ixn];
	bson_iter_t it;
	int nf = 0, i, groups[KEYGEN_MAX_FIELDS];

	memset(c, 0, sizeof(*c));
	c->index = ixn;
	c->multikey = ix->multikey;
	c->collation = ix->collation;
	c->sparse1 = ix->sparse && ix->nfields == 1;
	c->typebits = ix->typebits;
	if (!bson_iter_init(&it, ix->key))
		return false;
	c->fields = tm_arena_alloc0(ps->arena, sizeof(planner_field_t) * (size_t)(ix->nfields + 1));
	while (bson_iter_next(&it) && nf < ix->nfields && nf < KEYGEN_MAX_FIELDS) {
		planner_field_t *f = &c->fields[nf];
		planner_interval_t *iv = NULL;
		int n = -1, g = 0, j;
		bool points = false, missing = false;
		uint64_t used = 0;
		if (BSON_ITER_HOLDS_UTF8(&it) && strcmp(bson_iter_utf8(&it, NULL), "hashed") == 0) {
			f->path = tm_arena_memdup(ps->arena, bson_iter_key(&it), bson_iter_key_len(&it) + 1);
			f->hashed = true;
			nf++;
			c->nfields = nf;
			n = hashed_bounds(ps, f->path, ix->collation, &iv, &missing);
			groups[nf - 1] = 0;
			if (n < 0) {
				bson_value_t lo = v_minkey(), hi = v_maxkey();
				f->iv = tm_arena_alloc(ps->arena, sizeof(planner_interval_t));
				iv_set(&f->iv[0], &lo, true, &hi, true);
				f->n = 1;
				continue;
			}
			f->iv = iv;
			f->n = n;
			f->bounded = f->points = true;
			c->missing = c->missing || missing;
			if (c->nbounded == nf - 1) {
				c->nbounded++;
				if (c->npoints == c->nbounded - 1)
					c->npoints++;
			}
			continue;
		}
		if (!BSON_ITER_HOLDS_NUMBER(&it)) {
			c->nfields = nf;
			return false;
		}
		f->path = tm_arena_memdup(ps->arena, bson_iter_key(&it), bson_iter_key_len(&it) + 1);
		f->desc = bson_iter_as_double(&it) < 0;
		f->multikey = field_multikey(ix, nf, f->path, strlen(f->path));
		nf++;
		c->nfields = nf;
		if (!path_has_positional(f->path))
			n = field_bounds(ps, f->path, f->multikey, ix->collation, false, &iv, &g, &points, &missing,
			    &used);
		if (n >= 0 && ix->multikey) {
			/* Compound only across independent paths (no array on
			 * their shared prefix), or within one $elemMatch on
			 * exactly the shared array prefix. */
			for (j = 0; j < nf - 1 && n >= 0; j++) {
				size_t cp = common_prefix(f->path, c->fields[j].path);
				if (cp == 0 || !c->fields[j].bounded)
					continue;
				if (!field_multikey(ix, nf - 1, f->path, cp) && !field_multikey(ix, j, c->fields[j].path, cp))
					continue;
				if (g <= 0 || groups[j] != g) {
					n = -1;
					break;
				}
				{
					const pred_t *gp = NULL;
					int k;
					for (k = 0; k < ps->n; k++)
						if (ps->p[k].group == g)
							gp = &ps->p[k];
					if (gp == NULL || strlen(gp->gpath) != cp || strncmp(gp->gpath, f->path, cp) != 0)
						n = -1;
				}
			}
			if (n < 0)
				iv = NULL;
		}
		groups[nf - 1] = g;
		if (n < 0) {
			bson_value_t lo = v_minkey(), hi = v_maxkey();
			f->iv = tm_arena_alloc(ps->arena, sizeof(planner_interval_t));
			iv_set(&f->iv[0], &lo, true, &hi, true);
			f->n = 1;
			continue;
		}
		f->iv = iv;
		f->n = n;
		f->bounded = true;
		f->points = points;
		c->missing = c->missing || missing;
		c->used |= used;
		if (n == 0)
			c->empty = true;
		/* leading runs: bounded fields, and point fields before them */
		if (c->nbounded == nf - 1) {
			c->nbounded++;
			if (points && c->npoints == c->nbounded - 1)
				c->npoints++;
		}
	}
	cand_exactness(c, ps);
	if (c->nbounded == 0) {
		if (!hinted && (ix->sparse || ix->partial))
			return false;
	}
	/* a sparse index lacks the documents without its fields, which
	 * null, $ne, $nin and $exists: false match (mongod never picks it) */
	if (!hinted && ix->sparse && c->missing)
		return false;
	if (!hinted && ix->partial &&
	    (ps->partial_set ? ixn >= 64 || !(ps->partial_ok & (1ull << ixn)) : !partial_implied(ix, ps)))
		return false;
	if (!sort_on_multikey(sort, c->fields, c->nfields))
		c->provides_sort = sort_provided(sort, c->fields, c->nfields, c->npoints, &c->backward) ||
		    sort_provided(sort, c->fields, c->nfields, 0, &c->backward);
	if (c->provides_sort && c->npoints > 0) {
		/* several points on an equality prefix break the order */
		for (i = 0; i < c->npoints; i++)
			if (c->fields[i].n > 1)
				c->provides_sort = false;
	}
	if (!hinted && c->nbounded == 0 && !c->provides_sort)
		return false;
	return true;
}

/* A hinted 2d / 2dsphere / text index that no predicate bounds: the whole
 * index, every field [MinKey, MaxKey], as mongod's buildWholeIXSoln for a
 * hint the predicates cannot use.  Its keys are cells, geohashes or terms,
 * never the documents' values: each field is taken as multikey (no
 * covering, no key filter); the scan deduplicates when the index is
 * multikey (a document gave it several keys), as mongod's IXSCAN; it
 * provides no sort and answers no predicate. */
static bool
cand_whole(const storage_coll_t *coll, int ixn, const preds_t *ps, cand_t *c)
{
	const storage_index_t *ix = &coll->indexes[ixn];
	bson_value_t lo = v_minkey(), hi = v_maxkey();
	bson_iter_t it;
	int nf = 0;

	memset(c, 0, sizeof(*c));
	c->index = ixn;
	c->multikey = ix->multikey;
	c->collation = ix->collation;
	c->typebits = ix->typebits;
	if (!bson_iter_init(&it, ix->key))
		return false;
	c->fields = tm_arena_alloc0(ps->arena, sizeof(planner_field_t) * (size_t)(ix->nfields + 1));
	while (bson_iter_next(&it) && nf < ix->nfields && nf < KEYGEN_MAX_FIELDS) {
		planner_field_t *f = &c->fields[nf++];
		f->path = tm_arena_memdup(ps->arena, bson_iter_key(&it), bson_iter_key_len(&it) + 1);
		f->desc = BSON_ITER_HOLDS_NUMBER(&it) && bson_iter_as_double(&it) < 0;
		f->multikey = true;
		f->iv = tm_arena_alloc(ps->arena, sizeof(planner_interval_t));
		iv_set(&f->iv[0], &lo, true, &hi, true);
		f->n = 1;
	}
	c->nfields = nf;
	return nf > 0;
}

/* Drop a candidate (its memory stays in the plan's arena). */
static void
cand_free(cand_t *c)
{
	c->fields = NULL;
	c->nfields = 0;
	c->wildcard_path = NULL;
}

/*
 * A wildcard index as a candidate: the best predicate path it covers gives
 * {$_path: [p, p], p: bounds} (always treated as multikey).
 */
static bool
wildcard_cand(const storage_coll_t *coll, int ixn, const preds_t *ps, cand_t *c)
{
	const storage_index_t *ix = &coll->indexes[ixn];
	int i, best = -1, best_n = 0;
	bool best_points = false;
	planner_interval_t *best_iv = NULL;

	memset(c, 0, sizeof(*c));
	c->index = ixn;
	c->collation = ix->collation;
	for (i = 0; i < ps->n; i++) {
		const char *p = ps->p[i].path;
		planner_interval_t *iv = NULL;
		int n, g, k;
		bool points, missing;
		uint64_t used;
		if (path_has_positional(p) || !keygen_wildcard_covers(ix, p))
			continue;
		/* it holds leaves: nothing for a missing field */
		n = field_bounds(ps, p, true, ix->collation, true, &iv, &g, &points, &missing, &used);
		if (n < 0 || missing)
			continue;
		/* a wildcard index holds leaves, never whole documents */
		for (k = 0; k < n; k++)
			if (iv[k].lo.value_type == BSON_TYPE_DOCUMENT && iv[k].hi.value_type == BSON_TYPE_DOCUMENT)
				break;
		if (k < n)
			continue;
		if (best < 0 || (points && !best_points)) {
			best = i;
			best_iv = iv;
			best_n = n;
			best_points = points;
		}
	}
	if (best < 0)
		return false;
	{
		bson_value_t pv;
		pv.value_type = BSON_TYPE_UTF8;
		pv.value.v_utf8.str = (char *)ps->p[best].path;
		pv.value.v_utf8.len = (uint32_t)strlen(ps->p[best].path);
		c->fields = tm_arena_alloc0(ps->arena, sizeof(planner_field_t) * 2);
		c->nfields = 2;
		c->fields[0].path = tm_arena_strdup(ps->arena, "$_path");
		c->fields[0].iv = tm_arena_alloc(ps->arena, sizeof(planner_interval_t));
		iv_set(&c->fields[0].iv[0], &pv, true, &pv, true);
		iv_own(ps->arena, &c->fields[0].iv[0]);
		c->fields[0].n = 1;
		c->fields[0].bounded = c->fields[0].points = true;
		c->fields[1].path = tm_arena_strdup(ps->arena, ps->p[best].path);
		c->fields[1].iv = best_iv;
		c->fields[1].n = best_n;
		c->fields[1].bounded = true;
		c->fields[1].points = best_points;
	}
	c->wildcard_path = c->fields[1].path;
	c->multikey = true;
	c->empty = best_n == 0;
	c->nbounded = 1;
	c->npoints = best_points ? 1 : 0;
	return true;
}

/* Better candidate: more points, more bounds, provides sort, fewer fields. */
static bool
cand_better(const cand_t *a, const cand_t *b)
{
	if (a->empty != b->empty)
		return a->empty;
	if (a->npoints != b->npoints)
		return a->npoints > b->npoints;
	if (a->provides_sort != b->provides_sort)
		return a->provides_sort;
	if (a->nbounded != b->nbounded)
		return a->nbounded > b->nbounded;
	return a->nfields < b->nfields;
}

/* ---- KeyString ranges ----------------------------------------------------- */

/* A KeyString under construction, in the plan's arena. */
typedef struct bytes {
	tm_arena_t *arena;
	uint8_t *p;
	size_t len, cap;
} bytes_t;

static void
bytes_put(bytes_t *b, const uint8_t *d, size_t n)
{
	if (n == 0)
		return;
	if (b->len + n > b->cap) {
		size_t cap = (b->len + n) * 2 + 16;
		b->p = tm_arena_realloc(b->arena, b->p, b->len, cap);
		b->cap = cap;
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
}

static void
bytes_put_value(bytes_t *b, const bson_value_t *v, bool desc, const coll_t *coll)
{
	keystring_t ks;

	keystring_init(&ks);
	keystring_append_value_coll(&ks, v, desc, coll);
	bytes_put(b, ks.buf, ks.len);
	keystring_destroy(&ks);
}

static void
bytes_put_max(bytes_t *b)
{
	keystring_t ks;

	keystring_init(&ks);
	keystring_append_max(&ks);
	bytes_put(b, ks.buf, ks.len);
	keystring_destroy(&ks);
}

typedef struct rbuild {
	planner_solution_t *s;
	int cap;
	bool overflow;
} rbuild_t;

/* The range's ends take lo's and hi's bytes (never NULL when bounded). */
static void
range_push(rbuild_t *b, const bytes_t *lo, bool lo_unb, bool lo_incl, const bytes_t *hi, bool hi_unb,
           bool hi_incl)
{
	planner_solution_t *s = b->s;
	tm_arena_t *a = sol_arena(s);
	planner_range_t *r;

	if (s->nranges == b->cap) {
		int cap = b->cap ? b->cap * 2 : 4;
		s->ranges = tm_arena_realloc(a, s->ranges, sizeof(*r) * (size_t)b->cap, sizeof(*r) * (size_t)cap);
		b->cap = cap;
	}
	r = &s->ranges[s->nranges++];
	memset(r, 0, sizeof(*r));
	if (!lo_unb) {
		r->lo = lo->p != NULL ? lo->p : tm_arena_alloc(a, 1);
		r->lo_len = lo->len;
	}
	if (!hi_unb) {
		r->hi = hi->p != NULL ? hi->p : tm_arena_alloc(a, 1);
		r->hi_len = hi->len;
	}
	r->lo_incl = lo_incl;
	r->hi_incl = hi_incl;
}

/* Each field's intervals as KeyString parts, for the bounds checker. */
static void
fields_encode(tm_arena_t *a, planner_field_t *f, int nf, const coll_t *coll)
{
	int i, j;

	for (i = 0; i < nf; i++) {
		const coll_t *fc = planner_field_collation(&f[i], coll);
		f[i].enc = tm_arena_alloc0(a, sizeof(planner_range_t) * (size_t)(f[i].n ? f[i].n : 1));
		for (j = 0; j < f[i].n; j++) {
			bytes_t lo = {a, NULL, 0, 0}, hi = {a, NULL, 0, 0};
			bytes_put_value(&lo, &f[i].iv[j].lo, f[i].desc, fc);
			if (f[i].points)   /* a point: both ends are the one value */
				hi = lo;
			else
				bytes_put_value(&hi, &f[i].iv[j].hi, f[i].desc, fc);
			f[i].enc[j].lo = lo.p;
			f[i].enc[j].lo_len = lo.len;
			f[i].enc[j].hi = hi.p;
			f[i].enc[j].hi_len = hi.len;
			f[i].enc[j].lo_incl = f[i].iv[j].lo_incl;
			f[i].enc[j].hi_incl = f[i].iv[j].hi_incl;
		}
	}
}

/* Turn each field's ascending intervals into scan order (descending fields
 * reversed: their KeyString order is the values' reverse). */
static void
fields_to_key_order(planner_field_t *f, int nf)
{
	int i, j;

	for (i = 0; i < nf; i++) {
		if (!f[i].desc)
			continue;
		for (j = 0; j < f[i].n; j++) {
			planner_interval_t *iv = &f[i].iv[j];
			bson_value_t t = iv->lo;
			bool ti = iv->lo_incl;
			iv->lo = iv->hi;
			iv->lo_incl = iv->hi_incl;
			iv->hi = t;
			iv->hi_incl = ti;
		}
		for (j = 0; j < f[i].n / 2; j++) {
			planner_interval_t t = f[i].iv[j];
			f[i].iv[j] = f[i].iv[f[i].n - 1 - j];
			f[i].iv[f[i].n - 1 - j] = t;
		}
	}
}

/* ---- hint ----------------------------------------------------------------- */

static int
hint_find(const storage_coll_t *coll, const bson_value_t *hint, int *ixn, bool *natural, bool *backward,
          terr_t *err)
{
	int i;

	*ixn = -1;
	*natural = false;
	if (hint->value_type == BSON_TYPE_UTF8) {
		for (i = 0; i < coll->nindexes; i++)
			if (strcmp(coll->indexes[i].name, hint->value.v_utf8.str) == 0 &&
			    !coll->indexes[i].hidden) {
				*ixn = i;
				return 0;
			}
	} else if (hint->value_type == BSON_TYPE_DOCUMENT) {
		bson_t h;
		bson_iter_t it;
		bson_init_static(&h, hint->value.v_doc.data, hint->value.v_doc.data_len);
		if (bson_empty(&h))
			return 1;
		if (bson_iter_init_find(&it, &h, "$natural")) {
			*natural = true;
			*backward = bson_iter_as_double(&it) < 0;
			return 0;
		}
		for (i = 0; i < coll->nindexes; i++) {
			bson_iter_t a, b;
			bool eq = true;
			bson_iter_init(&a, coll->indexes[i].key);
			bson_iter_init(&b, &h);
			for (;;) {
				bool na = bson_iter_next(&a), nb = bson_iter_next(&b);
				if (na != nb) {
					eq = false;
					break;
				}
				if (!na)
					break;
				if (strcmp(bson_iter_key(&a), bson_iter_key(&b)) != 0 ||
				    bv_compare(bson_iter_value(&a), bson_iter_value(&b)) != 0) {
					eq = false;
					break;
				}
			}
			if (eq && !coll->indexes[i].hidden) {
				*ixn = i;
				return 0;
			}
		}
	} else {
		return terr_set(err, TERR_FAILED_TO_PARSE, "hint must be a string or an object");
	}
	return terr_set(err, TERR_BAD_VALUE,
	    "error processing query: ns=%s planner returned error :: caused by :: hint provided does not correspond to an existing index",
	    coll->ns);
}

/* ---- entry points --------------------------------------------------------- */

static void solution_from(planner_solution_t *s, cand_t *best);

/* Keep a losing candidate as a rejected plan of s (s NULL: drop it). */
static void
reject(planner_solution_t *s, cand_t *c)
{
	planner_solution_t *r;

	if (s == NULL || s->nrejected >= MAX_REJECTED) {
		cand_free(c);
		return;
	}
	r = region_solution(s->region);
	solution_from(r, c);
	cand_free(c);
	if (s->rejected == NULL)
		s->rejected = tm_arena_alloc(sol_arena(s), sizeof(*s->rejected) * MAX_REJECTED);
	s->rejected[s->nrejected++] = r;
}

/* Whether a value's order or equality depends on the collation: strings
 * and symbols, and documents or arrays (which may hold them). */
static bool
collation_sensitive(const bson_value_t *v)
{
	switch (v->value_type) {
	case BSON_TYPE_UTF8: case BSON_TYPE_SYMBOL: case BSON_TYPE_DOCUMENT: case BSON_TYPE_ARRAY:
		return true;
	default:
		return false;
	}
}

/* An index whose collation is not the query's holds keys ordered by
 * another rule: it can serve the query only when none of the predicates on
 * its fields compares strings (mongod's collation-compatibility check), and
 * never the sort. */
static bool
collation_compatible(const storage_index_t *ix, const preds_t *ps)
{
	bson_iter_t it;
	int i;

	if (ix->collation == ps->coll)
		return true;
	if (!bson_iter_init(&it, ix->key))
		return false;
	while (bson_iter_next(&it)) {
		const char *f = bson_iter_key(&it);
		for (i = 0; i < ps->n; i++) {
			const pred_t *p = &ps->p[i];
			if (strcmp(p->path, f) != 0 && strcmp(f, "$**") != 0 &&
			    !(strlen(f) > 4 && strcmp(f + strlen(f) - 4, ".$**") == 0))
				continue;
			if (p->op == MATCH_PRED_IN) {
				for (uint32_t k = 0; k < p->nin; k++)
					if (collation_sensitive(&p->in[k]))
						return false;
			} else if (p->op != MATCH_PRED_EXISTS && collation_sensitive(&p->val)) {
				return false;
			}
		}
	}
	return true;
}

/* The best candidate index for ps (hinted >= 0: only that one); the others
 * become rejected plans of keep (when not NULL). */
/* Can ix be a candidate at all: a predicate on its first field, or a sort
 * starting with it?  (Without either cand_build finds no leading bounds and
 * no sort order and refuses it; this answers without building anything.)
 * Wildcard indexes always go to wildcard_cand. */
static bool
leading_field_used(const storage_index_t *ix, const preds_t *ps, const bson_t *sort)
{
	bson_iter_t it;
	const char *first;

	if (!bson_iter_init(&it, ix->key) || !bson_iter_next(&it))
		return true;
	if (ix->wildcard)
		return true;
	first = bson_iter_key(&it);
	for (int i = 0; i < ps->n; i++)
		if (strcmp(ps->p[i].path, first) == 0)
			return true;
	return sort != NULL && bson_iter_init(&it, sort) && bson_iter_next(&it) && strcmp(bson_iter_key(&it), first) == 0;
}

static bool
best_candidate(const storage_coll_t *coll, const preds_t *ps, const bson_t *sort, int hinted, cand_t *best,
               planner_solution_t *keep)
{
	cand_t c;
	bool have = false;
	int i;

	memset(best, 0, sizeof(*best));
	for (i = 0; i < coll->nindexes; i++) {
		const storage_index_t *ix = &coll->indexes[i];
		if (hinted >= 0 && i != hinted)
			continue;
		/* geo indexes are planned by plan_geo.c (their keys are cells or
		 * hashes); hinted without a predicate of theirs (and a hinted
		 * text index), the whole index is scanned */
		if (hinted == i && (keygen_geo_kind(ix, NULL) || keygen_is_text(ix))) {
			if (!cand_whole(coll, i, ps, &c)) {
				cand_free(&c);
				continue;
			}
			*best = c;
			return true;
		}
		if (keygen_geo_kind(ix, NULL))
			continue;
		if (hinted < 0 && !leading_field_used(ix, ps, sort))
			continue;
		if (hinted < 0 && ix->hidden)
			continue;
		/* an index filter (planCacheSetFilter): only its indexes compete */
		if (hinted < 0 && ps->allowed != PLANNER_ALL_INDEXES && (i >= 64 || !(ps->allowed & (1ull << i))))
			continue;
		if (!collation_compatible(ix, ps)) {
			/* a hinted index with another collation: scanned whole */
			preds_t none;
			if (hinted < 0 || ix->wildcard)
				continue;
			preds_init(&none, ix->collation, ps->arena);
			if (!cand_build(coll, i, &none, NULL, true, &c)) {
				cand_free(&c);
				continue;
			}
		} else if (ix->wildcard ? !wildcard_cand(coll, i, ps, &c) : !cand_build(coll, i, ps, sort, hinted >= 0, &c)) {
			cand_free(&c);
			continue;
		}
		if (ix->collation != ps->coll)
			c.provides_sort = false;
		if (!have || cand_better(&c, best)) {
			if (have)
				reject(keep, best);
			*best = c;
			have = true;
		} else {
			reject(keep, &c);
		}
	}
	return have;
}

/* Fill s as the IXSCAN of candidate best (whose fields s takes). */
static void
solution_from(planner_solution_t *s, cand_t *best)
{
	rbuild_t b = {s, 0, false};
	bytes_t prefix = {sol_arena(s), NULL, 0, 0};
	int i;

	s->kind = PLANNER_IXSCAN;
	s->index = best->index;
	s->backward = best->provides_sort && best->backward;
	s->provides_sort = best->provides_sort;
	s->dedup = best->multikey;
	s->exact = best->exact;
	s->exact_mask = best->exact_mask;
	s->key_mask = best->key_mask;
	s->key_complete = best->exact || best->key_complete;
	s->wildcard_path = best->wildcard_path;
	best->wildcard_path = NULL;
	fields_to_key_order(best->fields, best->nfields);
	s->fields = best->fields;
	s->nfields = best->nfields;
	best->fields = NULL;
	s->collation = best->collation;
	fields_encode(sol_arena(s), s->fields, s->nfields, s->collation);
	if (!best->empty) {
		/* One range from the smallest to the largest key the bounds allow;
		 * the executor's bounds checker skips the gaps inside it. */
		bytes_t hi = {sol_arena(s), NULL, 0, 0};
		bool hi_incl = true;
		for (i = 0; i < s->nfields; i++) {
			const planner_range_t *e = &s->fields[i].enc[0];
			bytes_put(&prefix, e->lo, e->lo_len);
			if (!e->lo_incl) {
				bytes_put_max(&prefix);
				break;
			}
		}
		for (i = 0; i < s->nfields; i++) {
			const planner_range_t *e = &s->fields[i].enc[s->fields[i].n - 1];
			bytes_put(&hi, e->hi, e->hi_len);
			if (!e->hi_incl) {
				hi_incl = false;
				break;
			}
		}
		if (hi_incl)
			bytes_put_max(&hi);
		range_push(&b, &prefix, false, true, &hi, false, hi_incl);
	}
	if (s->backward) {
		for (i = 0; i < s->nranges / 2; i++) {
			planner_range_t t = s->ranges[i];
			s->ranges[i] = s->ranges[s->nranges - 1 - i];
			s->ranges[s->nranges - 1 - i] = t;
		}
	}
}

/* The top-level $or of the filter: the root itself (*whole: the filter is
 * nothing but the $or), or the first $or directly under the root $and. */
static const mnode_t *
find_top_or(const mnode_t *root, bool *whole)
{
	uint32_t i;

	*whole = root->kind == MK_OR;
	if (root->kind == MK_OR)
		return root;
	if (root->kind != MK_AND)
		return NULL;
	for (i = 0; i < root->nkids; i++)
		if (root->kids[i]->kind == MK_OR)
			return root->kids[i];
	return NULL;
}

/* One index scan per $or branch; false when some branch has no index. */
static bool
plan_or(const storage_coll_t *coll, const match_t *m, const preds_t *top, planner_solution_t *s)
{
	const mnode_t *or;
	bool whole;
	uint32_t n, i;

	if ((or = find_top_or(m->root, &whole)) == NULL)
		return false;
	n = or->nkids;
	if (n == 0 || n > 64)
		return false;
	s->branches = tm_arena_alloc0(sol_arena(s), sizeof(planner_solution_t *) * (size_t)n);
	for (i = 0; i < n; i++) {
		preds_t bp;
		cand_t best;
		bool ok;
		preds_init(&bp, top->coll, sol_arena(s));
		bp.allowed = top->allowed;
		bp.partial_set = top->partial_set;
		bp.partial_ok = top->partial_ok;
		collect_node(&bp, or->kids[i], NULL, 0, NULL);
		ok = best_candidate(coll, &bp, NULL, -1, &best, NULL) && best.nbounded > 0;
		if (!ok) {
			cand_free(&best);
			return false;
		}
		s->branches[i] = region_solution(s->region);
		solution_from(s->branches[i], &best);
		cand_free(&best);
		s->nbranches = (int)i + 1;
	}
	s->kind = PLANNER_OR;
	s->dedup = true;
	s->exact = whole;
	for (i = 0; i < (uint32_t)s->nbranches; i++)
		if (!s->branches[i]->exact)
			s->exact = false;
	return true;
}

/* Forget what s held (its memory stays in the region until the plan is
 * freed); s stays in its region. */
static void
solution_clear(planner_solution_t *s)
{
	struct planner_region *r = s->region;

	memset(s, 0, sizeof(*s));
	s->region = r;
}

int
planner_plan(const storage_coll_t *coll, const match_t *m, const bson_t *sort, const bson_value_t *hint,
             const coll_t *collation, planner_solution_t **out, terr_t *err)
{
	return planner_plan_filtered(coll, m, sort, hint, collation, PLANNER_ALL_INDEXES, out, err);
}

int
planner_plan_filtered(const storage_coll_t *coll, const match_t *m, const bson_t *sort, const bson_value_t *hint,
                      const coll_t *collation, uint64_t allowed, planner_solution_t **out, terr_t *err)
{
	return planner_plan_partial(coll, m, sort, hint, collation, allowed, false, 0, out, err);
}

int
planner_plan_partial(const storage_coll_t *coll, const match_t *m, const bson_t *sort, const bson_value_t *hint,
                     const coll_t *collation, uint64_t allowed, bool partial_set, uint64_t partial_ok,
                     planner_solution_t **out, terr_t *err)
{
	planner_solution_t *s;
	preds_t ps;
	cand_t best;
	bool natural = false, hint_backward = false;
	int hinted = -1;

	*out = NULL;
	if (hint != NULL && hint_find(coll, hint, &hinted, &natural, &hint_backward, err) < 0)
		return -1;
	s = solution_new();
	preds_init(&ps, collation, sol_arena(s));
	ps.allowed = allowed;
	ps.partial_set = partial_set;
	ps.partial_ok = partial_ok;
	s->kind = PLANNER_COLLSCAN;
	if (hint != NULL) {
		if (natural) {
			s->backward = hint_backward;
			goto done;
		}
	}
	if (m != NULL)
		collect_filter(&ps, m->root);
	if (best_candidate(coll, &ps, sort, hinted, &best, s)) {
		bool or_better = false;
		/* an index that only serves the sort loses to a $or whose
		 * branches all have bounds */
		if (best.nbounded == 0 && hinted < 0 && m != NULL) {
			planner_solution_t tmp;
			memset(&tmp, 0, sizeof(tmp));
			tmp.region = s->region;
			if (plan_or(coll, m, &ps, &tmp)) {
				cand_free(&best);
				tmp.rejected = s->rejected;
				tmp.nrejected = s->nrejected;
				*s = tmp;
				or_better = true;
			} else {
				solution_clear(&tmp);
			}
		}
		if (!or_better)
			solution_from(s, &best);
		/* a time-series read (the caller decided its partial indexes):
		 * the $or of index scans its bucket forms give also races the
		 * single index (the buckets' clustered _id range a time range
		 * gives), as mongod races the one index scan its own bucket form
		 * allows against that range */
		if (!or_better && partial_set && hinted < 0 && m != NULL && s->nrejected < MAX_REJECTED) {
			planner_solution_t *r = region_solution(s->region);
			if (plan_or(coll, m, &ps, r)) {
				if (s->rejected == NULL)
					s->rejected = tm_arena_alloc(sol_arena(s), sizeof(*s->rejected) * MAX_REJECTED);
				s->rejected[s->nrejected++] = r;
			}
		}
	} else if (hinted < 0 && m != NULL && !plan_or(coll, m, &ps, s)) {
		solution_clear(s);
		s->kind = PLANNER_COLLSCAN;
	}
	cand_free(&best);
done:
	*out = s;
	return 0;
}

void
planner_solution_free(planner_solution_t *s)
{
	struct planner_region *r;

	if (s == NULL)
		return;
	r = s->region;
	tm_arena_destroy(&r->arena);
	bson_free(r);
}

/* ---- min/max ---------------------------------------------------------------- */

static bool
doc_empty(const bson_t *b)
{
	return b == NULL || bson_empty(b);
}

int
planner_minmax_check(const bson_t *min, const bson_t *max, terr_t *err)
{
	bson_iter_t a, b;

	if (doc_empty(min) || doc_empty(max))
		return 0;
	bson_iter_init(&a, min);
	bson_iter_init(&b, max);
	for (;;) {
		bool na = bson_iter_next(&a), nb = bson_iter_next(&b);
		if (na != nb || (na && strcmp(bson_iter_key(&a), bson_iter_key(&b)) != 0))
			return terr_set(err, 51176, "min and max must have the same field names");
		if (!na)
			return 0;
	}
}

/* Does the bound name exactly the key pattern's fields, in order? */
static bool
minmax_compatible(const storage_index_t *ix, const bson_t *bound)
{
	bson_iter_t k, b;

	if (doc_empty(bound))
		return true;
	if (keygen_is_wildcard(ix) || !bson_iter_init(&k, ix->key) || !bson_iter_init(&b, bound))
		return false;
	for (;;) {
		bool nk = bson_iter_next(&k), nb = bson_iter_next(&b);
		if (nk != nb)
			return false;
		if (!nk)
			return true;
		if (strcmp(bson_iter_key(&k), bson_iter_key(&b)) != 0)
			return false;
	}
}

/* The KeyString of a min/max bound; an empty one is the smallest key
 * (is_min) or the largest one of the index. */
static void
minmax_key(const storage_index_t *ix, const bson_t *bound, bool is_min, bytes_t *out)
{
	bson_iter_t k, b;
	bool have = !doc_empty(bound);

	bson_iter_init(&k, ix->key);
	if (have)
		bson_iter_init(&b, bound);
	while (bson_iter_next(&k)) {
		bool desc = BSON_ITER_HOLDS_NUMBER(&k) && bson_iter_as_double(&k) < 0;
		if (have && bson_iter_next(&b)) {
			bytes_put_value(out, bson_iter_value(&b), desc, ix->collation);
		} else {
			/* MinKey ascending / MaxKey descending is the first key */
			bson_value_t v = (is_min != desc) ? v_minkey() : v_maxkey();
			bytes_put_value(out, &v, desc, ix->collation);
		}
	}
}

int
planner_plan_minmax(const storage_coll_t *coll, const bson_t *min, const bson_t *max, const bson_t *sort,
                    const bson_value_t *hint, planner_solution_t **out, terr_t *err)
{
	planner_solution_t *s;
	const storage_index_t *ix;
	planner_field_t f[KEYGEN_MAX_FIELDS];
	bytes_t lo, hi;
	rbuild_t b;
	bson_iter_t it;
	bool natural = false, backward = false;
	int ixn = -1, nf = 0, c;
	size_t n;

	*out = NULL;
	if (hint != NULL && hint_find(coll, hint, &ixn, &natural, &backward, err) < 0)
		return -1;
	if (natural)
		return terr_set(err, 291 /* NoQueryExecutionPlans */,
		    "error processing query: ns=%s planner returned error :: caused by :: min and max are incompatible with $natural",
		    coll->ns);
	if (ixn < 0)
		return terr_set(err, 291 /* NoQueryExecutionPlans */,
		    "error processing query: ns=%s planner returned error :: caused by :: When using min()/max() a hint of which index to use must be provided",
		    coll->ns);
	ix = &coll->indexes[ixn];
	if (!minmax_compatible(ix, min) || !minmax_compatible(ix, max))
		return terr_set(err, 51174,
		    "error processing query: ns=%s planner returned error :: caused by :: The index chosen is not compatible with min/max",
		    coll->ns);
	s = solution_new();
	lo = (bytes_t){sol_arena(s), NULL, 0, 0};
	hi = lo;
	minmax_key(ix, min, true, &lo);
	minmax_key(ix, max, false, &hi);
	n = lo.len < hi.len ? lo.len : hi.len;
	c = memcmp(lo.p, hi.p, n);
	if (c == 0)
		c = lo.len < hi.len ? -1 : lo.len > hi.len;
	if (c >= 0) {
		planner_solution_free(s);
		return terr_set(err, 51175,
		    "error processing query: ns=%s planner returned error :: caused by :: The value provided for min() does not come before the value provided for max() in the hinted index",
		    coll->ns);
	}
	s->kind = PLANNER_IXSCAN;
	s->index = ixn;
	s->dedup = ix->multikey;
	/* the key pattern's fields decide whether the scan order is the sort */
	memset(f, 0, sizeof(f));
	bson_iter_init(&it, ix->key);
	while (bson_iter_next(&it) && nf < KEYGEN_MAX_FIELDS) {
		f[nf].path = (char *)bson_iter_key(&it);
		f[nf].desc = BSON_ITER_HOLDS_NUMBER(&it) && bson_iter_as_double(&it) < 0;
		f[nf].multikey = field_multikey(ix, nf, f[nf].path, strlen(f[nf].path));
		nf++;
	}
	if (!sort_on_multikey(sort, f, nf) && sort_provided(sort, f, nf, 0, &backward)) {
		s->provides_sort = true;
		s->backward = backward;
	}
	b.s = s;
	b.cap = 0;
	b.overflow = false;
	range_push(&b, &lo, false, true, &hi, false, false);
	*out = s;
	return 0;
}

static char *
bound_string(const bson_value_t *v)
{
	if (v->value_type == BSON_TYPE_DOUBLE && isinf(v->value.v_double))
		return bson_strdup(v->value.v_double > 0 ? "inf.0" : "-inf.0");
	if (v->value_type == BSON_TYPE_MINKEY)
		return bson_strdup("MinKey");
	if (v->value_type == BSON_TYPE_MAXKEY)
		return bson_strdup("MaxKey");
	return bv_to_mongo_string(v);
}

char *
planner_interval_string(const planner_interval_t *iv)
{
	char *lo = bound_string(&iv->lo), *hi = bound_string(&iv->hi);
	char *s = bson_strdup_printf("%c%s, %s%c", iv->lo_incl ? '[' : '(', lo, hi, iv->hi_incl ? ']' : ')');

	bson_free(lo);
	bson_free(hi);
	return s;
}

void
planner_bounds_append(const planner_solution_t *s, bson_t *out)
{
	int i, j;

	for (i = 0; i < s->nfields; i++) {
		bson_t arr;
		char key[16];
		const char *k;
		bson_append_array_begin(out, s->fields[i].path, -1, &arr);
		for (j = 0; j < s->fields[i].n; j++) {
			int jj = s->backward ? s->fields[i].n - 1 - j : j;
			planner_interval_t iv = s->fields[i].iv[jj];
			char *str;
			if (s->backward) {
				bson_value_t t = iv.lo;
				bool ti = iv.lo_incl;
				iv.lo = iv.hi;
				iv.lo_incl = iv.hi_incl;
				iv.hi = t;
				iv.hi_incl = ti;
			}
			str = planner_interval_string(&iv);
			bson_uint32_to_string((uint32_t)j, &k, key, sizeof(key));
			bson_append_utf8(&arr, k, -1, str, -1);
			bson_free(str);
		}
		bson_append_array_end(out, &arr);
	}
}
