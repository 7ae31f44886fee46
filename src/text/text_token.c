/*
 * text_token.c -- languages, the Unicode tokenizer of textIndexVersion 3 and
 * phrase folding.  Character properties (delimiters, diacritics), case
 * folding and decompositions come from ICU, the library the collations
 * already use; mongod generates the same tables from the Unicode Character
 * Database.  Stemming is Snowball (libstemmer), the stemmers mongod links.
 * A Snowball stemmer is not thread-safe: each thread keeps its own per
 * language.
 */
#include "text/text_private.h"

#include <pthread.h>
#include <string.h>
#include <libstemmer.h>
#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#include "common/mem.h"

/* ---- languages ------------------------------------------------------------ */

static text_lang_t langs[] = {
	{"none", NULL, NULL, 0, false, false, 0},
	{"danish", "danish", NULL, 0, false, false, 1},
	{"dutch", "dutch", NULL, 0, false, false, 2},
	{"english", "english", NULL, 0, false, true, 3},
	{"finnish", "finnish", NULL, 0, false, false, 4},
	{"french", "french", NULL, 0, false, false, 5},
	{"german", "german", NULL, 0, false, false, 6},
	{"hungarian", "hungarian", NULL, 0, false, false, 7},
	{"italian", "italian", NULL, 0, false, false, 8},
	{"norwegian", "norwegian", NULL, 0, false, false, 9},
	{"portuguese", "portuguese", NULL, 0, false, false, 10},
	{"romanian", "romanian", NULL, 0, false, false, 11},
	{"russian", "russian", NULL, 0, false, false, 12},
	{"spanish", "spanish", NULL, 0, false, false, 13},
	{"swedish", "swedish", NULL, 0, false, false, 14},
	{"turkish", "turkish", NULL, 0, true, false, 15},
};
#define NLANGS (sizeof(langs) / sizeof(langs[0]))

static const struct { const char *alias, *name; } lang_aliases[] = {
	{"da", "danish"}, {"nl", "dutch"}, {"en", "english"}, {"fi", "finnish"}, {"fr", "french"},
	{"de", "german"}, {"hu", "hungarian"}, {"it", "italian"}, {"nb", "norwegian"}, {"pt", "portuguese"},
	{"ro", "romanian"}, {"ru", "russian"}, {"es", "spanish"}, {"sv", "swedish"}, {"tr", "turkish"},
};

static pthread_once_t langs_once = PTHREAD_ONCE_INIT;

static void
langs_init(void)
{
	for (size_t i = 0; i < NLANGS; i++)
		for (const text_stop_list_t *s = text_stop_lists; s->lang != NULL; s++)
			if (strcmp(langs[i].name, s->lang) == 0) {
				langs[i].stop = s->words;
				langs[i].nstop = s->n;
			}
}

const text_lang_t *
text_lang_find(const char *name)
{
	size_t i;

	pthread_once(&langs_once, langs_init);
	for (i = 0; i < sizeof(lang_aliases) / sizeof(lang_aliases[0]); i++)
		if (strcmp(lang_aliases[i].alias, name) == 0) {
			name = lang_aliases[i].name;
			break;
		}
	for (i = 0; i < NLANGS; i++)
		if (strcmp(langs[i].name, name) == 0)
			return &langs[i];
	return NULL;
}

const char *
text_lang_name(const text_lang_t *l)
{
	return l->name;
}

bool
text_stop_word(const text_lang_t *l, const char *w, size_t len)
{
	size_t lo = 0, hi = l->nstop;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2, n = strlen(l->stop[mid]);
		int c = memcmp(l->stop[mid], w, n < len ? n : len);
		if (c == 0)
			c = n < len ? -1 : n > len;
		if (c == 0)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* ---- buffers and UTF-8 ------------------------------------------------------ */

void
tbuf_put(tbuf_t *b, const void *d, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		while (cap < b->len + n + 1)
			cap *= 2;
		b->p = bson_realloc(b->p, cap);
		b->cap = cap;
	}
	if (n > 0)
		memcpy(b->p + b->len, d, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void
tbuf_put_cp(tbuf_t *b, uint32_t cp)
{
	char u[4];
	size_t n;

	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xC0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3F));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xE0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		u[2] = (char)(0x80 | (cp & 0x3F));
		n = 3;
	} else {
		u[0] = (char)(0xF0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
		u[3] = (char)(0x80 | (cp & 0x3F));
		n = 4;
	}
	tbuf_put(b, u, n);
}

uint32_t
text_utf8_next(const char *str, size_t len, size_t *i)
{
	const uint8_t *s = (const uint8_t *)str;
	uint32_t c = s[*i], cp;
	int n, k;

	if (c < 0x80) {
		(*i)++;
		return c;
	}
	if ((c & 0xE0) == 0xC0) {
		n = 1;
		cp = c & 0x1F;
	} else if ((c & 0xF0) == 0xE0) {
		n = 2;
		cp = c & 0x0F;
	} else if ((c & 0xF8) == 0xF0) {
		n = 3;
		cp = c & 0x07;
	} else {
		(*i)++;
		return 0xFFFD;
	}
	if (*i + (size_t)n >= len) {
		(*i)++;
		return 0xFFFD;
	}
	for (k = 1; k <= n; k++) {
		if ((s[*i + (size_t)k] & 0xC0) != 0x80) {
			(*i)++;
			return 0xFFFD;
		}
		cp = (cp << 6) | (s[*i + (size_t)k] & 0x3F);
	}
	*i += (size_t)n + 1;
	return cp > 0x10FFFF ? 0xFFFD : cp;
}

/* ---- character tables --------------------------------------------------------- */

static uint8_t delim_bmp[65536 / 8];
static uint32_t *strip_bmp;      /* codepoint -> without diacritics (0: drop) */
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static bool
prop_delimiter(UChar32 c)
{
	return u_hasBinaryProperty(c, UCHAR_WHITE_SPACE) || u_hasBinaryProperty(c, UCHAR_DASH) ||
	    u_hasBinaryProperty(c, UCHAR_HYPHEN) || u_hasBinaryProperty(c, UCHAR_QUOTATION_MARK) ||
	    u_hasBinaryProperty(c, UCHAR_TERMINAL_PUNCTUATION) || u_hasBinaryProperty(c, UCHAR_PATTERN_SYNTAX) ||
	    u_hasBinaryProperty(c, UCHAR_S_TERM);
}

/* mongod's gen_diacritic_map: NFD, drop the diacritics, NFC; kept only when
 * that gives one other codepoint. */
static uint32_t
strip_compute(UChar32 c)
{
	const UNormalizer2 *nfd, *nfc;
	UErrorCode st = U_ZERO_ERROR;
	UChar d[32], r[32], o[32];
	int32_t n, i, k = 0, m;
	UChar32 first;

	if (u_hasBinaryProperty(c, UCHAR_DIACRITIC))
		return 0;
	nfd = unorm2_getNFDInstance(&st);
	nfc = unorm2_getNFCInstance(&st);
	if (U_FAILURE(st))
		return (uint32_t)c;
	n = unorm2_getDecomposition(nfd, c, d, 32, &st);
	if (U_FAILURE(st) || n <= 0)
		return (uint32_t)c;
	for (i = 0; i < n;) {
		UChar32 x;
		int32_t at = i;
		U16_NEXT(d, i, n, x);
		if (!u_hasBinaryProperty(x, UCHAR_DIACRITIC))
			for (int32_t j = at; j < i; j++)
				r[k++] = d[j];
	}
	m = unorm2_normalize(nfc, r, k, o, 32, &st);
	if (U_FAILURE(st) || m <= 0)
		return (uint32_t)c;
	i = 0;
	U16_NEXT(o, i, m, first);
	if (i != m || first == c)
		return (uint32_t)c;
	return (uint32_t)first;
}

static void
tables_init(void)
{
	strip_bmp = tm_malloc0(sizeof(uint32_t) * 65536);
	for (UChar32 c = 0; c < 65536; c++) {
		if (prop_delimiter(c))
			delim_bmp[c >> 3] |= (uint8_t)(1u << (c & 7));
		strip_bmp[c] = (c >= 0xD800 && c < 0xE000) ? (uint32_t)c : strip_compute(c);
	}
}

static bool
is_delimiter(uint32_t c, const text_lang_t *l)
{
	if (c == '\'' && l->english)
		return false;
	if (c < 65536)
		return (delim_bmp[c >> 3] >> (c & 7)) & 1;
	return prop_delimiter((UChar32)c);
}

static uint32_t
strip_diacritics(uint32_t c)
{
	return c < 65536 ? strip_bmp[c] : strip_compute((UChar32)c);
}

static uint32_t
to_lower(uint32_t c, const text_lang_t *l)
{
	if (c < 0x80)
		return l->turkish && c == 'I' ? 0x131 : c >= 'A' && c <= 'Z' ? c + 32 : c;
	return (uint32_t)u_foldCase((UChar32)c, l->turkish ? U_FOLD_CASE_EXCLUDE_SPECIAL_I : U_FOLD_CASE_DEFAULT);
}

/* ---- stemmers ----------------------------------------------------------------- */

typedef struct stem_cache {
	struct sb_stemmer *st[NLANGS];
} stem_cache_t;

static pthread_key_t stem_key;
static pthread_once_t stem_once = PTHREAD_ONCE_INIT;

static void
stem_cache_free(void *p)
{
	stem_cache_t *c = p;

	for (size_t i = 0; i < NLANGS; i++)
		if (c->st[i] != NULL)
			sb_stemmer_delete(c->st[i]);
	bson_free(c);
}

static void
stem_key_init(void)
{
	pthread_key_create(&stem_key, stem_cache_free);
}

static struct sb_stemmer *
stemmer_for(const text_lang_t *l)
{
	stem_cache_t *c;

	if (l->stemmer == NULL)
		return NULL;
	pthread_once(&stem_once, stem_key_init);
	if ((c = pthread_getspecific(stem_key)) == NULL) {
		c = tm_malloc0(sizeof(*c));
		pthread_setspecific(stem_key, c);
	}
	if (c->st[l->stem_slot] == NULL)
		c->st[l->stem_slot] = sb_stemmer_new(l->stemmer, "UTF_8");
	return c->st[l->stem_slot];
}

/* ---- tokenizer ---------------------------------------------------------------- */

static void
fold_into(tbuf_t *out, const text_lang_t *l, const char *s, size_t len, int opts)
{
	size_t i = 0;

	out->len = 0;
	tbuf_put(out, "", 0);
	while (i < len) {
		uint32_t c = text_utf8_next(s, len, &i);
		if (!(opts & TEXT_TOK_CASE))
			c = to_lower(c, l);
		if (!(opts & TEXT_TOK_DIACRITIC) && (c = strip_diacritics(c)) == 0)
			continue;
		tbuf_put_cp(out, c);
	}
}

/* mongod's Tokenizer::_type for textIndexVersion 2: 0 text, 1 space,
 * 2 delimiter. */
static int
basic_type(unsigned char c, const text_lang_t *l)
{
	switch (c) {
	case ' ': case '\f': case '\v': case '\t': case '\r': case '\n':
		return 1;
	case '\'':
		return l->english ? 0 : 1;
	case '~': case '`': case '!': case '@': case '#': case '$': case '%': case '^': case '&': case '*':
	case '(': case ')': case '-': case '=': case '+': case '[': case ']': case '{': case '}': case '|':
	case '\\': case ';': case ':': case '"': case '<': case '>': case ',': case '.': case '/': case '?':
		return 2;
	default:
		return 0;
	}
}

static void
basic_tokenize(const text_lang_t *l, const char *s, size_t len, int opts, text_token_fn fn, void *ctx)
{
	struct sb_stemmer *st = stemmer_for(l);
	tbuf_t low = {0};
	size_t i = 0;

	while (i < len) {
		size_t start = i;
		const char *w;
		size_t wlen;
		if (basic_type((unsigned char)s[i], l) != 0) {
			i++;
			continue;
		}
		while (i < len && basic_type((unsigned char)s[i], l) == 0)
			i++;
		low.len = 0;
		tbuf_put(&low, s + start, i - start);
		for (size_t k = 0; k < low.len; k++)
			if (low.p[k] >= 'A' && low.p[k] <= 'Z')
				low.p[k] = (char)(low.p[k] + 32);
		if ((opts & TEXT_TOK_STOP_WORDS) && text_stop_word(l, low.p, low.len))
			continue;
		w = (opts & TEXT_TOK_CASE) ? s + start : low.p;
		wlen = (opts & TEXT_TOK_CASE) ? i - start : low.len;
		if (st != NULL) {
			const sb_symbol *r = sb_stemmer_stem(st, (const sb_symbol *)w, (int)wlen);
			if (r != NULL) {
				w = (const char *)r;
				wlen = (size_t)sb_stemmer_length(st);
			}
		}
		fn(ctx, w, wlen);
	}
	bson_free(low.p);
}

void
text_tokenize(const text_lang_t *l, const char *s, size_t len, int opts, text_token_fn fn, void *ctx)
{
	tbuf_t low = {0}, fin = {0};
	struct sb_stemmer *st;
	size_t i = 0;

	if (opts & TEXT_TOK_BASIC) {
		basic_tokenize(l, s, len, opts, fn, ctx);
		return;
	}
	pthread_once(&tables_once, tables_init);
	st = stemmer_for(l);
	while (i < len) {
		size_t start, end, j;
		const char *w;
		size_t wlen;
		/* skip delimiters */
		for (;;) {
			size_t at = i;
			if (i >= len)
				goto done;
			if (!is_delimiter(text_utf8_next(s, len, &i), l)) {
				i = at;
				break;
			}
		}
		start = i;
		for (;;) {
			size_t at = i;
			if (i >= len)
				break;
			if (is_delimiter(text_utf8_next(s, len, &i), l)) {
				i = at;
				break;
			}
		}
		end = i;
		/* lower-cased, diacritics kept: the stop-word and stemmer input */
		low.len = 0;
		tbuf_put(&low, "", 0);
		for (j = start; j < end;)
			tbuf_put_cp(&low, to_lower(text_utf8_next(s, end, &j), l));
		if ((opts & TEXT_TOK_STOP_WORDS) && text_stop_word(l, low.p, low.len))
			continue;
		w = (opts & TEXT_TOK_CASE) ? s + start : low.p;
		wlen = (opts & TEXT_TOK_CASE) ? end - start : low.len;
		if (st != NULL) {
			const sb_symbol *r = sb_stemmer_stem(st, (const sb_symbol *)w, (int)wlen);
			if (r != NULL) {
				w = (const char *)r;
				wlen = (size_t)sb_stemmer_length(st);
			}
		}
		if (!(opts & TEXT_TOK_DIACRITIC)) {
			fold_into(&fin, l, w, wlen, opts | TEXT_TOK_CASE);
			w = fin.p;
			wlen = fin.len;
		}
		fn(ctx, w, wlen);
	}
done:
	bson_free(low.p);
	bson_free(fin.p);
}

char *
text_fold(const text_lang_t *l, const char *s, size_t len, int opts, size_t *out_len)
{
	tbuf_t out = {0};

	pthread_once(&tables_once, tables_init);
	fold_into(&out, l, s, len, opts);
	if (out_len != NULL)
		*out_len = out.len;
	return out.p;
}
