/*
 * test_bson_slots.c -- bslots_reorder (bson/slots.h) over a toy path tree:
 * a removed field set again takes its old slot, at the top, inside
 * documents and inside array elements; a slot an earlier stage filled is
 * found in place; fields a stage appended stay after ref's, in out's order.
 */
#include "tt.h"

#include <string.h>

#include "bson/slots.h"

/* A toy tree: each node a name, a kind -- 'x' a removed leaf (a slot), 'l'
 * a set leaf, 's' paths below (its kids) -- and its kids. */
typedef struct tnode {
	const char *name;
	char kind;
	const struct tnode *kids;
	int n;
} tnode_t;

static const void *
t_child(const void *node, const char *name, uint32_t len)
{
	const tnode_t *t = node;

	for (int i = 0; i < t->n; i++)
		if (strlen(t->kids[i].name) == len && memcmp(t->kids[i].name, name, len) == 0)
			return &t->kids[i];
	return NULL;
}

static bool
t_has_kids(const void *node)
{
	return ((const tnode_t *)node)->kind == 's';
}

static bool
t_is_slot(const void *ctx, const void *node)
{
	(void)ctx;
	return ((const tnode_t *)node)->kind == 'x';
}

static const bslots_nodes_t tnodes = {t_child, t_has_kids, t_is_slot};

static char *
reorder(const char *out_json, const char *ref_json, const tnode_t *excl, const tnode_t *set)
{
	bson_t *out = tt_json(out_json), *ref = tt_json(ref_json), res = BSON_INITIALIZER;
	char *s;

	bslots_reorder(out, ref, excl, set, &tnodes, NULL, &res);
	s = bson_as_relaxed_extended_json(&res, NULL);
	bson_destroy(&res);
	bson_destroy(out);
	bson_destroy(ref);
	return s;
}

#define REORDER_EQ(out, ref, excl, set, want) do { char *got_ = reorder((out), (ref), (excl), (set)); \
	TT_EQ_STR(got_, (want)); bson_free(got_); } while (0)

static void
test_reorder(void)
{
	static const tnode_t bx[] = {{"x", 'x', NULL, 0}};
	static const tnode_t top[] = {{"a", 'x', NULL, 0}, {"c", 'x', NULL, 0}, {"b", 's', bx, 1}};
	static const tnode_t excl = {"", 's', top, 3};
	static const tnode_t setkids[] = {{"a", 'l', NULL, 0}, {"c", 'l', NULL, 0}, {"b", 's', bx, 1}};
	static const tnode_t set = {"", 's', setkids, 3};

	/* a and c removed and set again (appended by the stage): their slots */
	REORDER_EQ("{\"_id\": 1, \"b\": 2, \"d\": 4, \"c\": 30, \"a\": 10}",
	           "{\"_id\": 1, \"a\": 1, \"b\": 2, \"c\": 3, \"d\": 4}", &excl, &set,
	           "{ \"_id\" : 1, \"a\" : 10, \"b\" : 2, \"c\" : 30, \"d\" : 4 }");
	/* a already in its slot (an earlier stage filled it), c appended */
	REORDER_EQ("{\"_id\": 1, \"a\": 10, \"b\": 2, \"d\": 4, \"c\": 30}",
	           "{\"_id\": 1, \"a\": 1, \"b\": 2, \"c\": 3, \"d\": 4}", &excl, &set,
	           "{ \"_id\" : 1, \"a\" : 10, \"b\" : 2, \"c\" : 30, \"d\" : 4 }");
	/* a field the input lacked has no slot: it stays appended; a new one too */
	REORDER_EQ("{\"_id\": 1, \"b\": 2, \"a\": 10, \"n\": 5}", "{\"_id\": 1, \"b\": 2}", &excl, &set,
	           "{ \"_id\" : 1, \"b\" : 2, \"a\" : 10, \"n\" : 5 }");
	/* inside a document, and inside each element of an array of them */
	REORDER_EQ("{\"b\": {\"y\": 2, \"x\": 9}}", "{\"b\": {\"x\": 1, \"y\": 2}}", &excl, &set,
	           "{ \"b\" : { \"x\" : 9, \"y\" : 2 } }");
	REORDER_EQ("{\"b\": [{\"y\": 2, \"x\": 9}, {\"x\": 9}, 5]}", "{\"b\": [{\"x\": 1, \"y\": 2}, {}, 5]}", &excl, &set,
	           "{ \"b\" : [ { \"x\" : 9, \"y\" : 2 }, { \"x\" : 9 }, 5 ] }");
	/* a kept field a stage dropped ($$REMOVE) is skipped */
	REORDER_EQ("{\"_id\": 1, \"d\": 4, \"a\": 10}", "{\"_id\": 1, \"a\": 1, \"b\": 2, \"d\": 4}", &excl, &set,
	           "{ \"_id\" : 1, \"a\" : 10, \"d\" : 4 }");
	/* no exclusion tree: out as it is */
	REORDER_EQ("{\"_id\": 1, \"b\": 2, \"a\": 10}", "{\"_id\": 1, \"a\": 1, \"b\": 2}", NULL, &set,
	           "{ \"_id\" : 1, \"b\" : 2, \"a\" : 10 }");
}

int
main(void)
{
	TT_RUN(test_reorder);
	return tt_finish();
}
