/*
 * compress.c -- OP_COMPRESSED codecs (noop, snappy, zlib, zstd) as one table,
 * hello's compression negotiation and each connection's permitted
 * compressors (as mongod's MessageCompressorManager), and CRC-32C for OP_MSG
 * checksums.
 *
 * Not here: framing (wire.c) or deciding when to compress (conn.c).
 */
#include "server/wire.h"

#include <string.h>
#include <wiredtiger.h>
#include <zlib.h>
#include <zstd.h>
#ifdef TAMGA_HAVE_SNAPPY
#include <snappy-c.h>
#endif

static int
noop_compress(const uint8_t *in, size_t in_len, uint8_t **out, size_t *out_len)
{
	*out = bson_malloc(in_len ? in_len : 1);
	memcpy(*out, in, in_len);
	*out_len = in_len;
	return 0;
}

static int
noop_decompress(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len)
{
	if (in_len != out_len)
		return -1;
	memcpy(out, in, in_len);
	return 0;
}

static int
zlib_compress(const uint8_t *in, size_t in_len, uint8_t **out, size_t *out_len)
{
	uLongf n = compressBound((uLong)in_len);

	*out = bson_malloc(n);
	/* mongod's zlib compressor uses the default level */
	if (compress2(*out, &n, in, (uLong)in_len, Z_DEFAULT_COMPRESSION) != Z_OK) {
		bson_free(*out);
		*out = NULL;
		return -1;
	}
	*out_len = n;
	return 0;
}

static int
zlib_decompress(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len)
{
	uLongf n = (uLongf)out_len;

	if (uncompress(out, &n, in, (uLong)in_len) != Z_OK || n != out_len)
		return -1;
	return 0;
}

static int
zstd_compress(const uint8_t *in, size_t in_len, uint8_t **out, size_t *out_len)
{
	size_t n = ZSTD_compressBound(in_len), r;

	*out = bson_malloc(n);
	r = ZSTD_compress(*out, n, in, in_len, ZSTD_CLEVEL_DEFAULT);
	if (ZSTD_isError(r)) {
		bson_free(*out);
		*out = NULL;
		return -1;
	}
	*out_len = r;
	return 0;
}

static int
zstd_decompress(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len)
{
	size_t r = ZSTD_decompress(out, out_len, in, in_len);

	if (ZSTD_isError(r) || r != out_len)
		return -1;
	return 0;
}

#ifdef TAMGA_HAVE_SNAPPY
static int
snappy_do_compress(const uint8_t *in, size_t in_len, uint8_t **out, size_t *out_len)
{
	size_t n = snappy_max_compressed_length(in_len);

	*out = bson_malloc(n);
	if (snappy_compress((const char *)in, in_len, (char *)*out, &n) != SNAPPY_OK) {
		bson_free(*out);
		*out = NULL;
		return -1;
	}
	*out_len = n;
	return 0;
}

static int
snappy_do_decompress(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len)
{
	size_t n = 0;

	if (snappy_uncompressed_length((const char *)in, in_len, &n) != SNAPPY_OK || n != out_len)
		return -1;
	if (snappy_uncompress((const char *)in, in_len, (char *)out, &n) != SNAPPY_OK || n != out_len)
		return -1;
	return 0;
}
#endif

static const wire_compressor_t compressors[] = {
	{"noop", WIRE_COMPRESSOR_NOOP, noop_compress, noop_decompress},
#ifdef TAMGA_HAVE_SNAPPY
	{"snappy", WIRE_COMPRESSOR_SNAPPY, snappy_do_compress, snappy_do_decompress},
#endif
	{"zlib", WIRE_COMPRESSOR_ZLIB, zlib_compress, zlib_decompress},
	{"zstd", WIRE_COMPRESSOR_ZSTD, zstd_compress, zstd_decompress},
};

#define NCOMPRESSORS (sizeof(compressors) / sizeof(compressors[0]))

const wire_compressor_t *
wire_compressor_by_id(uint8_t id)
{
	size_t i;

	for (i = 0; i < NCOMPRESSORS; i++)
		if (compressors[i].id == id)
			return &compressors[i];
	return NULL;
}

const wire_compressor_t *
wire_compressor_by_name(const char *name)
{
	size_t i;

	for (i = 0; i < NCOMPRESSORS; i++)
		if (strcmp(compressors[i].name, name) == 0)
			return &compressors[i];
	return NULL;
}

/* Is name one of the comma-separated entries of list? */
static bool
list_has(const char *list, const char *name)
{
	size_t n = strlen(name);
	const char *p = list;

	while (p != NULL && *p != '\0') {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		if (len == n && strncmp(p, name, n) == 0)
			return true;
		p = comma ? comma + 1 : NULL;
	}
	return false;
}

static void
append_negotiated(const wire_compression_t *st, bson_t *reply)
{
	bson_t out;
	char key[16];
	const char *k;
	int i;

	if (st->n == 0)
		return;
	bson_append_array_begin(reply, "compression", -1, &out);
	for (i = 0; i < st->n; i++) {
		bson_uint32_to_string((uint32_t)i, &k, key, sizeof(key));
		bson_append_utf8(&out, k, -1, wire_compressor_by_id(st->ids[i])->name, -1);
	}
	bson_append_array_end(reply, &out);
}

void
wire_compression_hello(wire_compression_t *st, const bson_t *hello, const char *enabled, bson_t *reply)
{
	bson_iter_t it, arr;
	size_t i;
	int k;

	if (enabled != NULL && strcmp(enabled, "disabled") == 0)
		enabled = "";
	if (!bson_iter_init_find(&it, hello, "compression") || !BSON_ITER_HOLDS_ARRAY(&it)) {
		/* only asking what was negotiated; nothing yet refuses compression */
		if (st->n == 0) {
			st->engaged = true;
			memset(st->permitted, 0, sizeof(st->permitted));
		}
		append_negotiated(st, reply);
		return;
	}
	st->n = 0;
	st->engaged = true;
	memset(st->permitted, 0, sizeof(st->permitted));
	for (i = 0; i < NCOMPRESSORS; i++)
		if (enabled != NULL && list_has(enabled, compressors[i].name))
			st->permitted[compressors[i].id] = true;
	if (bson_iter_recurse(&it, &arr)) {
		while (bson_iter_next(&arr) && st->n < (int)sizeof(st->ids)) {
			const wire_compressor_t *c;
			bool dup = false;
			if (!BSON_ITER_HOLDS_UTF8(&arr))
				continue;
			c = wire_compressor_by_name(bson_iter_utf8(&arr, NULL));
			if (c == NULL || !st->permitted[c->id])
				continue;
			for (k = 0; k < st->n; k++)
				dup = dup || st->ids[k] == c->id;
			if (!dup)
				st->ids[st->n++] = c->id;
		}
	}
	append_negotiated(st, reply);
}

bool
wire_compression_permitted(const wire_compression_t *st, uint8_t id)
{
	if (!st->engaged)
		return wire_compressor_by_id(id) != NULL;
	return st->permitted[id];
}

/* WiredTiger's CRC-32C (hardware-accelerated where the CPU has it), the
 * function mongod itself uses for OP_MSG checksums. */
uint32_t
wire_crc32c(const void *data, size_t len)
{
	static uint32_t (*cached)(const void *, size_t);
	uint32_t (*fn)(const void *, size_t) = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);

	if (fn == NULL) {
		fn = wiredtiger_crc32c_func();
		__atomic_store_n(&cached, fn, __ATOMIC_RELEASE);
	}
	return fn(data, len);
}
