/*
 * wire.h -- the MongoDB wire protocol as pure functions on byte buffers.
 *
 * Parsing turns one whole message (header included) into a wire_request_t:
 * OP_COMPRESSED is undone first, OP_MSG sections are checked (flag bits,
 * CRC-32C checksum, one body, at most two document sequences, each BSON
 * document validated with a depth limit) and the kind-1 sequences folded into
 * the command body as arrays; OP_QUERY is accepted only for the legacy
 * handshake commands.  Building writes OP_MSG / OP_REPLY replies, compressed
 * and checksummed on request.
 *
 * Nothing here touches a socket, a thread or the engine, so the fuzzer and
 * the unit tests call it directly.  Sockets and dispatch are in conn.c.
 */
#ifndef TAMGA_SERVER_WIRE_H
#define TAMGA_SERVER_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <bson/bson.h>

#include "common/error.h"

#define WIRE_HEADER_LEN 16

/* Opcodes (mongod's names). */
enum {
	WIRE_OP_REPLY = 1,
	WIRE_OP_UPDATE = 2001,
	WIRE_OP_INSERT = 2002,
	WIRE_OP_QUERY = 2004,
	WIRE_OP_GET_MORE = 2005,
	WIRE_OP_DELETE = 2006,
	WIRE_OP_KILL_CURSORS = 2007,
	WIRE_OP_COMPRESSED = 2012,
	WIRE_OP_MSG = 2013,
};

/* OP_MSG flagBits. */
enum {
	WIRE_MSG_CHECKSUM = 1u << 0,
	WIRE_MSG_MORE_TO_COME = 1u << 1,
	WIRE_MSG_EXHAUST_ALLOWED = 1u << 16,
};

/* Compressor ids (OP_COMPRESSED compressorId). */
enum {
	WIRE_COMPRESSOR_NOOP = 0,
	WIRE_COMPRESSOR_SNAPPY = 1,
	WIRE_COMPRESSOR_ZLIB = 2,
	WIRE_COMPRESSOR_ZSTD = 3,
	WIRE_COMPRESSOR_NONE = 255,   /* "not compressed" in wire_request_t */
};

/* Protocol error codes mongod uses that common/error.h does not list. */
enum {
	WIRE_ERR_ILLEGAL_OP_MSG_FLAG = 223,
	WIRE_ERR_TOO_MANY_DOCUMENT_SEQUENCES = 233,
	WIRE_ERR_CHECKSUM_MISMATCH = 288,
	WIRE_ERR_UNSUPPORTED_OP_QUERY = 352,
};

typedef struct wire_header {
	int32_t length;
	int32_t request_id;
	int32_t response_to;
	int32_t opcode;
} wire_header_t;

/*
 * Read the 16-byte header at buf (which must hold WIRE_HEADER_LEN bytes).
 * Returns 0, or -1 with 17 ProtocolError when the length is outside
 * [WIRE_HEADER_LEN, 48000000]: the caller cannot frame the stream any more
 * and must close the connection.
 */
int wire_header_read(const uint8_t *buf, wire_header_t *h, terr_t *err);

typedef struct wire_request {
	wire_header_t header;      /* as received (opcode may be OP_COMPRESSED) */
	int32_t opcode;            /* after decompression: OP_MSG or OP_QUERY */
	uint8_t compressor;        /* WIRE_COMPRESSOR_NONE, or the id the request used */
	uint32_t flags;            /* OP_MSG flagBits, or OP_QUERY flags */
	bson_t cmd;                /* the command, sequences folded in (see below for its bytes) */
	bool have_cmd;             /* cmd is initialised (free with wire_request_clear) */
	uint32_t lsid_off;         /* offset in cmd of its top-level lsid element, 0 = none
	                              (bson_iter_init_from_data_at_offset, key length 4) */
	const char *db;            /* $db (in cmd's bytes), or the db of OP_QUERY's "<db>.$cmd" */
	int nsequences;            /* kind-1 sections folded into cmd */
	const char *seq_names[2];  /* their identifiers (in the message's bytes) */
	uint8_t *own_bytes;        /* internal: a decompressed message the fields point into */
	char *own_db;              /* internal: OP_QUERY's db */
	/*
	 * When parsing fails: fatal means the stream can no longer be trusted
	 * (bad framing, undecompressable payload, unknown opcode) and the
	 * connection must be closed; otherwise an error reply is sent in the
	 * request's protocol (unless moreToCome).
	 */
	bool fatal;
} wire_request_t;

/*
 * Parse one whole message msg[0..len) (len == header length).  On success
 * returns 0 and fills req (release with wire_request_clear).  req borrows
 * msg: an OP_MSG's cmd is the body where it lies (no copy) unless document
 * sequences had to be folded into it, and db and seq_names point into the
 * message, so msg must stay valid and unchanged until wire_request_clear.
 * On failure returns -1 with err set (mongod's code and message) and
 * req->header, req->opcode, req->flags and req->fatal filled as far as they
 * were read; req must still be cleared.  Never reads outside msg.
 */
int wire_request_parse(const uint8_t *msg, size_t len, wire_request_t *req, terr_t *err);
void wire_request_clear(wire_request_t *req);

/* True when cmd (from OP_QUERY) is one mongod still answers over OP_QUERY
 * (the hello/isMaster handshake and a few auth commands). */
bool wire_op_query_allowed(const char *cmd_name);

/* A reply under construction: bytes owned by the caller (bson_free). */
typedef struct wire_buf {
	uint8_t *data;
	size_t len;
} wire_buf_t;

/*
 * Build an OP_MSG reply carrying body as its kind-0 section.  flags may hold
 * WIRE_MSG_CHECKSUM (a CRC-32C is appended) and WIRE_MSG_MORE_TO_COME
 * (exhaust).  compressor: WIRE_COMPRESSOR_NONE or an available id; the
 * checksum, when asked for, covers the uncompressed message as mongod does
 * (it is computed before compression).  Returns 0, or -1 with err.
 */
int wire_msg_build(int32_t request_id, int32_t response_to, uint32_t flags, const bson_t *body,
                   uint8_t compressor, wire_buf_t *out, terr_t *err);

/* Build an OP_REPLY (for OP_QUERY) with one document; responseFlags 0 (or
 * QueryFailure (2) when query_failure). Never compressed: the handshake
 * happens before compression is negotiated. */
int wire_reply_build(int32_t request_id, int32_t response_to, const bson_t *doc,
                     bool query_failure, wire_buf_t *out, terr_t *err);

/* {ok: 0, errmsg, code, codeName} as mongod writes it, for protocol errors
 * (codeName known for the codes above and common/error.h). doc must be
 * uninitialised. */
void wire_error_doc(bson_t *doc, const terr_t *err);

/* ---- BSON validation ---------------------------------------------------- */

/* Structural check of one BSON document at data[0..avail): its length fits,
 * every element's type and length are valid, nesting at most 200 deep
 * (iteratively bounded, so hostile input cannot exhaust the stack).
 * Returns 0 and *doc_len, or -1 with 22 InvalidBSON. */
int wire_bson_validate(const uint8_t *data, size_t avail, uint32_t *doc_len, terr_t *err);

/* ---- compressors (compress.c) ------------------------------------------ */

typedef struct wire_compressor {
	const char *name;          /* "snappy", "zstd", "zlib", "noop" */
	uint8_t id;
	/* out is a bson_malloc'ed buffer; returns 0 or -1 */
	int (*compress)(const uint8_t *in, size_t in_len, uint8_t **out, size_t *out_len);
	/* decompress exactly out_len bytes into out; returns 0 or -1 */
	int (*decompress)(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len);
} wire_compressor_t;

/* Available compressors by id/name, NULL when not built in. */
const wire_compressor_t *wire_compressor_by_id(uint8_t id);
const wire_compressor_t *wire_compressor_by_name(const char *name);

/*
 * One connection's compression state, as mongod's MessageCompressorManager:
 * what hello negotiated (in the client's order) and which compressor ids an
 * incoming OP_COMPRESSED may use.  Zero-initialise it per connection.
 */
typedef struct wire_compression {
	uint8_t ids[8];            /* negotiated compressors, client's order */
	int n;
	bool engaged;              /* permits below apply (after the first hello) */
	bool permitted[256];
} wire_compression_t;

/*
 * hello's negotiation on connection state st.  When the hello lists
 * `compression`, the result is the client's names that the server has
 * enabled (comma-separated like mongod's --networkMessageCompressors;
 * "disabled" or "" for none), in the client's order; later messages may then
 * use any enabled compressor.  Without the field, the earlier result is
 * repeated, or (none yet) compressed messages are refused from then on.
 * Appends `compression: [...]` to reply only when the result is not empty.
 */
void wire_compression_hello(wire_compression_t *st, const bson_t *hello, const char *enabled, bson_t *reply);

/* May a message compressed with id arrive on this connection? */
bool wire_compression_permitted(const wire_compression_t *st, uint8_t id);

/* ---- CRC-32C ------------------------------------------------------------ */
uint32_t wire_crc32c(const void *data, size_t len);

#endif
