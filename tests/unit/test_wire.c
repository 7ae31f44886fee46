/*
 * test_wire.c -- the wire protocol parser and builders (src/server/wire.c,
 * compress.c) on byte buffers: OP_MSG sections and flags, checksums,
 * OP_COMPRESSED with every codec, OP_QUERY handshake, BSON validation, and a
 * bounded random-mutation run that must never crash.
 */
#include "tt.h"

#include "server/wire.h"
#include "common/version.h"

/* ---- a little message builder ------------------------------------------- */

typedef struct mb {
	uint8_t *d;
	size_t len, cap;
} mb_t;

static void
mb_put(mb_t *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 64;
		b->d = realloc(b->d, b->cap);
	}
	memcpy(b->d + b->len, p, n);
	b->len += n;
}

static void
mb_i32(mb_t *b, int32_t v)
{
	uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
	mb_put(b, x, 4);
}

static void
mb_set_i32(mb_t *b, size_t at, int32_t v)
{
	b->d[at] = (uint8_t)v;
	b->d[at + 1] = (uint8_t)(v >> 8);
	b->d[at + 2] = (uint8_t)(v >> 16);
	b->d[at + 3] = (uint8_t)(v >> 24);
}

static void
mb_u8(mb_t *b, uint8_t v)
{
	mb_put(b, &v, 1);
}

static void
mb_doc(mb_t *b, const bson_t *d)
{
	mb_put(b, bson_get_data(d), d->len);
}

/* Start an OP_MSG with flags; finish with mb_finish. */
static mb_t
msg_begin(uint32_t flags)
{
	mb_t b = {0};
	mb_i32(&b, 0);
	mb_i32(&b, 7);
	mb_i32(&b, 0);
	mb_i32(&b, WIRE_OP_MSG);
	mb_i32(&b, (int32_t)flags);
	return b;
}

static void
msg_body(mb_t *b, const char *json)
{
	bson_t *d = tt_json(json);
	mb_u8(b, 0);
	mb_doc(b, d);
	bson_destroy(d);
}

/* kind-1 section with n documents from a JSON array of objects */
static void
msg_seq(mb_t *b, const char *name, const char *const *docs, int n)
{
	size_t at;
	int i;

	mb_u8(b, 1);
	at = b->len;
	mb_i32(b, 0);
	mb_put(b, name, strlen(name) + 1);
	for (i = 0; i < n; i++) {
		bson_t *d = tt_json(docs[i]);
		mb_doc(b, d);
		bson_destroy(d);
	}
	mb_set_i32(b, at, (int32_t)(b->len - at));
}

static void
mb_finish(mb_t *b)
{
	mb_set_i32(b, 0, (int32_t)b->len);
}

static int
parse(mb_t *b, wire_request_t *req, terr_t *err)
{
	return wire_request_parse(b->d, b->len, req, err);
}

/* ---- tests --------------------------------------------------------------- */

static void
test_header_limits(void)
{
	uint8_t h[16] = {0};
	wire_header_t hd;
	terr_t err = TERR_INIT;

	h[0] = 15;
	TT_ASSERT(wire_header_read(h, &hd, &err) != 0);
	TT_EQ_INT(err.code, 17);
	terr_clear(&err);
	mb_t b = {0};
	mb_i32(&b, TAMGA_MAX_MESSAGE_SIZE + 1);
	TT_ASSERT(wire_header_read(b.d, &hd, &err) != 0);
	TT_ASSERT(strstr(err.msg, "48000000") != NULL);
	terr_clear(&err);
	b.len = 0;
	mb_i32(&b, TAMGA_MAX_MESSAGE_SIZE);
	TT_ASSERT(wire_header_read(b.d, &hd, &err) == 0);
	free(b.d);
}

static void
test_msg_roundtrip(void)
{
	bson_t *cmd = tt_json("{\"ping\": 1, \"$db\": \"admin\"}");
	wire_buf_t out;
	wire_request_t req;
	terr_t err = TERR_INIT;

	TT_ASSERT(wire_msg_build(5, 0, 0, cmd, WIRE_COMPRESSOR_NONE, &out, &err) == 0);
	TT_ASSERT(wire_request_parse(out.data, out.len, &req, &err) == 0);
	TT_EQ_INT(req.opcode, WIRE_OP_MSG);
	TT_EQ_INT(req.header.request_id, 5);
	TT_EQ_STR(req.db, "admin");
	TT_EQ_JSON(&req.cmd, "{ \"ping\" : 1, \"$db\" : \"admin\" }");
	TT_EQ_INT(req.compressor, WIRE_COMPRESSOR_NONE);
	wire_request_clear(&req);
	bson_free(out.data);
	bson_destroy(cmd);
}

static void
test_checksum(void)
{
	bson_t *cmd = tt_json("{\"hello\": 1, \"$db\": \"admin\"}");
	wire_buf_t out;
	wire_request_t req;
	terr_t err = TERR_INIT;

	TT_ASSERT(wire_msg_build(1, 0, WIRE_MSG_CHECKSUM, cmd, WIRE_COMPRESSOR_NONE, &out, &err) == 0);
	TT_ASSERT(wire_request_parse(out.data, out.len, &req, &err) == 0);
	TT_ASSERT(req.flags & WIRE_MSG_CHECKSUM);
	wire_request_clear(&req);
	out.data[25] ^= 1;   /* inside the body */
	TT_ASSERT(wire_request_parse(out.data, out.len, &req, &err) != 0);
	TT_EQ_INT(err.code, 288);
	TT_ASSERT(!req.fatal);
	wire_request_clear(&req);
	terr_clear(&err);
	bson_free(out.data);
	/* the known CRC-32C check value */
	TT_EQ_INT(wire_crc32c("123456789", 9), 0xE3069283u);
	bson_destroy(cmd);
}

static void
test_compressors(void)
{
	static const uint8_t ids[] = {WIRE_COMPRESSOR_NOOP, WIRE_COMPRESSOR_ZLIB, WIRE_COMPRESSOR_ZSTD,
#ifdef TAMGA_HAVE_SNAPPY
		WIRE_COMPRESSOR_SNAPPY,
#endif
	};
	bson_t *cmd = tt_json("{\"insert\": \"c\", \"documents\": [{\"a\": \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}],"
	    " \"$db\": \"test\"}");
	size_t i;

	for (i = 0; i < sizeof(ids); i++) {
		wire_buf_t out;
		wire_request_t req;
		terr_t err = TERR_INIT;
		TT_ASSERT(wire_compressor_by_id(ids[i]) != NULL);
		TT_ASSERT(wire_msg_build(9, 0, WIRE_MSG_CHECKSUM, cmd, ids[i], &out, &err) == 0);
		TT_EQ_INT(out.data[12], WIRE_OP_COMPRESSED & 0xff);
		TT_ASSERT(wire_request_parse(out.data, out.len, &req, &err) == 0);
		TT_EQ_INT(req.compressor, ids[i]);
		TT_EQ_INT(req.opcode, WIRE_OP_MSG);
		TT_ASSERT(bson_equal(&req.cmd, cmd));
		wire_request_clear(&req);
		/* corrupt the compressed payload: fatal, never a crash */
		if (ids[i] != WIRE_COMPRESSOR_NOOP) {
			size_t k;
			for (k = 25; k < out.len; k += 3)
				out.data[k] ^= 0x5a;
			if (wire_request_parse(out.data, out.len, &req, &err) != 0)
				TT_ASSERT(req.fatal || err.code != 0);
			wire_request_clear(&req);
			terr_clear(&err);
		}
		/* unknown compressor id */
		out.data[24] = 77;
		TT_ASSERT(wire_request_parse(out.data, out.len, &req, &err) != 0);
		TT_ASSERT(req.fatal);
		wire_request_clear(&req);
		terr_clear(&err);
		bson_free(out.data);
	}
	bson_destroy(cmd);
}

static void
test_sequences(void)
{
	const char *docs[] = {"{\"_id\": 1}", "{\"_id\": 2}", "{\"_id\": 3}"};
	wire_request_t req;
	terr_t err = TERR_INIT;
	mb_t b;

	b = msg_begin(0);
	msg_seq(&b, "documents", docs, 3);
	msg_body(&b, "{\"insert\": \"c\", \"$db\": \"test\"}");
	mb_finish(&b);
	TT_ASSERT(parse(&b, &req, &err) == 0);
	TT_EQ_JSON(&req.cmd, "{ \"insert\" : \"c\", \"$db\" : \"test\", \"documents\" : "
	    "[ { \"_id\" : 1 }, { \"_id\" : 2 }, { \"_id\" : 3 } ] }");
	TT_EQ_INT(req.nsequences, 1);
	TT_EQ_STR(req.seq_names[0], "documents");
	wire_request_clear(&req);
	free(b.d);

	/* empty sequence folds to an empty array */
	b = msg_begin(0);
	msg_body(&b, "{\"insert\": \"c\", \"$db\": \"test\"}");
	msg_seq(&b, "documents", docs, 0);
	mb_finish(&b);
	TT_ASSERT(parse(&b, &req, &err) == 0);
	TT_EQ_JSON(&req.cmd, "{ \"insert\" : \"c\", \"$db\" : \"test\", \"documents\" : [  ] }");
	wire_request_clear(&req);
	free(b.d);

	/* duplicate sequence */
	b = msg_begin(0);
	msg_body(&b, "{\"insert\": \"c\", \"$db\": \"test\"}");
	msg_seq(&b, "documents", docs, 1);
	msg_seq(&b, "documents", docs, 1);
	mb_finish(&b);
	TT_ASSERT(parse(&b, &req, &err) != 0);
	TT_EQ_INT(err.code, 40431);
	wire_request_clear(&req);
	terr_clear(&err);
	free(b.d);

	/* field both in body and sequence */
	b = msg_begin(0);
	msg_body(&b, "{\"insert\": \"c\", \"documents\": [], \"$db\": \"test\"}");
	msg_seq(&b, "documents", docs, 1);
	mb_finish(&b);
	TT_ASSERT(parse(&b, &req, &err) != 0);
	TT_EQ_INT(err.code, 40433);
	wire_request_clear(&req);
	terr_clear(&err);
	free(b.d);

	/* three sequences */
	b = msg_begin(0);
	msg_body(&b, "{\"bulkWrite\": 1, \"$db\": \"admin\"}");
	msg_seq(&b, "a", docs, 1);
	msg_seq(&b, "b", docs, 1);
	msg_seq(&b, "c", docs, 1);
	mb_finish(&b);
	TT_ASSERT(parse(&b, &req, &err) != 0);
	TT_EQ_INT(err.code, 233);
	wire_request_clear(&req);
	terr_clear(&err);
	free(b.d);

	/* a sequence whose size runs past the message */
	b = msg_begin(0);
	msg_body(&b, "{\"insert\": \"c\", \"$db\": \"test\"}");
	msg_seq(&b, "documents", docs, 1);
	mb_set_i32(&b, b.len - 4 - 10 - 11, 1000);
	mb_finish(&b);
	TT_ASSERT(parse(&b, &req, &err) != 0);
	TT_ASSERT(!req.fatal);
	wire_request_clear(&req);
	terr_clear(&err);
	free(b.d);
}


/* The parser notes where the top-level lsid is (the server touches the
 * session from there without searching the command) and reads $db from the
 * same walk: the first occurrence counts, nested ones do not. */
static void
test_generic_fields(void)
{
	static const char *const docs[] = {"{\"_id\": 1, \"lsid\": 5}"};
	wire_request_t req;
	terr_t err = TERR_INIT;
	bson_iter_t it;
	mb_t b;

	b = msg_begin(0);
	msg_body(&b, "{\"insert\": \"c\", \"filter\": {\"lsid\": 1, \"$db\": \"no\"}, \"$db\": \"app\", "
	    "\"lsid\": {\"id\": {\"$binary\": {\"base64\": \"AAECAwQFBgcICQoLDA0ODw==\", \"subType\": \"04\"}}}, "
	    "\"$db\": \"second\", \"lsid\": 2}");
	msg_seq(&b, "documents", docs, 1);
	mb_finish(&b);
	TT_ASSERT(parse(&b, &req, &err) == 0);
	TT_EQ_STR(req.db, "app");
	TT_ASSERT(req.lsid_off != 0);
	TT_ASSERT(bson_iter_init_from_data_at_offset(&it, bson_get_data(&req.cmd), req.cmd.len, req.lsid_off, 4));
	TT_EQ_STR(bson_iter_key(&it), "lsid");
	TT_ASSERT(BSON_ITER_HOLDS_DOCUMENT(&it));
	/* the folded sequence is still there after it */
	TT_ASSERT(bson_iter_init_find(&it, &req.cmd, "documents") && BSON_ITER_HOLDS_ARRAY(&it));
	wire_request_clear(&req);
	free(b.d);

	b = msg_begin(0);
	msg_body(&b, "{\"ping\": 1, \"x\": {\"lsid\": 1}, \"$db\": \"admin\"}");
	mb_finish(&b);
	TT_ASSERT(parse(&b, &req, &err) == 0);
	TT_EQ_INT(req.lsid_off, 0);
	wire_request_clear(&req);
	free(b.d);

	/* $db only nested: missing */
	b = msg_begin(0);
	msg_body(&b, "{\"ping\": 1, \"x\": {\"$db\": \"admin\"}}");
	mb_finish(&b);
	TT_ASSERT(parse(&b, &req, &err) != 0);
	TT_EQ_INT(err.code, 40571);
	terr_clear(&err);
	wire_request_clear(&req);
	free(b.d);

	/* $db of the wrong type */
	b = msg_begin(0);
	msg_body(&b, "{\"ping\": 1, \"$db\": 3}");
	mb_finish(&b);
	TT_ASSERT(parse(&b, &req, &err) != 0);
	TT_EQ_INT(err.code, 14);
	terr_clear(&err);
	wire_request_clear(&req);
	free(b.d);
}

static void
test_msg_errors(void)
{
	wire_request_t req;
	terr_t err = TERR_INIT;
	mb_t b;

	/* unknown required flag bit */
	b = msg_begin(1u << 4);
	msg_body(&b, "{\"ping\": 1, \"$db\": \"admin\"}");
	mb_finish(&b);
	TT_ASSERT(parse(&b, &req, &err) != 0);
	TT_EQ_INT(err.code, 223);
	TT_ASSERT(strstr(err.msg, "Ob00000000000000000000000000010000") != NULL);
	wire_request_clear(&req);
	terr_clear(&err);
	free(b.d);

	/* optional high bits and exhaustAllowed are fine */
	b = msg_begin(WIRE_MSG_EXHAUST_ALLOWED | (1u << 20));
	msg_body(&b, "{\"ping\": 1, \"$db\": \"admin\"}");
	mb_finish(&b);
	TT_ASSERT(parse(&b, &req, &err) == 0);
	wire_request_clear(&req);
	free(b.d);

	/* no body */
	b = msg_begin(0);
	mb_finish(&b);
	TT_ASSERT(parse(&b, &req, &err) != 0);
	TT_EQ_INT(err.code, 40587);
	wire_request_clear(&req);
	terr_clear(&err);
	free(b.d);

	/* two bodies */
	b = msg_begin(0);
	msg_body(&b, "{\"ping\": 1, \"$db\": \"admin\"}");
	msg_body(&b, "{\"ping\": 1, \"$db\": \"admin\"}");
	mb_finish(&b);
	TT_ASSERT(parse(&b, &req, &err) != 0);
	TT_EQ_INT(err.code, 40430);
	wire_request_clear(&req);
	terr_clear(&err);
	free(b.d);

	/* no $db */
	b = msg_begin(0);
	msg_body(&b, "{\"ping\": 1}");
	mb_finish(&b);
	TT_ASSERT(parse(&b, &req, &err) != 0);
	TT_EQ_INT(err.code, 40571);
	wire_request_clear(&req);
	terr_clear(&err);
	free(b.d);

	/* unknown section kind */
	b = msg_begin(0);
	msg_body(&b, "{\"ping\": 1, \"$db\": \"admin\"}");
	mb_u8(&b, 7);
	mb_finish(&b);
	TT_ASSERT(parse(&b, &req, &err) != 0);
	TT_EQ_INT(err.code, 40432);
	wire_request_clear(&req);
	terr_clear(&err);
	free(b.d);

	/* unknown opcode: fatal */
	b = msg_begin(0);
	msg_body(&b, "{\"ping\": 1, \"$db\": \"admin\"}");
	mb_finish(&b);
	mb_set_i32(&b, 12, 2002);
	TT_ASSERT(parse(&b, &req, &err) != 0);
	TT_ASSERT(req.fatal);
	wire_request_clear(&req);
	terr_clear(&err);
	free(b.d);
}

static void
test_invalid_bson(void)
{
	wire_request_t req;
	terr_t err = TERR_INIT;
	uint32_t n;
	mb_t b;
	int i;

	/* body length past the end */
	b = msg_begin(0);
	msg_body(&b, "{\"ping\": 1, \"$db\": \"admin\"}");
	mb_finish(&b);
	mb_set_i32(&b, 21, 500);
	TT_ASSERT(parse(&b, &req, &err) != 0);
	TT_EQ_INT(err.code, 22);
	wire_request_clear(&req);
	terr_clear(&err);
	/* bad element type */
	mb_set_i32(&b, 21, (int32_t)(b.len - 21));
	b.d[25] = 0x42;
	TT_ASSERT(parse(&b, &req, &err) != 0);
	TT_EQ_INT(err.code, 22);
	wire_request_clear(&req);
	terr_clear(&err);
	free(b.d);

	/* string with a length that lies */
	{
		bson_t *d = tt_json("{\"s\": \"abc\"}");
		uint8_t *copy = bson_malloc(d->len);
		memcpy(copy, bson_get_data(d), d->len);
		copy[7] = 100;
		TT_ASSERT(wire_bson_validate(copy, d->len, &n, &err) != 0);
		terr_clear(&err);
		copy[7] = 0;
		TT_ASSERT(wire_bson_validate(copy, d->len, &n, &err) != 0);
		terr_clear(&err);
		bson_free(copy);
		bson_destroy(d);
	}

	/* 100000 levels of nesting: rejected without recursion */
	{
		int depth = 100000;
		size_t len = (size_t)depth * 8 + 5, at = 0;
		uint8_t *d = bson_malloc0(len);
		for (i = 0; i < depth; i++) {
			uint32_t l = (uint32_t)(len - (size_t)i * 8);
			d[at] = (uint8_t)l;
			d[at + 1] = (uint8_t)(l >> 8);
			d[at + 2] = (uint8_t)(l >> 16);
			d[at + 3] = (uint8_t)(l >> 24);
			d[at + 4] = 0x03;
			d[at + 5] = 'a';
			at += 7;
		}
		d[at] = 5;   /* the innermost {} ; trailing NULs are already 0 */
		TT_ASSERT(wire_bson_validate(d, len, &n, &err) != 0);
		TT_EQ_INT(err.code, 22);
		terr_clear(&err);
		bson_free(d);
	}
	{
		/* 300 levels built with libbson (its builder is iterative) */
		bson_t levels[300];
		for (i = 0; i < 300; i++)
			bson_init(&levels[i]);
		for (i = 298; i >= 0; i--)
			BSON_APPEND_DOCUMENT(&levels[i], "a", &levels[i + 1]);
		TT_ASSERT(wire_bson_validate(bson_get_data(&levels[0]), levels[0].len, &n, &err) != 0);
		TT_ASSERT(err.msg && strstr(err.msg, "depth") != NULL);
		terr_clear(&err);
		TT_ASSERT(wire_bson_validate(bson_get_data(&levels[150]), levels[150].len, &n, &err) == 0);
		for (i = 0; i < 300; i++)
			bson_destroy(&levels[i]);
	}
}

static void
test_op_query(void)
{
	wire_request_t req;
	terr_t err = TERR_INIT;
	bson_t *q;
	mb_t b = {0};

	mb_i32(&b, 0);
	mb_i32(&b, 3);
	mb_i32(&b, 0);
	mb_i32(&b, WIRE_OP_QUERY);
	mb_i32(&b, 0);
	mb_put(&b, "admin.$cmd", 11);
	mb_i32(&b, 0);
	mb_i32(&b, -1);
	q = tt_json("{\"$query\": {\"isMaster\": 1, \"helloOk\": true}, \"$readPreference\": {\"mode\": \"primary\"}}");
	mb_doc(&b, q);
	bson_destroy(q);
	mb_finish(&b);
	TT_ASSERT(parse(&b, &req, &err) == 0);
	TT_EQ_INT(req.opcode, WIRE_OP_QUERY);
	TT_EQ_STR(req.db, "admin");
	TT_EQ_JSON(&req.cmd, "{ \"isMaster\" : 1, \"helloOk\" : true }");
	wire_request_clear(&req);
	free(b.d);

	/* anything else over OP_QUERY: 352, answerable */
	b = (mb_t){0};
	mb_i32(&b, 0);
	mb_i32(&b, 3);
	mb_i32(&b, 0);
	mb_i32(&b, WIRE_OP_QUERY);
	mb_i32(&b, 0);
	mb_put(&b, "test.$cmd", 10);
	mb_i32(&b, 0);
	mb_i32(&b, -1);
	q = tt_json("{\"insert\": \"c\"}");
	mb_doc(&b, q);
	bson_destroy(q);
	mb_finish(&b);
	TT_ASSERT(parse(&b, &req, &err) != 0);
	TT_EQ_INT(err.code, 352);
	TT_ASSERT(strstr(err.msg, "Unsupported OP_QUERY command: insert.") != NULL);
	TT_ASSERT(!req.fatal);
	{
		bson_t doc;
		wire_buf_t out;
		wire_error_doc(&doc, &err);
		TT_EQ_JSON(&doc, "{ \"ok\" : 0.0, \"errmsg\" : \"Unsupported OP_QUERY command: insert. The client driver may "
		    "require an upgrade. For more details see https://dochub.mongodb.org/core/legacy-opcode-removal\", "
		    "\"code\" : 352, \"codeName\" : \"UnsupportedOpQueryCommand\" }");
		TT_ASSERT(wire_reply_build(4, 3, &doc, false, &out, &err) == 0);
		TT_EQ_INT(out.len, 36 + doc.len);
		TT_EQ_INT(out.data[12], 1);      /* OP_REPLY */
		TT_EQ_INT(out.data[8], 3);       /* responseTo */
		TT_EQ_INT(out.data[32], 1);      /* numberReturned */
		bson_free(out.data);
		bson_destroy(&doc);
	}
	wire_request_clear(&req);
	terr_clear(&err);
	free(b.d);
}

static void
test_negotiation(void)
{
	bson_t *hello = tt_json("{\"hello\": 1, \"compression\": [\"zstd\", \"bogus\", \"zlib\", \"snappy\", \"zstd\"]}");
	bson_t *plain = tt_json("{\"hello\": 1}");
	bson_t *none = tt_json("{\"hello\": 1, \"compression\": []}");
	wire_compression_t st;
	bson_t r;

	memset(&st, 0, sizeof(st));
	/* before any hello every available compressor is accepted */
	TT_ASSERT(wire_compression_permitted(&st, WIRE_COMPRESSOR_ZLIB));
	TT_ASSERT(!wire_compression_permitted(&st, 77));
	bson_init(&r);
	wire_compression_hello(&st, hello, "snappy,zstd,zlib", &r);
#ifdef TAMGA_HAVE_SNAPPY
	TT_EQ_JSON(&r, "{ \"compression\" : [ \"zstd\", \"zlib\", \"snappy\" ] }");
#else
	TT_EQ_JSON(&r, "{ \"compression\" : [ \"zstd\", \"zlib\" ] }");
#endif
	TT_ASSERT(wire_compression_permitted(&st, WIRE_COMPRESSOR_ZLIB));
	TT_ASSERT(!wire_compression_permitted(&st, WIRE_COMPRESSOR_NOOP));
	/* a later hello without the field repeats the result */
	bson_reinit(&r);
	wire_compression_hello(&st, plain, "snappy,zstd,zlib", &r);
	TT_ASSERT(bson_has_field(&r, "compression"));
	/* the server's list filters the client's */
	bson_reinit(&r);
	wire_compression_hello(&st, hello, "zlib", &r);
	TT_EQ_JSON(&r, "{ \"compression\" : [ \"zlib\" ] }");
	TT_ASSERT(!wire_compression_permitted(&st, WIRE_COMPRESSOR_ZSTD));
	/* nothing in common: no field at all, and compressed messages refused */
	bson_reinit(&r);
	wire_compression_hello(&st, hello, "disabled", &r);
	TT_ASSERT(bson_empty(&r));
	TT_ASSERT(!wire_compression_permitted(&st, WIRE_COMPRESSOR_ZLIB));
	bson_reinit(&r);
	wire_compression_hello(&st, none, "zlib", &r);
	TT_ASSERT(bson_empty(&r));
	/* a first hello without the field: compression is off for the connection */
	memset(&st, 0, sizeof(st));
	bson_reinit(&r);
	wire_compression_hello(&st, plain, "zlib", &r);
	TT_ASSERT(bson_empty(&r));
	TT_ASSERT(!wire_compression_permitted(&st, WIRE_COMPRESSOR_ZLIB));
	bson_destroy(&r);
	bson_destroy(hello);
	bson_destroy(plain);
	bson_destroy(none);
}

/* Random byte flips, truncations and length edits of valid messages. */
static void
test_mutations(void)
{
	const char *docs[] = {"{\"_id\": 1, \"a\": [1, 2, {\"b\": \"x\"}]}", "{\"_id\": {\"$oid\": \"0123456789abcdef01234567\"}}"};
	bson_t *cmd = tt_json("{\"find\": \"c\", \"filter\": {\"a\": {\"$gt\": 1}}, \"$db\": \"test\"}");
	uint8_t *seeds[4];
	size_t seed_len[4];
	unsigned seed = 12345;
	wire_buf_t out;
	terr_t err = TERR_INIT;
	mb_t b;
	int i, s;

	b = msg_begin(0);
	msg_body(&b, "{\"insert\": \"c\", \"$db\": \"test\"}");
	msg_seq(&b, "documents", docs, 2);
	mb_finish(&b);
	seeds[0] = b.d;
	seed_len[0] = b.len;
	wire_msg_build(1, 0, WIRE_MSG_CHECKSUM, cmd, WIRE_COMPRESSOR_NONE, &out, &err);
	seeds[1] = out.data;
	seed_len[1] = out.len;
	wire_msg_build(1, 0, 0, cmd, WIRE_COMPRESSOR_ZLIB, &out, &err);
	seeds[2] = out.data;
	seed_len[2] = out.len;
	wire_msg_build(1, 0, 0, cmd, WIRE_COMPRESSOR_ZSTD, &out, &err);
	seeds[3] = out.data;
	seed_len[3] = out.len;

	for (i = 0; i < 20000; i++) {
		uint8_t *m;
		size_t len;
		wire_request_t req;
		int flips, k;

		s = i % 4;
		len = seed_len[s];
		seed = seed * 1103515245u + 12345u;
		if ((seed >> 16) % 5 == 0 && len > 17)
			len = WIRE_HEADER_LEN + (seed >> 8) % (len - WIRE_HEADER_LEN);
		m = bson_malloc(len);
		memcpy(m, seeds[s], len);
		flips = 1 + (int)((seed >> 4) % 4);
		for (k = 0; k < flips; k++) {
			seed = seed * 1103515245u + 12345u;
			if (len > WIRE_HEADER_LEN)
				m[WIRE_HEADER_LEN + (seed >> 8) % (len - WIRE_HEADER_LEN)] ^= (uint8_t)(seed >> 3);
		}
		/* keep the header consistent with the buffer, as the reader would */
		m[0] = (uint8_t)len;
		m[1] = (uint8_t)(len >> 8);
		m[2] = (uint8_t)(len >> 16);
		m[3] = (uint8_t)(len >> 24);
		if (wire_request_parse(m, len, &req, &err) == 0) {
			TT_ASSERT(req.have_cmd);
			TT_ASSERT(req.db != NULL);
		} else {
			TT_ASSERT(err.code != 0);
		}
		wire_request_clear(&req);
		terr_clear(&err);
		bson_free(m);
	}
	free(seeds[0]);
	for (s = 1; s < 4; s++)
		bson_free(seeds[s]);
	bson_destroy(cmd);
}

int
main(void)
{
	TT_RUN(test_header_limits);
	TT_RUN(test_msg_roundtrip);
	TT_RUN(test_checksum);
	TT_RUN(test_compressors);
	TT_RUN(test_sequences);
	TT_RUN(test_generic_fields);
	TT_RUN(test_msg_errors);
	TT_RUN(test_invalid_bson);
	TT_RUN(test_op_query);
	TT_RUN(test_negotiation);
	TT_RUN(test_mutations);
	return tt_finish();
}
