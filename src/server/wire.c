/*
 * wire.c -- parsing and building wire protocol messages (see wire.h).
 *
 * Every read is bounds-checked against the message length; BSON is
 * validated here (iteratively bounded depth) before any libbson iterator
 * touches it, so hostile bytes cannot reach the command layer.
 */
#include "server/wire.h"

#include <string.h>
#include <sys/types.h>

#include "common/version.h"

#define MAX_BSON_INTERNAL TAMGA_MAX_BSON_INTERNAL_SIZE
#define MAX_DEPTH 200

static int32_t
rd_i32(const uint8_t *p)
{
	uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	return (int32_t)v;
}

static void
wr_i32(uint8_t *p, int32_t v)
{
	uint32_t u = (uint32_t)v;
	p[0] = (uint8_t)u;
	p[1] = (uint8_t)(u >> 8);
	p[2] = (uint8_t)(u >> 16);
	p[3] = (uint8_t)(u >> 24);
}

int
wire_header_read(const uint8_t *buf, wire_header_t *h, terr_t *err)
{
	h->length = rd_i32(buf);
	h->request_id = rd_i32(buf + 4);
	h->response_to = rd_i32(buf + 8);
	h->opcode = rd_i32(buf + 12);
	if (h->length < WIRE_HEADER_LEN || h->length > TAMGA_MAX_MESSAGE_SIZE)
		return terr_set(err, TERR_PROTOCOL_ERROR, "recv(): message msgLen %d is invalid. Min %d Max: %d",
		    h->length, WIRE_HEADER_LEN, TAMGA_MAX_MESSAGE_SIZE);
	return 0;
}

/* ---- BSON validation ---------------------------------------------------- */

/* Length of a NUL-terminated string starting at p within [p, end), or -1. */
static ssize_t
cstr_len(const uint8_t *p, const uint8_t *end)
{
	const uint8_t *z = memchr(p, 0, (size_t)(end - p));

	return z ? (ssize_t)(z - p) : -1;
}

static int
bad_bson(terr_t *err, const char *what)
{
	return terr_set(err, TERR_INVALID_BSON, "Invalid BSON: %s", what);
}

/* A BSON string value (int32 length incl. NUL, bytes, NUL) at p; returns its
 * total size or -1. */
static ssize_t
string_size(const uint8_t *p, const uint8_t *end)
{
	int32_t n;

	if (end - p < 4)
		return -1;
	n = rd_i32(p);
	if (n < 1 || n > end - p - 4 || p[4 + n - 1] != 0)
		return -1;
	return 4 + (ssize_t)n;
}

/*
 * Where the server-side fields of a command body are: offsets from the
 * document's start of the first top-level element named "$db" and "lsid"
 * (0 = absent; first occurrence, as bson_iter_find), noted while the body is
 * validated so that neither needs a second walk over the command.
 */
typedef struct top_fields {
	uint32_t db;
	uint32_t lsid;
} top_fields_t;

static inline void
note_top(top_fields_t *top, const uint8_t *data, const uint8_t *elem, const uint8_t *key, ssize_t klen)
{
	if (klen == 3 && key[0] == '$' && key[1] == 'd' && key[2] == 'b') {
		if (top->db == 0)
			top->db = (uint32_t)(elem - data);
	} else if (klen == 4 && memcmp(key, "lsid", 4) == 0) {
		if (top->lsid == 0)
			top->lsid = (uint32_t)(elem - data);
	}
}

/* top: NULL, or where to note the body's top-level $db and lsid. */
static int
validate_doc(const uint8_t *data, size_t avail, uint32_t *doc_len, int base_depth, top_fields_t *top,
             terr_t *err)
{
	/* An explicit stack of open documents' ends: no recursion. */
	const uint8_t *ends[MAX_DEPTH + 1];
	const uint8_t *p = data, *end;
	int depth = 0;
	int32_t len;

	if (avail < 5)
		return bad_bson(err, "document is shorter than 5 bytes");
	len = rd_i32(data);
	if (len < 5 || (size_t)len > avail)
		return bad_bson(err, "document length is out of bounds");
	if (len > MAX_BSON_INTERNAL)
		return terr_set(err, TERR_BSON_OBJECT_TOO_LARGE,
		    "BSONObj size: %d (0x%X) is invalid. Size must be between 0 and %d(16MB)",
		    len, (unsigned)len, MAX_BSON_INTERNAL);
	end = data + len;
	if (end[-1] != 0)
		return bad_bson(err, "document is not terminated with EOO");
	ends[0] = end - 1;   /* position of the terminating NUL */
	p = data + 4;
	while (depth >= 0) {
		const uint8_t *dend = ends[depth];
		uint8_t type;
		ssize_t klen, n;

		if (p == dend) {
			/* this document's EOO */
			p++;
			depth--;
			continue;
		}
		if (p > dend)
			return bad_bson(err, "element overruns its document");
		type = *p++;
		klen = cstr_len(p, dend);
		if (klen < 0)
			return bad_bson(err, "field name is not terminated");
		if (top != NULL && depth == 0)
			note_top(top, data, p - 1, p, klen);
		p += klen + 1;
		switch (type) {
		case BSON_TYPE_DOUBLE:
		case BSON_TYPE_DATE_TIME:
		case BSON_TYPE_TIMESTAMP:
		case BSON_TYPE_INT64:
			n = 8;
			break;
		case BSON_TYPE_INT32:
			n = 4;
			break;
		case BSON_TYPE_DECIMAL128:
			n = 16;
			break;
		case BSON_TYPE_OID:
			n = 12;
			break;
		case BSON_TYPE_BOOL:
			if (p >= dend || *p > 1)
				return bad_bson(err, "invalid boolean value");
			n = 1;
			break;
		case BSON_TYPE_UNDEFINED:
		case BSON_TYPE_NULL:
		case BSON_TYPE_MINKEY:
		case BSON_TYPE_MAXKEY:
			n = 0;
			break;
		case BSON_TYPE_UTF8:
		case BSON_TYPE_CODE:
		case BSON_TYPE_SYMBOL:
			n = string_size(p, dend);
			if (n < 0)
				return bad_bson(err, "invalid string length");
			break;
		case BSON_TYPE_DBPOINTER:
			n = string_size(p, dend);
			if (n < 0)
				return bad_bson(err, "invalid DBPointer namespace");
			n += 12;
			break;
		case BSON_TYPE_BINARY: {
			int32_t blen;
			if (dend - p < 5)
				return bad_bson(err, "truncated binary");
			blen = rd_i32(p);
			if (blen < 0 || blen > dend - p - 5)
				return bad_bson(err, "invalid binary length");
			if (p[4] == BSON_SUBTYPE_BINARY_DEPRECATED &&
			    (blen < 4 || rd_i32(p + 5) != blen - 4))
				return bad_bson(err, "invalid old binary length");
			n = 5 + (ssize_t)blen;
			break;
		}
		case BSON_TYPE_REGEX: {
			ssize_t a = cstr_len(p, dend), b;
			if (a < 0)
				return bad_bson(err, "unterminated regex pattern");
			b = cstr_len(p + a + 1, dend);
			if (b < 0)
				return bad_bson(err, "unterminated regex options");
			n = a + 1 + b + 1;
			break;
		}
		case BSON_TYPE_CODEWSCOPE: {
			int32_t total;
			ssize_t s;
			uint32_t sub;
			if (dend - p < 4)
				return bad_bson(err, "truncated code with scope");
			total = rd_i32(p);
			if (total < 14 || total > dend - p)
				return bad_bson(err, "invalid code with scope length");
			s = string_size(p + 4, p + total);
			if (s < 0)
				return bad_bson(err, "invalid code with scope string");
			/* the scope is a small document; validate it on its own */
			if (base_depth + depth + 1 > MAX_DEPTH)
				return terr_set(err, TERR_INVALID_BSON,
				    "BSONObj exceeds maximum nested object depth: %d", MAX_DEPTH);
			if (validate_doc(p + 4 + s, (size_t)(total - 4 - s), &sub, base_depth + depth + 1,
			    NULL, err) != 0)
				return -1;
			if ((ssize_t)sub != total - 4 - s)
				return bad_bson(err, "code with scope length mismatch");
			n = total;
			break;
		}
		case BSON_TYPE_DOCUMENT:
		case BSON_TYPE_ARRAY: {
			int32_t sublen;
			if (dend - p < 5)
				return bad_bson(err, "truncated embedded document");
			sublen = rd_i32(p);
			if (sublen < 5 || sublen > dend - p)
				return bad_bson(err, "embedded document length is out of bounds");
			if (p[sublen - 1] != 0)
				return bad_bson(err, "embedded document is not terminated with EOO");
			if (base_depth + depth + 1 > MAX_DEPTH)
				return terr_set(err, TERR_INVALID_BSON,
				    "BSONObj exceeds maximum nested object depth: %d", MAX_DEPTH);
			ends[++depth] = p + sublen - 1;
			p += 4;
			continue;
		}
		default:
			return bad_bson(err, "unknown element type");
		}
		if (n > dend - p)
			return bad_bson(err, "element overruns its document");
		p += n;
	}
	*doc_len = (uint32_t)len;
	return 0;
}

int
wire_bson_validate(const uint8_t *data, size_t avail, uint32_t *doc_len, terr_t *err)
{
	return validate_doc(data, avail, doc_len, 0, NULL, err);
}

/* ---- parsing ------------------------------------------------------------ */

void
wire_request_clear(wire_request_t *req)
{
	if (req->have_cmd)
		bson_destroy(&req->cmd);
	req->have_cmd = false;
	req->db = NULL;
	req->seq_names[0] = req->seq_names[1] = NULL;
	bson_free(req->own_db);
	req->own_db = NULL;
	bson_free(req->own_bytes);
	req->own_bytes = NULL;
}

static const char *const op_query_allowed[] = {
	"hello", "isMaster", "ismaster",
	/* still answered over OP_QUERY by mongod for old drivers' handshakes */
	"saslStart", "saslContinue", "authenticate", "getnonce", "buildinfo", "buildInfo",
	NULL,
};

bool
wire_op_query_allowed(const char *name)
{
	const char *const *p;

	for (p = op_query_allowed; *p != NULL; p++)
		if (strcmp(*p, name) == 0)
			return true;
	return false;
}

typedef struct seq {
	const char *name;
	const uint8_t *docs;   /* first document */
	size_t len;            /* bytes of documents */
} seq_t;

/* Copy body and append each sequence as an array field. */
static int
fold_sequences(const bson_t *body, const seq_t *seqs, int nseq, bson_t *out, terr_t *err)
{
	bson_iter_t it;
	int i;

	for (i = 0; i < nseq; i++) {
		if (bson_iter_init(&it, body) && bson_iter_find(&it, seqs[i].name))
			return terr_set(err, 40433, "Duplicate field between body and document sequence %s",
			    seqs[i].name);
		if (strchr(seqs[i].name, '.') != NULL || seqs[i].name[0] == '\0')
			return terr_set(err, TERR_BAD_VALUE, "Invalid document sequence identifier '%s'",
			    seqs[i].name);
	}
	bson_copy_to(body, out);
	for (i = 0; i < nseq; i++) {
		bson_t arr;
		const uint8_t *p = seqs[i].docs, *end = seqs[i].docs + seqs[i].len;
		uint32_t idx = 0;
		char key[16];
		const char *k;

		bson_append_array_begin(out, seqs[i].name, -1, &arr);
		while (p < end) {
			int32_t dlen = rd_i32(p);   /* validated already */
			bson_t doc;
			bson_init_static(&doc, p, (size_t)dlen);
			bson_uint32_to_string(idx++, &k, key, sizeof(key));
			bson_append_document(&arr, k, -1, &doc);
			p += dlen;
		}
		bson_append_array_end(out, &arr);
	}
	return 0;
}

static int
parse_op_msg(const uint8_t *msg, size_t len, wire_request_t *req, terr_t *err)
{
	const uint8_t *p = msg + WIRE_HEADER_LEN, *end = msg + len;
	const uint8_t *body_ptr = NULL;
	uint32_t body_len = 0, dlen;
	seq_t seqs[2];
	int nseq = 0, i;
	top_fields_t top = {0, 0};
	bson_t body;
	bson_iter_t it;

	if (end - p < 4)
		return terr_set(err, TERR_PROTOCOL_ERROR, "OP_MSG is too short to hold its flags");
	req->flags = (uint32_t)rd_i32(p);
	p += 4;
	if ((req->flags & ~(uint32_t)(WIRE_MSG_CHECKSUM | WIRE_MSG_MORE_TO_COME)) & 0xffffu) {
		char bits[33];
		for (i = 0; i < 32; i++)
			bits[i] = (req->flags >> (31 - i)) & 1 ? '1' : '0';
		bits[32] = '\0';
		return terr_set(err, WIRE_ERR_ILLEGAL_OP_MSG_FLAG,
		    "Message contains illegal flags value: Ob%s", bits);
	}
	if (req->flags & WIRE_MSG_CHECKSUM) {
		if (end - p < 4)
			return terr_set(err, TERR_PROTOCOL_ERROR, "OP_MSG is too short to hold its checksum");
		end -= 4;
		if ((uint32_t)rd_i32(end) != wire_crc32c(msg, len - 4))
			return terr_set(err, WIRE_ERR_CHECKSUM_MISMATCH, "OP_MSG checksum does not match contents");
	}
	while (p < end) {
		uint8_t kind = *p++;
		if (kind == 0) {
			if (body_ptr != NULL)
				return terr_set(err, 40430, "Multiple body sections in message");
			if (validate_doc(p, (size_t)(end - p), &body_len, 0, &top, err) != 0)
				return -1;
			body_ptr = p;
			p += body_len;
		} else if (kind == 1) {
			int32_t size;
			const uint8_t *send;
			ssize_t nlen;
			if (nseq >= 2)
				return terr_set(err, WIRE_ERR_TOO_MANY_DOCUMENT_SEQUENCES,
				    "Too many document sequences in OP_MSG");
			if (end - p < 4)
				return terr_set(err, TERR_PROTOCOL_ERROR, "Truncated document sequence");
			size = rd_i32(p);
			if (size < 5 || size > end - p)
				return terr_set(err, TERR_PROTOCOL_ERROR, "Invalid document sequence size %d", size);
			send = p + size;
			p += 4;
			nlen = cstr_len(p, send);
			if (nlen < 0)
				return terr_set(err, TERR_PROTOCOL_ERROR, "Document sequence identifier is not terminated");
			seqs[nseq].name = (const char *)p;
			for (i = 0; i < nseq; i++)
				if (strcmp(seqs[i].name, seqs[nseq].name) == 0)
					return terr_set(err, 40431, "Duplicate document sequence: %s", seqs[nseq].name);
			p += nlen + 1;
			seqs[nseq].docs = p;
			seqs[nseq].len = (size_t)(send - p);
			while (p < send) {
				if (wire_bson_validate(p, (size_t)(send - p), &dlen, err) != 0)
					return -1;
				p += dlen;
			}
			nseq++;
		} else {
			return terr_set(err, 40432, "Unknown section kind %u", (unsigned)kind);
		}
	}
	if (body_ptr == NULL)
		return terr_set(err, 40587, "OP_MSG messages must have a body");
	if (!bson_init_static(&body, body_ptr, body_len))
		return bad_bson(err, "body");
	if (top.db == 0 || !bson_iter_init_from_data_at_offset(&it, body_ptr, body_len, top.db, 3))
		return terr_set(err, 40571, "OP_MSG requests require a $db argument");
	if (!BSON_ITER_HOLDS_UTF8(&it))
		return terr_set(err, TERR_TYPE_MISMATCH, "BSON field '$db' is the wrong type '%s', expected type 'string'",
		    bson_iter_type(&it) == BSON_TYPE_INT32 ? "int" : "non-string");
	if (nseq == 0) {
		bson_init_static(&req->cmd, body_ptr, body_len);   /* the body where it lies */
	} else if (fold_sequences(&body, seqs, nseq, &req->cmd, err) != 0) {
		return -1;
	}
	req->have_cmd = true;
	/* a fold keeps the body's bytes first, the sequences go after them, so
	 * the body's offsets hold in cmd: $db's string follows its type byte,
	 * "$db\0" and its int32 length */
	req->db = (const char *)bson_get_data(&req->cmd) + top.db + 1 + 4 + 4;
	req->lsid_off = top.lsid;
	req->nsequences = nseq;
	for (i = 0; i < nseq; i++)
		req->seq_names[i] = seqs[i].name;
	return 0;
}

static int
parse_op_query(const uint8_t *msg, size_t len, wire_request_t *req, terr_t *err)
{
	const uint8_t *p = msg + WIRE_HEADER_LEN, *end = msg + len;
	const char *ns, *dot;
	ssize_t nslen;
	uint32_t qlen, flen;
	bson_t q, inner;
	bson_iter_t it;
	const char *name;

	if (end - p < 4)
		return terr_set(err, TERR_PROTOCOL_ERROR, "OP_QUERY is too short");
	req->flags = (uint32_t)rd_i32(p);
	p += 4;
	nslen = cstr_len(p, end);
	if (nslen < 0)
		return terr_set(err, TERR_PROTOCOL_ERROR, "OP_QUERY namespace is not terminated");
	ns = (const char *)p;
	p += nslen + 1;
	if (end - p < 8)
		return terr_set(err, TERR_PROTOCOL_ERROR, "OP_QUERY is too short");
	p += 8;   /* numberToSkip, numberToReturn */
	if (wire_bson_validate(p, (size_t)(end - p), &qlen, err) != 0)
		return -1;
	if ((size_t)(end - p) > qlen &&
	    wire_bson_validate(p + qlen, (size_t)(end - p - qlen), &flen, err) != 0)
		return -1;
	bson_init_static(&q, p, qlen);
	/* {$query: {...}, $readPreference: ...} wraps the command */
	if (bson_iter_init(&it, &q) && bson_iter_next(&it) &&
	    (strcmp(bson_iter_key(&it), "$query") == 0 || strcmp(bson_iter_key(&it), "query") == 0) &&
	    BSON_ITER_HOLDS_DOCUMENT(&it)) {
		const uint8_t *d;
		uint32_t dl;
		bson_iter_document(&it, &dl, &d);
		bson_init_static(&inner, d, dl);
	} else {
		bson_init_static(&inner, p, qlen);
	}
	dot = strchr(ns, '.');
	name = bson_iter_init(&it, &inner) && bson_iter_next(&it) ? bson_iter_key(&it) : "";
	if (dot == NULL || strcmp(dot, ".$cmd") != 0 || !wire_op_query_allowed(name))
		return terr_set(err, WIRE_ERR_UNSUPPORTED_OP_QUERY,
		    "Unsupported OP_QUERY command: %s. The client driver may require an upgrade. "
		    "For more details see https://dochub.mongodb.org/core/legacy-opcode-removal",
		    dot != NULL && strcmp(dot, ".$cmd") == 0 ? name : "find");
	req->own_db = bson_strndup(ns, (size_t)(dot - ns));
	req->db = req->own_db;
	bson_copy_to(&inner, &req->cmd);
	req->have_cmd = true;
	if (bson_iter_init_find(&it, &req->cmd, "lsid"))
		req->lsid_off = bson_iter_offset(&it);
	return 0;
}

static int
parse_plain(const uint8_t *msg, size_t len, wire_request_t *req, terr_t *err)
{
	req->opcode = rd_i32(msg + 12);
	if (req->opcode == WIRE_OP_MSG)
		return parse_op_msg(msg, len, req, err);
	if (req->opcode == WIRE_OP_QUERY)
		return parse_op_query(msg, len, req, err);
	req->fatal = true;
	return terr_set(err, TERR_PROTOCOL_ERROR, "Unsupported opcode %d", req->opcode);
}

int
wire_request_parse(const uint8_t *msg, size_t len, wire_request_t *req, terr_t *err)
{
	const wire_compressor_t *c;
	int32_t orig_op, usize;
	uint8_t *buf = NULL;
	int ret = 0;

	memset(req, 0, sizeof(*req));
	req->compressor = WIRE_COMPRESSOR_NONE;
	req->fatal = true;
	if (len < WIRE_HEADER_LEN)
		return terr_set(err, TERR_PROTOCOL_ERROR, "message is shorter than its header");
	if (wire_header_read(msg, &req->header, err) != 0)
		return -1;
	if ((size_t)req->header.length != len)
		return terr_set(err, TERR_PROTOCOL_ERROR, "message length %d does not match the %zu bytes received",
		    req->header.length, len);
	req->opcode = req->header.opcode;
	if (req->header.opcode != WIRE_OP_COMPRESSED) {
		req->fatal = false;
		ret = parse_plain(msg, len, req, err);
		return ret;
	}
	/* OP_COMPRESSED: originalOpcode, uncompressedSize, compressorId, data */
	if (len < WIRE_HEADER_LEN + 9)
		return terr_set(err, TERR_PROTOCOL_ERROR, "OP_COMPRESSED message is too short");
	orig_op = rd_i32(msg + 16);
	usize = rd_i32(msg + 20);
	req->opcode = orig_op;
	if (orig_op == WIRE_OP_COMPRESSED)
		return terr_set(err, TERR_PROTOCOL_ERROR, "Cannot compress an OP_COMPRESSED message");
	if (usize < 0 || usize > TAMGA_MAX_MESSAGE_SIZE - WIRE_HEADER_LEN)
		return terr_set(err, TERR_BAD_VALUE, "Decompressed message would be larger than maximum message size");
	c = wire_compressor_by_id(msg[24]);
	if (c == NULL)
		return terr_set(err, TERR_INTERNAL_ERROR,
		    "Compression algorithm specified in message is not available");
	buf = bson_malloc((size_t)usize + WIRE_HEADER_LEN);
	if (c->decompress(msg + 25, len - 25, buf + WIRE_HEADER_LEN, (size_t)usize) != 0) {
		ret = terr_set(err, TERR_BAD_VALUE, "Decompressing message returned less data than expected");
		goto err;
	}
	wr_i32(buf, usize + WIRE_HEADER_LEN);
	wr_i32(buf + 4, req->header.request_id);
	wr_i32(buf + 8, req->header.response_to);
	wr_i32(buf + 12, orig_op);
	req->compressor = c->id;
	req->fatal = false;
	req->own_bytes = buf;   /* what the request points into, freed with it */
	return parse_plain(buf, (size_t)usize + WIRE_HEADER_LEN, req, err);
err:
	bson_free(buf);
	return ret;
}

/* ---- building ----------------------------------------------------------- */

static void
header_write(uint8_t *p, int32_t len, int32_t request_id, int32_t response_to, int32_t op)
{
	wr_i32(p, len);
	wr_i32(p + 4, request_id);
	wr_i32(p + 8, response_to);
	wr_i32(p + 12, op);
}

/* Wrap the uncompressed message msg (header included) in OP_COMPRESSED. */
static int
compress_msg(uint8_t *msg, size_t len, uint8_t compressor, wire_buf_t *out, terr_t *err)
{
	const wire_compressor_t *c = wire_compressor_by_id(compressor);
	uint8_t *z = NULL, *res;
	size_t zlen = 0;

	if (c == NULL)
		return terr_set(err, TERR_INTERNAL_ERROR, "compressor %u is not available", compressor);
	if (c->compress(msg + WIRE_HEADER_LEN, len - WIRE_HEADER_LEN, &z, &zlen) != 0)
		return terr_set(err, TERR_INTERNAL_ERROR, "%s compression failed", c->name);
	res = bson_malloc(WIRE_HEADER_LEN + 9 + zlen);
	header_write(res, (int32_t)(WIRE_HEADER_LEN + 9 + zlen), rd_i32(msg + 4), rd_i32(msg + 8),
	    WIRE_OP_COMPRESSED);
	wr_i32(res + 16, rd_i32(msg + 12));
	wr_i32(res + 20, (int32_t)(len - WIRE_HEADER_LEN));
	res[24] = c->id;
	memcpy(res + 25, z, zlen);
	bson_free(z);
	out->data = res;
	out->len = WIRE_HEADER_LEN + 9 + zlen;
	return 0;
}

int
wire_msg_build(int32_t request_id, int32_t response_to, uint32_t flags, const bson_t *body,
               uint8_t compressor, wire_buf_t *out, terr_t *err)
{
	size_t len = WIRE_HEADER_LEN + 4 + 1 + body->len + ((flags & WIRE_MSG_CHECKSUM) ? 4 : 0);
	uint8_t *m = bson_malloc(len);
	int ret;

	out->data = NULL;
	out->len = 0;
	header_write(m, (int32_t)len, request_id, response_to, WIRE_OP_MSG);
	wr_i32(m + 16, (int32_t)flags);
	m[20] = 0;
	memcpy(m + 21, bson_get_data(body), body->len);
	if (flags & WIRE_MSG_CHECKSUM)
		wr_i32(m + len - 4, (int32_t)wire_crc32c(m, len - 4));
	if (compressor == WIRE_COMPRESSOR_NONE) {
		out->data = m;
		out->len = len;
		return 0;
	}
	ret = compress_msg(m, len, compressor, out, err);
	bson_free(m);
	return ret;
}

int
wire_reply_build(int32_t request_id, int32_t response_to, const bson_t *doc, bool query_failure,
                 wire_buf_t *out, terr_t *err)
{
	size_t len = WIRE_HEADER_LEN + 20 + doc->len;
	uint8_t *m = bson_malloc0(len);

	header_write(m, (int32_t)len, request_id, response_to, WIRE_OP_REPLY);
	wr_i32(m + 16, query_failure ? 2 : 0);   /* responseFlags */
	/* cursorID (8 bytes) and startingFrom stay 0 */
	wr_i32(m + 32, 1);                        /* numberReturned */
	memcpy(m + 36, bson_get_data(doc), doc->len);
	out->data = m;
	out->len = len;
	return 0;
}

static const struct {
	int code;
	const char *name;
} wire_code_names[] = {
	{WIRE_ERR_ILLEGAL_OP_MSG_FLAG, "IllegalOpMsgFlag"},
	{WIRE_ERR_TOO_MANY_DOCUMENT_SEQUENCES, "TooManyDocumentSequences"},
	{WIRE_ERR_CHECKSUM_MISMATCH, "ChecksumMismatch"},
	{WIRE_ERR_UNSUPPORTED_OP_QUERY, "UnsupportedOpQueryCommand"},
};

void
wire_error_doc(bson_t *doc, const terr_t *err)
{
	char buf[32];
	const char *name = NULL;
	size_t i;

	for (i = 0; i < sizeof(wire_code_names) / sizeof(wire_code_names[0]); i++)
		if (wire_code_names[i].code == err->code)
			name = wire_code_names[i].name;
	if (name == NULL)
		name = terr_code_name(err->code, buf);
	bson_init(doc);
	BSON_APPEND_DOUBLE(doc, "ok", 0.0);
	BSON_APPEND_UTF8(doc, "errmsg", err->msg ? err->msg : "");
	BSON_APPEND_INT32(doc, "code", err->code);
	BSON_APPEND_UTF8(doc, "codeName", name);
}
