/*
 * fuzz_wire.c -- libFuzzer target for the wire protocol parser: framing,
 * OP_MSG sections and flags, checksums, OP_COMPRESSED with every codec,
 * OP_QUERY, and BSON validation (src/server/wire.c, compress.c).
 *
 * Invariants checked beyond "no crash": a message that parses re-encodes
 * (with each compressor, with a checksum) and parses back to the same
 * command; a document the validator accepts is safe for libbson to walk.
 *
 * Built two ways: with -fsanitize=fuzzer (make fuzz), and with
 * FUZZ_REPLAY_MAIN as a plain program that runs files or directories given
 * on the command line (the seed-corpus regression test of the normal build).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/wire.h"

static void
check_roundtrip(const wire_request_t *req)
{
	static const uint8_t comps[] = {WIRE_COMPRESSOR_NONE, WIRE_COMPRESSOR_NOOP, WIRE_COMPRESSOR_ZLIB,
		WIRE_COMPRESSOR_ZSTD, WIRE_COMPRESSOR_SNAPPY};
	size_t i;

	for (i = 0; i < sizeof(comps); i++) {
		wire_buf_t out;
		wire_request_t back;
		terr_t err = TERR_INIT;
		if (comps[i] != WIRE_COMPRESSOR_NONE && wire_compressor_by_id(comps[i]) == NULL)
			continue;
		if (wire_msg_build(1, 0, WIRE_MSG_CHECKSUM, &req->cmd, comps[i], &out, &err) != 0) {
			terr_clear(&err);
			continue;
		}
		if (wire_request_parse(out.data, out.len, &back, &err) != 0) {
			/* only a re-encoding that grew past the size limits may fail */
			if (out.len <= 16 * 1024 * 1024) {
				fprintf(stderr, "round trip failed: %d %s\n", err.code, err.msg);
				abort();
			}
		} else if (!bson_equal(&back.cmd, &req->cmd)) {
			fprintf(stderr, "round trip changed the command\n");
			abort();
		}
		wire_request_clear(&back);
		terr_clear(&err);
		bson_free(out.data);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	wire_request_t req;
	terr_t err = TERR_INIT;
	uint8_t *msg;
	uint32_t dlen;

	/* the bytes as a BSON document */
	if (wire_bson_validate(data, size, &dlen, &err) == 0) {
		bson_t doc;
		if (bson_init_static(&doc, data, dlen)) {
			char *j = bson_as_relaxed_extended_json(&doc, NULL);
			bson_free(j);
		}
	}
	terr_clear(&err);

	/* the bytes as a message, with the length field forced to match the
	 * buffer so the fuzzer explores past framing */
	if (size < WIRE_HEADER_LEN || size > 4 * 1024 * 1024)
		return 0;
	msg = malloc(size);
	memcpy(msg, data, size);
	msg[0] = (uint8_t)size;
	msg[1] = (uint8_t)(size >> 8);
	msg[2] = (uint8_t)(size >> 16);
	msg[3] = (uint8_t)(size >> 24);
	if (wire_request_parse(msg, size, &req, &err) == 0) {
		if (req.db == NULL || !req.have_cmd)
			abort();
		if (req.opcode == WIRE_OP_MSG)
			check_roundtrip(&req);
	} else if (err.code == 0 || err.msg == NULL) {
		abort();
	}
	wire_request_clear(&req);
	terr_clear(&err);
	/* and as sent: the header's own length must be rejected or exact */
	if (wire_request_parse(data, size, &req, &err) == 0 && (size_t)req.header.length != size)
		abort();
	wire_request_clear(&req);
	terr_clear(&err);
	free(msg);
	return 0;
}

#ifdef FUZZ_REPLAY_MAIN
#include "fuzz_replay_main.h"
#endif
