/*
 * text.h -- full-text search as mongod's text indexes do it (textIndexVersion
 * 3): languages, the Unicode tokenizer (case folding, diacritic stripping,
 * stop words, Snowball stemming), the index spec (weights, language override,
 * prefix/suffix fields), per-document term scores, and the $text query
 * (terms, "phrases", -negations) with its matcher.
 *
 * This layer knows nothing of indexes or plans: query/keygen.c turns a
 * document's term scores into index keys, query/ plans and runs $text over
 * them, commands/cmd_index.c validates and normalizes specs here.
 * textIndexVersion 2 (the ASCII tokenizer) is here too.  Not here:
 * textIndexVersion 1, collations.
 */
#ifndef TAMGA_TEXT_TEXT_H
#define TAMGA_TEXT_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <bson/bson.h>

#include "common/error.h"

/* ---- languages ------------------------------------------------------------ */

typedef struct text_lang text_lang_t;

/* The language named name (mongod's version-3 names and two-letter codes,
 * case-sensitive: "english", "en", "none", ...), or NULL. */
const text_lang_t *text_lang_find(const char *name);
/* Its canonical name ("english"); borrowed, static. */
const char *text_lang_name(const text_lang_t *l);

/* ---- tokenizer ------------------------------------------------------------ */

enum {
	TEXT_TOK_STOP_WORDS = 1,    /* drop the language's stop words */
	TEXT_TOK_CASE = 2,          /* keep case (kGenerateCaseSensitiveTokens) */
	TEXT_TOK_DIACRITIC = 4,     /* keep diacritics */
	TEXT_TOK_BASIC = 8,         /* textIndexVersion 2's ASCII tokenizer (below) */
};

/* Called once per token; tok (len bytes, UTF-8, not NUL-terminated) is
 * valid during the call only. */
typedef void (*text_token_fn)(void *ctx, const char *tok, size_t len);

/* Tokenize s (len bytes of UTF-8; invalid bytes read as U+FFFD) as mongod's
 * UnicodeFTSTokenizer: split on Unicode delimiters (White_Space, Dash,
 * Hyphen, Quotation_Mark, Terminal_Punctuation, Pattern_Syntax, STerm; "'"
 * is not one in English), lower-case (Turkish dotted/dotless i for
 * "turkish"), skip stop words (checked lower-cased, diacritics kept), stem
 * with Snowball, then strip diacritics unless TEXT_TOK_DIACRITIC. */
void text_tokenize(const text_lang_t *l, const char *s, size_t len, int opts, text_token_fn fn, void *ctx);
/* With TEXT_TOK_BASIC, mongod's BasicFTSTokenizer (textIndexVersion 2):
 * words are runs of bytes that are neither ASCII whitespace nor ASCII
 * punctuation ("'" is a letter in English, a space elsewhere), lower-cased
 * in ASCII only, stop words dropped, stemmed; diacritics are kept. */

/* Fold s for phrase matching (mongod's caseFoldAndStripDiacritics):
 * lower-cased unless TEXT_TOK_CASE, diacritics stripped unless
 * TEXT_TOK_DIACRITIC.  Returns a new NUL-terminated string (bson_free). */
char *text_fold(const text_lang_t *l, const char *s, size_t len, int opts, size_t *out_len);

/* ---- index spec ------------------------------------------------------------ */

typedef struct text_spec text_spec_t;

/*
 * createIndexes: validate a text index spec as given and build the stored
 * one (mongod's FTSSpec::fixSpec): key {prefix..., _fts: "text", _ftsx: 1,
 * suffix...}, weights {field: n} (sorted by name, "$**" for wildcard),
 * default_language, language_override, textIndexVersion (3 unless 2 was
 * asked for).  out is initialized here and holds every other field of spec
 * as given.  Errors: 67 CannotCreateIndex with mongod's messages, 238 for
 * textIndexVersion 1.
 */
int text_spec_fix(const bson_t *spec, bson_t *out, terr_t *err);

/* Whether a key pattern is a (stored or requested) text one. */
bool text_key_is_text(const bson_t *key);

/* The compiled form of a stored (fixed) spec, cached by its bytes and never
 * freed (as keygen's partial filters): valid for the process lifetime.
 * NULL with err when the spec is not a valid stored text spec. */
const text_spec_t *text_spec_get(const bson_t *stored, terr_t *err);

const text_lang_t *text_spec_default_lang(const text_spec_t *s);
int text_spec_version(const text_spec_t *s);
/* Key-pattern fields before and after the text part. */
int text_spec_nprefix(const text_spec_t *s);
const char *text_spec_prefix(const text_spec_t *s, int i);
int text_spec_nsuffix(const text_spec_t *s);
const char *text_spec_suffix(const text_spec_t *s, int i);

/* Called once per distinct term of a document with its score. */
typedef void (*text_term_fn)(void *ctx, const char *term, size_t len, double score);

/* mongod's scoreDocument: every string the spec indexes (weights' paths,
 * or all of them for "$**", through arrays and sub-documents, each
 * document's language_override field choosing its language) tokenized
 * without stop words, each term scoring weight * freq * (0.5 * count /
 * tokens + 0.5) (* 1.1 when the term is the whole string), freq summing
 * 1, 1/2, 1/4 ... over repeats, scores adding up across fields.  Errors:
 * 17261 / 17262 for a bad language override. */
int text_score_document(const text_spec_t *s, const bson_t *doc, text_term_fn fn, void *ctx, terr_t *err);

/* ---- $text query ----------------------------------------------------------- */

typedef struct text_query text_query_t;

/* Parse $search as mongod's FTSQueryImpl: space-separated terms, "phrases",
 * -negated terms and phrases; terms tokenized in lang with stop words
 * dropped.  *out is the caller's (text_query_free). */
int text_query_new(const char *search, size_t len, const text_lang_t *lang, int version, bool case_sensitive,
                   bool diacritic_sensitive, text_query_t **out, terr_t *err);
void text_query_free(text_query_t *q);

/* The terms the index is scanned for (case- and diacritic-folded,
 * distinct, sorted); borrowed. */
size_t text_query_nbounds(const text_query_t *q);
const char *text_query_bound(const text_query_t *q, size_t i);

/* True when the matcher accepts every document the bounds find: no
 * negations, no phrases, neither case nor diacritic sensitive. */
bool text_query_plain(const text_query_t *q);

/* explain's parsedTextQuery: {terms, negatedTerms, phrases, negatedPhrases}
 * appended to out. */
void text_query_append_parsed(const text_query_t *q, bson_t *out);

/* mongod's FTSMatcher over doc: some positive term (skipped when the index
 * scan already guarantees it: neither case nor diacritic sensitive), no
 * negated term, every positive phrase, no negated phrase, in the strings
 * spec indexes.  Returns 1, 0, or -1 with err (language override errors). */
int text_query_matches(const text_spec_t *s, const text_query_t *q, const bson_t *doc, terr_t *err);

#endif
