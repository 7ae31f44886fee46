/*
 * schema_match.c -- evaluates a compiled $jsonSchema against a value.
 *
 * The fast path: no allocation when a document passes (regex match data is
 * per thread; uniqueItems on arrays longer than 64 items uses a heap set).
 * Restriction keywords only look at values of their own type, as in mongod.
 * This file does not build errInfo (schema_explain.c does).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bson/iter.h"
#include "bson/value.h"
#include "schema/schema_private.h"


static bool
doc_find(const bson_value_t *doc, const char *name, uint32_t len, bson_value_t *out)
{
	biter_t it;

	biter_init_value(&it, doc);
	while (biter_next_inline(&it)) {
		if (it.key_len == len && memcmp(it.key, name, len) == 0) {
			biter_value(&it, out);
			return true;
		}
	}
	return false;
}

/* ---- regex ---------------------------------------------------------- */

/* One match-data block per thread, made on first use and freed when the
 * thread exits (the pthread key's destructor). */
static _Thread_local pcre2_match_data *tl_md;
static pthread_key_t md_key;
static pthread_once_t md_once = PTHREAD_ONCE_INIT;

static void
md_free(void *p)
{
	pcre2_match_data_free(p);
}

static void
md_key_init(void)
{
	(void)pthread_key_create(&md_key, md_free);
}

bool
sch_regex_search(const pcre2_code *re, const char *s, uint32_t len)
{
	int rc;

	if (tl_md == NULL) {
		pthread_once(&md_once, md_key_init);
		tl_md = pcre2_match_data_create(1, NULL);
		if (tl_md == NULL)
			return false;
		(void)pthread_setspecific(md_key, tl_md);
	}
	rc = pcre2_match(re, (PCRE2_SPTR)s, len, 0, 0, tl_md, NULL);
	return rc >= 0;
}

/* ---- equality with unordered fields (enum, uniqueItems) -------------- */

static uint32_t
count_fields(const bson_value_t *v)
{
	biter_t it;
	uint32_t n = 0;

	biter_init_value(&it, v);
	while (biter_next_inline(&it))
		n++;
	return n;
}

/* Values nested deeper than this are compared by their bytes (and hashed
 * no further): documents that deep cannot be stored, and the recursion must
 * stay bounded whatever the input. */
#define SCH_VALUE_DEPTH 200

static bool val_equal_at(const bson_value_t *a, const bson_value_t *b, int depth);

bool
sch_val_equal(const bson_value_t *a, const bson_value_t *b)
{
	return val_equal_at(a, b, 0);
}

static bool
val_equal_at(const bson_value_t *a, const bson_value_t *b, int depth)
{
	bson_type_t ta = a->value_type, tb = b->value_type;

	if (depth > SCH_VALUE_DEPTH && ta == tb &&
	    (ta == BSON_TYPE_DOCUMENT || ta == BSON_TYPE_ARRAY))
		return a->value.v_doc.data_len == b->value.v_doc.data_len &&
		       memcmp(a->value.v_doc.data, b->value.v_doc.data, a->value.v_doc.data_len) == 0;

	if (ta == BSON_TYPE_DOCUMENT || tb == BSON_TYPE_DOCUMENT) {
		biter_t ia;
		if (ta != tb || count_fields(a) != count_fields(b))
			return false;
		biter_init_value(&ia, a);
		while (biter_next(&ia)) {
			bson_value_t va, vb;
			if (!doc_find(b, ia.key, ia.key_len, &vb))
				return false;
			biter_value(&ia, &va);
			if (!val_equal_at(&va, &vb, depth + 1))
				return false;
		}
		return true;
	}
	if (ta == BSON_TYPE_ARRAY || tb == BSON_TYPE_ARRAY) {
		biter_t ia, ib;
		if (ta != tb)
			return false;
		biter_init_value(&ia, a);
		biter_init_value(&ib, b);
		for (;;) {
			bool na = biter_next(&ia), nb = biter_next(&ib);
			bson_value_t va, vb;
			if (na != nb)
				return false;
			if (!na)
				return true;
			biter_value(&ia, &va);
			biter_value(&ib, &vb);
			if (!val_equal_at(&va, &vb, depth + 1))
				return false;
		}
	}
	return bv_compare(a, b) == 0;
}

static uint64_t
fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 1099511628211ull;
	}
	return h;
}

static uint64_t
mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h;
}

static uint64_t val_hash_at(const bson_value_t *v, int depth);

/* A hash that agrees with sch_val_equal: equal values hash alike. */
uint64_t
sch_val_hash(const bson_value_t *v)
{
	return val_hash_at(v, 0);
}

static uint64_t
val_hash_at(const bson_value_t *v, int depth)
{
	uint64_t h = 1469598103934665603ull;
	bson_type_t t = v->value_type;

	if (depth > SCH_VALUE_DEPTH && (t == BSON_TYPE_DOCUMENT || t == BSON_TYPE_ARRAY))
		return 0xdee9 + t;

	if (sch_is_num(t)) {
		double d = bv_as_double(v);
		if (isnan(d))
			return 0x9e3779b97f4a7c15ull;
		if (d == 0)
			return 0x51ed27ull;
		return mix(fnv(h, &d, sizeof d));
	}
	switch ((int)t) {
	case BSON_TYPE_UTF8:
		return fnv(fnv(h, "s", 1), v->value.v_utf8.str, v->value.v_utf8.len);
	case BSON_TYPE_SYMBOL:
		return fnv(fnv(h, "s", 1), v->value.v_symbol.symbol, v->value.v_symbol.len);
	case BSON_TYPE_DOCUMENT: {
		bson_iter_t it;
		uint64_t sum = 0x0b;
		sch_iter_of(v, &it);
		while (bson_iter_next(&it)) {
			bson_value_t e = *bson_iter_value(&it);
			uint64_t kh = fnv(h, bson_iter_key(&it), bson_iter_key_len(&it));
			sum += mix(kh * 31 + val_hash_at(&e, depth + 1));
		}
		return mix(sum);
	}
	case BSON_TYPE_ARRAY: {
		bson_iter_t it;
		uint64_t acc = 0x0a;
		sch_iter_of(v, &it);
		while (bson_iter_next(&it)) {
			bson_value_t e = *bson_iter_value(&it);
			acc = mix(acc * 1000003 + val_hash_at(&e, depth + 1));
		}
		return acc;
	}
	case BSON_TYPE_BINARY:
		h = fnv(h, &v->value.v_binary.subtype, 1);
		return fnv(h, v->value.v_binary.data, v->value.v_binary.data_len);
	case BSON_TYPE_OID:
		return fnv(h, v->value.v_oid.bytes, 12);
	case BSON_TYPE_BOOL:
		return v->value.v_bool ? 0xb1 : 0xb0;
	case BSON_TYPE_DATE_TIME:
		return mix((uint64_t)v->value.v_datetime ^ 0xda7e);
	case BSON_TYPE_TIMESTAMP:
		return mix(((uint64_t)v->value.v_timestamp.timestamp << 32 |
			    v->value.v_timestamp.increment) ^ 0x7157);
	case BSON_TYPE_REGEX:
		return fnv(h, v->value.v_regex.regex, strlen(v->value.v_regex.regex));
	case BSON_TYPE_CODE:
		return fnv(h, v->value.v_code.code, v->value.v_code.code_len);
	default:
		/* null, undefined, minKey, maxKey, dbPointer, code with scope */
		return 0x1000 + (uint64_t)(t == BSON_TYPE_UNDEFINED ? BSON_TYPE_NULL : t);
	}
}

int64_t
sch_find_duplicate(const bson_value_t *arr, bson_value_t *dup)
{
	bson_value_t small[64];
	uint32_t n = 0;
	bson_iter_t it;
	int64_t found = -1;

	sch_iter_of(arr, &it);
	while (bson_iter_next(&it)) {
		bson_value_t e = *bson_iter_value(&it);
		if (n < 64) {
			for (uint32_t j = 0; j < n; j++)
				if (sch_val_equal(&small[j], &e)) {
					if (dup)
						*dup = e;
					return n;
				}
			small[n++] = e;
			continue;
		}
		/* Long array: hash set on the heap. */
		{
			uint32_t total = n + 1, cap = 128, i = 0;
			bson_iter_t c = it;
			while (bson_iter_next(&c))
				total++;
			while (cap < total * 2)
				cap *= 2;
			uint64_t *hs = bson_malloc(cap * sizeof *hs);
			uint32_t *ix = bson_malloc(cap * sizeof *ix);
			bson_value_t *vals = bson_malloc(total * sizeof *vals);
			memset(ix, 0xff, cap * sizeof *ix);
			sch_iter_of(arr, &c);
			while (bson_iter_next(&c)) {
				bson_value_t x = *bson_iter_value(&c);
				uint64_t h = sch_val_hash(&x);
				uint32_t p = (uint32_t)h & (cap - 1);
				bool is_dup = false;
				while (ix[p] != UINT32_MAX) {
					if (hs[p] == h && sch_val_equal(&vals[ix[p]], &x)) {
						is_dup = true;
						break;
					}
					p = (p + 1) & (cap - 1);
				}
				if (is_dup) {
					if (dup)
						*dup = x;
					found = i;
					break;
				}
				hs[p] = h;
				ix[p] = i;
				vals[i++] = x;
			}
			bson_free(hs);
			bson_free(ix);
			bson_free(vals);
			return found;
		}
	}
	return -1;
}

/* ---- numbers -------------------------------------------------------- */

static void
strip_zeros(sch_dec_t *d)
{
	if (d->kind != 0 || d->mant == 0)
		return;
	while (d->mant % 10 == 0) {
		d->mant /= 10;
		d->exp++;
	}
}

static bool
parse_decimal_string(const char *s, sch_dec_t *d)
{
	int frac = 0, e = 0;
	bool dot = false;

	memset(d, 0, sizeof *d);
	if (*s == '-') {
		d->neg = true;
		s++;
	} else if (*s == '+') {
		s++;
	}
	if (strncmp(s, "Inf", 3) == 0) {
		d->kind = 1;
		return true;
	}
	if (strncmp(s, "NaN", 3) == 0) {
		d->kind = 2;
		return true;
	}
	for (; *s && *s != 'E' && *s != 'e'; s++) {
		if (*s == '.') {
			dot = true;
			continue;
		}
		if (*s < '0' || *s > '9')
			return false;
		d->mant = d->mant * 10 + (unsigned)(*s - '0');
		if (dot)
			frac++;
	}
	if (*s == 'E' || *s == 'e')
		e = atoi(s + 1);
	d->exp = e - frac;
	strip_zeros(d);
	return true;
}

/* A number as mongod's Decimal128 sees it (doubles rounded to 15 digits). */
bool
sch_dec_from_value(const bson_value_t *v, sch_dec_t *d)
{
	char buf[64];

	memset(d, 0, sizeof *d);
	switch ((int)v->value_type) {
	case BSON_TYPE_INT32:
	case BSON_TYPE_INT64: {
		int64_t i = v->value_type == BSON_TYPE_INT32 ? v->value.v_int32 : v->value.v_int64;
		d->neg = i < 0;
		d->mant = i < 0 ? (unsigned __int128)(-(i + 1)) + 1 : (unsigned __int128)i;
		strip_zeros(d);
		return true;
	}
	case BSON_TYPE_DOUBLE: {
		double x = v->value.v_double;
		if (isnan(x)) {
			d->kind = 2;
			return true;
		}
		if (isinf(x)) {
			d->kind = 1;
			d->neg = x < 0;
			return true;
		}
		snprintf(buf, sizeof buf, "%.14e", x);
		return parse_decimal_string(buf, d);
	}
	case BSON_TYPE_DECIMAL128: {
		char s[BSON_DECIMAL128_STRING];
		bson_decimal128_to_string(&v->value.v_decimal128, s);
		return parse_decimal_string(s, d);
	}
	default:
		return false;
	}
}

static unsigned __int128
mulmod(unsigned __int128 a, unsigned __int128 b, unsigned __int128 m)
{
	unsigned __int128 r = 0;

	a %= m;
	b %= m;
	if ((a >> 62) == 0 && (b >> 62) == 0)
		return (a * b) % m;
	while (b) {
		if (b & 1) {
			r += a;
			if (r >= m)
				r -= m;
		}
		a += a;
		if (a >= m)
			a -= m;
		b >>= 1;
	}
	return r;
}

static unsigned __int128
pow10mod(uint32_t k, unsigned __int128 m)
{
	unsigned __int128 r = 1 % m, base = 10 % m;

	while (k) {
		if (k & 1)
			r = mulmod(r, base, m);
		base = mulmod(base, base, m);
		k >>= 1;
	}
	return r;
}

static bool
is_multiple(const bson_value_t *v, const sch_dec_t *div)
{
	sch_dec_t x;

	if (!sch_dec_from_value(v, &x) || x.kind != 0 || div->kind == 2)
		return false;
	if (x.mant == 0)
		return true;
	if (div->kind == 1)
		return false;
	if (x.exp >= div->exp) {
		uint32_t k = (uint32_t)(x.exp - div->exp);
		return mulmod(x.mant, pow10mod(k, div->mant), div->mant) == 0;
	} else {
		uint32_t k = (uint32_t)(div->exp - x.exp);
		unsigned __int128 m = div->mant;
		for (uint32_t i = 0; i < k; i++) {
			if (m > x.mant)
				return false;
			m *= 10;
		}
		return x.mant % m == 0;
	}
}

/* ComparisonMatchExpression on numbers: NaN only equals NaN. */
static bool
cmp_ok(const bson_value_t *v, const bson_value_t *bound, bool is_max, bool exclusive)
{
	bool vn = bv_is_nan(v), bn = bv_is_nan(bound);
	int c;

	if (vn || bn)
		return vn && bn && !exclusive;
	if ((v->value_type == BSON_TYPE_INT32 || v->value_type == BSON_TYPE_INT64) &&
	    (bound->value_type == BSON_TYPE_INT32 || bound->value_type == BSON_TYPE_INT64)) {
		int64_t a = v->value_type == BSON_TYPE_INT32 ? v->value.v_int32 : v->value.v_int64;
		int64_t b = bound->value_type == BSON_TYPE_INT32 ? bound->value.v_int32
								 : bound->value.v_int64;
		c = a < b ? -1 : a > b;
	} else if (v->value_type == BSON_TYPE_DOUBLE && bound->value_type == BSON_TYPE_DOUBLE) {
		c = v->value.v_double < bound->value.v_double ? -1
		    : v->value.v_double > bound->value.v_double;
	} else {
		c = bv_compare(v, bound);
	}
	if (is_max)
		return exclusive ? c < 0 : c <= 0;
	return exclusive ? c > 0 : c >= 0;
}

static int64_t
utf8_len(const char *s, uint32_t len)
{
	int64_t n = 0;
	for (uint32_t i = 0; i < len; i++)
		if (((unsigned char)s[i] & 0xC0) != 0x80)
			n++;
	return n;
}

/* ---- the matcher ---------------------------------------------------- */

static bool
match_string(const snode_t *n, const char *s, uint32_t len)
{
	if (n->pattern && !sch_regex_search(n->pattern, s, len))
		return false;
	/* len/4 <= code points <= len: count only when that range straddles a bound */
	if ((n->max_len >= 0 && (int64_t)len > n->max_len) ||
	    (n->min_len >= 0 && (int64_t)(len / 4) < n->min_len)) {
		int64_t cp = utf8_len(s, len);
		if (n->max_len >= 0 && cp > n->max_len)
			return false;
		if (n->min_len >= 0 && cp < n->min_len)
			return false;
	}
	return true;
}

static bool
match_number(const snode_t *n, const bson_value_t *v)
{
	if (n->has_multiple_of && !is_multiple(v, &n->multiple_of))
		return false;
	if (n->has_max && !cmp_ok(v, &n->maximum, true, n->excl_max))
		return false;
	if (n->has_min && !cmp_ok(v, &n->minimum, false, n->excl_min))
		return false;
	return true;
}

static uint32_t
rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return BSON_UINT32_FROM_LE(v);
}

static uint64_t
rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return BSON_UINT64_FROM_LE(v);
}

static bool match_array(const snode_t *n, const bson_value_t *v);
static bool match_object(const snode_t *n, const uint8_t *data, uint32_t len);

/* sch_node_match on the current element of it: the same answer, with the
 * value read straight from the document's bytes, and decoded into a
 * bson_value_t only for the keywords that need one (logic, enum, encrypt,
 * dependencies, decimals).  A node with nothing to check for the value's
 * type costs its type test alone. */
/* sch_type_bit by table, for the types a walk can hand out. */
#define TB(t) [t] = 1u << (t)
static const uint32_t type_bit_tab[256] = {
	TB(1), TB(2), TB(3), TB(4), TB(5), TB(6), TB(7), TB(8), TB(9), TB(10), TB(11), TB(12), TB(13), TB(14),
	TB(15), TB(16), TB(17), TB(18), TB(19),
	[BSON_TYPE_MINKEY] = 1u << SCH_BIT_MINKEY, [BSON_TYPE_MAXKEY] = 1u << SCH_BIT_MAXKEY,
};
#undef TB

static inline __attribute__((always_inline)) bool
el_match(const snode_t *n, const biter_t *it)
{
	bson_type_t t = it->type;
	bson_value_t v;

	if (!(n->type_ok & type_bit_tab[(uint8_t)t]))
		return false;
	if (n->leaf)
		return true;
	if (n->slow)
		goto slow;
	switch ((int)t) {
	case BSON_TYPE_UTF8:
		return !n->str_check || match_string(n, (const char *)it->val + 4, rd32(it->val) - 1);
	case BSON_TYPE_INT32:
		if (!n->num_check)
			return true;
		v.value_type = t;
		v.value.v_int32 = (int32_t)rd32(it->val);
		if (n->int_bounds)
			return v.value.v_int32 >= n->imin && v.value.v_int32 <= n->imax;
		return match_number(n, &v);
	case BSON_TYPE_INT64:
		if (!n->num_check)
			return true;
		if (n->int_bounds) {
			int64_t x = (int64_t)rd64(it->val);
			return x >= n->imin && x <= n->imax;
		}
		v.value_type = t;
		v.value.v_int64 = (int64_t)rd64(it->val);
		return match_number(n, &v);
	case BSON_TYPE_DOUBLE: {
		uint64_t u;
		if (!n->num_check)
			return true;
		u = rd64(it->val);
		v.value_type = t;
		memcpy(&v.value.v_double, &u, 8);
		return match_number(n, &v);
	}
	case BSON_TYPE_DECIMAL128:
		if (!n->num_check)
			return true;
		goto slow;
	case BSON_TYPE_DOCUMENT:
		return !n->obj_check || match_object(n, it->val, it->val_len);
	case BSON_TYPE_ARRAY:
		if (!n->arr_check)
			return true;
		v.value_type = t;
		v.value.v_doc.data = (uint8_t *)it->val;
		v.value.v_doc.data_len = it->val_len;
		return match_array(n, &v);
	default:
		return true;
	}
slow:
	biter_value(it, &v);
	return sch_node_match(n, &v);
}

/* The slot of a property name in a node's hash, from its first
 * min(len, 8) bytes as one word (sch_prop_t.word, biter_next_kw's kw). */
_Static_assert(SCH_PROP_SLOTS == 64, "prop_hash keeps 6 bits");
static inline uint32_t
prop_hash(uint64_t word)
{
	return (uint32_t)((word * 0x9E3779B97F4A7C15ull) >> 58);
}

static void
prop_hash_build(snode_t *n)
{
	uint32_t plain = 0;

	memset(n->prop_slot, 0, sizeof(n->prop_slot));
	for (uint32_t i = 0; i < n->nprops; i++) {
		sch_prop_t *p = &n->props[i];
		p->word = 0;
		memcpy(&p->word, p->name, p->len < 8 ? p->len : 8);
		plain += !p->dotted;
	}
	n->prop_hashed = plain > 0 && plain <= SCH_PROP_SLOTS / 2 && n->nprops < 255;
	if (!n->prop_hashed)
		return;
	for (uint32_t i = 0; i < n->nprops; i++) {
		const sch_prop_t *p = &n->props[i];
		uint32_t h = prop_hash(p->word);
		bool dup = false;
		if (p->dotted)
			continue;
		/* the first of two equal names wins, as in the linear search */
		for (; n->prop_slot[h] != 0; h = (h + 1) & (SCH_PROP_SLOTS - 1)) {
			const sch_prop_t *q = &n->props[n->prop_slot[h] - 1];
			if (q->len == p->len && memcmp(q->name, p->name, p->len) == 0)
				dup = true;
		}
		if (!dup)
			n->prop_slot[h] = (uint8_t)(i + 1);
	}
}

static bool
int_bound(const bson_value_t *b, bool excl, bool is_max, int64_t *out)
{
	int64_t x;

	if (b->value_type == BSON_TYPE_INT32)
		x = b->value.v_int32;
	else if (b->value_type == BSON_TYPE_INT64)
		x = b->value.v_int64;
	else
		return false;
	if (excl) {
		if (x == (is_max ? INT64_MIN : INT64_MAX))
			return false;   /* nothing passes: the general comparison says so */
		x += is_max ? -1 : 1;
	}
	*out = x;
	return true;
}

static void
int_bounds_build(snode_t *n)
{
	n->imin = INT64_MIN;
	n->imax = INT64_MAX;
	n->int_bounds = !n->has_multiple_of &&
	    (!n->has_min || int_bound(&n->minimum, n->excl_min, false, &n->imin)) &&
	    (!n->has_max || int_bound(&n->maximum, n->excl_max, true, &n->imax));
}

void
sch_node_finish(snode_t *n)
{
	n->slow = n->always_false || n->encrypt || n->nall_of || n->nany_of || n->none_of || n->not_ ||
	    n->enum_arr != NULL || n->has_deps;
	n->str_check = !n->off_string && (n->pattern != NULL || n->min_len >= 0 || n->max_len >= 0);
	n->num_check = !n->off_number && (n->has_multiple_of || n->has_min || n->has_max);
	n->arr_check = !n->off_array && (n->min_items >= 0 || n->max_items >= 0 || n->unique_items ||
	    n->items_kind != SCH_ITEMS_NONE);
	n->obj_check = !n->off_object && (n->nprops || n->has_allowed || n->req_mask || n->nreq_extra ||
	    n->min_props >= 0 || n->max_props >= 0);
	n->type_ok = n->has_type ? n->type_mask : ~0u;
	for (uint32_t i = 0; i < n->nprops; i++)
		n->props[i].req_m = n->props[i].req_bit >= 0 ? 1ull << n->props[i].req_bit : 0;
	n->leaf = !n->slow && !n->str_check && !n->num_check && !n->arr_check && !n->obj_check;
	n->has_dotted = false;
	for (uint32_t i = 0; i < n->nprops; i++)
		n->has_dotted = n->has_dotted || n->props[i].dotted;
	prop_hash_build(n);
	int_bounds_build(n);
}

static bool
match_array(const snode_t *n, const bson_value_t *v)
{
	biter_t it;
	uint32_t i = 0;

	if (n->min_items >= 0 || n->max_items >= 0) {
		int64_t c = count_fields(v);
		if (n->min_items >= 0 && c < n->min_items)
			return false;
		if (n->max_items >= 0 && c > n->max_items)
			return false;
	}
	if (n->unique_items && sch_find_duplicate(v, NULL) >= 0)
		return false;
	if (n->items_kind == SCH_ITEMS_NONE)
		return true;
	biter_init_inline(&it, v->value.v_doc.data, v->value.v_doc.data_len);   /* v is an array */
	while (biter_next_inline(&it)) {
		const snode_t *sub;
		if (n->items_kind == SCH_ITEMS_SCHEMA) {
			sub = n->items;
		} else if (i < n->nitems) {
			sub = n->items_arr[i];
		} else if (n->addl_items_kind == SCH_ADDL_FALSE) {
			return false;
		} else if (n->addl_items_kind == SCH_ADDL_SCHEMA) {
			sub = n->addl_items;
		} else {
			break;
		}
		if (!el_match(sub, &it))
			return false;
		i++;
	}
	return true;
}

/* a == b over len bytes; keys are short, so inline words beat a call to
 * memcmp. */
static inline bool
key_eq(const char *a, const char *b, uint32_t len)
{
	for (; len >= 8; a += 8, b += 8, len -= 8) {
		uint64_t x, y;
		memcpy(&x, a, 8);
		memcpy(&y, b, 8);
		if (x != y)
			return false;
	}
	for (; len > 0; len--)
		if (*a++ != *b++)
			return false;
	return true;
}

static bool
prop_is(const sch_prop_t *p, const char *name, uint32_t len, bool any)
{
	return p->len == len && (any || !p->dotted) && key_eq(p->name, name, len);
}

/* The property named exactly name (dotted ones included when any). */
static const sch_prop_t *
find_prop(const snode_t *n, const char *name, uint32_t len, bool any)
{
	for (uint32_t i = 0; i < n->nprops; i++)
		if (prop_is(&n->props[i], name, len, any))
			return &n->props[i];
	return NULL;
}

/* Same, trying *next first: documents usually hold their fields in the
 * order the schema lists them, so the property after the last one found
 * is most often the one. */
static const sch_prop_t *
find_prop_next(const snode_t *n, const char *name, uint32_t len, uint32_t *next)
{
	const sch_prop_t *p;

	if (*next < n->nprops && prop_is(&n->props[*next], name, len, false)) {
		p = &n->props[*next];
	} else if ((p = find_prop(n, name, len, false)) == NULL) {
		return NULL;
	}
	*next = (uint32_t)(p - n->props) + 1;
	return p;
}

/* The plain property named key (klen bytes at key; kw its first
 * min(klen, 8) bytes as biter_next_kw gives them) through the node's hash:
 * one word compare decides names up to 8 bytes. */
static inline const sch_prop_t *
find_prop_hashed(const snode_t *n, const char *key, uint32_t klen, uint64_t kw)
{
	for (uint32_t h = prop_hash(kw);; h = (h + 1) & (SCH_PROP_SLOTS - 1)) {
		uint8_t slot = n->prop_slot[h];
		const sch_prop_t *p;
		if (slot == 0)
			return NULL;
		p = &n->props[slot - 1];
		if (p->word == kw && p->len == klen && (klen <= 8 || key_eq(p->name + 8, key + 8, klen - 8)))
			return p;
	}
}

bool
sch_path_get(const bson_value_t *obj, const char *name, bson_value_t *out)
{
	bson_value_t cur = *obj;
	const char *part = name;

	for (;;) {
		const char *dot = strchr(part, '.');
		uint32_t plen = dot ? (uint32_t)(dot - part) : (uint32_t)strlen(part);
		bson_value_t found;

		if (cur.value_type != BSON_TYPE_DOCUMENT || !doc_find(&cur, part, plen, &found))
			return false;
		cur = found;
		if (dot == NULL) {
			*out = cur;
			return true;
		}
		part = dot + 1;
	}
}

bool
sch_field_is_additional(const snode_t *n, const char *name, uint32_t len)
{
	if (find_prop(n, name, len, true))
		return false;
	for (uint32_t p = 0; p < n->npats; p++)
		if (sch_regex_search(n->pats[p].re, name, len))
			return false;
	return true;
}

/* The object restrictions of n on the document data (len bytes). */
static bool
match_object(const snode_t *n, const uint8_t *data, uint32_t len)
{
	biter_t it;
	int64_t nfields = 0;
	uint64_t seen = 0;
	uint32_t next = 0;
	bson_value_t dv;

	uint64_t kw;
	/* read once: the calls below (recursion, regexes) make the compiler reload n's fields */
	const bool allowed = n->has_allowed, hashed = n->prop_hashed, props = n->nprops != 0;

	biter_init_inline(&it, data, len);
	if (!props && !allowed) {
		/* nothing per field: count them (the walk checks each one as before) */
		while (biter_next_inline(&it))
			nfields++;
		goto after;
	}
	while (biter_next_kw(&it, &kw)) {
		const char *key;
		uint32_t klen;
		const sch_prop_t *p;

		nfields++;
		key = it.key;
		klen = it.key_len;
		if (hashed)
			p = find_prop_hashed(n, key, klen, kw);
		else
			p = props ? find_prop_next(n, key, klen, &next) : NULL;
		if (p == NULL && !allowed)
			continue;
		if (p) {
			seen |= p->req_m;
			if (!el_match(p->schema, &it))
				return false;
		}
		if (allowed) {
			bool other = p == NULL && !(n->nprops && find_prop(n, key, klen, true));
			for (uint32_t i = 0; i < n->npats; i++) {
				if (!sch_regex_search(n->pats[i].re, key, klen))
					continue;
				other = false;
				if (!el_match(n->pats[i].schema, &it))
					return false;
			}
			if (other) {
				if (n->addl_props_kind == SCH_ADDL_FALSE)
					return false;
				if (n->addl_props_kind == SCH_ADDL_SCHEMA && !el_match(n->addl_props, &it))
					return false;
			}
		}
	}
after:
	if ((seen & n->req_mask) != n->req_mask)
		return false;
	if (n->nreq_extra == 0 && !n->has_dotted)
		goto counts;
	memset(&dv, 0, sizeof(dv));
	dv.value_type = BSON_TYPE_DOCUMENT;
	dv.value.v_doc.data = (uint8_t *)data;
	dv.value.v_doc.data_len = len;
	for (uint32_t i = 0; i < n->nreq_extra; i++) {
		bson_value_t x;
		if (!sch_path_get(&dv, n->req_extra[i], &x))
			return false;
	}
	for (uint32_t i = 0; i < n->nprops; i++) {
		bson_value_t x;
		if (n->props[i].dotted && sch_path_get(&dv, n->props[i].name, &x) &&
		    !sch_node_match(n->props[i].schema, &x))
			return false;
	}
counts:
	if (n->min_props >= 0 && nfields < n->min_props)
		return false;
	if (n->max_props >= 0 && nfields > n->max_props)
		return false;
	return true;
}

static bool
match_deps(const snode_t *n, const bson_value_t *v)
{
	for (uint32_t i = 0; i < n->ndeps; i++) {
		const sch_dep_t *d = &n->deps[i];
		bson_value_t f;
		if (!sch_path_get(v, d->name, &f))
			continue;
		if (d->schema) {
			if (!sch_node_match(d->schema, v))
				return false;
		} else {
			for (uint32_t j = 0; j < d->nprops; j++)
				if (!sch_path_get(v, d->props[j], &f))
					return false;
		}
	}
	return true;
}

static bool
match_encrypt(const snode_t *n, const bson_value_t *v)
{
	if (v->value_type != BSON_TYPE_BINARY || v->value.v_binary.subtype != BSON_SUBTYPE_ENCRYPTED)
		return false;
	if (n->encrypt_type_mask) {
		/* FLE1 payload: blob subtype (1 or 2) ... original BSON type at 17 */
		const uint8_t *d = v->value.v_binary.data;
		uint32_t len = v->value.v_binary.data_len;
		if (len < 18 || (d[0] != 1 && d[0] != 2))
			return false;
		if (!(n->encrypt_type_mask & sch_type_bit((bson_type_t)d[17])))
			return false;
	}
	return true;
}

bool
sch_enum_contains(const snode_t *n, const bson_value_t *v)
{
	bson_iter_t it;

	bson_iter_init(&it, n->enum_arr);
	while (bson_iter_next(&it)) {
		bson_value_t e = *bson_iter_value(&it);
		if (sch_val_equal(v, &e))
			return true;
	}
	return false;
}

bool
sch_node_match(const snode_t *n, const bson_value_t *v)
{
	bson_type_t t = v->value_type;

	if (n->always_false)
		return false;
	if (n->has_type && !(n->type_mask & sch_type_bit(t)))
		return false;
	if (t == BSON_TYPE_UTF8) {
		if (!n->off_string && !match_string(n, v->value.v_utf8.str, v->value.v_utf8.len))
			return false;
	} else if (sch_is_num(t)) {
		if (!n->off_number && !match_number(n, v))
			return false;
	} else if (t == BSON_TYPE_ARRAY) {
		if (!n->off_array && !match_array(n, v))
			return false;
	} else if (t == BSON_TYPE_DOCUMENT) {
		if (!n->off_object && !match_object(n, v->value.v_doc.data, v->value.v_doc.data_len))
			return false;
		if (n->has_deps && !match_deps(n, v))
			return false;
	}
	if (n->encrypt && !match_encrypt(n, v))
		return false;
	for (uint32_t i = 0; i < n->nall_of; i++)
		if (!sch_node_match(n->all_of[i], v))
			return false;
	if (n->nany_of) {
		uint32_t i;
		for (i = 0; i < n->nany_of; i++)
			if (sch_node_match(n->any_of[i], v))
				break;
		if (i == n->nany_of)
			return false;
	}
	if (n->none_of) {
		uint32_t hits = 0;
		for (uint32_t i = 0; i < n->none_of && hits < 2; i++)
			if (sch_node_match(n->one_of[i], v))
				hits++;
		if (hits != 1)
			return false;
	}
	if (n->not_ && sch_node_match(n->not_, v))
		return false;
	if (n->enum_arr && (n->enum_always_false || !sch_enum_contains(n, v)))
		return false;
	return true;
}

bool
schema_matches_data(const schema_t *s, const uint8_t *data, uint32_t len)
{
	bson_value_t v;

	/* the framing bson_init_static checks: a buffer that is no document fails */
	if (data == NULL || len < 5 || rd32(data) != len || data[len - 1] != 0)
		return false;
	v.value_type = BSON_TYPE_DOCUMENT;
	v.value.v_doc.data = (uint8_t *)data;
	v.value.v_doc.data_len = len;
	return sch_node_match(s->root, &v);
}

bool
schema_matches(const schema_t *s, const bson_t *doc)
{
	bson_value_t v;

	sch_doc_value(doc, &v);
	return sch_node_match(s->root, &v);
}
