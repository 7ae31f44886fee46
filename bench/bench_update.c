/*
 * bench_update.c -- $inc on one field of a 1 KB document by _id (issue 5),
 * N times (N = $BENCH_N, default 1M) over 10 000 documents, random keys:
 *
 *   inc_by_id   Tamga: {update: "docs", updates: [{q: {_id: k},
 *               u: {$inc: {views: 1}}}]} through the embedded API, one
 *               command (one transaction) per update.
 *               Floor: raw WiredTiger read-modify-write of the same bytes in
 *               one transaction: search, copy the value, overwrite the int32
 *               in place with libbson's iterator, update, commit.
 *
 * The updates run in ten chunks alternating between the two sides (each
 * side's time summed), so load from elsewhere on the machine lands on both.
 * Both end with every document's views summed and checked against the
 * number of updates, so neither side can skip work.
 */
#include <wiredtiger.h>

#include "bench_common.h"

#define DB "bench"
#define DOCS 10000

/* {_id, title, author: {name, country}, views: int32, tags, body ~800 B,
 *  updatedAt}: about 1 KB, views in the middle as a real document has it. */
static void
make_kb_doc(bson_t *d, int64_t i)
{
	char buf[900];
	bson_t sub;
	int k;

	bson_init(d);
	BSON_APPEND_INT64(d, "_id", i);
	snprintf(buf, sizeof(buf), "book title %08lld", (long long)i);
	BSON_APPEND_UTF8(d, "title", buf);
	bson_append_document_begin(d, "author", -1, &sub);
	BSON_APPEND_UTF8(&sub, "name", "Frank Herbert");
	BSON_APPEND_UTF8(&sub, "country", "US");
	bson_append_document_end(d, &sub);
	BSON_APPEND_INT32(d, "views", 0);
	bson_append_array_begin(d, "tags", -1, &sub);
	BSON_APPEND_UTF8(&sub, "0", "scifi");
	BSON_APPEND_UTF8(&sub, "1", "classic");
	bson_append_array_end(d, &sub);
	for (k = 0; k < 820; k++)
		buf[k] = (char)('a' + (i + k) % 26);
	buf[k] = '\0';
	BSON_APPEND_UTF8(d, "body", buf);
	BSON_APPEND_DATE_TIME(d, "updatedAt", BENCH_AT0 + i);
}

#define CHUNKS 10

static tamga_t *
tamga_load(const char *dir)
{
	tamga_t *t;
	tamga_error_t e;
	bson_t cmd, docs, d;
	int64_t i, j;
	char key[16];

	if (tamga_open(dir, "create,cache_size=1G", &t, &e) != 0)
		die("tamga_open", e.message);
	for (i = 0; i < DOCS; i += 1000) {
		bson_init(&cmd);
		BSON_APPEND_UTF8(&cmd, "insert", "docs");
		bson_append_array_begin(&cmd, "documents", -1, &docs);
		for (j = 0; j < 1000; j++) {
			snprintf(key, sizeof(key), "%d", (int)j);
			make_kb_doc(&d, i + j);
			bson_append_document(&docs, key, -1, &d);
			bson_destroy(&d);
		}
		bson_append_array_end(&cmd, &docs);
		twrite(t, DB, &cmd, 1000, NULL, 0);
		bson_destroy(&cmd);
	}
	return t;
}

/* ops updates; returns the seconds they took */
static double
tamga_incs(tamga_t *t, rng_t *rg, int64_t ops)
{
	bson_t cmd, ups, up, q, u, inc, reply;
	bson_iter_t it;
	double t0 = now();
	int64_t i;

	for (i = 0; i < ops; i++) {
		bson_init(&cmd);
		BSON_APPEND_UTF8(&cmd, "update", "docs");
		bson_append_array_begin(&cmd, "updates", -1, &ups);
		bson_append_document_begin(&ups, "0", 1, &up);
		bson_append_document_begin(&up, "q", 1, &q);
		BSON_APPEND_INT64(&q, "_id", rnd(rg, DOCS));
		bson_append_document_end(&up, &q);
		bson_append_document_begin(&up, "u", 1, &u);
		bson_append_document_begin(&u, "$inc", 4, &inc);
		BSON_APPEND_INT32(&inc, "views", 1);
		bson_append_document_end(&u, &inc);
		bson_append_document_end(&up, &u);
		bson_append_document_end(&ups, &up);
		bson_append_array_end(&cmd, &ups);
		tcmd(t, DB, &cmd, &reply);
		if (!bson_iter_init_find(&it, &reply, "nModified") || bson_iter_as_int64(&it) != 1)
			die("tamga $inc", "nModified is not 1");
		bson_destroy(&reply);
		bson_destroy(&cmd);
	}
	return now() - t0;
}

static int64_t
tamga_views(tamga_t *t)
{
	bson_t *c = BCON_NEW("find", "docs", "batchSize", BCON_INT32(DOCS + 1));
	bson_t reply;
	bson_iter_t it, f;
	int64_t sum = 0;

	tcmd(t, DB, c, &reply);
	bson_destroy(c);
	if (bson_iter_init(&it, &reply) && bson_iter_find_descendant(&it, "cursor.firstBatch", &f) &&
	    bson_iter_recurse(&f, &it))
		while (bson_iter_next(&it)) {
			bson_iter_t doc;
			if (bson_iter_recurse(&it, &doc) && bson_iter_find(&doc, "views") &&
			    BSON_ITER_HOLDS_NUMBER(&doc))
				sum += bson_iter_as_int64(&doc);
		}
	bson_destroy(&reply);
	return sum;
}

static void
wt_check(int rc, const char *what)
{
	if (rc != 0)
		die(what, wiredtiger_strerror(rc));
}

typedef struct wt {
	WT_CONNECTION *conn;
	WT_SESSION *s;
	WT_CURSOR *c;
	uint8_t *buf;
	size_t cap;
} wt_t;

static void
wt_load(const char *dir, wt_t *w)
{
	WT_SESSION *s;
	WT_CURSOR *c;
	WT_ITEM item;
	bson_t d;
	int64_t i;

	mkdir(dir, 0755);
	wt_check(wiredtiger_open(dir, NULL, BENCH_WT_CONFIG("1G"), &w->conn), "wt open");
	wt_check(w->conn->open_session(w->conn, NULL, "isolation=snapshot", &w->s), "session");
	s = w->s;
	wt_check(s->create(s, "table:docs", BENCH_WT_TABLE), "create");
	wt_check(s->open_cursor(s, "table:docs", NULL, NULL, &w->c), "cursor");
	c = w->c;
	wt_check(s->begin_transaction(s, NULL), "begin");
	for (i = 0; i < DOCS; i++) {
		make_kb_doc(&d, i);
		c->set_key(c, i);
		item.data = bson_get_data(&d);
		item.size = d.len;
		c->set_value(c, &item);
		wt_check(c->insert(c), "insert");
		bson_destroy(&d);
	}
	wt_check(s->commit_transaction(s, NULL), "commit");
}

/* ops read-modify-writes; returns the seconds they took */
static double
wt_incs(wt_t *w, rng_t *rg, int64_t ops)
{
	WT_SESSION *s = w->s;
	WT_CURSOR *c = w->c;
	WT_ITEM item;
	bson_t v;
	bson_iter_t it;
	double t0 = now();
	int64_t i;

	for (i = 0; i < ops; i++) {
		wt_check(s->begin_transaction(s, NULL), "begin");
		c->set_key(c, rnd(rg, DOCS));
		wt_check(c->search(c), "search");
		wt_check(c->get_value(c, &item), "value");
		if (item.size > w->cap) {
			w->cap = item.size * 2;
			w->buf = realloc(w->buf, w->cap);
		}
		memcpy(w->buf, item.data, item.size);
		if (!bson_init_static(&v, w->buf, item.size) || !bson_iter_init_find(&it, &v, "views") ||
		    !BSON_ITER_HOLDS_INT32(&it))
			die("wt rmw", "no views field");
		bson_iter_overwrite_int32(&it, bson_iter_int32(&it) + 1);
		item.data = w->buf;
		c->set_value(c, &item);
		wt_check(c->update(c), "update");
		wt_check(s->commit_transaction(s, NULL), "commit");
	}
	return now() - t0;
}

static int64_t
wt_views(wt_t *w)
{
	WT_CURSOR *c = w->c;
	WT_ITEM item;
	bson_t v;
	bson_iter_t it;
	int64_t sum = 0;

	c->reset(c);
	while (c->next(c) == 0) {
		wt_check(c->get_value(c, &item), "value");
		if (bson_init_static(&v, item.data, item.size) && bson_iter_init_find(&it, &v, "views"))
			sum += bson_iter_int32(&it);
	}
	c->reset(c);
	return sum;
}

int
main(int argc, char **argv)
{
	char path[4096];
	tamga_t *t;
	wt_t w = {0};
	rng_t rt, rw;
	double tt = 0, tw = 0;
	int64_t done = 0, chunk;
	int k;

	if (argc < 2)
		die("usage", "bench_update WORKDIR");
	bench_read_n("bench_update");
	snprintf(path, sizeof(path), "%s/tamga-update", argv[1]);
	t = tamga_load(path);
	snprintf(path, sizeof(path), "%s/wt-update", argv[1]);
	wt_load(path, &w);
	rnd_reset(&rt, 0);
	rnd_reset(&rw, 0);
	for (k = 0; k < CHUNKS; k++) {
		chunk = (N - done) / (CHUNKS - k);
		if (k % 2 == 0) {
			tt += tamga_incs(t, &rt, chunk);
			tw += wt_incs(&w, &rw, chunk);
		} else {
			tw += wt_incs(&w, &rw, chunk);
			tt += tamga_incs(t, &rt, chunk);
		}
		done += chunk;
	}
	if (tamga_views(t) != N)
		die("tamga $inc", "views do not add up to the number of updates");
	if (wt_views(&w) != N)
		die("wt rmw", "views do not add up to the number of updates");
	report("inc_by_id", (double)N / tt, "wiredtiger", (double)N / tw);
	tamga_close(t);
	free(w.buf);
	w.c->close(w.c);
	w.conn->close(w.conn, NULL);
	return 0;
}
