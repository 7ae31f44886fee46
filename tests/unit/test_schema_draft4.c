/*
 * test_schema_draft4.c -- the JSON Schema draft-4 test suite run through
 * $jsonSchema, as ../shared/conformance/README.md asks: each case becomes the
 * schema {properties: {x: S}} against the document {x: data}.
 *
 * Skipped, with the reason printed: files libbson cannot turn into BSON,
 * schemas mongod refuses by design (keywords it leaves out -- $ref,
 * definitions, format, default, id, type "integer" -- and the few draft-4
 * forms its parser rejects, such as an empty `required`), and cases whose
 * expected answer rests on ECMA-262 regex semantics where MongoDB documents
 * PCRE.  Everything else must pass.  The suite is read from
 * $TAMGA_SHARED/conformance/json-schema-draft4; without TAMGA_SHARED all of it
 * is skipped.  Last line: "N passed, N failed, N skipped".
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tt.h"
#include "schema/schema.h"

static int total_pass, total_fail, total_skip;

static char *
read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = bson_malloc((size_t)n + 1);
	if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fclose(f);
		bson_free(buf);
		return NULL;
	}
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* Parse errors mongod gives on purpose for draft-4 forms it does not take. */
static bool
is_deliberate_rejection(const terr_t *err)
{
	static const char *const reasons[] = {
		"is not currently supported",   /* $ref, definitions, format, default, id, integer */
		"cannot be an empty array",     /* required: [], dependencies: {a: []}, enum: [] */
		"Unknown $jsonSchema keyword: $comment", /* not in mongod's keyword list */
		NULL
	};
	for (int i = 0; reasons[i]; i++)
		if (err->msg && strstr(err->msg, reasons[i]))
			return true;
	return false;
}

/* Counters of the shadow run (below). */
static int shadow_agree, shadow_disagree, shadow_json_int;

/* Does a type value name "integer"? */
static bool
names_integer(const bson_iter_t *it)
{
	bson_iter_t a;
	if (BSON_ITER_HOLDS_UTF8(it))
		return strcmp(bson_iter_utf8(it, NULL), "integer") == 0;
	if (!BSON_ITER_HOLDS_ARRAY(it) || !bson_iter_recurse(it, &a))
		return false;
	while (bson_iter_next(&a))
		if (BSON_ITER_HOLDS_UTF8(&a) && strcmp(bson_iter_utf8(&a, NULL), "integer") == 0)
			return true;
	return false;
}

static void
append_bson_type_names(bson_t *arr, uint32_t *i, const char *json_name)
{
	char buf[16];
	const char *key;
	const char *names[2] = {json_name, NULL};

	if (strcmp(json_name, "integer") == 0) {
		names[0] = "int";
		names[1] = "long";
	} else if (strcmp(json_name, "boolean") == 0) {
		names[0] = "bool";
	}
	for (int k = 0; k < 2 && names[k]; k++) {
		size_t kl = bson_uint32_to_string((*i)++, &key, buf, sizeof buf);
		bson_append_utf8(arr, key, (int)kl, names[k], -1);
	}
}

/* Copy of a schema where every JSON `type` naming "integer" becomes the
 * nearest BSON spelling (bsonType: [int, long, ...]). */
static void
rewrite_integer(const bson_t *in, bson_t *out)
{
	bson_iter_t it;

	bson_iter_init(&it, in);
	while (bson_iter_next(&it)) {
		const char *key = bson_iter_key(&it);
		if (strcmp(key, "type") == 0 && names_integer(&it)) {
			bson_t arr;
			uint32_t i = 0;
			bson_append_array_begin(out, "bsonType", -1, &arr);
			if (BSON_ITER_HOLDS_UTF8(&it)) {
				append_bson_type_names(&arr, &i, bson_iter_utf8(&it, NULL));
			} else {
				bson_iter_t a;
				bson_iter_recurse(&it, &a);
				while (bson_iter_next(&a))
					if (BSON_ITER_HOLDS_UTF8(&a))
						append_bson_type_names(&arr, &i, bson_iter_utf8(&a, NULL));
			}
			bson_append_array_end(out, &arr);
		} else if (BSON_ITER_HOLDS_DOCUMENT(&it) || BSON_ITER_HOLDS_ARRAY(&it)) {
			uint32_t len;
			const uint8_t *data;
			bson_t sub, child;
			bool is_arr = BSON_ITER_HOLDS_ARRAY(&it);
			if (is_arr)
				bson_iter_array(&it, &len, &data);
			else
				bson_iter_document(&it, &len, &data);
			bson_init_static(&sub, data, len);
			if (is_arr)
				bson_append_array_begin(out, key, -1, &child);
			else
				bson_append_document_begin(out, key, -1, &child);
			rewrite_integer(&sub, &child);
			if (is_arr)
				bson_append_array_end(out, &child);
			else
				bson_append_document_end(out, &child);
		} else {
			bson_append_value(out, key, -1, bson_iter_value(&it));
		}
	}
}

/* Does the test data hold a double with no fractional part (an "integer"
 * to draft 4, a double to BSON)? */
static bool
has_integral_double(const bson_value_t *v)
{
	if (v->value_type == BSON_TYPE_DOUBLE)
		return v->value.v_double == (double)(int64_t)v->value.v_double;
	if (v->value_type == BSON_TYPE_DOCUMENT || v->value_type == BSON_TYPE_ARRAY) {
		bson_iter_t it;
		bson_iter_init_from_data(&it, v->value.v_doc.data, v->value.v_doc.data_len);
		while (bson_iter_next(&it))
			if (has_integral_double(bson_iter_value(&it)))
				return true;
	}
	return false;
}

/*
 * Shadow run for groups mongod refuses only because of type "integer": the
 * cases stay counted as skipped (as the conformance README demands), but the
 * validator is still exercised with `integer` spelled as bsonType [int, long].
 * A disagreement is a validator bug -- counted as a failure -- unless the
 * data holds an integral double, which draft 4 calls an integer and BSON
 * keeps a double (the documented BSON-vs-JSON difference).
 */
static void
shadow_run(const char *fname, const char *gdesc, const bson_t *wrapped, bson_iter_t tests, int *f)
{
	bson_t rw = BSON_INITIALIZER;
	schema_t *sch = NULL;
	terr_t err = TERR_INIT;
	bson_iter_t t;

	rewrite_integer(wrapped, &rw);
	if (schema_compile(&rw, &sch, &err) != 0) {
		printf("  shadow %s: %s: rewritten schema rejected too: %s\n", fname, gdesc, err.msg);
		goto done;
	}
	while (bson_iter_next(&tests)) {
		bool want = false, got;
		const char *tdesc = "?";
		bson_t doc = BSON_INITIALIZER;
		if (bson_iter_recurse(&tests, &t) && bson_iter_find(&t, "description"))
			tdesc = bson_iter_utf8(&t, NULL);
		if (bson_iter_recurse(&tests, &t) && bson_iter_find(&t, "valid"))
			want = bson_iter_as_bool(&t);
		if (bson_iter_recurse(&tests, &t) && bson_iter_find(&t, "data"))
			bson_append_value(&doc, "x", 1, bson_iter_value(&t));
		got = schema_matches(sch, &doc);
		if (got == want) {
			shadow_agree++;
		} else if (bson_iter_recurse(&tests, &t) && bson_iter_find(&t, "data") &&
			   has_integral_double(bson_iter_value(&t))) {
			shadow_json_int++;
			printf("  shadow %s: %s: %s: draft 4 calls an integral double an integer, BSON keeps it a double\n",
			       fname, gdesc, tdesc);
		} else {
			shadow_disagree++;
			(*f)++;
			printf("  FAIL (shadow, integer as bsonType [int, long]) %s: %s: %s: valid=%d, expected %d\n",
			       fname, gdesc, tdesc, got, want);
		}
		bson_destroy(&doc);
	}
done:
	schema_free(sch);
	terr_clear(&err);
	bson_destroy(&rw);
}

static bool
is_ecma_regex_file(const char *name)
{
	return strstr(name, "ecmascript-regex") != NULL;
}

static void
run_group(const char *fname, bson_iter_t *group, int *p, int *f, int *s)
{
	bson_iter_t it, tests, t;
	const char *gdesc = "?";
	bson_t wrapped = BSON_INITIALIZER, props;
	schema_t *sch = NULL;
	terr_t err = TERR_INIT;
	bool have_schema = false;

	if (bson_iter_recurse(group, &it) && bson_iter_find(&it, "description"))
		gdesc = bson_iter_utf8(&it, NULL);
	bson_append_document_begin(&wrapped, "properties", -1, &props);
	if (bson_iter_recurse(group, &it) && bson_iter_find(&it, "schema")) {
		bson_append_value(&props, "x", 1, bson_iter_value(&it));
		have_schema = BSON_ITER_HOLDS_DOCUMENT(&it);
	}
	bson_append_document_end(&wrapped, &props);

	if (!bson_iter_recurse(group, &it) || !bson_iter_find(&it, "tests") ||
	    !bson_iter_recurse(&it, &tests))
		goto done;
	if (!have_schema) {
		/* draft-4 schemas are objects; nothing else to run */
		while (bson_iter_next(&tests))
			(*s)++;
		printf("  skip %s: %s: schema is not an object\n", fname, gdesc);
		goto done;
	}
	if (schema_compile(&wrapped, &sch, &err) != 0) {
		int n = 0;
		bson_iter_t saved = tests;
		while (bson_iter_next(&tests))
			n++;
		if (is_deliberate_rejection(&err) ||
		    (err.code == 51091 && is_ecma_regex_file(fname))) {
			*s += n;
			printf("  skip %s: %s (%d cases): mongod rejects the schema: %s\n", fname, gdesc,
			       n, err.msg);
			if (strstr(err.msg, "'integer'"))
				shadow_run(fname, gdesc, &wrapped, saved, f);
		} else {
			*f += n;
			printf("  FAIL %s: %s (%d cases): unexpected compile error %d: %s\n", fname,
			       gdesc, n, err.code, err.msg);
		}
		goto done;
	}
	while (bson_iter_next(&tests)) {
		const char *tdesc = "?";
		bool want = false, got;
		bson_t doc = BSON_INITIALIZER;

		if (bson_iter_recurse(&tests, &t) && bson_iter_find(&t, "description"))
			tdesc = bson_iter_utf8(&t, NULL);
		if (bson_iter_recurse(&tests, &t) && bson_iter_find(&t, "valid"))
			want = bson_iter_as_bool(&t);
		if (bson_iter_recurse(&tests, &t) && bson_iter_find(&t, "data"))
			bson_append_value(&doc, "x", 1, bson_iter_value(&t));
		got = schema_matches(sch, &doc);
		{
			/* explain must agree with matches, and must not crash */
			bson_t d = BSON_INITIALIZER;
			if (schema_explain(sch, &doc, &d) != got) {
				printf("  FAIL %s: %s: %s: explain disagrees with matches\n", fname, gdesc, tdesc);
				(*f)++;
				bson_destroy(&d);
				bson_destroy(&doc);
				continue;
			}
			bson_destroy(&d);
		}
		if (got == want) {
			(*p)++;
		} else if (is_ecma_regex_file(fname)) {
			(*s)++;
			printf("  skip %s: %s: %s: ECMA-262 regex semantics; MongoDB documents PCRE for patterns\n",
			       fname, gdesc, tdesc);
		} else {
			(*f)++;
			printf("  FAIL %s: %s: %s: valid=%d, expected %d\n", fname, gdesc, tdesc, got, want);
		}
		bson_destroy(&doc);
	}
done:
	schema_free(sch);
	terr_clear(&err);
	bson_destroy(&wrapped);
}

static void
run_file(const char *dir, const char *rel)
{
	char *path = bson_strdup_printf("%s/%s", dir, rel);
	size_t len = 0;
	char *text = read_file(path, &len);
	int p = 0, f = 0, s = 0;
	bson_t *b = NULL;

	if (text) {
		/* the files are JSON arrays: wrap them so libbson takes them */
		char *doc = bson_strdup_printf("{\"groups\": %s}", text);
		bson_error_t e;
		b = bson_new_from_json((const uint8_t *)doc, -1, &e);
		if (b == NULL) {
			printf("  skip %s: the whole file: libbson cannot represent it as BSON: %s\n", rel,
			       e.message);
			s = 1;
		}
		bson_free(doc);
	} else {
		printf("  FAIL %s: cannot read\n", rel);
		f = 1;
	}
	if (b) {
		bson_iter_t it, g;
		if (bson_iter_init_find(&it, b, "groups") && bson_iter_recurse(&it, &g))
			while (bson_iter_next(&g))
				run_group(rel, &g, &p, &f, &s);
		bson_destroy(b);
	}
	printf("%s: %d passed, %d failed, %d skipped\n", rel, p, f, s);
	total_pass += p;
	total_fail += f;
	total_skip += s;
	bson_free(text);
	bson_free(path);
}

static int
cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* All *.json under dir (recursively), as paths relative to root. */
static void
collect(const char *root, const char *sub, char ***names, int *n, int *cap)
{
	char *dir = sub[0] ? bson_strdup_printf("%s/%s", root, sub) : bson_strdup(root);
	DIR *d = opendir(dir);
	struct dirent *de;

	if (d == NULL) {
		bson_free(dir);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		char *rel, *full;
		struct stat st;
		size_t l = strlen(de->d_name);
		if (de->d_name[0] == '.')
			continue;
		rel = sub[0] ? bson_strdup_printf("%s/%s", sub, de->d_name) : bson_strdup(de->d_name);
		full = bson_strdup_printf("%s/%s", root, rel);
		if (stat(full, &st) == 0 && S_ISDIR(st.st_mode)) {
			collect(root, rel, names, n, cap);
			bson_free(rel);
		} else if (l > 5 && strcmp(de->d_name + l - 5, ".json") == 0) {
			if (*n == *cap) {
				*cap = *cap ? *cap * 2 : 64;
				*names = bson_realloc(*names, *cap * sizeof **names);
			}
			(*names)[(*n)++] = rel;
		} else {
			bson_free(rel);
		}
		bson_free(full);
	}
	closedir(d);
	bson_free(dir);
}

int
main(void)
{
	const char *shared = getenv("TAMGA_SHARED");
	char *dir;
	char **names = NULL;
	int n = 0, cap = 0;

	if (shared == NULL || !*shared) {
		printf("TAMGA_SHARED is not set: the draft-4 suite (../shared/conformance/json-schema-draft4) "
		       "was not found, so everything is skipped\n");
		return 77; /* ctest: skipped (SKIP_RETURN_CODE), never a silent pass */
	}
	dir = bson_strdup_printf("%s/conformance/json-schema-draft4", shared);
	collect(dir, "", &names, &n, &cap);
	if (n == 0) {
		printf("no draft-4 files under %s: everything is skipped\n", dir);
		bson_free(dir);
		return 77;
	}
	qsort(names, n, sizeof *names, cmp_names);
	for (int i = 0; i < n; i++) {
		run_file(dir, names[i]);
		bson_free(names[i]);
	}
	bson_free(names);
	bson_free(dir);
	printf("shadow run of the type-\"integer\" groups (counted above as skipped): %d agree, "
	       "%d differ only by integral doubles, %d disagree (counted as failed)\n",
	       shadow_agree, shadow_json_int, shadow_disagree);
	printf("%d passed, %d failed, %d skipped\n", total_pass, total_fail, total_skip);
	(void)tt_json;
	(void)tt_cur_name;
	(void)tt_cur_failed;
	(void)tt_tmpdir;
	(void)tt_rmdir;
	(void)tt_finish;
	return total_fail ? 1 : 0;
}
