/*
 * collation.c -- MongoDB collations on ICU (see collation.h).
 *
 * Parsing follows mongod's two passes: the Collation IDL first (field
 * types, unknown fields, enum values, the strength range, a required
 * locale), then the ICU collator factory (simple with other fields, the
 * locale ICU must recognise exactly as written, option combinations that
 * have no effect, the version).  Options not given take the locale's own
 * defaults from ICU (fr_CA compares accents backwards, th shifts
 * punctuation, da puts upper case first), so the normalized spec reports
 * what ICU really does.
 *
 * Interning: every distinct normalized spec gets one coll_t, kept in a
 * mutex-protected list for the life of the process.  The number of
 * distinct specs is bounded (locales x option values), so this is a cache
 * that cannot grow without limit.
 */
#include "bson/collation.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unicode/ucol.h>
#include <unicode/uloc.h>
#include <unicode/ustring.h>

#include "bson/value.h"
#include "common/mem.h"

struct coll {
	bson_t spec;           /* normalized spec, as mongod reports it */
	char *locale;
	UCollator *ucol;       /* configured; only read after interning */
	struct coll *next;
};

static pthread_mutex_t intern_lock = PTHREAD_MUTEX_INITIALIZER;
static struct coll *interned;

/* One option of the document: its name, how it is typed, and for enums the
 * accepted words with their ICU values. */
typedef enum { OPT_STRING, OPT_BOOL, OPT_ENUM, OPT_STRENGTH, OPT_BACKWARDS } opt_kind_t;

typedef struct enum_word {
	const char *word;
	int value;
} enum_word_t;

static const enum_word_t case_first_words[] = {
	{"upper", UCOL_UPPER_FIRST}, {"lower", UCOL_LOWER_FIRST}, {"off", UCOL_OFF}, {NULL, 0}};
static const enum_word_t alternate_words[] = {
	{"non-ignorable", UCOL_NON_IGNORABLE}, {"shifted", UCOL_SHIFTED}, {NULL, 0}};
static const enum_word_t max_variable_words[] = {
	{"punct", UCOL_REORDER_CODE_PUNCTUATION}, {"space", UCOL_REORDER_CODE_SPACE}, {NULL, 0}};

enum { F_LOCALE, F_CASE_LEVEL, F_CASE_FIRST, F_STRENGTH, F_NUMERIC, F_ALTERNATE, F_MAX_VARIABLE,
       F_NORMALIZATION, F_BACKWARDS, F_VERSION, F_COUNT };

/* In the order of mongod's normalized spec. */
static const struct opt {
	const char *name;
	opt_kind_t kind;
	const enum_word_t *words;
	UColAttribute attr;      /* for bools and enums other than maxVariable */
} opts[F_COUNT] = {
	[F_LOCALE] = {"locale", OPT_STRING, NULL, 0},
	[F_CASE_LEVEL] = {"caseLevel", OPT_BOOL, NULL, UCOL_CASE_LEVEL},
	[F_CASE_FIRST] = {"caseFirst", OPT_ENUM, case_first_words, UCOL_CASE_FIRST},
	[F_STRENGTH] = {"strength", OPT_STRENGTH, NULL, UCOL_STRENGTH},
	[F_NUMERIC] = {"numericOrdering", OPT_BOOL, NULL, UCOL_NUMERIC_COLLATION},
	[F_ALTERNATE] = {"alternate", OPT_ENUM, alternate_words, UCOL_ALTERNATE_HANDLING},
	[F_MAX_VARIABLE] = {"maxVariable", OPT_ENUM, max_variable_words, 0},
	[F_NORMALIZATION] = {"normalization", OPT_BOOL, NULL, UCOL_NORMALIZATION_MODE},
	[F_BACKWARDS] = {"backwards", OPT_BACKWARDS, NULL, UCOL_FRENCH_COLLATION},
	[F_VERSION] = {"version", OPT_STRING, NULL, 0},
};

/* ICU strengths 1..5 (primary .. identical). */
static const UColAttributeValue strength_values[6] = {
	0, UCOL_PRIMARY, UCOL_SECONDARY, UCOL_TERTIARY, UCOL_QUATERNARY, UCOL_IDENTICAL};

typedef struct parsed {
	bool given[F_COUNT];
	const char *str[F_COUNT];  /* locale, version, enum words; borrowed */
	int ival[F_COUNT];         /* bools 0/1, enum ICU values, strength 1..5 */
} parsed_t;

static int
spec_error(terr_t *err, int code, const char *before, const bson_t *doc, const char *after)
{
	char *s = bv_doc_to_mongo_string(doc);

	terr_set(err, code, "%s%s%s", before, s, after ? after : "");
	bson_free(s);
	return -1;
}

/* A number's value for strength: truncated toward zero, clamped to int32,
 * NaN as 0 (mongod's safe-int conversion). */
static int64_t
strength_number(const bson_value_t *v)
{
	double d;

	if (v->value_type == BSON_TYPE_INT32)
		return v->value.v_int32;
	if (v->value_type == BSON_TYPE_INT64)
		d = (double)v->value.v_int64;
	else
		d = bv_as_double(v);
	if (d != d)
		return 0;
	if (d > 2147483647.0)
		return 2147483647;
	if (d < -2147483648.0)
		return -2147483648LL;
	return (int64_t)d;
}

/* Pass one: the IDL's checks, in document order. */
static int
parse_fields(const bson_t *spec, const char *path, parsed_t *p, terr_t *err)
{
	bson_iter_t it;

	memset(p, 0, sizeof *p);
	bson_iter_init(&it, spec);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		const bson_value_t *v = bson_iter_value(&it);
		bool null = v->value_type == BSON_TYPE_NULL || v->value_type == BSON_TYPE_UNDEFINED;
		int f;

		for (f = 0; f < F_COUNT && strcmp(opts[f].name, k) != 0; f++)
			;
		if (f == F_COUNT)
			return terr_set(err, 40415, "BSON field '%s.%s' is an unknown field.", path, k);
		switch (opts[f].kind) {
		case OPT_STRING:
		case OPT_ENUM:
			if (null)
				continue;
			if (v->value_type != BSON_TYPE_UTF8)
				return terr_set(err, TERR_TYPE_MISMATCH,
				                "BSON field '%s.%s' is the wrong type '%s', expected type 'string'",
				                path, k, bv_type_name(v->value_type));
			p->str[f] = v->value.v_utf8.str;
			if (opts[f].kind == OPT_ENUM) {
				const enum_word_t *w;

				for (w = opts[f].words; w->word && strcmp(w->word, p->str[f]) != 0; w++)
					;
				if (w->word == NULL)
					return terr_set(err, TERR_BAD_VALUE,
					                "Enumeration value '%s' for field '%s.%s' is not a valid value.",
					                p->str[f], path, k);
				p->ival[f] = w->value;
			}
			break;
		case OPT_BOOL:
			if (null)
				continue;
			if (v->value_type != BSON_TYPE_BOOL)
				return terr_set(err, TERR_TYPE_MISMATCH,
				                "BSON field '%s.%s' is the wrong type '%s', expected type 'bool'",
				                path, k, bv_type_name(v->value_type));
			p->ival[f] = v->value.v_bool;
			break;
		case OPT_BACKWARDS:
			if (v->value_type != BSON_TYPE_BOOL)
				return terr_set(err, TERR_TYPE_MISMATCH,
				                "Field 'backwards' should be a boolean value, but found: %s",
				                bv_type_name(v->value_type));
			p->ival[f] = v->value.v_bool;
			break;
		case OPT_STRENGTH: {
			int64_t n;

			if (null)
				continue;
			if (!bv_is_number(v))
				return terr_set(err, TERR_TYPE_MISMATCH,
				                "BSON field '%s.strength' is the wrong type '%s', expected types "
				                "'[double, decimal, long, int]'",
				                path, bv_type_name(v->value_type));
			n = strength_number(v);
			if (n > 5)
				return terr_set(err, TERR_BAD_VALUE,
				                "BSON field 'strength' value must be <= 5, actual value '%lld'",
				                (long long)n);
			if (n < 0)
				return terr_set(err, TERR_BAD_VALUE,
				                "BSON field 'strength' value must be >= 0, actual value '%lld'",
				                (long long)n);
			if (n == 0)
				return terr_set(err, TERR_BAD_VALUE,
				                "Enumeration value '0' for field '%s.strength' is not a valid value.",
				                path);
			p->ival[f] = (int)n;
			break;
		}
		}
		p->given[f] = true;
	}
	if (!p->given[F_LOCALE])
		return terr_set(err, 40414, "BSON field '%s.locale' is missing but a required field", path);
	return 0;
}

static bool
attr_on(UCollator *u, UColAttribute a)
{
	UErrorCode st = U_ZERO_ERROR;

	return ucol_getAttribute(u, a, &st) == UCOL_ON;
}

static const char *
enum_word(const enum_word_t *words, int value)
{
	for (; words->word; words++)
		if (words->value == value)
			return words->word;
	return "off";
}

/* Configure u with what the document gives and write the normalized spec,
 * every option filled in from ICU's view of the locale. */
static int
configure(UCollator *u, const parsed_t *p, const char *locale, bson_t *spec, terr_t *err)
{
	UErrorCode st = U_ZERO_ERROR;
	int strength = 3, i;
	UColAttributeValue sv;

	for (i = F_CASE_LEVEL; i < F_VERSION; i++) {
		if (!p->given[i])
			continue;
		if (i == F_MAX_VARIABLE)
			ucol_setMaxVariable(u, (UColReorderCode)p->ival[i], &st);
		else if (i == F_STRENGTH)
			ucol_setAttribute(u, UCOL_STRENGTH, strength_values[p->ival[i]], &st);
		else if (opts[i].kind == OPT_ENUM)
			ucol_setAttribute(u, opts[i].attr, (UColAttributeValue)p->ival[i], &st);
		else
			ucol_setAttribute(u, opts[i].attr, p->ival[i] ? UCOL_ON : UCOL_OFF, &st);
		if (U_FAILURE(st))
			return terr_set(err, 96, "Failed to set '%s' attribute: %s", opts[i].name,
			                u_errorName(st));
	}
	sv = ucol_getAttribute(u, UCOL_STRENGTH, &st);
	for (i = 1; i <= 5; i++)
		if (strength_values[i] == sv)
			strength = i;

	bson_init(spec);
	BSON_APPEND_UTF8(spec, "locale", locale);
	BSON_APPEND_BOOL(spec, "caseLevel", attr_on(u, UCOL_CASE_LEVEL));
	BSON_APPEND_UTF8(spec, "caseFirst",
	                 enum_word(case_first_words, ucol_getAttribute(u, UCOL_CASE_FIRST, &st)));
	BSON_APPEND_INT32(spec, "strength", strength);
	BSON_APPEND_BOOL(spec, "numericOrdering", attr_on(u, UCOL_NUMERIC_COLLATION));
	BSON_APPEND_UTF8(spec, "alternate",
	                 enum_word(alternate_words, ucol_getAttribute(u, UCOL_ALTERNATE_HANDLING, &st)));
	BSON_APPEND_UTF8(spec, "maxVariable", enum_word(max_variable_words, ucol_getMaxVariable(u)));
	BSON_APPEND_BOOL(spec, "normalization", attr_on(u, UCOL_NORMALIZATION_MODE));
	BSON_APPEND_BOOL(spec, "backwards", attr_on(u, UCOL_FRENCH_COLLATION));
	BSON_APPEND_UTF8(spec, "version", COLL_MONGOD_VERSION);

	/* Combinations mongod refuses because the option could have no effect. */
	if (attr_on(u, UCOL_FRENCH_COLLATION) && strength == 1)
		return spec_error(err, TERR_BAD_VALUE, "'backwards' is invalid with 'strength' of 1 in: ",
		                  spec, NULL);
	if (ucol_getAttribute(u, UCOL_CASE_FIRST, &st) != UCOL_OFF && !attr_on(u, UCOL_CASE_LEVEL) &&
	    strength <= 2)
		return spec_error(err, TERR_BAD_VALUE,
		                  "'caseFirst' is invalid unless 'caseLevel' is on or 'strength' is greater "
		                  "than 2 in: ",
		                  spec, NULL);
	return 0;
}

/* The locale must be one ICU knows exactly as written (mongod's
 * validateLocaleID); otherwise suggest what ICU would have used. */
static int
check_locale(const bson_t *doc, const char *locale, UCollator *u, terr_t *err)
{
	UErrorCode st = U_ZERO_ERROR;
	const char *valid = ucol_getLocaleByType(u, ULOC_VALID_LOCALE, &st);
	char hint[ULOC_FULLNAME_CAPACITY + 32];

	if (U_FAILURE(st) || valid == NULL)
		valid = "";
	if (strcmp(valid, locale) == 0)
		return 0;
	hint[0] = '\0';
	if (valid[0] != '\0' && strcmp(valid, "root") != 0)
		snprintf(hint, sizeof hint, ". Did you mean '%s'?", valid);
	return spec_error(err, TERR_BAD_VALUE, "Field 'locale' is invalid in: ", doc, hint);
}

static const coll_t *
intern(bson_t *spec, const char *locale, UCollator *u)
{
	struct coll *c;

	pthread_mutex_lock(&intern_lock);
	for (c = interned; c; c = c->next) {
		if (c->spec.len == spec->len &&
		    memcmp(bson_get_data(&c->spec), bson_get_data(spec), spec->len) == 0)
			break;
	}
	if (c == NULL) {
		c = tm_alloc0(sizeof *c);
		bson_copy_to(spec, &c->spec);
		c->locale = bson_strdup(locale);
		c->ucol = u;
		u = NULL;
		c->next = interned;
		interned = c;
	}
	pthread_mutex_unlock(&intern_lock);
	if (u)
		ucol_close(u);
	bson_destroy(spec);
	return c;
}

int
coll_parse(const bson_t *doc, const char *path, const coll_t **out, terr_t *err)
{
	parsed_t p;
	const char *locale;
	UCollator *u = NULL;
	UErrorCode st = U_ZERO_ERROR;
	bson_t spec;
	int ret;

	*out = NULL;
	if (bson_empty(doc))
		return 0;
	RET(parse_fields(doc, path, &p, err));
	locale = p.str[F_LOCALE];
	if (strcmp(locale, "simple") == 0) {
		if (bson_count_keys(doc) > 1)
			return spec_error(err, TERR_FAILED_TO_PARSE,
			                  "If locale=simple, no other fields should be present in: ", doc, NULL);
		return 0;
	}
	if (locale[0] == '\0')
		return spec_error(err, TERR_BAD_VALUE, "Field 'locale' cannot be the empty string in: ",
		                  doc, NULL);
	if (strlen(locale) >= ULOC_FULLNAME_CAPACITY)
		return spec_error(err, TERR_BAD_VALUE, "Field 'locale' is invalid in: ", doc, NULL);
	u = ucol_open(locale, &st);
	if (U_FAILURE(st))
		return terr_set(err, 96, "Failed to create collator: %s", u_errorName(st));
	if ((ret = check_locale(doc, locale, u, err)) != 0)
		goto fail;
	if ((ret = configure(u, &p, locale, &spec, err)) != 0) {
		bson_destroy(&spec);
		goto fail;
	}
	if (p.given[F_VERSION] && strcmp(p.str[F_VERSION], COLL_MONGOD_VERSION) != 0) {
		char *s = bv_doc_to_mongo_string(doc);

		terr_set(err, 161,
		         "Requested collation version %s but the only available collator version was %s. "
		         "Requested collation spec: %s",
		         p.str[F_VERSION], COLL_MONGOD_VERSION, s);
		bson_free(s);
		bson_destroy(&spec);
		ret = -1;
		goto fail;
	}
	*out = intern(&spec, locale, u);
	return 0;
fail:
	ucol_close(u);
	return ret;
}

int
coll_parse_value(const bson_value_t *v, const char *path, const coll_t **out, terr_t *err)
{
	bson_t doc;

	*out = NULL;
	if (v->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, TERR_TYPE_MISMATCH,
		                "BSON field '%s' is the wrong type '%s', expected type 'object'", path,
		                bv_type_name(v->value_type));
	if (!bson_init_static(&doc, v->value.v_doc.data, v->value.v_doc.data_len))
		return terr_set(err, TERR_INVALID_BSON, "invalid collation document");
	return coll_parse(&doc, path, out, err);
}

const bson_t *
coll_spec(const coll_t *coll)
{
	return &coll->spec;
}

void
coll_append_spec(bson_t *doc, const char *key, const coll_t *coll)
{
	if (coll) {
		BSON_APPEND_DOCUMENT(doc, key, &coll->spec);
	} else {
		bson_t child;

		BSON_APPEND_DOCUMENT_BEGIN(doc, key, &child);
		BSON_APPEND_UTF8(&child, "locale", "simple");
		bson_append_document_end(doc, &child);
	}
}

const char *
coll_locale(const coll_t *coll)
{
	return coll ? coll->locale : "simple";
}

int
coll_compare(const coll_t *coll, const char *a, size_t alen, const char *b, size_t blen)
{
	UErrorCode st = U_ZERO_ERROR;
	UCollationResult r;

	if (coll == NULL) {
		size_t m = alen < blen ? alen : blen;
		int c = m ? memcmp(a, b, m) : 0;

		if (c != 0)
			return c < 0 ? -1 : 1;
		return alen == blen ? 0 : (alen < blen ? -1 : 1);
	}
	if (alen > INT32_MAX || blen > INT32_MAX)
		return 0;
	r = ucol_strcollUTF8(coll->ucol, a, (int32_t)alen, b, (int32_t)blen, &st);
	return r == UCOL_LESS ? -1 : (r == UCOL_GREATER ? 1 : 0);
}

size_t
coll_sort_key(const coll_t *coll, const char *s, size_t len, uint8_t *buf, size_t cap)
{
	UChar stack[256], *u16 = stack;
	int32_t n = 0, klen;
	UErrorCode st = U_ZERO_ERROR;
	uint8_t one;

	if (len > INT32_MAX / 2)
		len = INT32_MAX / 2;
	u_strFromUTF8WithSub(u16, 256, &n, s, (int32_t)len, 0xFFFD, NULL, &st);
	if (st == U_BUFFER_OVERFLOW_ERROR || n > 256) {
		u16 = bson_malloc(sizeof(UChar) * (size_t)(n + 1));
		st = U_ZERO_ERROR;
		u_strFromUTF8WithSub(u16, n + 1, &n, s, (int32_t)len, 0xFFFD, NULL, &st);
	}
	if (U_FAILURE(st))
		n = 0;
	/* ICU writes nothing when the key does not fit, and returns its length
	 * (terminating 00 included). */
	if (cap > INT32_MAX)
		cap = INT32_MAX;
	klen = ucol_getSortKey(coll->ucol, u16, n, cap ? buf : &one, cap ? (int32_t)cap : 1);
	if (u16 != stack)
		bson_free(u16);
	return klen > 0 ? (size_t)klen - 1 : 0;
}
