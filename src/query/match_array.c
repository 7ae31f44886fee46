/*
 * match_array.c -- $elemMatch: the document form ({a: {$elemMatch: {b: 1,
 * c: 2}}}: one element, as a document, matches the whole sub-filter) and the
 * value form ({a: {$elemMatch: {$gt: 1, $lt: 5}}}: one element satisfies
 * every operator).  Array elements that are arrays count as documents with
 * keys "0", "1", ... in the document form, as in mongod.  The matching
 * element's position is what the positional $ operator reports.
 *
 * Not here: $all and $size (they are parsed in match.c / evaluated in
 * match_compare.c).
 */
#include "query/match_private.h"

bool
match_elem_obj_array(const mnode_t *n, const bson_value_t *arr, int *pos, mctx_t *c)
{
	bson_iter_t it;
	int k = 0;

	if (!bson_iter_init_from_data(&it, arr->value.v_doc.data, arr->value.v_doc.data_len))
		return false;
	while (bson_iter_next(&it)) {
		const bson_value_t *e = bson_iter_value(&it);

		if ((e->value_type == BSON_TYPE_DOCUMENT || e->value_type == BSON_TYPE_ARRAY) &&
		    match_node_eval(n->kids[0], e->value.v_doc.data, e->value.v_doc.data_len, NULL,
		                    c)) {
			if (pos != NULL)
				*pos = k;
			return true;
		}
		k++;
	}
	return false;
}

bool
match_elem_val_array(const mnode_t *n, const bson_value_t *arr, int *pos)
{
	bson_iter_t it;
	int k = 0;

	if (!bson_iter_init_from_data(&it, arr->value.v_doc.data, arr->value.v_doc.data_len))
		return false;
	while (bson_iter_next(&it)) {
		const bson_value_t *e = bson_iter_value(&it);
		uint32_t i;

		for (i = 0; i < n->nkids; i++)
			if (!match_node_eval_value(n->kids[i], e))
				break;
		if (i == n->nkids) {
			if (pos != NULL)
				*pos = k;
			return true;
		}
		k++;
	}
	return false;
}

bool
match_elem_value(const mnode_t *n, const bson_value_t *v)
{
	mctx_t c = {0};

	if (v->value_type != BSON_TYPE_ARRAY)
		return false;
	if (n->kind == MK_ELEM_OBJ)
		return match_elem_obj_array(n, v, NULL, &c);
	return match_elem_val_array(n, v, NULL);
}
