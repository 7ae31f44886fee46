/*
 * match_regex.c -- $regex on PCRE2, with MongoDB's flags (i m s x u) and
 * errors (51091 for a pattern that does not compile, 51108 for an unknown
 * flag, 51109 for an embedded NUL).  Patterns are compiled once with UTF;
 * subjects that are not valid UTF-8 simply fail to match.  A match limit
 * bounds pathological patterns: hitting it counts as "no match".
 *
 * Matching strings and symbols runs the pattern; a BSON regex value matches
 * only a regex with the same pattern and flags.
 *
 * Not here: the $regexMatch family of expressions (expr/).
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <pthread.h>
#include <string.h>

#include "query/match_private.h"

#define REGEX_MAX_PATTERN 32764
#define REGEX_MATCH_LIMIT 2000000u
#define REGEX_DEPTH_LIMIT 10000u

static pcre2_match_context *shared_mctx;
static pthread_once_t shared_once = PTHREAD_ONCE_INIT;
static pthread_key_t md_key;   /* frees a thread's match data when it exits */

static void
md_free(void *md)
{
	pcre2_match_data_free(md);
}

static void
shared_init(void)
{
	pthread_key_create(&md_key, md_free);
	shared_mctx = pcre2_match_context_create(NULL);
	pcre2_set_match_limit(shared_mctx, REGEX_MATCH_LIMIT);
	pcre2_set_depth_limit(shared_mctx, REGEX_DEPTH_LIMIT);
}

/* Created once; read-only afterwards, so threads share it. */
static pcre2_match_context *
match_context(void)
{
	pthread_once(&shared_once, shared_init);
	return shared_mctx;
}

static _Thread_local pcre2_match_data *tl_md;

int
match_regex_compile(mregex_t *re, const char *pattern, uint32_t plen, const char *flags,
                    terr_t *err)
{
	uint32_t opts = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF;
	int errcode;
	PCRE2_SIZE erroff;
	pcre2_code *code;

	memset(re, 0, sizeof *re);
	if (memchr(pattern, '\0', plen) != NULL)
		return terr_set(err, 51109, "Regular expression cannot contain an embedded null byte");
	if (plen > REGEX_MAX_PATTERN)
		return terr_set(err, 51091, "Regular expression is invalid: pattern string is too long");
	for (const char *f = flags; *f; f++) {
		static const struct { char c; uint32_t opt; } rows[] = {
			{'i', PCRE2_CASELESS}, {'m', PCRE2_MULTILINE}, {'s', PCRE2_DOTALL},
			{'x', PCRE2_EXTENDED}, {'u', 0},
		};
		size_t i;

		for (i = 0; i < sizeof rows / sizeof rows[0]; i++)
			if (rows[i].c == *f)
				break;
		if (i == sizeof rows / sizeof rows[0])
			return terr_set(err, 51108, " invalid flag in regex options: %c", *f);
		opts |= rows[i].opt;
	}
	code = pcre2_compile((PCRE2_SPTR)pattern, plen, opts, &errcode, &erroff, NULL);
	if (code == NULL) {
		PCRE2_UCHAR msg[256];

		pcre2_get_error_message(errcode, msg, sizeof msg);
		return terr_set(err, 51091, "Regular expression is invalid: %s", (char *)msg);
	}
	(void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
	re->code = code;
	re->pattern = pattern;
	re->flags = bson_strdup(flags);
	return 0;
}

void
match_regex_free(mregex_t *re)
{
	if (re->code != NULL)
		pcre2_code_free(re->code);
	re->code = NULL;
	bson_free(re->flags);
	re->flags = NULL;
}

static bool
run(const mregex_t *re, const char *s, size_t len)
{
	int rc;

	pcre2_match_context *mc = match_context();

	if (tl_md == NULL) {
		tl_md = pcre2_match_data_create(1, NULL);
		pthread_setspecific(md_key, tl_md);
	}
	rc = pcre2_match(re->code, (PCRE2_SPTR)s, len, 0, 0, tl_md, mc);
	return rc >= 0;
}

bool
match_regex_test(const mregex_t *re, const bson_value_t *v)
{
	switch (v->value_type) {
	case BSON_TYPE_UTF8:
		return run(re, v->value.v_utf8.str, v->value.v_utf8.len);
	case BSON_TYPE_SYMBOL:
		return run(re, v->value.v_symbol.symbol, v->value.v_symbol.len);
	case BSON_TYPE_REGEX:
		return re->pattern != NULL && strcmp(v->value.v_regex.regex, re->pattern) == 0 &&
		       strcmp(v->value.v_regex.options, re->flags ? re->flags : "") == 0;
	default:
		return false;
	}
}

bool
match_regex_value(const mnode_t *n, const bson_value_t *v)
{
	return match_regex_test(&n->u.re, v);
}
