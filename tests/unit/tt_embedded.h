/*
 * tt_embedded.h -- helpers for the unit tests that drive the embedded API
 * (tamga/tamga.h): run a command given as relaxed extended JSON, free its
 * reply, read one field of a reply by dotted path, print an array of
 * documents as JSON, open a new database in
 * a throw-away folder and remove it at the end.  Include after tt.h.
 */
#ifndef TAMGA_TESTS_TT_EMBEDDED_H
#define TAMGA_TESTS_TT_EMBEDDED_H

#include <stdbool.h>
#include <stdint.h>

#include "common/mem.h"
#include "tamga/tamga.h"

/* Run `cmd` against `dbname`; returns the reply (the caller frees it with
 * tt_free_reply) and tamga_run_command's return code in *rc. */
static inline bson_t *
tt_run_bson(tamga_t *db, const char *dbname, const bson_t *cmd, int *rc)
{
	bson_t *reply = tm_bson_array_new(1);
	tamga_error_t e;

	*rc = tamga_run_command(db, dbname, cmd, reply, &e);
	return reply;
}

/* tt_run_bson with the command given as relaxed extended JSON. */
static inline bson_t *
tt_run_json(tamga_t *db, const char *dbname, const char *json, int *rc)
{
	bson_t *cmd = tt_json(json);
	bson_t *reply = tt_run_bson(db, dbname, cmd, rc);

	bson_destroy(cmd);
	return reply;
}

static inline void
tt_free_reply(bson_t *r)
{
	bson_destroy(r);
	bson_free(r);
}

/* Find the dotted `path` in `doc`; true and *f on it when present. */
static inline bool
tt_get(const bson_t *doc, const char *path, bson_iter_t *f)
{
	bson_iter_t it;

	return bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path, f);
}

/* The value at `path` as an int64, or -999 when absent. */
static inline int64_t
tt_get_i64(const bson_t *doc, const char *path)
{
	bson_iter_t f;

	return tt_get(doc, path, &f) ? bson_iter_as_int64(&f) : -999;
}

/* The value at `path` as a double, or -999 when absent. */
static inline double
tt_get_dbl(const bson_t *doc, const char *path)
{
	bson_iter_t f;

	return tt_get(doc, path, &f) ? bson_iter_as_double(&f) : -999;
}

/* The string at `path` (borrowed from `doc`), or "" when absent or not a
 * string. */
static inline const char *
tt_get_str(const bson_t *doc, const char *path)
{
	bson_iter_t f;

	return tt_get(doc, path, &f) && BSON_ITER_HOLDS_UTF8(&f) ? bson_iter_utf8(&f, NULL) : "";
}

/* An array of documents as relaxed JSON, "[ {...}, {...} ]" or "[ ]"; the
 * caller bson_free()s it. */
static inline char *
tt_array_json(const bson_t *arr)
{
	bson_string_t *s = bson_string_new("[ ");
	bson_iter_t it;
	bool first = true;

	bson_iter_init(&it, arr);
	while (bson_iter_next(&it)) {
		const uint8_t *d;
		uint32_t l;
		bson_t doc;
		char *j;
		bson_iter_document(&it, &l, &d);
		bson_init_static(&doc, d, l);
		j = bson_as_relaxed_extended_json(&doc, NULL);
		bson_string_append_printf(s, "%s%s", first ? "" : ", ", j);
		bson_free(j);
		first = false;
	}
	bson_string_append(s, first ? "]" : " ]");
	return bson_string_free(s, false);
}

/* A cursor reply as text: "error <code>: <errmsg>" when rc is not 0, else
 * its firstBatch as tt_array_json, else `none`.  The caller bson_free()s it. */
static inline char *
tt_batch_text(const bson_t *reply, int rc, const char *none)
{
	bson_iter_t f;

	if (rc != 0)
		return bson_strdup_printf("error %d: %s", (int)tt_get_i64(reply, "code"), tt_get_str(reply, "errmsg"));
	if (tt_get(reply, "cursor.firstBatch", &f) && BSON_ITER_HOLDS_ARRAY(&f)) {
		const uint8_t *d;
		uint32_t l;
		bson_t arr;
		bson_iter_array(&f, &l, &d);
		bson_init_static(&arr, d, l);
		return tt_array_json(&arr);
	}
	return bson_strdup(none);
}

/* Two commands that must answer alike (a time-series collection and a plain
 * one holding the same measurements): their texts as batch() gives them
 * (the caller's runner; it returns a string the caller bson_free()s) must
 * be identical, else the test fails naming what.  Takes q_a and q_b
 * (bson_free()d here); returns the length of the answer's text. */
static inline size_t
tt_same_batches(char *(*batch)(const char *json), char *q_a, char *q_b, const char *what)
{
	char *a = batch(q_a), *b = batch(q_b);
	size_t len = strlen(a);

	if (strcmp(a, b) != 0)
		TT_FAIL_("%s differs:\n first:  %.400s\n second: %.400s", what, a, b);
	bson_free(a);
	bson_free(b);
	bson_free(q_a);
	bson_free(q_b);
	return len;
}

/* tt_run_json with the command written in single quotes ({'find': 'c'}),
 * easier to read inside C strings. */
static inline bson_t *
tt_run_sq(tamga_t *db, const char *dbname, const char *cmd, int *rc)
{
	char *json = bson_strdup(cmd);
	bson_t *r;

	for (char *p = json; *p != '\0'; p++)
		if (*p == '\'')
			*p = '"';
	r = tt_run_json(db, dbname, json, rc);
	bson_free(json);
	return r;
}

/* The firstBatch of cmd (single-quoted JSON) as tt_batch_text gives it
 * ("ok" for a reply without one).  The caller bson_free()s it. */
static inline char *
tt_batch_sq(tamga_t *db, const char *dbname, const char *cmd)
{
	int rc;
	bson_t *r = tt_run_sq(db, dbname, cmd, &rc);
	char *out = tt_batch_text(r, rc, "ok");

	tt_free_reply(r);
	return out;
}

/* A new database in the folder dir (tamga_open with "create"); prints the
 * error and returns NULL when it cannot be opened. */
static inline tamga_t *
tt_open_new(const char *dir)
{
	tamga_t *db = NULL;
	tamga_error_t e;

	if (tamga_open(dir, "create", &db, &e) != 0) {
		fprintf(stderr, "tamga_open: %d %s\n", e.code, e.message);
		return NULL;
	}
	return db;
}

/* tamga_open(dir, options) (options should name replSet=...) and, unless
 * the folder's set is initiated already, replSetInitiate with the default
 * one-member config; prints the error and returns NULL on failure. */
static inline tamga_t *
tt_open_replset(const char *dir, const char *options)
{
	tamga_t *db = NULL;
	tamga_error_t e;
	bson_t *r;
	int rc;

	if (tamga_open(dir, options, &db, &e) != 0) {
		fprintf(stderr, "tamga_open: %d %s\n", e.code, e.message);
		return NULL;
	}
	r = tt_run_json(db, "admin", "{\"replSetInitiate\": {}}", &rc);
	if (rc != 0 && tt_get_i64(r, "code") != 23 /* AlreadyInitialized */) {
		char *j = bson_as_relaxed_extended_json(r, NULL);
		fprintf(stderr, "replSetInitiate: %s\n", j);
		bson_free(j);
		tt_free_reply(r);
		tamga_close(db);
		return NULL;
	}
	tt_free_reply(r);
	return db;
}

/* The end of a test run: closes db, removes its folder dir and frees the
 * name (from tt_tmpdir). */
static inline void
tt_close_rm(tamga_t *db, char *dir)
{
	tamga_close(db);
	tt_rmdir(dir);
	bson_free(dir);
}

#endif
