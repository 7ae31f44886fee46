/*
 * repl_floor.c -- issue 16's floor: what WiredTiger alone costs for the
 * storage work of one write on a standalone and on a single-node replica
 * set, with no Tamga code around it, so docs/benchmarks.md can say how close
 * to its target a replica-set tamgad can get on this WiredTiger (3.2.1).
 *
 *   repl_floor DIR CASE [N]      (N default 20000, DIR an empty folder)
 *
 * The connection is opened as tamgad opens it (log enabled, no sync at
 * commit: the journal is flushed in the background as tamgad's default
 * acknowledgement without j: true) and the tables are created with
 * tamgad's configurations (record tables key_format=q,value_format=u, the
 * unique _id index key_format=u,value_format=qu).  Each operation is one
 * WiredTiger transaction:
 *   sa          a standalone insert: the document's row and its _id index
 *               entry
 *   rs          a replica-set retryable insert: the same, the commit
 *               timestamp (timestamp_transaction), the oplog entry (a
 *               record at RecordId = ts, mongod's entry bytes) and the
 *               session's config.transactions row overwritten in place
 *   rs_nots     rs without the commit timestamp (what the stamp costs)
 *   rs_noretry  rs without the config.transactions row (a write without a
 *               session: what the row costs)
 *   txn10_rs    a 10-insert transaction: 10 rows and index entries, one
 *               applyOps oplog entry holding the 10 documents, the
 *               config.transactions row, one commit timestamp
 * The values are built once before the loops (bench_common.h's make_doc,
 * as bench_repl inserts; the oplog entry and the session's row of the
 * shapes and sizes tamgad writes): only WiredTiger's work is counted.
 * Prints "ops <n> <unit>" (bench/insns.sh's format: run it under
 * `valgrind --tool=callgrind --collect-atstart=no`, the measured loop is
 * between two CALLGRIND_TOGGLE_COLLECTs) and the best of three timed rounds
 * in nanoseconds per operation.  Nothing is asserted: numbers are printed.
 */
#include <valgrind/callgrind.h>
#include <wiredtiger.h>

#include "bench_common.h"

typedef enum { F_SA, F_RS, F_RS_NOTS, F_RS_NORETRY, F_TXN10_RS } fcase_t;

static const struct {
	const char *name;
	fcase_t c;
	bool stamp, oplog, row;
	int docs;
} CASES[] = {
	{"sa", F_SA, false, false, false, 1},
	{"rs", F_RS, true, true, true, 1},
	{"rs_nots", F_RS_NOTS, false, true, true, 1},
	{"rs_noretry", F_RS_NORETRY, true, true, false, 1},
	{"txn10_rs", F_TXN10_RS, true, true, true, 10},
};

typedef struct {
	WT_CONNECTION *conn;
	WT_SESSION *s;
	WT_CURSOR *rows, *idx, *oplog, *txns;
	int64_t next_id;
	uint64_t next_ts;
	int ci;
} floor_t;

static void
wt_check(int ret, const char *what)
{
	if (ret != 0)
		die(what, wiredtiger_strerror(ret));
}

/* The _id index key as tamgad writes it for an int64 _id: a KeyString-like
 * type byte, the value big-endian with the sign flipped, an end byte. */
static size_t
id_key(uint8_t *k, int64_t id)
{
	uint64_t u = (uint64_t)id ^ (1ULL << 63);

	k[0] = 0x2b;
	for (int i = 0; i < 8; i++)
		k[1 + i] = (uint8_t)(u >> (56 - 8 * i));
	k[9] = 0x04;
	return 10;
}

/* The bytes each write stores, built once: WiredTiger's cost does not
 * depend on their content, and building them is Tamga's work (or the
 * client's), not the floor's. */
static bson_t doc_b, entry1_b, entry10_b, row_b;

static void
build_values(void)
{
	uint8_t uuid[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
	bson_t lsid, o, ops, e, id_doc, prev, rid, op;

	make_doc(&doc_b, 12345678);
	for (int docs = 1; docs <= 10; docs += 9) {
		bson_t *entry = docs == 1 ? &entry1_b : &entry10_b;
		bson_init(entry);
		bson_append_document_begin(entry, "lsid", 4, &lsid);
		bson_append_binary(&lsid, "id", 2, BSON_SUBTYPE_UUID, uuid, 16);
		bson_append_binary(&lsid, "uid", 3, BSON_SUBTYPE_BINARY, uuid, 16);
		bson_append_document_end(entry, &lsid);
		BSON_APPEND_INT64(entry, "txnNumber", 1);
		if (docs > 1) {
			BSON_APPEND_UTF8(entry, "op", "c");
			BSON_APPEND_UTF8(entry, "ns", "admin.$cmd");
			bson_append_document_begin(entry, "o", 1, &o);
			bson_append_array_begin(&o, "applyOps", 8, &ops);
			for (int i = 0; i < docs; i++) {
				char n[12];
				const char *k;
				size_t kl = bson_uint32_to_string((uint32_t)i, &k, n, sizeof(n));
				bson_append_document_begin(&ops, k, (int)kl, &e);
				BSON_APPEND_UTF8(&e, "op", "i");
				BSON_APPEND_UTF8(&e, "ns", "benchrepl.ins");
				bson_append_binary(&e, "ui", 2, BSON_SUBTYPE_UUID, uuid, 16);
				BSON_APPEND_DOCUMENT(&e, "o", &doc_b);
				bson_append_document_begin(&e, "o2", 2, &id_doc);
				BSON_APPEND_INT64(&id_doc, "_id", 12345678);
				bson_append_document_end(&e, &id_doc);
				bson_append_document_end(&ops, &e);
			}
			bson_append_array_end(&o, &ops);
			bson_append_document_end(entry, &o);
		} else {
			BSON_APPEND_UTF8(entry, "op", "i");
			BSON_APPEND_UTF8(entry, "ns", "benchrepl.ins");
			bson_append_binary(entry, "ui", 2, BSON_SUBTYPE_UUID, uuid, 16);
			BSON_APPEND_DOCUMENT(entry, "o", &doc_b);
			bson_append_document_begin(entry, "o2", 2, &id_doc);
			BSON_APPEND_INT64(&id_doc, "_id", 12345678);
			bson_append_document_end(entry, &id_doc);
			BSON_APPEND_INT32(entry, "stmtId", 0);
		}
		BSON_APPEND_TIMESTAMP(entry, "ts", 1765000000, 1);
		BSON_APPEND_INT64(entry, "t", 1);
		BSON_APPEND_INT64(entry, "v", 2);
		BSON_APPEND_DATE_TIME(entry, "wall", 1765000000000LL);
		bson_append_document_begin(entry, "prevOpTime", 10, &prev);
		BSON_APPEND_TIMESTAMP(&prev, "ts", 0, 0);
		BSON_APPEND_INT64(&prev, "t", -1);
		bson_append_document_end(entry, &prev);
	}
	/* {_id: lsid, txnNum, lastWriteOpTime: {ts, t}, lastWriteDate} */
	bson_init(&row_b);
	bson_append_document_begin(&row_b, "_id", 3, &rid);
	bson_append_binary(&rid, "id", 2, BSON_SUBTYPE_UUID, uuid, 16);
	bson_append_binary(&rid, "uid", 3, BSON_SUBTYPE_BINARY, uuid, 16);
	bson_append_document_end(&row_b, &rid);
	BSON_APPEND_INT64(&row_b, "txnNum", 1);
	bson_append_document_begin(&row_b, "lastWriteOpTime", 15, &op);
	BSON_APPEND_TIMESTAMP(&op, "ts", 1765000000, 1);
	BSON_APPEND_INT64(&op, "t", 1);
	bson_append_document_end(&row_b, &op);
	BSON_APPEND_DATE_TIME(&row_b, "lastWriteDate", 1765000000000LL);
}

static WT_ITEM
item(const bson_t *b)
{
	return (WT_ITEM){.data = bson_get_data(b), .size = b->len};
}

static void
one_op(floor_t *f)
{
	bool stamp = CASES[f->ci].stamp, oplog = CASES[f->ci].oplog, row = CASES[f->ci].row;
	int docs = CASES[f->ci].docs;
	uint8_t key[16];
	uint64_t ts = 0;
	WT_ITEM v, kv;
	char cfg[40];

	wt_check(f->s->begin_transaction(f->s, NULL), "begin_transaction");
	if (stamp || oplog)
		ts = f->next_ts++;
	if (stamp) {
		/* "commit_timestamp=<hex>" without printf */
		static const char hex[] = "0123456789abcdef";
		size_t at = sizeof("commit_timestamp=") - 1;
		int sh = 60;
		memcpy(cfg, "commit_timestamp=", at);
		while (sh > 0 && ((ts >> sh) & 0xf) == 0)
			sh -= 4;
		for (; sh >= 0; sh -= 4)
			cfg[at++] = hex[(ts >> sh) & 0xf];
		cfg[at] = 0;
		wt_check(f->s->timestamp_transaction(f->s, cfg), "timestamp_transaction");
	}
	for (int i = 0; i < docs; i++) {
		int64_t id = f->next_id++;
		v = item(&doc_b);
		f->rows->set_key(f->rows, id + 1);
		f->rows->set_value(f->rows, &v);
		wt_check(f->rows->insert(f->rows), "row insert");
		kv.data = key;
		kv.size = id_key(key, id);
		f->idx->set_key(f->idx, &kv);
		v.data = "";
		v.size = 0;
		f->idx->set_value(f->idx, id + 1, &v);
		wt_check(f->idx->insert(f->idx), "index insert");
	}
	if (oplog) {
		v = item(docs > 1 ? &entry10_b : &entry1_b);
		f->oplog->set_key(f->oplog, (int64_t)ts);
		f->oplog->set_value(f->oplog, &v);
		wt_check(f->oplog->insert(f->oplog), "oplog insert");
	}
	if (row) {
		/* overwritten at the session's RecordId, as tamgad does */
		v = item(&row_b);
		f->txns->set_key(f->txns, (int64_t)1);
		f->txns->set_value(f->txns, &v);
		wt_check(f->txns->update(f->txns), "config.transactions update");
	}
	wt_check(f->s->commit_transaction(f->s, NULL), "commit_transaction");
	/* tamgad's oplog thread moves stable and oldest behind the writes (every
	 * 100 ms), so WiredTiger can drop the row's old versions: the same here
	 * every 256 operations */
	if (stamp && (ts & 255) == 0) {
		char c[96];
		snprintf(c, sizeof(c), "oldest_timestamp=%" PRIx64 ",stable_timestamp=%" PRIx64, ts, ts);
		wt_check(f->conn->set_timestamp(f->conn, c), "set_timestamp");
	}
}

int
main(int argc, char **argv)
{
	WT_CONNECTION *conn;
	floor_t f = {0};
	int64_t n = argc > 3 ? atoll(argv[3]) : 20000;
	double best = 0;
	WT_ITEM v;

	if (argc < 3)
		die("usage", "repl_floor DIR sa|rs|rs_nots|rs_noretry|txn10_rs [N]");
	f.ci = -1;
	for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++)
		if (strcmp(CASES[i].name, argv[2]) == 0)
			f.ci = (int)i;
	if (f.ci < 0)
		die("unknown case", argv[2]);
	wt_check(wiredtiger_open(argv[1], NULL, BENCH_WT_CONFIG("256M"), &conn), "wiredtiger_open");
	f.conn = conn;
	wt_check(conn->open_session(conn, NULL, "isolation=snapshot", &f.s), "open_session");
	wt_check(f.s->create(f.s, "table:rows", BENCH_WT_TABLE), "create");
	wt_check(f.s->create(f.s, "table:idx", BENCH_WT_ID_INDEX), "create");
	wt_check(f.s->create(f.s, "table:oplog", BENCH_WT_TABLE), "create");
	wt_check(f.s->create(f.s, "table:txns", BENCH_WT_TABLE), "create");
	wt_check(f.s->open_cursor(f.s, "table:rows", NULL, NULL, &f.rows), "cursor");
	wt_check(f.s->open_cursor(f.s, "table:idx", NULL, NULL, &f.idx), "cursor");
	wt_check(f.s->open_cursor(f.s, "table:oplog", NULL, NULL, &f.oplog), "cursor");
	wt_check(f.s->open_cursor(f.s, "table:txns", NULL, NULL, &f.txns), "cursor");
	/* the session's row exists before the first write, as after its first */
	v.data = "\x05\0\0\0\0";
	v.size = 5;
	f.txns->set_key(f.txns, (int64_t)1);
	f.txns->set_value(f.txns, &v);
	wt_check(f.txns->insert(f.txns), "row");
	f.next_ts = ((uint64_t)1765000000 << 32) | 1;
	build_values();
	for (int i = 0; i < 1000; i++)
		one_op(&f);
	CALLGRIND_TOGGLE_COLLECT;
	for (int64_t i = 0; i < n; i++)
		one_op(&f);
	CALLGRIND_TOGGLE_COLLECT;
	printf("ops %lld operations\n", (long long)n);
	for (int round = 0; round < 3; round++) {
		double t0 = now(), ns;
		for (int64_t i = 0; i < n; i++)
			one_op(&f);
		ns = (now() - t0) * 1e9 / (double)n;
		if (best == 0 || ns < best)
			best = ns;
	}
	printf("floor %s: %.0f ns per operation (best of 3 rounds of %lld)\n", argv[2], best, (long long)n);
	wt_check(conn->close(conn, NULL), "close");
	return 0;
}
