/*
 * text_private.h -- what the files of src/text/ share: UTF-8 helpers, the
 * language rows, stop-word lookup, a growable byte buffer.
 */
#ifndef TAMGA_TEXT_PRIVATE_H
#define TAMGA_TEXT_PRIVATE_H

#include <stdint.h>

#include "text/text.h"

struct text_lang {
	const char *name;            /* canonical: "english" */
	const char *stemmer;         /* Snowball algorithm, NULL for "none" */
	const char *const *stop;     /* sorted stop words (lower case, diacritics kept) */
	size_t nstop;
	bool turkish;                /* dotted / dotless i folding */
	bool english;                /* "'" is not a delimiter */
	int stem_slot;               /* per-thread stemmer cache slot */
};

/* text_stopwords_data.c (generated from stopwords/<language>.txt): one row
 * per language that has a list, sorted words; ends with a NULL name. */
typedef struct text_stop_list {
	const char *lang;
	const char *const *words;
	size_t n;
} text_stop_list_t;
extern const text_stop_list_t text_stop_lists[];
/* Whether w (len bytes) is one of l's stop words. */
bool text_stop_word(const text_lang_t *l, const char *w, size_t len);

/* A growable byte buffer (bson_realloc). */
typedef struct tbuf {
	char *p;
	size_t len, cap;
} tbuf_t;
void tbuf_put(tbuf_t *b, const void *d, size_t n);
void tbuf_put_cp(tbuf_t *b, uint32_t cp);

/* The codepoint at s[*i] (advancing *i); U+FFFD for invalid bytes. */
uint32_t text_utf8_next(const char *s, size_t len, size_t *i);

/* text_spec.c: every string spec indexes in doc, with its language and
 * weight (mongod's FTSElementIterator); fn's error stops the walk. */
typedef int (*text_value_fn)(void *ctx, const text_lang_t *l, const char *s, size_t len, double weight,
                             terr_t *err);
int text_spec_walk(const text_spec_t *s, const bson_t *doc, text_value_fn fn, void *ctx, terr_t *err);

#endif
