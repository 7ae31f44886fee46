/*
 * tt.h -- the tiny unit-test harness every tests/unit/test_*.c uses.
 *
 *   static void test_compare_numbers(void) { TT_ASSERT(x == y); TT_EQ_INT(a, b); }
 *   int main(void) { TT_RUN(test_compare_numbers); return tt_finish(); }
 *
 * Each TT_RUN is one test: it passes when no assertion inside failed.  The
 * run ends with the plain line "N passed, N failed" and exits non-zero when
 * anything failed.  Helpers to open a throw-away data folder are here too.
 */
#ifndef TAMGA_TESTS_TT_H
#define TAMGA_TESTS_TT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bson/bson.h>

static int tt_passed, tt_failed, tt_cur_failed;
static const char *tt_cur_name;

#define TT_FAIL_(fmt, ...) do { \
	fprintf(stderr, "FAIL %s (%s:%d): " fmt "\n", tt_cur_name, __FILE__, __LINE__, __VA_ARGS__); \
	tt_cur_failed++; } while (0)
#define TT_ASSERT(c) do { if (!(c)) TT_FAIL_("%s", #c); } while (0)
#define TT_EQ_INT(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); \
	if (a_ != b_) TT_FAIL_("%s == %s: %lld != %lld", #a, #b, a_, b_); } while (0)
#define TT_EQ_STR(a, b) do { const char *a_ = (a), *b_ = (b); \
	if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0) \
		TT_FAIL_("%s == %s: \"%s\" != \"%s\"", #a, #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); } while (0)
/* Compare a document to canonical extended JSON text (relaxed). */
#define TT_EQ_JSON(doc, json) do { char *j_ = bson_as_relaxed_extended_json((doc), NULL); \
	if (j_ == NULL || strcmp(j_, (json)) != 0) TT_FAIL_("%s:\n  got  %s\n  want %s", #doc, j_ ? j_ : "(null)", (json)); \
	bson_free(j_); } while (0)

#define TT_RUN(fn) do { tt_cur_name = #fn; tt_cur_failed = 0; fn(); \
	if (tt_cur_failed) { tt_failed++; fprintf(stderr, "not ok - %s\n", #fn); } \
	else { tt_passed++; fprintf(stderr, "ok - %s\n", #fn); } } while (0)

static inline int
tt_finish(void)
{
	printf("%d passed, %d failed\n", tt_passed, tt_failed);
	return tt_failed ? 1 : 0;
}

/* Parse relaxed/canonical extended JSON into a new bson_t (aborts on error:
 * test inputs are ours). Caller bson_destroy()s. */
static inline bson_t *
tt_json(const char *json)
{
	bson_error_t e;
	bson_t *b = bson_new_from_json((const uint8_t *)json, -1, &e);
	if (b == NULL) {
		fprintf(stderr, "bad test JSON: %s: %s\n", e.message, json);
		abort();
	}
	return b;
}

/* A fresh empty directory under $TMPDIR (or /tmp); caller frees the string. */
static inline char *
tt_tmpdir(const char *tag)
{
	const char *base = getenv("TMPDIR");
	char *p = bson_strdup_printf("%s/tamga-%s-XXXXXX", base && *base ? base : "/tmp", tag);
	if (mkdtemp(p) == NULL) {
		perror("mkdtemp");
		abort();
	}
	return p;
}

static inline void
tt_rmdir(const char *path)
{
	char *cmd = bson_strdup_printf("rm -rf '%s'", path);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", path);
	bson_free(cmd);
}

#endif
