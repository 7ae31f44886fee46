/*
 * test_text.c -- text search: the tokenizer (delimiters, case and diacritic
 * folding, English apostrophes, stop words, Snowball stems), $search
 * parsing (terms, phrases, negations), document scores against the values
 * MongoDB's manual lists, text index specs as mongod normalizes them (and
 * its errors), and $text end to end through the command layer: textScore
 * projection and sort, phrases, negations, $language, case and diacritic
 * sensitivity, compound prefixes, explain's TEXT_MATCH / TEXT_OR, and the
 * errors (27, "Too many text expressions", nor, 17287-style misuse).
 */
#include "tt.h"
#include "tt_embedded.h"

#include <string.h>

#include "query/keygen.h"
#include "text/text.h"

static tamga_t *db;

typedef struct toks {
	char buf[512];
} toks_t;

static void
tok_cb(void *ctx, const char *t, size_t len)
{
	toks_t *k = ctx;
	size_t n = strlen(k->buf);

	if (n + len + 2 < sizeof(k->buf)) {
		if (n > 0)
			k->buf[n++] = '|';
		memcpy(k->buf + n, t, len);
		k->buf[n + len] = '\0';
	}
}

static const char *
toks(const char *lang, const char *s, int opts, toks_t *k)
{
	k->buf[0] = '\0';
	text_tokenize(text_lang_find(lang), s, strlen(s), opts, tok_cb, k);
	return k->buf;
}

static void
test_tokenizer(void)
{
	toks_t k;

	/* stop words dropped, stems, English keeps apostrophes inside words */
	TT_EQ_STR(toks("english", "The quick brown foxes are jumping", TEXT_TOK_STOP_WORDS, &k), "quick|brown|fox|jump");
	TT_EQ_STR(toks("english", "coffee shop's", TEXT_TOK_STOP_WORDS, &k), "coffe|shop");
	TT_EQ_STR(toks("english", "don't stop", TEXT_TOK_STOP_WORDS, &k), "stop");
	TT_EQ_STR(toks("english", "don't stop", 0, &k), "don't|stop");
	/* delimiters: punctuation, dashes, quotes, any Unicode space */
	TT_EQ_STR(toks("none", "a-b,c.d;e\xe2\x80\x94" "f\xc2\xa0g", 0, &k), "a|b|c|d|e|f|g");
	/* every language's stop words (mongod's lists) and stemmer */
	TT_EQ_STR(toks("french", "le chat et les chiens", TEXT_TOK_STOP_WORDS, &k), "chat|chien");
	TT_EQ_STR(toks("german", "die Häuser und der Garten", TEXT_TOK_STOP_WORDS, &k), "haus|gart");
	TT_EQ_STR(toks("spanish", "los gatos", TEXT_TOK_STOP_WORDS, &k), "gat");
	/* other languages split on "'" */
	TT_EQ_STR(toks("french", "l'amour", 0, &k), "l|amour");
	/* case folding and diacritics: stemmed first, stripped after */
	TT_EQ_STR(toks("none", "CAFÉ Über", 0, &k), "cafe|uber");
	TT_EQ_STR(toks("none", "CAFÉ", TEXT_TOK_CASE, &k), "CAFE");
	TT_EQ_STR(toks("none", "CAFÉ", TEXT_TOK_DIACRITIC, &k), "café");
	TT_EQ_STR(toks("none", "CAFÉ", TEXT_TOK_CASE | TEXT_TOK_DIACRITIC, &k), "CAFÉ");
	/* Turkish dotted and dotless i */
	TT_EQ_STR(toks("none", "I", 0, &k), "i");
	TT_EQ_STR(toks("turkish", "I", 0, &k), "\xc4\xb1");
	/* language names and codes */
	TT_ASSERT(text_lang_find("en") == text_lang_find("english"));
	TT_ASSERT(text_lang_find("EN") == NULL);
	TT_ASSERT(text_lang_find("klingon") == NULL);
	TT_EQ_STR(text_lang_name(text_lang_find("nb")), "norwegian");
	/* textIndexVersion 2's ASCII tokenizer: no Unicode delimiters, ASCII
	 * lower-casing only, diacritics kept */
	TT_EQ_STR(toks("english", "Running CAFÉ-au\xe2\x80\x94lait don't", TEXT_TOK_STOP_WORDS | TEXT_TOK_BASIC, &k),
	    "run|cafÉ|au\xe2\x80\x94lait");
	TT_EQ_STR(toks("french", "l'amour", TEXT_TOK_BASIC, &k), "l|amour");
	/* invalid UTF-8 never crashes */
	TT_EQ_STR(toks("english", "ab\xff\xfe" "cd \xe2\x82", 0, &k), "ab\xef\xbf\xbd\xef\xbf\xbd" "cd|\xef\xbf\xbd\xef\xbf\xbd");
}

static char *
parsed(const char *search, bool cs, bool ds)
{
	text_query_t *q = NULL;
	terr_t err = TERR_INIT;
	bson_t out = BSON_INITIALIZER;
	char *j;

	TT_EQ_INT(text_query_new(search, strlen(search), text_lang_find("english"), 3, cs, ds, &q, &err), 0);
	text_query_append_parsed(q, &out);
	j = bson_as_relaxed_extended_json(&out, NULL);
	bson_destroy(&out);
	text_query_free(q);
	return j;
}

static void
test_query_parse(void)
{
	char *j;

	j = parsed("coffee -shop \"slow start\" -\"bad day\" cakes", false, false);
	TT_EQ_STR(j, "{ \"terms\" : [ \"cake\", \"coffe\", \"slow\", \"start\" ], \"negatedTerms\" : [ \"shop\" ], "
	    "\"phrases\" : [ \"slow start\" ], \"negatedPhrases\" : [ \"bad day\" ] }");
	bson_free(j);
	/* "- foo" does not negate; "-foo-bar" negates both; stop words go */
	j = parsed("- foo -bar-baz the", false, false);
	TT_EQ_STR(j, "{ \"terms\" : [ \"foo\" ], \"negatedTerms\" : [ \"bar\", \"baz\" ], \"phrases\" : [  ], "
	    "\"negatedPhrases\" : [  ] }");
	bson_free(j);
	/* case-sensitive matcher terms keep case; bounds stay folded */
	j = parsed("Coffee", true, false);
	TT_EQ_STR(j, "{ \"terms\" : [ \"Coffe\" ], \"negatedTerms\" : [  ], \"phrases\" : [  ], \"negatedPhrases\" : [  ] }");
	bson_free(j);
}

typedef struct scores {
	char term[64][32];
	double score[64];
	int n;
} scores_t;

static void
score_cb(void *ctx, const char *t, size_t len, double sc)
{
	scores_t *s = ctx;

	if (s->n < 64 && len < 32) {
		memcpy(s->term[s->n], t, len);
		s->term[s->n][len] = '\0';
		s->score[s->n++] = sc;
	}
}

static double
score_of(const char *spec_json, const char *doc_json, const char *term)
{
	bson_t *spec = tt_json(spec_json), *doc = tt_json(doc_json), fixed;
	terr_t err = TERR_INIT;
	const text_spec_t *s;
	scores_t sc;
	double r = -1;

	memset(&sc, 0, sizeof(sc));
	TT_EQ_INT(text_spec_fix(spec, &fixed, &err), 0);
	s = text_spec_get(&fixed, &err);
	TT_ASSERT(s != NULL);
	if (s != NULL && text_score_document(s, doc, score_cb, &sc, &err) == 0)
		for (int i = 0; i < sc.n; i++)
			if (strcmp(sc.term[i], term) == 0)
				r = sc.score[i];
	bson_destroy(&fixed);
	bson_destroy(spec);
	bson_destroy(doc);
	return r;
}

#define TT_NEAR(a, b) TT_ASSERT(((a) - (b)) < 1e-12 && ((b) - (a)) < 1e-12)

static void
test_scores(void)
{
	const char *spec = "{\"key\": {\"title\": \"text\"}, \"name\": \"t\"}";

	/* the manual's "cakes" example (Text Search in the Aggregation Pipeline) */
	TT_NEAR(score_of(spec, "{\"title\": \"cakes and ale\"}", "cake"), 0.75);
	TT_NEAR(score_of(spec, "{\"title\": \"more cakes\"}", "cake"), 1.0);
	TT_NEAR(score_of(spec, "{\"title\": \"two cakes to go\"}", "cake"), 0.5 / 3 + 0.5);
	TT_NEAR(score_of(spec, "{\"title\": \"pan cakes\"}", "cake"), 0.75);
	/* the whole string is the term: 1.1; repeats add 1, 1/2, 1/4 */
	TT_NEAR(score_of(spec, "{\"title\": \"cake\"}", "cake"), 1.1);
	TT_NEAR(score_of(spec, "{\"title\": \"cake cake cake pie\"}", "cake"), 1.75 * (0.5 * 3 / 4 + 0.5));
	/* weights multiply; fields add up; arrays and sub-documents */
	TT_NEAR(score_of("{\"key\": {\"title\": \"text\", \"body\": \"text\"}, \"name\": \"t\", \"weights\": {\"title\": 10}}",
	    "{\"title\": \"cake pie\", \"body\": \"cake\"}", "cake"), 10 * 0.75 + 1.1);
	TT_NEAR(score_of("{\"key\": {\"tags\": \"text\"}, \"name\": \"t\"}", "{\"tags\": [\"cake\", \"pie cake\"]}", "cake"),
	    1.1 + 0.75);
	TT_NEAR(score_of("{\"key\": {\"a.b\": \"text\"}, \"name\": \"t\"}", "{\"a\": [{\"b\": \"cake\"}, {\"c\": \"cake\"}]}",
	    "cake"), 1.1);
	/* $**: every string; a language override per document */
	TT_NEAR(score_of("{\"key\": {\"$**\": \"text\"}, \"name\": \"t\"}", "{\"x\": {\"y\": \"cake\"}, \"z\": 5}", "cake"), 1.1);
	TT_NEAR(score_of(spec, "{\"title\": \"the cake\", \"language\": \"none\"}", "the"), 0.75);
	/* mongod's lower_bound quirk under $**: a field without a weight of its
	 * own takes the next weighted path's ("body" < "title": 10), one past
	 * every weighted path the default 1 */
	TT_NEAR(score_of("{\"key\": {\"$**\": \"text\"}, \"name\": \"t\", \"weights\": {\"title\": 10}}",
	    "{\"body\": \"cake\"}", "cake"), 11.0);
	TT_NEAR(score_of("{\"key\": {\"$**\": \"text\"}, \"name\": \"t\", \"weights\": {\"title\": 10}}",
	    "{\"zzz\": \"cake\"}", "cake"), 1.1);
	/* the language override field itself is not indexed under $** */
	TT_ASSERT(score_of("{\"key\": {\"$**\": \"text\"}, \"name\": \"t\"}", "{\"language\": \"english\"}",
	    "english") < 0);
	TT_ASSERT(score_of(spec, "{\"title\": \"the cake\"}", "the") < 0);
}

static char *
fix_json(const char *spec_json, int *code)
{
	bson_t *spec = tt_json(spec_json), fixed;
	terr_t err = TERR_INIT;
	char *j;

	*code = text_spec_fix(spec, &fixed, &err) == 0 ? 0 : err.code;
	j = *code == 0 ? bson_as_relaxed_extended_json(&fixed, NULL) : bson_strdup(err.msg);
	bson_destroy(&fixed);
	bson_destroy(spec);
	terr_clear(&err);
	return j;
}

static void
test_spec_fix(void)
{
	int code;
	char *j;

	j = fix_json("{\"key\": {\"g\": 1, \"title\": \"text\", \"body\": \"text\", \"z\": -1}, \"name\": \"t\", \"weights\": {\"body\": 5}}", &code);
	TT_EQ_INT(code, 0);
	TT_EQ_STR(j, "{ \"key\" : { \"g\" : 1, \"_fts\" : \"text\", \"_ftsx\" : 1, \"z\" : -1 }, \"name\" : \"t\", "
	    "\"weights\" : { \"body\" : 5, \"title\" : 1 }, \"default_language\" : \"english\", "
	    "\"language_override\" : \"language\", \"textIndexVersion\" : 3 }");
	bson_free(j);
	j = fix_json("{\"key\": {\"$**\": \"text\"}, \"name\": \"t\", \"default_language\": \"fr\"}", &code);
	TT_EQ_STR(j, "{ \"key\" : { \"_fts\" : \"text\", \"_ftsx\" : 1 }, \"name\" : \"t\", \"default_language\" : \"fr\", "
	    "\"weights\" : { \"$**\" : 1 }, \"language_override\" : \"language\", \"textIndexVersion\" : 3 }");
	bson_free(j);
	j = fix_json("{\"key\": {\"a\": \"text\", \"b\": 1, \"c\": \"text\"}, \"name\": \"t\"}", &code);
	TT_EQ_INT(code, 67);
	TT_EQ_STR(j, "'text' fields in index must all be adjacent");
	bson_free(j);
	j = fix_json("{\"key\": {\"a\": \"text\"}, \"name\": \"t\", \"weights\": {\"a\": 100000}}", &code);
	TT_EQ_STR(j, "text index weight must be in the exclusive interval (0,100000) but found: 100000");
	bson_free(j);
	j = fix_json("{\"key\": {\"a\": \"text\"}, \"name\": \"t\", \"weights\": {\"a\": \"x\"}}", &code);
	TT_EQ_STR(j, "weight for text index needs numeric type");
	bson_free(j);
	j = fix_json("{\"key\": {\"a\": \"text\"}, \"name\": \"t\", \"default_language\": \"klingon\"}", &code);
	TT_EQ_STR(j, "default_language is not valid");
	bson_free(j);
	j = fix_json("{\"key\": {\"a\": \"text\"}, \"name\": \"t\", \"language_override\": \"$x\"}", &code);
	TT_EQ_STR(j, "language_override is not valid");
	bson_free(j);
	j = fix_json("{\"key\": {\"a\": \"text\"}, \"name\": \"t\", \"textIndexVersion\": 4}", &code);
	TT_EQ_STR(j, "bad textIndexVersion: 4");
	bson_free(j);
	j = fix_json("{\"key\": {\"a\": \"text\"}, \"name\": \"t\", \"textIndexVersion\": 1}", &code);
	TT_EQ_INT(code, 238);
	bson_free(j);
	j = fix_json("{\"key\": {\"a\": \"text\"}, \"name\": \"t\", \"textIndexVersion\": 2}", &code);
	TT_EQ_INT(code, 0);
	TT_ASSERT(strstr(j, "\"textIndexVersion\" : 2") != NULL);
	bson_free(j);
	j = fix_json("{\"key\": {\"_fts\": \"text\", \"a\": \"text\"}, \"name\": \"t\"}", &code);
	TT_EQ_INT(code, 67);
	bson_free(j);
}

static char *
sq(const char *cmd)
{
	return tt_batch_sq(db, "test", cmd);
}

static int
sq_code(const char *cmd, char **msg)
{
	int rc;
	bson_t *r = tt_run_sq(db, "test", cmd, &rc);
	int code = rc == 0 ? 0 : (int)tt_get_i64(r, "code");

	if (msg != NULL)
		*msg = bson_strdup(tt_get_str(r, "errmsg"));
	tt_free_reply(r);
	return code;
}

static void
test_find_text(void)
{
	char *s, *m = NULL;
	int rc;
	bson_t *r;

	TT_EQ_INT(sq_code("{'insert': 'a', 'documents': [{'_id': 1, 'title': 'cakes and ale'},"
	    " {'_id': 2, 'title': 'more cakes'}, {'_id': 3, 'title': 'bread'}, {'_id': 4, 'title': 'some cakes'},"
	    " {'_id': 5, 'title': 'two cakes to go'}, {'_id': 6, 'title': 'pan cakes'}]}", NULL), 0);
	/* no text index yet */
	TT_EQ_INT(sq_code("{'find': 'a', 'filter': {'$text': {'$search': 'cake'}}}", &m), 27);
	TT_EQ_STR(m, "text index required for $text query");
	bson_free(m);
	TT_EQ_INT(sq_code("{'createIndexes': 'a', 'indexes': [{'key': {'title': 'text'}, 'name': 'title_text'}]}", NULL), 0);
	/* the same key pattern {_fts, _ftsx} with other weights: the catalog's 85 */
	TT_EQ_INT(sq_code("{'createIndexes': 'a', 'indexes': [{'key': {'body': 'text'}, 'name': 'body_text'}]}", &m), 85);
	TT_ASSERT(strncmp(m, "An equivalent index already exists with a different name and options.", 69) == 0);
	bson_free(m);
	/* another key pattern: one text index per collection (67) */
	TT_EQ_INT(sq_code("{'createIndexes': 'a', 'indexes': [{'key': {'g': 1, 'body': 'text'}, 'name': 'g_body'}]}", &m), 67);
	TT_EQ_STR(m, "only one text index per collection allowed, found existing text index \"title_text\"");
	bson_free(m);
	/* the same index again exists */
	TT_EQ_INT(sq_code("{'createIndexes': 'a', 'indexes': [{'key': {'title': 'text'}, 'name': 'title_text'}]}", NULL), 0);
	r = tt_run_sq(db, "test", "{'listIndexes': 'a'}", &rc);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.1.key._fts"), "text");
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.1.weights.title"), 1);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.1.default_language"), "english");
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.1.textIndexVersion"), 3);
	tt_free_reply(r);
	/* the manual's scores, sorted by them */
	s = sq("{'find': 'a', 'filter': {'$text': {'$search': 'cake'}}, 'projection': {'score': {'$meta': 'textScore'}},"
	    " 'sort': {'score': {'$meta': 'textScore'}, '_id': 1}}");
	TT_EQ_STR(s, "[ { \"_id\" : 2, \"title\" : \"more cakes\", \"score\" : 1.0 }, "
	    "{ \"_id\" : 4, \"title\" : \"some cakes\", \"score\" : 1.0 }, "
	    "{ \"_id\" : 1, \"title\" : \"cakes and ale\", \"score\" : 0.75 }, "
	    "{ \"_id\" : 6, \"title\" : \"pan cakes\", \"score\" : 0.75 }, "
	    "{ \"_id\" : 5, \"title\" : \"two cakes to go\", \"score\" : 0.66666666666666662966 } ]");
	bson_free(s);
	/* sort by score without projecting it; inclusion projection */
	s = sq("{'find': 'a', 'filter': {'$text': {'$search': 'ale bread'}}, 'projection': {'_id': 1},"
	    " 'sort': {'score': {'$meta': 'textScore'}}}");
	TT_EQ_STR(s, "[ { \"_id\" : 3 }, { \"_id\" : 1 } ]");
	bson_free(s);
	/* negation, phrase, other conjuncts */
	s = sq("{'find': 'a', 'filter': {'$text': {'$search': 'cakes -ale -pan'}}, 'sort': {'_id': 1}, 'projection': {'_id': 1}}");
	TT_EQ_STR(s, "[ { \"_id\" : 2 }, { \"_id\" : 4 }, { \"_id\" : 5 } ]");
	bson_free(s);
	s = sq("{'find': 'a', 'filter': {'$text': {'$search': '\\\"cakes to\\\"'}}, 'projection': {'_id': 1}}");
	TT_EQ_STR(s, "[ { \"_id\" : 5 } ]");
	bson_free(s);
	s = sq("{'find': 'a', 'filter': {'$text': {'$search': 'cakes'}, '_id': {'$gt': 4}}, 'sort': {'_id': 1},"
	    " 'projection': {'_id': 1}}");
	TT_EQ_STR(s, "[ { \"_id\" : 5 }, { \"_id\" : 6 } ]");
	bson_free(s);
	/* $language none: the term is not stemmed, and the index holds "cake" */
	s = sq("{'find': 'a', 'filter': {'$text': {'$search': 'cakes', '$language': 'none'}}}");
	TT_EQ_STR(s, "[ ]");
	bson_free(s);
	/* textScore without $text; errors of the $text operator */
	TT_EQ_INT(sq_code("{'find': 'a', 'projection': {'s': {'$meta': 'textScore'}}}", NULL), 40218);
	TT_EQ_INT(sq_code("{'find': 'a', 'filter': {'$text': {'$search': 1}}}", &m), 14);
	TT_EQ_STR(m, "$search requires a string value");
	bson_free(m);
	TT_EQ_INT(sq_code("{'find': 'a', 'filter': {'$text': {'$search': 'a', 'x': 1}}}", &m), 2);
	TT_EQ_STR(m, "extra fields in $text");
	bson_free(m);
	TT_EQ_INT(sq_code("{'find': 'a', 'filter': {'$text': {'$search': 'a', '$language': 'xx'}}}", &m), 2);
	TT_EQ_STR(m, "unsupported language: \"xx\" for text index version 3");
	bson_free(m);
	TT_EQ_INT(sq_code("{'find': 'a', 'filter': {'$and': [{'$text': {'$search': 'a'}}, {'$text': {'$search': 'b'}}]}}", &m), 2);
	TT_EQ_STR(m, "Too many text expressions");
	bson_free(m);
	TT_EQ_INT(sq_code("{'find': 'a', 'filter': {'$nor': [{'$text': {'$search': 'a'}}]}}", &m), 2);
	TT_EQ_STR(m, "text expression not allowed in nor");
	bson_free(m);
	TT_EQ_INT(sq_code("{'find': 'a', 'filter': {'x': {'$elemMatch': {'$text': {'$search': 'a'}}}}}", NULL), 2);
	/* $text under $or: mongod's 291 when another branch has no index, 238 when it has */
	TT_EQ_INT(sq_code("{'find': 'a', 'filter': {'$or': [{'$text': {'$search': 'a'}}, {'zz': 1}]}}", &m), 291);
	TT_ASSERT(strstr(m, "Failed to produce a solution for TEXT under OR - other non-TEXT clauses under OR have to be indexed as well.") != NULL);
	bson_free(m);
	TT_EQ_INT(sq_code("{'find': 'a', 'filter': {'$or': [{'$text': {'$search': 'a'}}, {'_id': 1}]}}", NULL), 238);
	TT_EQ_INT(sq_code("{'find': 'a', 'filter': {'$text': {'$search': 'a'}}, 'hint': {'_id': 1}}", &m), 2);
	TT_EQ_STR(m, "text and hint not allowed in same query");
	bson_free(m);
	/* explain */
	r = tt_run_sq(db, "test", "{'explain': {'find': 'a', 'filter': {'$text': {'$search': 'cakes ale'}}}, 'verbosity': 'executionStats'}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.stage"), "TEXT_MATCH");
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.indexName"), "title_text");
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.parsedTextQuery.terms.0"), "ale");
	TT_EQ_INT(tt_get_i64(r, "queryPlanner.winningPlan.textIndexVersion"), 3);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.stage"), "FETCH");
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.inputStage.stage"), "OR");
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.inputStage.inputStages.0.stage"), "IXSCAN");
	TT_EQ_STR(tt_get_str(r, "queryPlanner.parsedQuery.$text.$search"), "cakes ale");
	TT_EQ_INT(tt_get_i64(r, "executionStats.nReturned"), 5);
	TT_EQ_INT(tt_get_i64(r, "executionStats.totalKeysExamined"), 6);
	tt_free_reply(r);
	r = tt_run_sq(db, "test", "{'explain': {'find': 'a', 'filter': {'$text': {'$search': 'cakes'}},"
	    " 'projection': {'s': {'$meta': 'textScore'}}}}", &rc);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.stage"), "PROJECTION_DEFAULT");
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.stage"), "TEXT_MATCH");
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.inputStage.stage"), "TEXT_OR");
	tt_free_reply(r);
	/* a term past 224 bytes is keyed by its prefix and MD5, and still found */
	{
		char cmd[1200], w[301];
		memset(w, 'q', 300);
		w[300] = '\0';
		snprintf(cmd, sizeof(cmd), "{'insert': 'a', 'documents': [{'_id': 7, 'title': '%s'}]}", w);
		TT_EQ_INT(sq_code(cmd, NULL), 0);
		snprintf(cmd, sizeof(cmd), "{'find': 'a', 'filter': {'$text': {'$search': '%s'}}, 'projection': {'_id': 1}}", w);
		s = sq(cmd);
		TT_EQ_STR(s, "[ { \"_id\" : 7 } ]");
		bson_free(s);
		TT_EQ_INT(sq_code("{'delete': 'a', 'deletes': [{'q': {'_id': 7}, 'limit': 1}]}", NULL), 0);
	}
	/* a $search of 20000 distinct words stays fast (sets sorted once) */
	{
		bson_string_t *q = bson_string_new("{'find': 'a', 'filter': {'$text': {'$search': '");
		bson_t *r;
		int rc2;
		for (int w = 0; w < 20000; w++)
			bson_string_append_printf(q, "zq%dx ", w);
		bson_string_append(q, "cakes'}}, 'projection': {'_id': 1}, 'sort': {'_id': 1}}");
		r = tt_run_sq(db, "test", q->str, &rc2);
		TT_EQ_INT(rc2, 0);
		TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.4._id"), 6);
		tt_free_reply(r);
		bson_string_free(q, true);
	}
	/* count and a write through $text */
	r = tt_run_sq(db, "test", "{'count': 'a', 'query': {'$text': {'$search': 'cakes'}}}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 5);
	tt_free_reply(r);
	r = tt_run_sq(db, "test", "{'update': 'a', 'updates': [{'q': {'$text': {'$search': 'bread'}}, 'u': {'$set': {'x': 1}}}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "nModified"), 1);
	tt_free_reply(r);
	TT_EQ_INT(sq_code("{'drop': 'a'}", NULL), 0);
}

static void
test_sensitivity_and_prefix(void)
{
	char *s, *m = NULL;

	TT_EQ_INT(sq_code("{'createIndexes': 'b', 'indexes': [{'key': {'shop': 1, 'body': 'text'}, 'name': 'shop_1_body_text'}]}", NULL), 0);
	TT_EQ_INT(sq_code("{'insert': 'b', 'documents': [{'_id': 1, 'shop': 'A', 'body': 'Café au lait'},"
	    " {'_id': 2, 'shop': 'A', 'body': 'cafe noir'}, {'_id': 3, 'shop': 'B', 'body': 'CAFE'}]}", NULL), 0);
	/* the prefix field needs an equality */
	TT_EQ_INT(sq_code("{'find': 'b', 'filter': {'$text': {'$search': 'cafe'}}}", &m), 291);
	TT_ASSERT(strstr(m, "failed to use text index to satisfy $text query") != NULL);
	bson_free(m);
	s = sq("{'find': 'b', 'filter': {'shop': 'A', '$text': {'$search': 'cafe'}}, 'sort': {'_id': 1}, 'projection': {'_id': 1}}");
	TT_EQ_STR(s, "[ { \"_id\" : 1 }, { \"_id\" : 2 } ]");
	bson_free(s);
	s = sq("{'find': 'b', 'filter': {'shop': 'A', '$text': {'$search': 'café', '$diacriticSensitive': true}}, 'projection': {'_id': 1}}");
	TT_EQ_STR(s, "[ { \"_id\" : 1 } ]");
	bson_free(s);
	s = sq("{'find': 'b', 'filter': {'shop': 'B', '$text': {'$search': 'cafe', '$caseSensitive': true}}, 'projection': {'_id': 1}}");
	TT_EQ_STR(s, "[ ]");
	bson_free(s);
	s = sq("{'find': 'b', 'filter': {'shop': 'B', '$text': {'$search': 'CAFE', '$caseSensitive': true}}, 'projection': {'_id': 1}}");
	TT_EQ_STR(s, "[ { \"_id\" : 3 } ]");
	bson_free(s);
	/* the text index never answers other queries: documents without terms have no keys */
	TT_EQ_INT(sq_code("{'insert': 'b', 'documents': [{'_id': 4, 'shop': 'C'}]}", NULL), 0);
	s = sq("{'find': 'b', 'filter': {'shop': 'C'}, 'limit': 1}");
	TT_EQ_STR(s, "[ { \"_id\" : 4, \"shop\" : \"C\" } ]");
	bson_free(s);
	{
		int rc;
		bson_t *r = tt_run_sq(db, "test", "{'distinct': 'b', 'key': 'shop'}", &rc);
		char *j = bson_as_relaxed_extended_json(r, NULL);
		TT_ASSERT(strstr(j, "[ \"A\", \"B\", \"C\" ]") != NULL);
		bson_free(j);
		tt_free_reply(r);
	}
	/* an array under the prefix path is refused, nothing written */
	TT_EQ_INT(sq_code("{'insert': 'b', 'documents': [{'_id': 9, 'shop': ['A'], 'body': 'x'}]}", NULL), 0);
	s = sq("{'find': 'b', 'filter': {'_id': 9}}");
	TT_EQ_STR(s, "[ ]");
	bson_free(s);
	/* a bad language override is refused */
	TT_EQ_INT(sq_code("{'insert': 'b', 'documents': [{'_id': 10, 'shop': 'A', 'body': 'x', 'language': 'xx'}]}", NULL), 0);
	s = sq("{'find': 'b', 'filter': {'_id': 10}}");
	TT_EQ_STR(s, "[ ]");
	bson_free(s);
	TT_EQ_INT(sq_code("{'drop': 'b'}", NULL), 0);
}

/* Long terms in keys: version 3 keeps 224 bytes + hex MD5, version 2 keeps
 * 32 + hex MurmurHash3 x64-128 (the algorithm's published vector for "The
 * quick brown fox jumps over the lazy dog", seed 0). */
static void
test_long_term_keys(void)
{
	const char *fox = "The quick brown fox jumps over the lazy dog";
	char buf[KEYGEN_TEXT_TERM_MAX + 1], big[300];
	const char *r;
	size_t n;

	r = keygen_text_term(fox, strlen(fox), 2, buf, &n);
	TT_EQ_INT(n, 64);
	TT_ASSERT(memcmp(r, "The quick brown fox jumps over t6c1b07bc7bbc4be347939ac4a93c437a", 64) == 0);
	r = keygen_text_term(fox, strlen(fox), 3, buf, &n);
	TT_ASSERT(r == fox && n == strlen(fox));
	memset(big, 'a', 300);
	r = keygen_text_term(big, 300, 3, buf, &n);
	TT_EQ_INT(n, 256);
	TT_ASSERT(memcmp(r, big, 224) == 0);
}

static void
test_version2(void)
{
	char *s, cmd[600], w[41];

	TT_EQ_INT(sq_code("{'createIndexes': 'v2', 'indexes': [{'key': {'t': 'text'}, 'name': 't_text', 'textIndexVersion': 2}]}",
	    NULL), 0);
	memset(w, 'k', 40);
	w[40] = '\0';
	snprintf(cmd, sizeof(cmd), "{'insert': 'v2', 'documents': [{'_id': 1, 't': 'Running Café'}, {'_id': 2, 't': '%s'},"
	    " {'_id': 3, 't': 'café CRÈME'}]}", w);
	TT_EQ_INT(sq_code(cmd, NULL), 0);
	s = sq("{'find': 'v2', 'filter': {'$text': {'$search': 'runs'}}, 'projection': {'_id': 1}}");
	TT_EQ_STR(s, "[ { \"_id\" : 1 } ]");
	bson_free(s);
	/* no diacritic folding in version 2: café is not cafe */
	s = sq("{'find': 'v2', 'filter': {'$text': {'$search': 'cafe'}}, 'projection': {'_id': 1}}");
	TT_EQ_STR(s, "[ ]");
	bson_free(s);
	s = sq("{'find': 'v2', 'filter': {'$text': {'$search': 'café'}}, 'projection': {'_id': 1}, 'sort': {'_id': 1}}");
	TT_EQ_STR(s, "[ { \"_id\" : 1 }, { \"_id\" : 3 } ]");
	bson_free(s);
	/* a term past 32 bytes: prefix + MurmurHash3, still found */
	snprintf(cmd, sizeof(cmd), "{'find': 'v2', 'filter': {'$text': {'$search': '%s'}}, 'projection': {'_id': 1}}", w);
	s = sq(cmd);
	TT_EQ_STR(s, "[ { \"_id\" : 2 } ]");
	bson_free(s);
	/* phrases: ASCII case-insensitive */
	s = sq("{'find': 'v2', 'filter': {'$text': {'$search': '\\\"running café\\\"'}}, 'projection': {'_id': 1}}");
	TT_EQ_STR(s, "[ { \"_id\" : 1 } ]");
	bson_free(s);
	{
		int rc;
		bson_t *r = tt_run_sq(db, "test", "{'explain': {'find': 'v2', 'filter': {'$text': {'$search': 'x'}}}}", &rc);
		TT_EQ_INT(tt_get_i64(r, "queryPlanner.winningPlan.textIndexVersion"), 2);
		tt_free_reply(r);
	}
	TT_EQ_INT(sq_code("{'drop': 'v2'}", NULL), 0);
}

static void
test_aggregate(void)
{
	char *s;

	TT_EQ_INT(sq_code("{'createIndexes': 'g', 'indexes': [{'key': {'$**': 'text'}, 'name': 'all_text'}]}", NULL), 0);
	TT_EQ_INT(sq_code("{'insert': 'g', 'documents': [{'_id': 1, 'r': {'body': 'a slow start but great'}},"
	    " {'_id': 2, 'r': {'body': 'slow'}}, {'_id': 3, 'r': {'body': 'fast start'}}]}", NULL), 0);
	s = sq("{'aggregate': 'g', 'pipeline': [{'$match': {'$text': {'$search': 'slow start'}}},"
	    " {'$sort': {'score': {'$meta': 'textScore'}, '_id': 1}}, {'$project': {'_id': 1}}], 'cursor': {}}");
	TT_EQ_STR(s, "[ { \"_id\" : 1 }, { \"_id\" : 2 }, { \"_id\" : 3 } ]");
	bson_free(s);
	{
		char *m = NULL;
		TT_EQ_INT(sq_code("{'aggregate': 'g', 'pipeline': [{'$limit': 5}, {'$match': {'$text': {'$search': 'slow'}}}],"
		    " 'cursor': {}}", &m), 17313);
		TT_EQ_STR(m, "$match with $text is only allowed as the first pipeline stage");
		bson_free(m);
		/* the score through later stages: $addFields, $project, a later $sort, $group */
		s = sq("{'aggregate': 'g', 'pipeline': [{'$match': {'$text': {'$search': 'slow'}}}, {'$sort': {'_id': 1}},"
		    " {'$addFields': {'s': {'$meta': 'textScore'}}}, {'$project': {'r': 0}}], 'cursor': {}}");
		/* "a slow start but great": a, but are stop words, 3 terms: 0.5 / 3 + 0.5 */
		TT_EQ_STR(s, "[ { \"_id\" : 1, \"s\" : 0.66666666666666662966 }, { \"_id\" : 2, \"s\" : 1.1000000000000000888 } ]");
		bson_free(s);
		s = sq("{'aggregate': 'g', 'pipeline': [{'$match': {'$text': {'$search': 'slow start'}}}, {'$limit': 10},"
		    " {'$sort': {'x': {'$meta': 'textScore'}}}, {'$project': {'_id': 1, 'sc': {'$meta': 'textScore'}}}], 'cursor': {}}");
		TT_EQ_STR(s, "[ { \"_id\" : 1, \"sc\" : 1.3333333333333332593 }, { \"_id\" : 2, \"sc\" : 1.1000000000000000888 }, "
		    "{ \"_id\" : 3, \"sc\" : 0.75 } ]");
		bson_free(s);
		s = sq("{'aggregate': 'g', 'pipeline': [{'$match': {'$text': {'$search': 'slow'}}},"
		    " {'$group': {'_id': null, 'best': {'$max': {'$meta': 'textScore'}}}}], 'cursor': {}}");
		TT_EQ_STR(s, "[ { \"_id\" : null, \"best\" : 1.1000000000000000888 } ]");
		bson_free(s);
		/* a stage that rebuilds documents drops the score: refused, not wrong */
		TT_EQ_INT(sq_code("{'aggregate': 'g', 'pipeline': [{'$match': {'$text': {'$search': 'slow'}}}, {'$skip': 0},"
		    " {'$addFields': {'x': 1}}, {'$project': {'r': 1}}, {'$sort': {'s': {'$meta': 'textScore'}}}], 'cursor': {}}",
		    NULL), 238);
		/* an inclusion $project pushed into the find layer keeps it (appended after projecting) */
		s = sq("{'aggregate': 'g', 'pipeline': [{'$match': {'$text': {'$search': 'slow'}}}, {'$project': {'r': 1}},"
		    " {'$sort': {'s': {'$meta': 'textScore'}}}, {'$project': {'_id': 1}}], 'cursor': {}}");
		TT_EQ_STR(s, "[ { \"_id\" : 2 }, { \"_id\" : 1 } ]");
		bson_free(s);
		s = sq("{'aggregate': 'g', 'pipeline': [{'$match': {'$text': {'$search': 'slow'}}}, {'$project': {'r': 0}},"
		    " {'$sort': {'s': {'$meta': 'textScore'}}}, {'$project': {'_id': 1}}], 'cursor': {}}");
		TT_EQ_STR(s, "[ { \"_id\" : 2 }, { \"_id\" : 1 } ]");
		bson_free(s);
		/* ... but not into written collections */
		TT_EQ_INT(sq_code("{'aggregate': 'g', 'pipeline': [{'$match': {'$text': {'$search': 'slow'}}},"
		    " {'$addFields': {'s': {'$meta': 'textScore'}}}, {'$out': 'g2'}], 'cursor': {}}", NULL), 238);
		/* no $text: 40218 */
		TT_EQ_INT(sq_code("{'aggregate': 'g', 'pipeline': [{'$sort': {'x': {'$meta': 'textScore'}}}], 'cursor': {}}", NULL),
		    40218);
	}
	TT_EQ_INT(sq_code("{'drop': 'g'}", NULL), 0);
}

int
main(void)
{
	char *dir = tt_tmpdir("text");

	if ((db = tt_open_new(dir)) == NULL)
		return 1;
	TT_RUN(test_tokenizer);
	TT_RUN(test_query_parse);
	TT_RUN(test_scores);
	TT_RUN(test_spec_fix);
	TT_RUN(test_find_text);
	TT_RUN(test_sensitivity_and_prefix);
	TT_RUN(test_long_term_keys);
	TT_RUN(test_version2);
	TT_RUN(test_aggregate);
	tt_close_rm(db, dir);
	return tt_finish();
}
