/*
 * text_query.c -- the $text query (mongod's FTSQueryImpl + FTSQueryParser)
 * and its matcher (FTSMatcher with the Unicode phrase matcher).
 *
 * $search splits on space, \n, \v, \f, \r into words; '-' right after a
 * space negates the next term or phrase (until the next space), '"' opens
 * and closes phrases; terms in a negated phrase are dropped.  The positive
 * and the negated words are then tokenized as one sentence each (stop words
 * dropped): the positive ones, folded, are the index bounds; the matcher
 * terms are folded the same unless $caseSensitive / $diacriticSensitive.
 */
#include "text/text_private.h"

#include <string.h>

#include "common/mem.h"

typedef struct sset {
	char **s;
	size_t n, cap;
} sset_t;

struct text_query {
	const text_lang_t *lang;
	int basic;                     /* TEXT_TOK_BASIC: a version-2 index */
	bool case_sensitive, diacritic_sensitive;
	sset_t bounds, pos, neg;
	sset_t phrases, neg_phrases;   /* in query order, duplicates kept */
};

/* Sets (unique = true) are sorted and deduplicated once complete
 * (sset_finish), so a long $search stays linear-logarithmic; lists
 * (phrases) keep query order and duplicates. */
static void
sset_add(sset_t *s, const char *w, size_t n, bool unique)
{
	(void)unique;
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 8;
		s->s = bson_realloc(s->s, sizeof(char *) * s->cap);
	}
	s->s[s->n] = bson_malloc(n + 1);
	memcpy(s->s[s->n], w, n);
	s->s[s->n++][n] = '\0';
}

static int
str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sort and drop duplicates. */
static void
sset_finish(sset_t *s)
{
	size_t i, j;

	if (s->n < 2)
		return;
	qsort(s->s, s->n, sizeof(char *), str_cmp);
	for (i = 1, j = 1; i < s->n; i++) {
		if (strcmp(s->s[i], s->s[j - 1]) == 0)
			bson_free(s->s[i]);
		else
			s->s[j++] = s->s[i];
	}
	s->n = j;
}

/* Whether w (n bytes) is in the finished set s (binary search). */
static bool
sset_has(const sset_t *s, const char *w, size_t n)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2, m = strlen(s->s[mid]);
		int c = memcmp(s->s[mid], w, m < n ? m : n);
		if (c == 0)
			c = m < n ? -1 : m > n;
		if (c == 0)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

static void
sset_free(sset_t *s)
{
	for (size_t i = 0; i < s->n; i++)
		bson_free(s->s[i]);
	bson_free(s->s);
}

enum { QT_TEXT, QT_DELIM, QT_SPACE };

static int
qtype(char c)
{
	switch (c) {
	case '\n': case '\v': case '\f': case '\r': case ' ':
		return QT_SPACE;
	case '-': case '"':
		return QT_DELIM;
	default:
		return QT_TEXT;
	}
}

typedef struct add_ctx {
	text_query_t *q;
	sset_t *target;
	bool bounds;
} add_ctx_t;

static void
add_token(void *ctx, const char *tok, size_t len)
{
	add_ctx_t *a = ctx;

	if (a->bounds)
		sset_add(&a->q->bounds, tok, len, true);
	if (a->target != NULL)
		sset_add(a->target, tok, len, true);
}

static void
add_terms(text_query_t *q, const char *sentence, size_t len, bool negated)
{
	add_ctx_t a = {q, negated ? &q->neg : &q->pos, !negated};
	int opts = TEXT_TOK_STOP_WORDS | q->basic;

	if (q->case_sensitive || q->diacritic_sensitive)
		a.target = NULL;
	text_tokenize(q->lang, sentence, len, opts, add_token, &a);
	if (!q->case_sensitive && !q->diacritic_sensitive)
		return;
	if (q->case_sensitive)
		opts |= TEXT_TOK_CASE;
	if (q->diacritic_sensitive)
		opts |= TEXT_TOK_DIACRITIC;
	a.target = negated ? &q->neg : &q->pos;
	a.bounds = false;
	text_tokenize(q->lang, sentence, len, opts, add_token, &a);
}

int
text_query_new(const char *search, size_t len, const text_lang_t *lang, int version, bool case_sensitive,
               bool diacritic_sensitive, text_query_t **out, terr_t *err)
{
	text_query_t *q = tm_malloc0(sizeof(*q));

	q->basic = version == 2 ? TEXT_TOK_BASIC : 0;
	tbuf_t pos = {0}, neg = {0};
	bool in_neg = false, in_phrase = false, prev_space;
	size_t i = 0, quote = 0;

	(void)err;
	q->lang = lang;
	q->case_sensitive = case_sensitive;
	q->diacritic_sensitive = diacritic_sensitive;
	while (i < len && qtype(search[i]) == QT_SPACE)
		i++;
	prev_space = true;
	while (i < len) {
		size_t start = i++;
		int t = qtype(search[start]);
		bool old = prev_space;
		size_t at;
		if (t == QT_TEXT)
			while (i < len && qtype(search[i]) == QT_TEXT)
				i++;
		at = i;
		while (i < len && qtype(search[i]) == QT_SPACE)
			i++;
		prev_space = i > at;
		if (t == QT_TEXT) {
			if (in_phrase && in_neg)
				continue;
			if (in_neg && old)
				in_neg = false;
			tbuf_put(in_neg ? &neg : &pos, search + start, at - start);
			tbuf_put(in_neg ? &neg : &pos, " ", 1);
		} else if (search[start] == '-') {
			if (!in_phrase && old)
				in_neg = true;
		} else {   /* '"' */
			if (in_phrase) {
				size_t ps = quote + 1;
				sset_add(in_neg ? &q->neg_phrases : &q->phrases, search + ps, start - ps, false);
				in_phrase = false;
			} else {
				in_phrase = true;
				if (in_neg && old)
					in_neg = false;
				quote = start;
			}
		}
	}
	add_terms(q, pos.p != NULL ? pos.p : "", pos.len, false);
	add_terms(q, neg.p != NULL ? neg.p : "", neg.len, true);
	bson_free(pos.p);
	bson_free(neg.p);
	sset_finish(&q->bounds);
	sset_finish(&q->pos);
	sset_finish(&q->neg);
	*out = q;
	return 0;
}

void
text_query_free(text_query_t *q)
{
	if (q == NULL)
		return;
	sset_free(&q->bounds);
	sset_free(&q->pos);
	sset_free(&q->neg);
	sset_free(&q->phrases);
	sset_free(&q->neg_phrases);
	bson_free(q);
}

bool
text_query_plain(const text_query_t *q)
{
	return !q->case_sensitive && !q->diacritic_sensitive && q->neg.n == 0 && q->phrases.n == 0 &&
	    q->neg_phrases.n == 0;
}

size_t
text_query_nbounds(const text_query_t *q)
{
	return q->bounds.n;
}

const char *
text_query_bound(const text_query_t *q, size_t i)
{
	return q->bounds.s[i];
}

static void
append_set(bson_t *out, const char *name, const sset_t *s, bool sorted)
{
	bson_t arr;
	char key[16];
	const char *k;
	char **v = bson_malloc(sizeof(char *) * (s->n + 1));

	if (s->n > 0)
		memcpy(v, s->s, sizeof(char *) * s->n);
	if (sorted && s->n > 1)
		qsort(v, s->n, sizeof(char *), str_cmp);
	bson_append_array_begin(out, name, -1, &arr);
	for (size_t i = 0; i < s->n; i++) {
		bson_uint32_to_string((uint32_t)i, &k, key, sizeof(key));
		bson_append_utf8(&arr, k, -1, v[i], -1);
	}
	bson_append_array_end(out, &arr);
	bson_free(v);
}

void
text_query_append_parsed(const text_query_t *q, bson_t *out)
{
	append_set(out, "terms", &q->pos, true);
	append_set(out, "negatedTerms", &q->neg, true);
	append_set(out, "phrases", &q->phrases, false);
	append_set(out, "negatedPhrases", &q->neg_phrases, false);
}

/* ---- matcher ------------------------------------------------------------------ */

typedef struct mctx {
	const text_query_t *q;
	const sset_t *terms;    /* term check: the set to meet */
	const char *phrase;     /* phrase check */
	bool found;
} mctx_t;

static void
term_hit(void *ctx, const char *tok, size_t len)
{
	mctx_t *m = ctx;

	if (!m->found && sset_has(m->terms, tok, len))
		m->found = true;
}

static int
tok_opts(const text_query_t *q)
{
	return (q->case_sensitive ? TEXT_TOK_CASE : 0) | (q->diacritic_sensitive ? TEXT_TOK_DIACRITIC : 0) | q->basic;
}

/* BasicFTSPhraseMatcher: a substring, ASCII case-insensitive unless
 * case-sensitive. */
static bool
basic_phrase(const char *hay, size_t hn, const char *needle, size_t nn, bool case_sensitive)
{
	if (nn == 0)
		return true;
	for (size_t i = 0; i + nn <= hn; i++) {
		size_t k;
		for (k = 0; k < nn; k++) {
			unsigned char a = (unsigned char)hay[i + k], b = (unsigned char)needle[k];
			if (!case_sensitive) {
				a = (unsigned char)(a >= 'A' && a <= 'Z' ? a + 32 : a);
				b = (unsigned char)(b >= 'A' && b <= 'Z' ? b + 32 : b);
			}
			if (a != b)
				break;
		}
		if (k == nn)
			return true;
	}
	return false;
}

static int
value_terms(void *ctx, const text_lang_t *l, const char *s, size_t len, double weight, terr_t *err)
{
	mctx_t *m = ctx;

	(void)weight;
	(void)err;
	if (!m->found)
		text_tokenize(l, s, len, tok_opts(m->q), term_hit, m);
	return 0;
}

static int
value_phrase(void *ctx, const text_lang_t *l, const char *s, size_t len, double weight, terr_t *err)
{
	mctx_t *m = ctx;
	char *hay, *needle;
	size_t hn, nn;

	(void)weight;
	(void)err;
	if (m->found)
		return 0;
	if (m->q->basic) {
		m->found = basic_phrase(s, len, m->phrase, strlen(m->phrase), m->q->case_sensitive);
		return 0;
	}
	hay = text_fold(l, s, len, tok_opts(m->q), &hn);
	needle = text_fold(l, m->phrase, strlen(m->phrase), tok_opts(m->q), &nn);
	if (nn == 0 || memmem(hay, hn, needle, nn) != NULL)
		m->found = true;
	bson_free(hay);
	bson_free(needle);
	return 0;
}

static int
has_term(const text_spec_t *s, const text_query_t *q, const sset_t *terms, const bson_t *doc, terr_t *err)
{
	mctx_t m = {q, terms, NULL, false};

	RET(text_spec_walk(s, doc, value_terms, &m, err));
	return m.found;
}

static int
has_phrase(const text_spec_t *s, const text_query_t *q, const char *phrase, const bson_t *doc, terr_t *err)
{
	mctx_t m = {q, NULL, phrase, false};

	RET(text_spec_walk(s, doc, value_phrase, &m, err));
	return m.found;
}

int
text_query_matches(const text_spec_t *s, const text_query_t *q, const bson_t *doc, terr_t *err)
{
	int rc;

	if (q->case_sensitive || q->diacritic_sensitive) {
		if ((rc = has_term(s, q, &q->pos, doc, err)) <= 0)
			return rc;
	}
	if (q->neg.n > 0 && (rc = has_term(s, q, &q->neg, doc, err)) != 0)
		return rc < 0 ? -1 : 0;
	for (size_t i = 0; i < q->phrases.n; i++)
		if ((rc = has_phrase(s, q, q->phrases.s[i], doc, err)) <= 0)
			return rc;
	for (size_t i = 0; i < q->neg_phrases.n; i++)
		if ((rc = has_phrase(s, q, q->neg_phrases.s[i], doc, err)) != 0)
			return rc < 0 ? -1 : 0;
	return 1;
}
