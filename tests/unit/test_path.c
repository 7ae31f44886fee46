/*
 * test_path.c -- bpath_get (exact) and bpath_walk (query semantics with
 * implicit array traversal, MongoDB's ElementIterator).
 */
#include "tt.h"
#include "bson/path.h"

typedef struct {
	char buf[1024];
} collect_t;

static bool
collect(const bpath_hit_t *h, void *ctx)
{
	collect_t *c = ctx;
	char *s;
	size_t n = strlen(c->buf);

	if (h->value.value_type == BSON_TYPE_EOD) {
		s = bson_strdup("missing");
	} else {
		bson_t tmp = BSON_INITIALIZER;
		char *j;

		bson_append_value(&tmp, "v", 1, &h->value);
		j = bson_as_relaxed_extended_json(&tmp, NULL);
		/* strip '{ "v" : ' and ' }' */
		s = bson_strndup(j + 8, strlen(j) - 10);
		bson_free(j);
		bson_destroy(&tmp);
	}
	snprintf(c->buf + n, sizeof c->buf - n, "%s%s@%d", n ? "|" : "", s, h->array_pos);
	bson_free(s);
	return true;
}

static const char *
walk(const char *json, const char *path, bool expand)
{
	static collect_t c;
	bson_t *d = tt_json(json);

	c.buf[0] = '\0';
	bpath_walk(d, path, expand, collect, &c);
	bson_destroy(d);
	return c.buf;
}

static void
test_index_parse(void)
{
	uint32_t i;

	TT_ASSERT(bpath_is_array_index("0", 1, &i) && i == 0);
	TT_ASSERT(bpath_is_array_index("12", 2, &i) && i == 12);
	TT_ASSERT(!bpath_is_array_index("01", 2, &i));
	TT_ASSERT(!bpath_is_array_index("", 0, &i));
	TT_ASSERT(!bpath_is_array_index("1a", 2, &i));
	TT_ASSERT(!bpath_is_array_index("99999999999", 11, &i));
}

static void
test_get_exact(void)
{
	bson_t *d = tt_json("{\"a\": {\"b\": [10, {\"c\": 5}]}, \"x\": 1}");
	bson_iter_t it;
	bson_value_t v, root;

	TT_ASSERT(bpath_get(d, "x", &it) && bson_iter_int32(&it) == 1);
	TT_ASSERT(bpath_get(d, "a.b.0", &it) && bson_iter_int32(&it) == 10);
	TT_ASSERT(bpath_get(d, "a.b.1.c", &it) && bson_iter_int32(&it) == 5);
	TT_ASSERT(!bpath_get(d, "a.b.c", &it));
	TT_ASSERT(!bpath_get(d, "a.b.2", &it));
	TT_ASSERT(!bpath_get(d, "y", &it));
	TT_ASSERT(!bpath_get(d, "x.y", &it));
	root.value_type = BSON_TYPE_DOCUMENT;
	root.value.v_doc.data = (uint8_t *)bson_get_data(d);
	root.value.v_doc.data_len = d->len;
	TT_ASSERT(bpath_get_value(&root, "a.b.1.c", &v) && v.value.v_int32 == 5);
	TT_ASSERT(!bpath_get_value(&root, "a.q", &v));
	bson_destroy(d);
}

static void
test_walk_basic(void)
{
	TT_EQ_STR(walk("{\"a\": 1}", "a", true), "1@-1");
	TT_EQ_STR(walk("{\"a\": 1}", "b", true), "missing@-1");
	TT_EQ_STR(walk("{\"a\": {\"b\": 2}}", "a.b", true), "2@-1");
	TT_EQ_STR(walk("{\"a\": 5}", "a.b", true), "missing@-1");
	TT_EQ_STR(walk("{\"a\": [1, 2]}", "a", true), "1@0|2@1|[ 1, 2 ]@-1");
	TT_EQ_STR(walk("{\"a\": [1, 2]}", "a", false), "[ 1, 2 ]@-1");
	TT_EQ_STR(walk("{\"a\": []}", "a", true), "[  ]@-1");
	TT_EQ_STR(walk("{\"a\": [[1, 2]]}", "a", true), "[ 1, 2 ]@0|[ [ 1, 2 ] ]@-1");
}

static void
test_walk_arrays(void)
{
	/* null2.js: elements that are documents without the field are missing,
	 * scalars yield nothing, empty arrays yield nothing */
	TT_EQ_STR(walk("{\"a\": [{\"b\": 5}]}", "a.b", true), "5@0");
	TT_EQ_STR(walk("{\"a\": [{}]}", "a.b", true), "missing@0");
	TT_EQ_STR(walk("{\"a\": []}", "a.b", true), "");
	TT_EQ_STR(walk("{\"a\": [5, {\"b\": 5}]}", "a.b", true), "5@1");
	TT_EQ_STR(walk("{\"a\": [{\"b\": [1, 2]}]}", "a.b", true), "1@0|2@0|[ 1, 2 ]@0");
	/* nested arrays are not traversed by field names */
	TT_EQ_STR(walk("{\"a\": [[{\"b\": 1}]]}", "a.b", true), "");
	/* numeric components: position and field name */
	TT_EQ_STR(walk("{\"a\": [7, 8]}", "a.1", true), "8@-1");
	TT_EQ_STR(walk("{\"a\": [{\"0\": 5}, 7]}", "a.0", true), "5@0|{ \"0\" : 5 }@-1");
	TT_EQ_STR(walk("{\"a\": [{\"b\": 1}, {\"b\": 2}]}", "a.1.b", true), "missing@0|missing@1|2@-1");
	TT_EQ_STR(walk("{\"a\": [[{\"b\": 1}]]}", "a.0.b", true), "1@0");
	TT_EQ_STR(walk("{\"a\": [[1, 2]]}", "a.0", true), "[ 1, 2 ]@-1");
	TT_EQ_STR(walk("{\"a\": [1]}", "a.5", true), "");
	/* outermost array position wins */
	TT_EQ_STR(walk("{\"a\": [{\"b\": 0}, {\"b\": [{\"c\": 1}, {\"c\": 2}]}]}", "a.b.c", true),
	          "missing@0|1@1|2@1");
}

static bool
stop_first(const bpath_hit_t *h, void *ctx)
{
	(*(int *)ctx)++;
	return false;
}

static void
test_walk_stop(void)
{
	bson_t *d = tt_json("{\"a\": [1, 2, 3]}");
	int n = 0;

	TT_ASSERT(!bpath_walk(d, "a", true, stop_first, &n));
	TT_EQ_INT(n, 1);
	bson_destroy(d);
}

int
main(void)
{
	TT_RUN(test_index_parse);
	TT_RUN(test_get_exact);
	TT_RUN(test_walk_basic);
	TT_RUN(test_walk_arrays);
	TT_RUN(test_walk_stop);
	return tt_finish();
}
