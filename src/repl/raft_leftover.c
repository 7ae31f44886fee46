/*
 * raft_leftover.c -- a removed member's Raft log tail saved as mongod's
 * rollback files before its Raft folder is emptied (raft_leftover.h).
 *
 * A member killed while its Raft log held entries its applier had not put
 * in its oplog yet, then left out by a forced reconfig (or removed) and
 * added back, starts Raft anew with an emptied folder (member_rejoin.h):
 * those entries would vanish without a trace.  mongod's member would have
 * applied them at startup recovery and then rolled them back, saving the
 * documents they wrote.  Here the Raft log is read offline (canonical/raft's
 * libuv I/O `load`, on the folder no Raft server uses any more), the oplog
 * entries past the local oplog's newest one are compared with the set's
 * (the oplog of another member of the new configuration: an entry it holds
 * with the same term is not undone, the set's log brings it again), and the
 * documents of the others are saved where the entry holds them whole: an
 * insert's document, a replacement's, the same inside an applyOps.  Updates
 * by diff and deletes carry no document: nothing to save (logged).
 */
#include "repl/raft_leftover.h"

#include <string.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#include "common/log.h"
#include "repl/member_rpc.h"
#include "repl/rollback.h"

/* Entries of the tail considered at most (the kept Raft log is bounded:
 * snapshots every 8192 entries, raft_member.c). */
#define LEFTOVER_MAX 20000
#define LEFTOVER_RPC_MS 1500
/* members asked at most (the join that triggers this waits 10 s) */
#define LEFTOVER_ASK 3

typedef struct leftover {
	repl_ts_t ts;
	int64_t t;
	bson_t *doc;        /* the oplog entry (owned) */
} leftover_t;

typedef struct leftovers {
	leftover_t *v;
	size_t n, cap;
} leftovers_t;

static void
leftovers_clear(leftovers_t *l)
{
	for (size_t i = 0; i < l->n; i++)
		bson_destroy(l->v[i].doc);
	bson_free(l->v);
	memset(l, 0, sizeof(*l));
}

/* The oplog entries of one Raft entry (one BSON document, or a
 * transaction's chain one after the other) past `after`, appended to l. */
static void
collect(const struct raft_buffer *buf, repl_ts_t after, leftovers_t *l)
{
	size_t off = 0;

	while (off + 5 <= buf->len && l->n < LEFTOVER_MAX) {
		uint32_t len;
		bson_t e;
		bson_iter_t it;

		memcpy(&len, (const uint8_t *)buf->base + off, 4);
		if (len < 5 || len > buf->len - off || !bson_init_static(&e, (const uint8_t *)buf->base + off, len))
			break;
		off += len;
		if (bson_iter_init_find(&it, &e, "ts") && BSON_ITER_HOLDS_TIMESTAMP(&it)) {
			uint32_t secs, inc;
			repl_ts_t ts;
			bson_iter_timestamp(&it, &secs, &inc);
			ts = ((repl_ts_t)secs << 32) | inc;
			if (ts > after) {
				leftover_t *x;
				if (l->n == l->cap) {
					l->cap = l->cap != 0 ? l->cap * 2 : 64;
					l->v = bson_realloc(l->v, sizeof(*l->v) * l->cap);
				}
				x = &l->v[l->n++];
				x->ts = ts;
				x->t = bson_iter_init_find(&it, &e, "t") && BSON_ITER_HOLDS_NUMBER(&it) ? bson_iter_as_int64(&it) : -1;
				x->doc = bson_copy(&e);
			}
		}
	}
}

static void
io_closed(struct raft_io *io)
{
	(void)io;
}

/* Read the Raft log of dir; the oplog entries past `after` into l.  -1
 * with err when libraft cannot read it. */
static int
read_log(const char *dir, repl_ts_t after, leftovers_t *l, terr_t *err)
{
	uv_loop_t loop;
	struct raft_uv_transport tr;
	struct raft_io io;
	raft_term term;
	raft_id vote;
	struct raft_snapshot *snap = NULL;
	raft_index start;
	struct raft_entry *entries = NULL;
	size_t n = 0;
	int rv, ret = 0;

	memset(&tr, 0, sizeof(tr));
	memset(&io, 0, sizeof(io));
	if ((rv = uv_loop_init(&loop)) != 0)
		return terr_set(err, TERR_INTERNAL_ERROR, "uv_loop_init: %s", uv_strerror(rv));
	if ((rv = raft_uv_tcp_init(&tr, &loop)) != 0) {
		uv_loop_close(&loop);
		return terr_set(err, TERR_INTERNAL_ERROR, "raft_uv_tcp_init: %s", raft_strerror(rv));
	}
	io.version = 2;
	if ((rv = raft_uv_init(&io, &loop, dir, &tr)) != 0) {
		raft_uv_tcp_close(&tr);
		uv_run(&loop, UV_RUN_DEFAULT);
		uv_loop_close(&loop);
		return terr_set(err, TERR_INTERNAL_ERROR, "raft_uv_init: %s", raft_strerror(rv));
	}
	/* the id and address are not used: nothing is sent */
	rv = io.init(&io, 1, "127.0.0.1:1");
	if (rv == 0) {
		rv = io.load(&io, &term, &vote, &snap, &start, &entries, &n);
		if (rv != 0)
			ret = terr_set(err, TERR_INTERNAL_ERROR, "cannot read the Raft log of %s: %s", dir, io.errmsg);
		io.close(&io, io_closed);
	} else {
		ret = terr_set(err, TERR_INTERNAL_ERROR, "cannot open the Raft log of %s: %s", dir, io.errmsg);
	}
	uv_run(&loop, UV_RUN_DEFAULT);
	raft_uv_close(&io);
	raft_uv_tcp_close(&tr);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	if (ret != 0)
		return ret;
	for (size_t i = 0; i < n; i++)
		if (entries[i].type == RAFT_COMMAND)
			collect(&entries[i].buf, after, l);
	/* the entries' memory: one allocation per batch (entries of a batch
	 * are contiguous), then the array */
	for (size_t i = 0; i < n; i++)
		if (entries[i].batch != NULL && (i == 0 || entries[i].batch != entries[i - 1].batch))
			raft_free(entries[i].batch);
	raft_free(entries);
	if (snap != NULL) {
		raft_configuration_close(&snap->configuration);
		for (unsigned k = 0; k < snap->n_bufs; k++)
			raft_free(snap->bufs[k].base);
		raft_free(snap->bufs);
		raft_free(snap);
	}
	return 0;
}

/* Mark (doc NULL) the entries the set's oplog holds with the same term,
 * asking the members of cfg other than self_host.  0 when one answered,
 * -1 otherwise. */
static int
drop_the_sets(leftovers_t *l, const bson_t *cfg, const char *self_host)
{
	bson_iter_t it, m, f;
	int asked = 0;

	if (!bson_iter_init_find(&it, cfg, "members") || !bson_iter_recurse(&it, &m))
		return -1;
	while (asked < LEFTOVER_ASK && bson_iter_next(&m)) {
		const char *host;
		bson_t cmd = BSON_INITIALIZER, filter, ts, in, proj, reply;
		bson_iter_t r, c, b;
		terr_t err = TERR_INIT;
		bool ok;

		if (!bson_iter_recurse(&m, &f) || !bson_iter_find(&f, "host") || !BSON_ITER_HOLDS_UTF8(&f))
			continue;
		host = bson_iter_utf8(&f, NULL);
		if (self_host != NULL && strcmp(host, self_host) == 0)
			continue;
		asked++;
		BSON_APPEND_UTF8(&cmd, "find", "oplog.rs");
		BSON_APPEND_DOCUMENT_BEGIN(&cmd, "filter", &filter);
		BSON_APPEND_DOCUMENT_BEGIN(&filter, "ts", &ts);
		BSON_APPEND_ARRAY_BEGIN(&ts, "$in", &in);
		for (size_t i = 0; i < l->n; i++) {
			char k[16];
			const char *key;
			bson_uint32_to_string((uint32_t)i, &key, k, sizeof(k));
			bson_append_timestamp(&in, key, -1, repl_ts_secs(l->v[i].ts), repl_ts_inc(l->v[i].ts));
		}
		bson_append_array_end(&ts, &in);
		bson_append_document_end(&filter, &ts);
		bson_append_document_end(&cmd, &filter);
		BSON_APPEND_DOCUMENT_BEGIN(&cmd, "projection", &proj);
		BSON_APPEND_INT32(&proj, "_id", 0);
		BSON_APPEND_INT32(&proj, "ts", 1);
		BSON_APPEND_INT32(&proj, "t", 1);
		bson_append_document_end(&cmd, &proj);
		BSON_APPEND_INT64(&cmd, "batchSize", (int64_t)l->n + 1);
		BSON_APPEND_BOOL(&cmd, "singleBatch", true);
		{
			/* a secondary answers too */
			bson_t rp;
			BSON_APPEND_DOCUMENT_BEGIN(&cmd, "$readPreference", &rp);
			BSON_APPEND_UTF8(&rp, "mode", "primaryPreferred");
			bson_append_document_end(&cmd, &rp);
		}
		ok = repl_member_rpc(host, "local", &cmd, LEFTOVER_RPC_MS, &reply, &err) == 0;
		bson_destroy(&cmd);
		terr_clear(&err);
		if (!ok)
			continue;
		ok = bson_iter_init_find(&r, &reply, "ok") && bson_iter_as_double(&r) == 1 &&
		    bson_iter_init_find(&c, &reply, "cursor") && bson_iter_recurse(&c, &c) &&
		    bson_iter_find(&c, "firstBatch") && bson_iter_recurse(&c, &b);
		while (ok && bson_iter_next(&b)) {
			bson_iter_t d, x;
			uint32_t secs = 0, inc = 0;
			int64_t t = -1;
			repl_ts_t at;
			if (!bson_iter_recurse(&b, &d))
				continue;
			x = d;
			if (bson_iter_find(&x, "ts") && BSON_ITER_HOLDS_TIMESTAMP(&x))
				bson_iter_timestamp(&x, &secs, &inc);
			x = d;
			if (bson_iter_find(&x, "t") && BSON_ITER_HOLDS_NUMBER(&x))
				t = bson_iter_as_int64(&x);
			at = ((repl_ts_t)secs << 32) | inc;
			for (size_t i = 0; i < l->n; i++)
				if (l->v[i].doc != NULL && l->v[i].ts == at && l->v[i].t == t) {
					bson_destroy(l->v[i].doc);
					l->v[i].doc = NULL;
				}
		}
		bson_destroy(&reply);
		if (ok)
			return 0;
	}
	return -1;
}

/* The document an operation holds whole (an insert's, a replacement's):
 * saved under its collection's uuid.  Returns 1 saved, 0 nothing to save,
 * -1 with err. */
static int
save_op(repl_rollback_saver_t *sv, const bson_t *op, int64_t *saved, terr_t *err)
{
	bson_iter_t it, o;
	const char *kind;
	const bson_value_t *ui;
	bson_t doc;
	const uint8_t *d;
	uint32_t len;

	if (!bson_iter_init_find(&it, op, "op") || !BSON_ITER_HOLDS_UTF8(&it))
		return 0;
	kind = bson_iter_utf8(&it, NULL);
	if (strcmp(kind, "c") == 0) {
		/* applyOps (a transaction): its operations */
		bson_iter_t a;
		if (!bson_iter_init_find(&o, op, "o") || !BSON_ITER_HOLDS_DOCUMENT(&o) || !bson_iter_recurse(&o, &a) ||
		    !bson_iter_find(&a, "applyOps") || !BSON_ITER_HOLDS_ARRAY(&a) || !bson_iter_recurse(&a, &a))
			return 0;
		while (bson_iter_next(&a)) {
			bson_t inner;
			if (!BSON_ITER_HOLDS_DOCUMENT(&a))
				continue;
			bson_iter_document(&a, &len, &d);
			if (bson_init_static(&inner, d, len) && save_op(sv, &inner, saved, err) < 0)
				return -1;
		}
		return 0;
	}
	if (strcmp(kind, "i") != 0 && strcmp(kind, "u") != 0)
		return 0;
	if (!bson_iter_init_find(&it, op, "ui") || !BSON_ITER_HOLDS_BINARY(&it))
		return 0;
	ui = bson_iter_value(&it);
	if (ui->value.v_binary.data_len != 16)
		return 0;
	if (!bson_iter_init_find(&o, op, "o") || !BSON_ITER_HOLDS_DOCUMENT(&o))
		return 0;
	bson_iter_document(&o, &len, &d);
	if (!bson_init_static(&doc, d, len))
		return 0;
	if (strcmp(kind, "u") == 0) {
		/* a replacement holds no operator field ($v: 2 diffs do) */
		bson_iter_t f;
		if (!bson_iter_init(&f, &doc))
			return 0;
		while (bson_iter_next(&f))
			if (bson_iter_key(&f)[0] == '$')
				return 0;
	}
	if (repl_rollback_saver_add(sv, ui->value.v_binary.data, &doc, err) != 0)
		return -1;
	(*saved)++;
	return 1;
}

int
repl_raft_leftover_save(const char *raft_dir, const char *dbpath, repl_ts_t oplog_last, const bson_t *cfg,
                        const char *self_host, repl_raft_leftover_stats_t *out, terr_t *err)
{
	leftovers_t l = {0};
	repl_rollback_saver_t *sv = NULL;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	if (read_log(raft_dir, oplog_last, &l, err) != 0)
		return -1;
	out->entries = (int64_t)l.n;
	if (l.n == 0)
		return 0;
	if (drop_the_sets(&l, cfg, self_host) != 0) {
		/* no member answered: the set's history is unknown here, so
		 * nothing is taken for undone (the set's log brings what it has) */
		out->unknown = true;
		leftovers_clear(&l);
		return 0;
	}
	for (size_t i = 0; ret == 0 && i < l.n; i++) {
		if (l.v[i].doc == NULL)
			continue;
		out->undone++;
		if (sv == NULL)
			sv = repl_rollback_saver_new(dbpath);
		if (save_op(sv, l.v[i].doc, &out->saved, err) < 0)
			ret = -1;
	}
	{
		terr_t fe = TERR_INIT;
		if (repl_rollback_saver_free(sv, &fe) != 0 && ret == 0) {
			terr_set(err, fe.code, "%s", fe.msg ? fe.msg : "cannot sync a rollback file");
			ret = -1;
		}
		terr_clear(&fe);
	}
	leftovers_clear(&l);
	return ret;
}
