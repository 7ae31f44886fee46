/*
 * plan.c -- the find executor: access path (EXPRESS _id lookup or COLLSCAN),
 * then filter, sort, skip, limit and projection.
 *
 * The pipeline is fixed rather than a tree of stage objects because find has
 * exactly this shape; the index planner will add access paths, not stages.
 */
#include "query/plan.h"

#include <string.h>
#include <time.h>

#include "bson/value.h"
#include "common/mem.h"
#include "query/projection.h"
#include "query/sort.h"

typedef enum { ACCESS_ID, ACCESS_SCAN } access_t;

struct plan_exec {
	storage_coll_t *coll;          /* owned reference (NULL: no such collection) */
	match_t *match;                /* owned */
	sort_spec_t *sort;             /* owned; NULL = no sort (or $natural) */
	sorter_t *sorter;              /* filled on the first plan_exec_next */
	bool sorted;
	bool allow_disk_use;
	projection_t *proj;            /* owned or NULL */
	bson_t proj_out;               /* the projected current document */
	bool proj_out_init;
	int64_t skip, limit;
	int64_t skipped, produced;
	int64_t deadline_us;
	bool backward;
	bool borrowed;                 /* coll and match are not ours to free */
	access_t access;
	const bson_value_t *id;        /* ACCESS_ID: borrowed from match */
	bool id_done;
	storage_cursor_t *cur;         /* ACCESS_SCAN */
	bool scan_done;
	plan_stats_t stats;
};

static int64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static bool
spec_empty(const bson_t *b)
{
	return b == NULL || bson_empty(b);
}

/* {$natural: 1|-1} alone is a scan direction, not a sort. */
static bool
natural_sort(const bson_t *sort, bool *backward)
{
	bson_iter_t it;

	if (sort == NULL || bson_count_keys(sort) != 1 || !bson_iter_init_find(&it, sort, "$natural"))
		return false;
	*backward = bson_iter_as_int64(&it) < 0;
	return true;
}

int
plan_exec_new(const plan_request_t *req, plan_exec_t **out, terr_t *err)
{
	plan_exec_t *x = tm_alloc0(sizeof(*x));
	bool backward = req->natural_backward;

	*out = NULL;
	x->match = req->match;
	x->skip = req->skip;
	x->limit = req->limit;
	x->coll = req->coll;
	x->borrowed = req->borrow;
	x->allow_disk_use = req->allow_disk_use;
	if (!spec_empty(req->sort) && !natural_sort(req->sort, &backward)) {
		int dir;
		if (sort_spec_parse(req->sort, &x->sort, err) != 0) {
			plan_exec_free(x);
			return -1;
		}
		if (sort_spec_natural(x->sort, &dir)) {
			backward = dir < 0;
			if (sort_spec_nkeys(x->sort) == 0) {
				sort_spec_free(x->sort);
				x->sort = NULL;
			}
		}
	}
	if (!spec_empty(req->projection) &&
	    projection_compile(req->projection, x->match, req->let, &x->proj, err) != 0) {
		plan_exec_free(x);
		return -1;
	}
	x->backward = backward;
	if (x->match != NULL && !backward && match_is_id_point(x->match, &x->id)) {
		x->access = ACCESS_ID;
		x->stats.stage = "EXPRESS_IXSCAN";
	} else {
		x->access = ACCESS_SCAN;
		x->stats.stage = "COLLSCAN";
	}
	*out = x;
	return 0;
}

void
plan_exec_set_deadline(plan_exec_t *x, int64_t deadline_us)
{
	x->deadline_us = deadline_us;
}

const plan_stats_t *
plan_exec_stats(const plan_exec_t *x)
{
	return &x->stats;
}

/* The next stored document that passes the filter. */
int
plan_exec_next_record(plan_exec_t *x, storage_session_t *s, recid_t *recid, bson_t *doc,
                      terr_t *err)
{
	int rc;

	if (x->coll == NULL)
		return 0;
	if (x->access == ACCESS_ID) {
		if (x->id_done)
			return 0;
		x->id_done = true;
		x->stats.keys_examined++;
		rc = storage_doc_find_id(s, x->coll, x->id, recid, doc, err);
		if (rc < 0)
			return -1;
		if (rc == 1)
			return 0;
		x->stats.docs_examined++;
		rc = match_exec(x->match, doc, NULL, err);
		return rc;
	}
	if (x->scan_done)
		return 0;
	if (x->cur == NULL && storage_scan_open(s, x->coll, x->backward, &x->cur, err) != 0)
		return -1;
	for (;;) {
		rc = storage_cursor_next(x->cur, recid, doc, NULL, NULL, err);
		if (rc <= 0) {
			if (rc == 0) {
				x->scan_done = true;
				storage_cursor_close(x->cur);
				x->cur = NULL;
			}
			return rc;
		}
		x->stats.docs_examined++;
		if ((x->stats.docs_examined & 1023) == 0 && x->deadline_us != 0 &&
		    now_us() > x->deadline_us)
			return terr_set(err, TERR_MAX_TIME_MS_EXPIRED, "operation exceeded time limit");
		if (x->match == NULL)
			return 1;
		rc = match_exec(x->match, doc, NULL, err);
		if (rc != 0)
			return rc;
	}
}

/* Drain the filtered documents into the sorter (top skip+limit only). */
static int
fill_sorter(plan_exec_t *x, storage_session_t *s, terr_t *err)
{
	recid_t recid;
	bson_t doc;
	int rc;

	x->sorter = sorter_new(x->sort, x->limit > 0 ? x->skip + x->limit : 0, x->allow_disk_use, 0);
	while ((rc = plan_exec_next_record(x, s, &recid, &doc, err)) == 1) {
		if (sorter_add(x->sorter, &doc, err) != 0)
			return -1;
	}
	if (rc < 0)
		return -1;
	sorter_finish(x->sorter);
	x->sorted = true;
	x->stats.stage = "SORT";
	return 0;
}

int
plan_exec_next(plan_exec_t *x, storage_session_t *s, bson_t *doc, terr_t *err)
{
	recid_t recid;
	int rc;

	for (;;) {
		if (x->limit > 0 && x->produced >= x->limit)
			return 0;
		if (x->sort != NULL) {
			const bson_t *next;
			if (!x->sorted && fill_sorter(x, s, err) != 0)
				return -1;
			if ((next = sorter_next(x->sorter)) == NULL)
				return 0;
			bson_init_static(doc, bson_get_data(next), next->len);
			rc = 1;
		} else {
			rc = plan_exec_next_record(x, s, &recid, doc, err);
		}
		if (rc <= 0)
			return rc;
		if (x->skipped < x->skip) {
			x->skipped++;
			continue;
		}
		x->produced++;
		x->stats.returned++;
		if (x->proj != NULL) {
			int pos = -1;
			if (projection_needs_match_pos(x->proj) && x->match != NULL &&
			    match_exec(x->match, doc, &pos, err) < 0)
				return -1;
			if (x->proj_out_init)
				bson_reinit(&x->proj_out);
			else
				bson_init(&x->proj_out);
			x->proj_out_init = true;
			if (projection_apply(x->proj, doc, pos, &x->proj_out, err) != 0)
				return -1;
			bson_init_static(doc, bson_get_data(&x->proj_out), x->proj_out.len);
		}
		return 1;
	}
}

int
plan_exec_save(plan_exec_t *x, terr_t *err)
{
	if (x->cur != NULL)
		return storage_cursor_save(x->cur, err);
	return 0;
}

int
plan_exec_restore(plan_exec_t *x, storage_session_t *s, terr_t *err)
{
	if (x->cur != NULL)
		return storage_cursor_restore(x->cur, s, err);
	return 0;
}

void
plan_exec_free(plan_exec_t *x)
{
	if (x == NULL)
		return;
	if (x->cur != NULL)
		storage_cursor_close(x->cur);
	if (!x->borrowed)
		match_free(x->match);
	if (x->sorter != NULL)
		sorter_free(x->sorter);
	sort_spec_free(x->sort);
	projection_free(x->proj);
	if (x->proj_out_init)
		bson_destroy(&x->proj_out);
	if (x->coll != NULL && !x->borrowed)
		storage_coll_release(x->coll);
	bson_free(x);
}
