/*
 * bsoncolumn.c -- the BSONColumn encoder and decoder (bsoncolumn.h).
 *
 * Facts of mongod's format (src/mongo/bson/column/), our own code:
 *  - Simple-8b words: the low 4 bits select how the other 60 are cut (1 x 60
 *    bits ... 60 x 1 bit); selectors 7 and 8 carry an extension nibble that
 *    stores each value's trailing zeros (counted in ones, or in nibbles) so
 *    wide values with zero low bits still fit; selector 15 repeats the last
 *    value 120 x (nibble + 1) times.  A slot of all ones is a missing value.
 *  - Deltas are zigzagged; dates, timestamps and ObjectIds take deltas of
 *    deltas.  ObjectIds are deltas of their timestamp and counter bytes
 *    (seven bytes, interleaved), the process-unique bytes stay the last
 *    value's.  Strings, code and BinData up to 16 bytes and Decimal128 are
 *    128-bit values (strings reversed), other types only repeat (delta 0).
 *  - A double is delta-encoded as round(x * 10^k) for the control byte's
 *    scale k in {0, 1, 2, 4, 8} when that gives x back bit for bit, else as
 *    its bit pattern (control 0x8); each control block rescales the last
 *    value, so the encoder only changes scale at a control byte.
 * The encoder sees a whole column (bsoncolumn_encode) or continues one
 * from the state an earlier append left (bsoncolumn_append, at the end of
 * this file: buckets are compressed from their first measurement).  Its
 * Simple-8b words are packed as mongod's builder packs
 * them; a double's scale (the smallest that holds it and the value before,
 * changed only at a new control block) and an interleaved run's reference
 * (the first object, the run ending at the first object that is not an
 * ordered subset of it) are our own choices -- valid for mongod's reader,
 * not always mongod's bytes.
 */
#include "timeseries/bsoncolumn.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned __int128 u128;

#define BC_MAX_ELEMS (1 << 24)  /* a column longer than this is refused (RLE can expand 8 bytes to 1,920) */
#define BC_MAX_OUT (64 << 20)   /* nor one whose values take more than 64 MiB decoded */
#define BC_MAX_DEPTH 100
#define BC_SKIP_RLE 120

/* ---- bytes ---------------------------------------------------------------------- */

typedef struct bbuf {
	uint8_t *p;
	size_t len, cap;
} bbuf_t;

static void
bb_reserve(bbuf_t *b, size_t more)
{
	if (b->len + more <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + more)
		cap *= 2;
	b->p = bson_realloc(b->p, cap);
	b->cap = cap;
}

static void
bb_put(bbuf_t *b, const void *d, size_t n)
{
	bb_reserve(b, n);
	if (n > 0)
		memcpy(b->p + b->len, d, n);
	b->len += n;
}

static void
bb_u8(bbuf_t *b, uint8_t v)
{
	bb_put(b, &v, 1);
}

static void
le64_put(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t
le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint32_t
le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void
le32_put(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static int
bc_err(terr_t *err, const char *what)
{
	return terr_set(err, TERR_BAD_VALUE, "Invalid BSONColumn encoding: %s", what);
}

/* The size of a BSON value of type t at p (avail bytes there), -1 when it
 * does not fit or is not a value type. */
static int64_t
value_size(uint8_t t, const uint8_t *p, size_t avail)
{
	int64_t n;

	switch (t) {
	case BSON_TYPE_DOUBLE: case BSON_TYPE_DATE_TIME: case BSON_TYPE_TIMESTAMP: case BSON_TYPE_INT64:
		n = 8;
		break;
	case BSON_TYPE_UTF8: case BSON_TYPE_CODE: case BSON_TYPE_SYMBOL:
		if (avail < 5)
			return -1;
		n = (int64_t)le32(p);
		if (n < 1 || (size_t)n + 4 > avail || p[4 + n - 1] != 0)
			return -1;
		return n + 4;
	case BSON_TYPE_DOCUMENT: case BSON_TYPE_ARRAY:
		if (avail < 5)
			return -1;
		n = (int64_t)le32(p);
		if (n < 5 || (size_t)n > avail || p[n - 1] != 0)
			return -1;
		return n;
	case BSON_TYPE_BINARY:
		if (avail < 5)
			return -1;
		n = (int64_t)le32(p) + 5;
		break;
	case BSON_TYPE_UNDEFINED: case BSON_TYPE_NULL: case BSON_TYPE_MINKEY: case BSON_TYPE_MAXKEY:
		n = 0;
		break;
	case BSON_TYPE_OID:
		n = 12;
		break;
	case BSON_TYPE_BOOL:
		n = 1;
		break;
	case BSON_TYPE_REGEX: {
		const uint8_t *a = memchr(p, 0, avail), *b;
		if (a == NULL)
			return -1;
		b = memchr(a + 1, 0, avail - (size_t)(a + 1 - p));
		if (b == NULL)
			return -1;
		return b + 1 - p;
	}
	case BSON_TYPE_DBPOINTER:
		if (avail < 5)
			return -1;
		n = (int64_t)le32(p);
		if (n < 1)
			return -1;
		n += 4 + 12;
		break;
	case BSON_TYPE_CODEWSCOPE:
		if (avail < 4)
			return -1;
		n = (int64_t)le32(p);
		if (n < 14)
			return -1;
		break;
	case BSON_TYPE_INT32:
		n = 4;
		break;
	case BSON_TYPE_DECIMAL128:
		n = 16;
		break;
	default:
		return -1;
	}
	return (size_t)n <= avail ? n : -1;
}

/* ---- value encodings (mongod's Simple8bTypeUtil) ---------------------------------- */

static const double kScale[5] = {1, 10, 100, 10000, 100000000};
#define SCALE_RAW 5

static uint64_t
dbl_bits(double d)
{
	uint64_t u;
	memcpy(&u, &d, 8);
	return u;
}

static bool
dbl_encode(double v, int scale, int64_t *out)
{
	if (scale == SCALE_RAW) {
		*out = (int64_t)dbl_bits(v);
		return true;
	}
	double x = v * kScale[scale];
	if (!(x >= -9007199254740992.0 && x <= 9007199254740992.0))
		return false;
	int64_t r = llround(x);
	if (dbl_bits((double)r / kScale[scale]) != dbl_bits(v))
		return false;
	*out = r;
	return true;
}

static double
dbl_decode(int64_t v, int scale)
{
	double d;
	if (scale == SCALE_RAW) {
		memcpy(&d, &v, 8);
		return d;
	}
	return (double)v / kScale[scale];
}

/* An ObjectId's timestamp and counter bytes as one integer. */
static int64_t
oid_encode(const uint8_t *o)
{
	uint8_t e[8] = {o[11], o[3], o[10], o[2], o[9], o[1], o[0], 0};
	return (int64_t)le64(e);
}

static void
oid_decode(int64_t v, const uint8_t *unique5, uint8_t *o)
{
	uint8_t e[8];
	le64_put(e, (uint64_t)v);
	o[0] = e[6];
	o[1] = e[5];
	o[2] = e[3];
	o[3] = e[1];
	memcpy(o + 4, unique5, 5);
	o[9] = e[4];
	o[10] = e[2];
	o[11] = e[0];
}

static u128
u128_of16(const uint8_t *a)
{
	return (u128)le64(a + 8) << 64 | le64(a);
}

/* A 128-bit type's integer (false: this value has none, only repeats). */
static bool
enc128(uint8_t t, const uint8_t *v, uint32_t vlen, u128 *out)
{
	uint8_t a[16] = {0};

	switch (t) {
	case BSON_TYPE_UTF8: case BSON_TYPE_CODE: {
		uint32_t n = vlen - 5;   /* without length and NUL */
		if (n > 16 || (n > 0 && v[4] == 0))
			return false;
		for (uint32_t i = 0; i < n; i++)
			a[i] = v[4 + n - 1 - i];
		break;
	}
	case BSON_TYPE_BINARY: {
		uint32_t n = vlen - 5;
		if (n > 16)
			return false;
		memcpy(a, v + 5, n);
		break;
	}
	case BSON_TYPE_DECIMAL128:
		memcpy(a, v, 16);
		break;
	default:
		return false;
	}
	*out = u128_of16(a);
	return true;
}

static bool
uses128(uint8_t t)
{
	return t == BSON_TYPE_DECIMAL128 || t == BSON_TYPE_BINARY || t == BSON_TYPE_UTF8 || t == BSON_TYPE_CODE;
}

static bool
uses_dod(uint8_t t)
{
	return t == BSON_TYPE_OID || t == BSON_TYPE_DATE_TIME || t == BSON_TYPE_TIMESTAMP;
}

/* A 64-bit type's integer (false: it only repeats; doubles are scaled apart). */
static bool
enc64(uint8_t t, const uint8_t *v, int64_t *out)
{
	switch (t) {
	case BSON_TYPE_OID:
		*out = oid_encode(v);
		return true;
	case BSON_TYPE_DATE_TIME: case BSON_TYPE_INT64: case BSON_TYPE_TIMESTAMP:
		*out = (int64_t)le64(v);
		return true;
	case BSON_TYPE_BOOL:
		*out = v[0] != 0;
		return true;
	case BSON_TYPE_INT32:
		*out = (int32_t)le32(v);
		return true;
	default:
		return false;
	}
}

static uint64_t
zz64(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static int64_t
unzz64(uint64_t u)
{
	return (int64_t)((u >> 1) ^ (~(u & 1) + 1));
}

static u128
zz128(u128 v)
{
	return (v << 1) ^ (u128)((__int128)v >> 127);
}

static u128
unzz128(u128 u)
{
	return (u >> 1) ^ (~(u & 1) + 1);
}

/* ---- Simple-8b ----------------------------------------------------------------- */

enum { EXT_BASE, EXT_SEVEN, EXT_EIGHT_S, EXT_EIGHT_L, EXT_N };

/* bits per value (without the trailing-zero field) and values per word, by
 * extension and selector (mongod's simple8b_helpers.h tables) */
static const uint8_t s8_bits[EXT_N][16] = {
	{0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 15, 20, 30, 60, 0},
	{0, 2, 3, 4, 5, 7, 10, 14, 24, 52, 0, 0, 0, 0, 0, 0},
	{0, 4, 5, 7, 10, 14, 24, 52, 0, 0, 0, 0, 0, 0, 0, 0},
	{0, 0, 0, 0, 0, 0, 0, 0, 4, 6, 9, 13, 23, 51, 0, 0},
};
static const uint8_t s8_ints[EXT_N][16] = {
	{0, 60, 30, 20, 15, 12, 10, 8, 7, 6, 5, 4, 3, 2, 1, 0},
	{0, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0, 0, 0, 0, 0},
	{0, 7, 6, 5, 4, 3, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0},
	{0, 0, 0, 0, 0, 0, 0, 0, 6, 5, 4, 3, 2, 1, 0, 0},
};
static const uint8_t s8_tzw[EXT_N] = {0, 4, 4, 5};     /* trailing-zero field width */
static const uint8_t s8_tzmul[EXT_N] = {0, 1, 4, 4};   /* zeros per unit of it */

static int
bitlen128(u128 v)
{
	uint64_t hi = (uint64_t)(v >> 64), lo = (uint64_t)v;
	if (hi)
		return 128 - __builtin_clzll(hi);
	return lo ? 64 - __builtin_clzll(lo) : 0;
}

static int
ctz128(u128 v)
{
	uint64_t hi = (uint64_t)(v >> 64), lo = (uint64_t)v;
	if (lo)
		return __builtin_ctzll(lo);
	return hi ? 64 + __builtin_ctzll(hi) : 0;
}

/*
 * Decode one (non-RLE) word: up to 60 values into v/sk.  Returns how many,
 * -1 for an invalid selector.  wide: 128-bit values (else a value past 64
 * bits is invalid).
 */
static int
s8_decode(uint64_t w, bool wide, u128 *v, bool *sk)
{
	unsigned sel = (unsigned)(w & 15), nib = (unsigned)((w >> 4) & 15), ext = EXT_BASE, idx = sel, start = 4;

	if (sel == 0 || sel == 15)
		return -1;
	if (sel == 7 || sel == 8) {
		start = 8;
		if (nib != 0) {
			if (sel == 7) {
				if (nib > 9)
					return -1;
				ext = EXT_SEVEN;
			} else {
				if (nib > 13)
					return -1;
				ext = nib <= 7 ? EXT_EIGHT_S : EXT_EIGHT_L;
			}
			idx = nib;
		}
	}
	unsigned bits = s8_bits[ext][idx], n = s8_ints[ext][idx], tzw = s8_tzw[ext], slot = bits + tzw;
	uint64_t m = slot >= 64 ? ~0ULL : (1ULL << slot) - 1;
	for (unsigned i = 0; i < n; i++) {
		uint64_t s = (w >> (start + i * slot)) & m;
		sk[i] = s == m;
		if (sk[i]) {
			v[i] = 0;
		} else if (ext == EXT_BASE) {
			v[i] = s;
		} else {
			unsigned sh = (unsigned)(s & ((1u << tzw) - 1)) * s8_tzmul[ext];
			u128 x = (u128)(s >> tzw);
			if (!wide && (sh >= 64 || bitlen128(x) + (int)sh > 64))
				return -1;
			v[i] = x << sh;
		}
	}
	return (int)n;
}

/* An encoder's slot: a value (zigzag delta) or a missing one, with the
 * meaningful bits it needs under each extension and the trailing zeros each
 * would strip (mongod's PendingValue). */
typedef struct slot {
	u128 v;
	bool skip, bad;           /* bad: no word holds it (a literal instead) */
	uint8_t bits[EXT_N], tz[EXT_N];
} slot_t;

/* Bits to hold v with the all-ones pattern (missing) kept free. */
static int
s8_bits_needed(u128 v)
{
	uint64_t hi = (uint64_t)(v >> 64), lo = (uint64_t)v;
	if (hi)
		return 128 - __builtin_clzll(hi);
	return lo == UINT64_MAX ? 65 : bitlen128((u128)lo + 1);
}

static void
slot_prepare(slot_t *s, bool wide)
{
	u128 v = s->v;
	int tzc, bits, tz7, tz8s, tz8l;

	memset(s->bits, 0, sizeof(s->bits));
	memset(s->tz, 0, sizeof(s->tz));
	s->bad = false;
	if (s->skip)
		return;
	if (v == 0) {   /* a repeat (or a delta of delta of 0): one bit everywhere */
		memset(s->bits, 1, sizeof(s->bits));
		return;
	}
	if ((!wide && v >= (u128)UINT64_MAX) || v == ~(u128)0) {
		s->bad = true;
		return;
	}
	tzc = v ? ctz128(v) : 0;
	bits = s8_bits_needed(v);
	tz7 = tzc < 15 ? tzc : 15;
	tz8s = (tzc < 60 ? tzc : 60) / 4 * 4;
	tz8l = (tzc < 124 ? tzc : 124) / 4 * 4;
	s->bits[EXT_BASE] = (uint8_t)bits;
	s->bits[EXT_SEVEN] = (uint8_t)(bits - tz7);
	s->bits[EXT_EIGHT_S] = (uint8_t)(bits - tz8s);
	s->bits[EXT_EIGHT_L] = (uint8_t)(bits - tz8l);
	/* a full trailing-zero field: one more bit, so the slot is never all ones */
	if (tzc == 15)
		s->bits[EXT_SEVEN] = (uint8_t)s8_bits_needed(v >> tzc);
	else if (tzc == 60)
		s->bits[EXT_EIGHT_S] = (uint8_t)s8_bits_needed(v >> tzc);
	if (wide && tzc == 124)
		s->bits[EXT_EIGHT_L] = (uint8_t)s8_bits_needed(v >> tzc);
	s->tz[EXT_SEVEN] = (uint8_t)tz7;
	s->tz[EXT_EIGHT_S] = (uint8_t)tz8s;
	s->tz[EXT_EIGHT_L] = (uint8_t)tz8l;
	s->bad = bits > 60 && s->bits[EXT_SEVEN] + 4 > 56 && s->bits[EXT_EIGHT_S] + 4 > 56 && s->bits[EXT_EIGHT_L] + 5 > 56;
}

/* One word of the first ints slots under extension ext, selector idx. */
static uint64_t
s8_word(const slot_t *s, int ext, int idx)
{
	int sel = ext == EXT_BASE ? idx : (ext == EXT_SEVEN ? 7 : 8);
	int start = (sel == 7 || sel == 8) ? 8 : 4, tzw = s8_tzw[ext], slotw = s8_bits[ext][idx] + tzw;
	uint64_t w = (uint64_t)sel, m = slotw >= 64 ? ~0ULL : (1ULL << slotw) - 1;

	if (ext != EXT_BASE)
		w |= (uint64_t)idx << 4;
	for (int j = 0; j < s8_ints[ext][idx]; j++) {
		uint64_t x;
		if (s[j].skip)
			x = m;
		else if (ext == EXT_BASE)
			x = (uint64_t)s[j].v;
		else
			x = (uint64_t)(s[j].tz[ext] / (s8_tzmul[ext])) | (uint64_t)(s[j].v >> s[j].tz[ext]) << tzw;
		w |= (x & m) << (start + j * slotw);
	}
	return w;
}

/* ---- encoded chunks ---------------------------------------------------------------- */

/* A stream's output: its bytes and its chunks (a literal, or a control byte
 * with its words), each with the number of elements it holds. */
typedef struct chunk {
	size_t off, len;
	uint32_t count;
} chunk_t;

/* A word of a control block, for an appender that may split the block
 * after it (track: the column's top-level output only). */
typedef struct wlog {
	size_t off;          /* the word's offset in the output */
	size_t ctl;          /* its block's control byte */
	int idx;             /* its index in the block */
	uint32_t count;      /* elements it holds */
	bool flush;          /* written by its run's end (values that were pending) */
	int run;             /* its run (run_write call) */
} wlog_t;

typedef struct sout {
	bbuf_t b;
	chunk_t *c;
	size_t n, cap;
	bool track;
	wlog_t *w;
	size_t nw, wcap;
	int runs;
	uint32_t end_rle;    /* repeats the last run ended with, past its RLE words (written as values) */
} sout_t;


static void
sout_chunk(sout_t *o, size_t off, uint32_t count)
{
	if (o->n == o->cap) {
		o->cap = o->cap ? o->cap * 2 : 16;
		o->c = bson_realloc(o->c, sizeof(*o->c) * o->cap);
	}
	o->c[o->n++] = (chunk_t){off, o->b.len - off, count};
}

static void
sout_free(sout_t *o)
{
	bson_free(o->b.p);
	bson_free(o->c);
	bson_free(o->w);
	memset(o, 0, sizeof(*o));
}

/* Write a control block of nw words (counts: the elements of each) to o. */
static void
sout_block(sout_t *o, uint8_t ctl, const uint64_t *words, const uint32_t *counts, const bool *fl, int nw)
{
	size_t off = o->b.len;
	uint32_t total = 0;

	bb_u8(&o->b, (uint8_t)(ctl | (nw - 1)));
	for (int k = 0; k < nw; k++) {
		uint8_t le[8];
		le64_put(le, words[k]);
		bb_put(&o->b, le, 8);
		total += counts[k];
		if (o->track) {
			if (o->nw == o->wcap) {
				o->wcap = o->wcap ? o->wcap * 2 : 32;
				o->w = bson_realloc(o->w, sizeof(*o->w) * o->wcap);
			}
			o->w[o->nw++] = (wlog_t){off + 1 + 8 * (size_t)k, off, k, counts[k], fl[k], o->runs};
		}
	}
	sout_chunk(o, off, total);
}

/*
 * The Simple-8b builder, as mongod's Simple8bBuilder decides: values are
 * kept pending while some extension (tried in the order base, 7, 8-small,
 * 8-large) holds them all; when the next one does not fit, the largest
 * word of the last extension that fitted is written; a value equal to the
 * last one of the word before (0 before any word) starts a run that
 * becomes RLE words past 120; missing values are all-ones slots.  Words go
 * out in control blocks of at most 16 behind the run's control byte.
 */
typedef struct s8b {
	sout_t *o;
	uint8_t ctl;
	uint64_t words[16];
	uint32_t wc[16];
	bool wf[16];
	bool flushing;               /* the run's end: words now written hold values that were pending */
	int nw;
	slot_t pend[64];
	int np;
	uint8_t curmax[EXT_N];
	bool possible[EXT_N];
	int last_ext;
	uint32_t rle;
	bool last_has;              /* the last value of the word before: a value (true) or missing */
	u128 last;
} s8b_t;

static const uint8_t s8_min_bits[EXT_N] = {1, 2, 4, 4};
static const uint8_t s8_data_bits[EXT_N] = {60, 56, 56, 56};
static const uint8_t s8_min_sel[EXT_N] = {1, 1, 1, 8};
static const uint8_t s8_max_sel[EXT_N] = {14, 9, 7, 13};

static void
s8b_emit(s8b_t *b, uint64_t w, uint32_t count)
{
	b->wc[b->nw] = count;
	b->wf[b->nw] = b->flushing && (w & 15) != 15;
	b->words[b->nw++] = w;
	if (b->nw == 16) {
		sout_block(b->o, b->ctl, b->words, b->wc, b->wf, 16);
		b->nw = 0;
	}
}

static void
s8b_reset_selectors(s8b_t *b)
{
	for (int t = 0; t < EXT_N; t++)
		b->possible[t] = true;
}

static bool
s8b_fits(s8b_t *b, const uint8_t *bits)
{
	for (int t = 0; t < EXT_N; t++) {
		if (!b->possible[t])
			continue;
		int need = ((bits[t] > b->curmax[t] ? bits[t] : b->curmax[t]) + s8_tzw[t]) * (b->np + 1);
		if (need > s8_data_bits[t]) {
			b->possible[t] = false;
			continue;
		}
		b->last_ext = t;
		return true;
	}
	return false;
}

static void
s8b_push(s8b_t *b, const slot_t *s)
{
	b->pend[b->np++] = *s;
	for (int t = 0; t < EXT_N; t++)
		if (s->bits[t] > b->curmax[t])
			b->curmax[t] = s->bits[t];
}

/* Write the largest word of extension ext the pending values fill. */
static void
s8b_word(s8b_t *b, int ext)
{
	int idx = s8_max_sel[ext], n;

	for (int i = s8_min_sel[ext]; i < s8_max_sel[ext]; i++)
		if (s8_ints[ext][i] <= b->np) {
			idx = i;
			break;
		}
	n = s8_ints[ext][idx];
	s8b_emit(b, s8_word(b->pend, ext, idx), (uint32_t)n);
	memmove(b->pend, b->pend + n, sizeof(*b->pend) * (size_t)(b->np - n));
	b->np -= n;
	memcpy(b->curmax, s8_min_bits, sizeof(b->curmax));
	for (int k = 0; k < b->np; k++)
		for (int t = 0; t < EXT_N; t++)
			if (b->pend[k].bits[t] > b->curmax[t])
				b->curmax[t] = b->pend[k].bits[t];
	s8b_reset_selectors(b);
}

static void
s8b_append_value(s8b_t *b, const slot_t *s, bool try_rle)
{
	if (s8b_fits(b, s->bits)) {
		s8b_push(b, s);
		return;
	}
	slot_t lastp = b->pend[b->np - 1];
	do
		s8b_word(b, b->last_ext);
	while (!s8b_fits(b, s->bits));
	if (try_rle && b->np == 0 && !lastp.skip && lastp.v == s->v) {
		b->rle = 1;
		b->last_has = true;
		b->last = lastp.v;
		b->last_ext = 0;
		s8b_reset_selectors(b);
	} else {
		s8b_push(b, s);
	}
}

static void
s8b_append_skip(s8b_t *b, bool try_rle)
{
	static const slot_t skip = {.skip = true};

	if (b->np > 0) {
		bool last_skip = b->pend[b->np - 1].skip;
		if (!s8b_fits(b, s8_min_bits)) {
			s8b_word(b, b->last_ext);
			b->last_ext = EXT_BASE;
		}
		if (b->np == 0 && last_skip && try_rle) {
			b->rle = 1;
			b->last_has = false;
			return;
		}
	}
	s8b_push(b, &skip);
}

/*
 * r repeats of slot s with nothing pending, in O(words): whole words of the
 * most copies a base selector holds, the rest left pending (they fit one
 * word).  False (nothing done) when no base selector holds s.
 */
static bool
s8b_repeats(s8b_t *b, const slot_t *s, uint32_t r)
{
	int need = s->skip ? s8_min_bits[EXT_BASE] : s->bits[EXT_BASE], idx = -1, k;

	if (s->bad)
		return false;
	for (int i = s8_min_sel[EXT_BASE]; i <= s8_max_sel[EXT_BASE]; i++)
		if (s8_bits[EXT_BASE][i] >= need) {
			idx = i;
			break;
		}
	if (idx < 0)
		return false;
	k = s8_ints[EXT_BASE][idx];
	if (r >= (uint32_t)k) {
		slot_t row[60];
		uint64_t w;
		for (int j = 0; j < k; j++)
			row[j] = *s;
		w = s8_word(row, EXT_BASE, idx);
		for (; r >= (uint32_t)k; r -= (uint32_t)k)
			s8b_emit(b, w, (uint32_t)k);
	}
	for (uint32_t j = 0; j < r; j++)
		b->pend[j] = *s;
	b->np = (int)r;
	memcpy(b->curmax, s8_min_bits, sizeof(b->curmax));
	if (r > 0)
		for (int t = 0; t < EXT_N; t++)
			if (s->bits[t] > b->curmax[t])
				b->curmax[t] = s->bits[t];
	s8b_reset_selectors(b);
	b->last_ext = EXT_BASE;
	return true;
}

static void
s8b_rle_end(s8b_t *b)
{
	uint32_t count = b->rle / BC_SKIP_RLE;

	while (count > 0) {
		uint32_t k = count > 16 ? 16 : count;
		s8b_emit(b, 15 | (uint64_t)(k - 1) << 4, k * BC_SKIP_RLE);
		b->rle -= k * BC_SKIP_RLE;
		count -= k;
	}
	if (b->rle > 0 && b->np == 0) {
		slot_t s = {.v = b->last, .skip = !b->last_has};
		slot_prepare(&s, true);
		if (s8b_repeats(b, &s, b->rle))
			b->rle = 0;
	}
	for (; b->rle > 0; b->rle--) {
		if (!b->last_has) {
			s8b_append_skip(b, false);
		} else {
			slot_t s = {.v = b->last};
			slot_prepare(&s, true);
			s8b_append_value(b, &s, false);
		}
	}
	b->last_has = true;
	b->last = 0;
	if (b->np == 0) {
		b->last_ext = 0;
		s8b_reset_selectors(b);
	}
}

static void
s8b_add(s8b_t *b, const slot_t *s)
{
	if (b->np == 0 || b->rle != 0) {
		if (s->skip ? !b->last_has : (b->last_has && b->last == s->v)) {
			b->rle++;
			b->last_ext = 0;
			s8b_reset_selectors(b);
			return;
		}
		s8b_rle_end(b);
	}
	if (s->skip)
		s8b_append_skip(b, true);
	else
		s8b_append_value(b, s, true);
}

/*
 * Write a run of slots (after a literal, or after the run before it in the
 * same reader state: last_has/last are the reader's last slot then) under
 * control byte ctl.  last_has and last get the run's last slot.
 */
static void
run_write(sout_t *o, const slot_t *s, size_t n, uint8_t ctl, bool *last_has, u128 *last, uint32_t carry)
{
	s8b_t sb, *b = &sb;   /* its word and pending arrays need no clearing */

	b->o = o;
	b->ctl = ctl;
	b->nw = 0;
	b->np = 0;
	b->flushing = false;
	b->last_ext = 0;
	b->rle = carry;       /* repeats of *last an appender left pending */
	b->last_has = *last_has;
	b->last = *last;
	memcpy(b->curmax, s8_min_bits, sizeof(b->curmax));
	s8b_reset_selectors(b);
	o->runs++;
	for (size_t i = 0; i < n; i++)
		s8b_add(b, &s[i]);
	b->flushing = true;
	o->end_rle = b->rle % BC_SKIP_RLE;
	s8b_rle_end(b);
	while (b->np > 0)
		s8b_word(b, b->last_ext);
	if (b->nw > 0)
		sout_block(o, ctl, b->words, b->wc, b->wf, b->nw);
	if (n > 0) {
		*last_has = !s[n - 1].skip;
		*last = s[n - 1].skip ? 0 : s[n - 1].v;
	}
}

/* ---- the regular-mode encoder -------------------------------------------------------- */

typedef struct elem {
	uint8_t type;        /* 0: missing */
	const uint8_t *v;    /* the value's bytes (borrowed) */
	uint32_t vlen;
} elem_t;

static bool
elem_same(const elem_t *a, const elem_t *b)
{
	return a->type == b->type && a->vlen == b->vlen && memcmp(a->v, b->v, a->vlen) == 0;
}

typedef struct senc {
	sout_t *o;
	elem_t prev;         /* the reader's last value (type 0: none) */
	int64_t penc, pdelta;
	u128 p128;
	bool p128_ok;
	/* the open run of slots (after the last literal) */
	slot_t *s;
	size_t ns, cap;
	int scale;           /* -1: not chosen yet (0x80 if never) */
	slot_t next;         /* the slot slot_ok prepared */
	bool wide;           /* the reader's state is 128-bit */
	bool rle_has;        /* the reader's last Simple-8b slot: a value (rle_last) or missing */
	u128 rle_last;
	bool last_lit;       /* the last element went out as a literal (else as the run's last slot) */
	uint32_t rle_carry;  /* repeats of rle_last pending before the first run (an appender's) */
} senc_t;

static void
senc_set_prev(senc_t *e, const elem_t *v)
{
	e->prev = *v;
	e->pdelta = 0;
	e->penc = 0;
	e->p128_ok = false;
	/* a literal (or a reference scalar) starts a new reader state: RLE repeats 0 */
	e->wide = uses128(v->type);
	e->rle_has = true;
	e->rle_last = 0;
	if (uses128(v->type))
		e->p128_ok = enc128(v->type, v->v, v->vlen, &e->p128);
	else
		(void)enc64(v->type, v->v, &e->penc);
}

static void
senc_flush(senc_t *e)
{
	static const uint8_t ctl[6] = {0x90, 0xA0, 0xB0, 0xC0, 0xD0, 0x80};
	if (e->ns > 0 && e->scale < 0 && e->prev.type == BSON_TYPE_DOUBLE) {
		/* only repeats and missing values after a double: its own smallest scale, as mongod */
		double pd;
		int64_t x;
		memcpy(&pd, e->prev.v, 8);
		for (e->scale = 0; e->scale < SCALE_RAW && !dbl_encode(pd, e->scale, &x); e->scale++)
			;
	}
	if (e->ns > 0 || e->rle_carry > 0)
		run_write(e->o, e->s, e->ns, ctl[e->scale < 0 ? SCALE_RAW : e->scale], &e->rle_has, &e->rle_last,
		    e->rle_carry);
	e->rle_carry = 0;
	e->ns = 0;
	e->scale = -1;
}

/* Append the slot last prepared by slot_ok (e->next), or a missing one. */
static void
senc_push(senc_t *e, bool skip)
{
	if (e->ns == e->cap) {
		e->cap = e->cap ? e->cap * 2 : 64;
		e->s = bson_realloc(e->s, sizeof(*e->s) * e->cap);
	}
	if (skip) {
		e->next = (slot_t){.skip = true};
		slot_prepare(&e->next, e->wide);
	}
	e->s[e->ns++] = e->next;
	e->last_lit = false;
}

static void
senc_literal(senc_t *e, const elem_t *v)
{
	senc_flush(e);
	size_t off = e->o->b.len;
	bb_u8(&e->o->b, v->type);
	bb_u8(&e->o->b, 0);
	bb_put(&e->o->b, v->v, v->vlen);
	sout_chunk(e->o, off, 1);
	senc_set_prev(e, v);
	e->last_lit = true;
}

/* Prepare v as the next slot (e->next): false when no word holds it. */
static bool
slot_ok(senc_t *e, u128 v)
{
	e->next = (slot_t){.v = v};
	slot_prepare(&e->next, e->wide);
	return !e->next.bad;
}

/* Append one element: a slot of the open run when the format has a delta
 * for it, else a literal. */
static void
senc_add(senc_t *e, const elem_t *v)
{
	const elem_t *p = &e->prev;

	if (v->type == 0) {
		senc_push(e, true);
		return;
	}
	if (p->type != v->type) {
		senc_literal(e, v);
		return;
	}
	if (uses128(v->type)) {
		u128 c;
		if (elem_same(p, v)) {
			(void)slot_ok(e, 0);
			senc_push(e, false);
			return;
		}
		/* as mongod: from the previous value's integer, or from 0 when it has none
		 * (a long string) -- but never a 0 then, which would read as a repeat */
		if (enc128(v->type, v->v, v->vlen, &c) && (e->p128_ok || c != 0) &&
		    (v->type != BSON_TYPE_BINARY || (p->vlen == v->vlen && p->v[4] == v->v[4]))) {
			if (!e->p128_ok)
				e->p128 = 0;
			if (slot_ok(e, zz128(c - e->p128))) {
				senc_push(e, false);
				e->prev = *v;
				e->p128 = c;
				e->p128_ok = true;
				return;
			}
		}
		senc_literal(e, v);
		return;
	}
	if (uses_dod(v->type)) {
		int64_t c, d, dd;
		(void)enc64(v->type, v->v, &c);
		if (v->type != BSON_TYPE_OID || memcmp(p->v + 4, v->v + 4, 5) == 0) {
			d = (int64_t)((uint64_t)c - (uint64_t)e->penc);
			dd = (int64_t)((uint64_t)d - (uint64_t)e->pdelta);
			if (slot_ok(e, zz64(dd))) {
				senc_push(e, false);
				e->prev = *v;
				e->penc = c;
				e->pdelta = d;
				return;
			}
		}
		senc_literal(e, v);
		return;
	}
	if (elem_same(p, v)) {
		(void)slot_ok(e, 0);   /* a repeat: delta 0 in any scale */
		senc_push(e, false);
		return;
	}
	if (v->type == BSON_TYPE_DOUBLE) {
		double pd, cd;
		int64_t pe, ce;
		memcpy(&pd, p->v, 8);
		memcpy(&cd, v->v, 8);
		if (e->scale >= 0 && dbl_encode(pd, e->scale, &pe) && dbl_encode(cd, e->scale, &ce) &&
		    slot_ok(e, zz64((int64_t)((uint64_t)ce - (uint64_t)pe)))) {
			senc_push(e, false);
			e->prev = *v;
			return;
		}
		for (int sc = 0; sc <= SCALE_RAW; sc++) {
			if (!dbl_encode(pd, sc, &pe) || !dbl_encode(cd, sc, &ce) ||
			    !slot_ok(e, zz64((int64_t)((uint64_t)ce - (uint64_t)pe))))
				continue;
			/* a new scale starts a new control block (the reader rescales
			 * the last value there) */
			if (e->scale >= 0)
				senc_flush(e);
			e->scale = sc;
			senc_push(e, false);
			e->prev = *v;
			return;
		}
		senc_literal(e, v);
		return;
	}
	{
		int64_t c;
		if (enc64(v->type, v->v, &c) && slot_ok(e, zz64((int64_t)((uint64_t)c - (uint64_t)e->penc)))) {
			senc_push(e, false);
			e->prev = *v;
			e->penc = c;
			return;
		}
	}
	senc_literal(e, v);
}

/* Encode a stream of n elements into o: ref is the reader's last value
 * before it (an interleaved reference scalar) or NULL. */
static void
stream_encode(const elem_t *v, size_t n, const elem_t *ref, sout_t *o)
{
	senc_t e = {.o = o, .scale = -1, .rle_has = true};

	if (ref != NULL)
		senc_set_prev(&e, ref);
	for (size_t i = 0; i < n; i++)
		senc_add(&e, &v[i]);
	senc_flush(&e);
	bson_free(e.s);
}

/* ---- interleaved objects ----------------------------------------------------------- */

/* The bytes of the value the iterator is on (libbson's public fields). */
static const uint8_t *
iter_value(const bson_iter_t *it, uint32_t *len)
{
	*len = it->next_off - it->d1;
	return it->raw + it->d1;
}

static bool
is_sub(uint8_t t)
{
	return t == BSON_TYPE_DOCUMENT || t == BSON_TYPE_ARRAY;
}

/*
 * Walk the reference document ref and the candidate cand side by side
 * (cand NULL: absent): the candidate's fields must be an ordered subset of
 * the reference's with the same shape, so the reader rebuilds it exactly.
 * Each reference scalar's value (or missing) goes to vals[*k] when vals is
 * not NULL.  Returns false when cand does not fit.
 */
static bool
interleave_walk(const uint8_t *ref, uint32_t rlen, const uint8_t *cand, uint32_t clen, elem_t *vals, size_t *k,
                int depth)
{
	bson_t rb, cb;
	bson_iter_t ri, ci;
	bool cmore = false;

	if (depth > BC_MAX_DEPTH || !bson_init_static(&rb, ref, rlen) || !bson_iter_init(&ri, &rb))
		return false;
	if (cand != NULL) {
		if (!bson_init_static(&cb, cand, clen) || !bson_iter_init(&ci, &cb))
			return false;
		cmore = bson_iter_next(&ci);
	}
	while (bson_iter_next(&ri)) {
		uint8_t rt = (uint8_t)bson_iter_type(&ri);
		bool match = cmore && strcmp(bson_iter_key(&ri), bson_iter_key(&ci)) == 0;
		if (rt == BSON_TYPE_CODEWSCOPE || (match && bson_iter_type(&ci) == BSON_TYPE_CODEWSCOPE))
			return false;
		if (is_sub(rt)) {
			const uint8_t *rd, *cd = NULL;
			uint32_t rl, cl = 0;
			if (rt == BSON_TYPE_DOCUMENT)
				bson_iter_document(&ri, &rl, &rd);
			else
				bson_iter_array(&ri, &rl, &rd);
			if (match) {
				if ((uint8_t)bson_iter_type(&ci) != rt)
					return false;
				if (rt == BSON_TYPE_DOCUMENT)
					bson_iter_document(&ci, &cl, &cd);
				else
					bson_iter_array(&ci, &cl, &cd);
				/* empty only where the reference is empty (else the reader drops it) */
				if ((rl == 5) != (cl == 5))
					return false;
			} else if (rl == 5) {
				return false;   /* the reader always writes the reference's empty sub-object */
			}
			if (!interleave_walk(rd, rl, cd, cl, vals, k, depth + 1))
				return false;
		} else {
			if (match && is_sub((uint8_t)bson_iter_type(&ci)))
				return false;
			if (vals != NULL) {
				elem_t *e = &vals[*k];
				e->type = 0;
				if (match) {
					e->type = (uint8_t)bson_iter_type(&ci);
					e->v = iter_value(&ci, &e->vlen);
				}
			}
			(*k)++;
		}
		if (match)
			cmore = bson_iter_next(&ci);
	}
	return !cmore;
}

/*
 * Encode elements v[0..n) -- objects, and missing ones between them, that
 * all fit the reference v[0] -- as one interleaved run (control 0xF1, the
 * reference, every scalar's stream, EOO): the streams' chunks go out in
 * the order the reader asks for them (object by object, scalar by scalar,
 * a stream's next chunk when its last one is used up).
 */
static void
interleave_encode(const elem_t *v, size_t n, bbuf_t *out)
{
	size_t ns = 0, k;
	elem_t *refs, *vals;
	sout_t *so;
	size_t *next, *rem;

	(void)interleave_walk(v[0].v, v[0].vlen, v[0].v, v[0].vlen, NULL, &ns, 0);
	refs = bson_malloc0(sizeof(*refs) * (ns + 1));
	k = 0;
	(void)interleave_walk(v[0].v, v[0].vlen, v[0].v, v[0].vlen, refs, &k, 0);
	vals = bson_malloc0(sizeof(*vals) * (ns * n + 1));
	for (size_t i = 0; i < n; i++) {
		k = 0;
		if (v[i].type == 0) {
			for (size_t j = 0; j < ns; j++)
				vals[j * n + i].type = 0;
			continue;
		}
		elem_t *row = bson_malloc0(sizeof(*row) * (ns + 1));
		(void)interleave_walk(v[0].v, v[0].vlen, v[i].v, v[i].vlen, row, &k, 0);
		for (size_t j = 0; j < ns; j++)
			vals[j * n + i] = row[j];
		bson_free(row);
	}
	so = bson_malloc0(sizeof(*so) * (ns + 1));
	next = bson_malloc0(sizeof(*next) * (ns + 1));
	rem = bson_malloc0(sizeof(*rem) * (ns + 1));
	for (size_t j = 0; j < ns; j++)
		stream_encode(&vals[j * n], n, &refs[j], &so[j]);
	bb_u8(out, 0xF1);
	bb_put(out, v[0].v, v[0].vlen);
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < ns; j++) {
			if (rem[j] == 0 && next[j] < so[j].n) {
				chunk_t *c = &so[j].c[next[j]++];
				bb_put(out, so[j].b.p + c->off, c->len);
				rem[j] = c->count;
			}
			rem[j]--;
		}
	bb_u8(out, 0);
	for (size_t j = 0; j < ns; j++)
		sout_free(&so[j]);
	bson_free(so);
	bson_free(next);
	bson_free(rem);
	bson_free(vals);
	bson_free(refs);
}

/* Whether a document holds an empty sub-object (or array) at any depth:
 * the reader always writes those, so a missing element cannot be
 * interleaved against such a reference (it would read back as an object). */
static bool
has_empty_sub(const uint8_t *doc, uint32_t len, int depth)
{
	bson_t b;
	bson_iter_t it;

	if (depth > BC_MAX_DEPTH || !bson_init_static(&b, doc, len) || !bson_iter_init(&it, &b))
		return true;
	while (bson_iter_next(&it)) {
		const uint8_t *d;
		uint32_t l;
		if (BSON_ITER_HOLDS_DOCUMENT(&it))
			bson_iter_document(&it, &l, &d);
		else if (BSON_ITER_HOLDS_ARRAY(&it))
			bson_iter_array(&it, &l, &d);
		else
			continue;
		if (l == 5 || has_empty_sub(d, l, depth + 1))
			return true;
	}
	return false;
}

/* An object the interleaved mode takes: a non-empty document with scalars
 * to stream (a reference of only empty sub-objects has none). */
static bool
interleavable(const elem_t *e)
{
	size_t ns = 0;
	return e->type == BSON_TYPE_DOCUMENT && e->vlen > 5 &&
	    interleave_walk(e->v, e->vlen, e->v, e->vlen, NULL, &ns, 0) && ns > 0;
}

/* The reader's state after an element, for an appender resuming there. */
typedef struct snap {
	elem_t prev;
	int64_t penc, pdelta;
	u128 p128;
	bool p128_ok, wide, rle_has;
	u128 rle_last;
} snap_t;

static void
snap_take(const senc_t *e, snap_t *s)
{
	s->prev = e->prev;
	s->penc = e->penc;
	s->pdelta = e->pdelta;
	s->p128 = e->p128;
	s->p128_ok = e->p128_ok;
	s->wide = e->wide;
	if (e->last_lit || e->ns == 0) {
		s->rle_has = e->rle_has;
		s->rle_last = e->rle_last;
	} else {
		s->rle_has = !e->s[e->ns - 1].skip;
		s->rle_last = e->s[e->ns - 1].skip ? 0 : e->s[e->ns - 1].v;
	}
}

/*
 * Encode v[0..n) with e (its output e->o; the run left open is flushed at
 * the end).  snaps (NULL: none) gets the reader's state after each element;
 * only meaningful for columns without objects (interleaved runs are not
 * word-logged).
 */
static void
encode_elems(senc_t *e, const elem_t *v, size_t n, snap_t *snaps)
{
	size_t i = 0;

	while (i < (size_t)n) {
		if (interleavable(&v[i])) {
			size_t j = i + 1, end = i + 1;
			bool skips_ok = !has_empty_sub(v[i].v, v[i].vlen, 0);
			while (j < (size_t)n &&
			       ((v[j].type == 0 && skips_ok) || (v[j].type == BSON_TYPE_DOCUMENT && v[j].vlen > 5 &&
			                              interleave_walk(v[i].v, v[i].vlen, v[j].v, v[j].vlen, NULL, &(size_t){0}, 0)))) {
				if (v[j].type != 0)
					end = j + 1;
				j++;
			}
			senc_flush(e);
			interleave_encode(&v[i], end - i, &e->o->b);
			/* the reader's last value is now the run's last object (never a delta base here) */
			senc_set_prev(e, &v[end - 1]);
			i = end;
			continue;
		}
		if (v[i].type == BSON_TYPE_DOCUMENT && e->prev.type == BSON_TYPE_DOCUMENT && !elem_same(&e->prev, &v[i])) {
			senc_literal(e, &v[i]);
			i++;
			continue;
		}
		senc_add(e, &v[i]);
		if (snaps != NULL)
			snap_take(e, &snaps[i]);
		i++;
	}
	senc_flush(e);
}

int
bsoncolumn_encode(const bson_t *col, int n, uint8_t **data, uint32_t *len, terr_t *err)
{
	elem_t *v;
	bson_iter_t it;
	sout_t top = {0};
	senc_t e = {.o = &top, .scale = -1, .rle_has = true};
	int64_t last = -1;

	*data = NULL;
	*len = 0;
	if (n < 0 || n > BC_MAX_ELEMS)
		return terr_set(err, TERR_BAD_VALUE, "a BSONColumn holds at most %d elements", BC_MAX_ELEMS);
	v = bson_malloc0(sizeof(*v) * ((size_t)n + 1));
	if (!bson_iter_init(&it, col)) {
		bson_free(v);
		return terr_set(err, TERR_BAD_VALUE, "invalid column document");
	}
	while (bson_iter_next(&it)) {
		const char *key = bson_iter_key(&it), *kp = key;
		int64_t i2 = 0;
		for (; *kp >= '0' && *kp <= '9' && i2 <= INT32_MAX; kp++)
			i2 = i2 * 10 + (*kp - '0');
		if (*key == '\0' || *kp != '\0' || (key[0] == '0' && key[1] != '\0') || i2 <= last || i2 >= n) {
			bson_free(v);
			return terr_set(err, TERR_BAD_VALUE, "column key '%s' is not an increasing index below %d", key, n);
		}
		if (bson_iter_type(&it) == BSON_TYPE_CODEWSCOPE) {
			bson_free(v);
			return terr_set(err, TERR_BAD_VALUE, "CodeWScope is not a valid BSONColumn element type");
		}
		last = i2;
		v[i2].type = (uint8_t)bson_iter_type(&it);
		v[i2].v = iter_value(&it, &v[i2].vlen);
	}
	encode_elems(&e, v, (size_t)n, NULL);
	bson_free(e.s);
	bb_u8(&top.b, 0);
	bson_free(top.c);
	bson_free(v);
	if (top.b.len > INT32_MAX) {
		bson_free(top.b.p);
		return terr_set(err, TERR_BAD_VALUE, "BSONColumn too large");
	}
	*data = top.b.p;
	*len = (uint32_t)top.b.len;
	return 0;
}

/* ---- the decoder ---------------------------------------------------------------- */

/* One decoding state: the last value and the Simple-8b block being read. */
typedef struct dstate {
	uint8_t type;               /* of the last value; 0: none */
	const uint8_t *lv;          /* its bytes: the input, lbuf or an owned copy */
	uint32_t lvlen;
	uint8_t lbuf[32];
	uint8_t *owned;             /* a copy of an interleaved run's last object */
	bool wide, dod;
	int scale;
	int64_t enc, enc_dod;
	u128 enc128;
	const uint8_t *words;       /* words left in the control block */
	int nwords;
	u128 wv[60];
	bool wsk[60];
	int wn, wpos;
	uint32_t rle_left;
	u128 s8last;
	bool s8last_skip;
} dstate_t;

static void
ds_load_uncompressed(dstate_t *d, uint8_t t, const uint8_t *v, uint32_t vlen)
{
	d->type = t;
	d->lv = v;
	d->lvlen = vlen;
	d->wide = uses128(t);
	d->dod = uses_dod(t);
	d->enc = d->enc_dod = 0;
	d->enc128 = 0;
	if (d->wide) {
		if (!enc128(t, v, vlen, &d->enc128))
			d->enc128 = 0;
	} else {
		int64_t x = 0;
		(void)enc64(t, v, &x);
		if (d->dod)
			d->enc_dod = x;
		else
			d->enc = x;
	}
	d->nwords = 0;
	d->wn = d->wpos = 0;
	d->rle_left = 0;
	d->s8last = 0;
	d->s8last_skip = false;
}

/* The next slot of the current block: 1, 0 when it is used up, -1 invalid. */
static int
ds_next_slot(dstate_t *d, u128 *v, bool *sk)
{
	for (;;) {
		if (d->rle_left > 0) {
			d->rle_left--;
			*v = d->s8last;
			*sk = d->s8last_skip;
			return 1;
		}
		if (d->wpos < d->wn) {
			*v = d->s8last = d->wv[d->wpos];
			*sk = d->s8last_skip = d->wsk[d->wpos];
			d->wpos++;
			return 1;
		}
		if (d->nwords == 0)
			return 0;
		uint64_t w = le64(d->words);
		d->words += 8;
		d->nwords--;
		if ((w & 15) == 15) {
			d->rle_left = (uint32_t)(((w >> 4) & 15) + 1) * BC_SKIP_RLE;
			continue;
		}
		int n = s8_decode(w, d->wide, d->wv, d->wsk);
		if (n <= 0)
			return -1;
		d->wn = n;
		d->wpos = 0;
	}
}

/* Apply a slot to the last value: *t 0 for a missing element, else the
 * new value (t, *vp, *vl; valid until the next call). */
static int
ds_apply(dstate_t *d, u128 slot, bool skip, uint8_t *t, const uint8_t **vp, uint32_t *vl, terr_t *err)
{
	uint8_t tmp[32];
	uint32_t n = 0;

	*t = 0;
	if (skip || d->type == 0)
		return 0;
	if (!d->wide) {
		uint64_t u = (uint64_t)slot;
		if (!d->dod && u == 0)
			goto same;
		d->enc = (int64_t)((uint64_t)d->enc + (uint64_t)unzz64(u));
		if (d->dod)
			d->enc_dod = (int64_t)((uint64_t)d->enc_dod + (uint64_t)d->enc);
		int64_t x = d->dod ? d->enc_dod : d->enc;
		switch (d->type) {
		case BSON_TYPE_DOUBLE: {
			double dv = dbl_decode(x, d->scale);
			memcpy(tmp, &dv, 8);
			n = 8;
			break;
		}
		case BSON_TYPE_OID:
			oid_decode(x, d->lv + 4, tmp);
			n = 12;
			break;
		case BSON_TYPE_DATE_TIME: case BSON_TYPE_INT64: case BSON_TYPE_TIMESTAMP:
			le64_put(tmp, (uint64_t)x);
			n = 8;
			break;
		case BSON_TYPE_BOOL:
			tmp[0] = x != 0;
			n = 1;
			break;
		case BSON_TYPE_INT32:
			le32_put(tmp, (uint32_t)x);
			n = 4;
			break;
		default:
			return bc_err(err, "a delta for a type that has none");
		}
	} else {
		if (slot == 0)
			goto same;
		d->enc128 += unzz128(slot);
		uint8_t a[16];
		le64_put(a, (uint64_t)d->enc128);
		le64_put(a + 8, (uint64_t)(d->enc128 >> 64));
		switch (d->type) {
		case BSON_TYPE_UTF8: case BSON_TYPE_CODE: {
			int sz = 16;
			while (sz > 0 && a[sz - 1] == 0)
				sz--;
			le32_put(tmp, (uint32_t)sz + 1);
			for (int i = 0; i < sz; i++)
				tmp[4 + i] = a[sz - 1 - i];
			tmp[4 + sz] = 0;
			n = (uint32_t)sz + 5;
			break;
		}
		case BSON_TYPE_BINARY: {
			uint32_t bl = d->lvlen - 5;
			if (bl > 16)
				return bc_err(err, "BinData length should not exceed 16 in a delta encoding");
			memcpy(tmp, d->lv, 5);
			memcpy(tmp + 5, a, bl);
			n = bl + 5;
			break;
		}
		case BSON_TYPE_DECIMAL128:
			memcpy(tmp, a, 16);
			n = 16;
			break;
		default:
			return bc_err(err, "a 128-bit delta for a type that has none");
		}
	}
	memcpy(d->lbuf, tmp, n);
	d->lv = d->lbuf;
	d->lvlen = n;
same:
	*t = d->type;
	*vp = d->lv;
	*vl = d->lvlen;
	return 0;
}

static bool
is_literal_ctl(uint8_t c)
{
	return (c & 0xE0) == 0 || c == 0xFF || c == 0x7F;
}

static bool
is_interleaved_ctl(uint8_t c)
{
	return c == 0xF0 || c == 0xF1 || c == 0xF2;
}

/*
 * Read the control at *p (a literal or a block of words; not EOO, not an
 * interleaved start) for state d and produce its first element.
 */
static int
ds_load_control(dstate_t *d, const uint8_t **p, const uint8_t *end, uint8_t *t, const uint8_t **vp, uint32_t *vl,
                terr_t *err)
{
	static const int8_t scale_of[16] = {-1, -1, -1, -1, -1, -1, -1, -1, SCALE_RAW, 0, 1, 2, 3, 4, -1, -1};
	uint8_t c = **p;

	if (is_literal_ctl(c)) {
		int64_t sz;
		if (c == BSON_TYPE_CODEWSCOPE)
			return bc_err(err, "CodeWScope is not a valid BSONColumn element type");
		if (end - *p < 2 || (*p)[1] != 0)
			return bc_err(err, "a literal with a field name");
		sz = value_size(c, *p + 2, (size_t)(end - *p - 2));
		if (sz < 0)
			return bc_err(err, "a literal overflows the buffer");
		ds_load_uncompressed(d, c, *p + 2, (uint32_t)sz);
		*t = c;
		*vp = d->lv;
		*vl = d->lvlen;
		*p += 2 + sz;
		return 0;
	}
	if (is_interleaved_ctl(c) || scale_of[c >> 4] < 0)
		return bc_err(err, "an unknown control byte");
	int blocks = (c & 15) + 1;
	if (end - *p - 1 <= (ptrdiff_t)8 * blocks)
		return bc_err(err, "a control block overflows the buffer");
	int sc = scale_of[c >> 4];
	if (d->wide) {
		if (sc != SCALE_RAW)
			return bc_err(err, "a scaled control for a 128-bit type");
	} else if (d->type == BSON_TYPE_DOUBLE) {
		double last;
		memcpy(&last, d->lv, 8);
		if (!dbl_encode(last, sc, &d->enc))
			return bc_err(err, "a double the control's scale cannot hold");
	} else if (sc != SCALE_RAW) {
		return bc_err(err, "a scaled control for a type that is not a double");
	}
	d->scale = sc;
	d->words = *p + 1;
	d->nwords = blocks;
	d->wn = d->wpos = 0;
	d->rle_left = 0;
	*p += 1 + 8 * blocks;
	u128 v;
	bool sk;
	int r = ds_next_slot(d, &v, &sk);
	if (r <= 0)
		return bc_err(err, "an invalid Simple-8b word");
	return ds_apply(d, v, sk, t, vp, vl, err);
}

/* The decoder's output: a BSON document under construction. */
typedef struct dout {
	bbuf_t b;
	int count;
} dout_t;

static void
dout_elem(bbuf_t *b, uint8_t t, const char *key, size_t klen, const uint8_t *v, uint32_t vl)
{
	bb_u8(b, t);
	bb_put(b, key, klen);
	bb_u8(b, 0);
	bb_put(b, v, vl);
}

static int
dout_emit(dout_t *o, uint8_t t, const uint8_t *v, uint32_t vl, terr_t *err)
{
	if (o->count >= BC_MAX_ELEMS)
		return terr_set(err, TERR_BAD_VALUE, "a BSONColumn holds at most %d elements", BC_MAX_ELEMS);
	if (o->b.len + vl > BC_MAX_OUT)
		return terr_set(err, TERR_BAD_VALUE, "a BSONColumn decodes to at most %d bytes", BC_MAX_OUT);
	if (t != 0) {
		char key[16];
		const char *k;
		size_t kl = bson_uint32_to_string((uint32_t)o->count, &k, key, sizeof(key));
		dout_elem(&o->b, t, k, kl, v, vl);
	}
	o->count++;
	return 0;
}

/* Interleaved schema: enter / scalar / exit, as mongod's InterleavedSchema. */
enum { OP_ENTER, OP_SCALAR, OP_EXIT };
typedef struct sent {
	uint8_t op, type;
	bool allow_empty;
	const char *name;
	int sidx;
} sent_t;

typedef struct schema {
	sent_t *e;
	size_t n, cap;
	int nscalar;
	dstate_t *st;
} schema_t;

static void
schema_push(schema_t *s, sent_t e)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 32;
		s->e = bson_realloc(s->e, sizeof(*s->e) * s->cap);
	}
	s->e[s->n++] = e;
}

static bool
schema_discover(schema_t *s, const uint8_t *doc, uint32_t len, const char *name, uint8_t type, bool arrays,
                int depth)
{
	bson_t b;
	bson_iter_t it;

	if (depth > BC_MAX_DEPTH || !bson_init_static(&b, doc, len) || !bson_iter_init(&it, &b))
		return false;
	schema_push(s, (sent_t){OP_ENTER, type, len == 5, name, -1});
	while (bson_iter_next(&it)) {
		uint8_t t = (uint8_t)bson_iter_type(&it);
		if (t == BSON_TYPE_DOCUMENT || (arrays && t == BSON_TYPE_ARRAY)) {
			const uint8_t *d;
			uint32_t l;
			if (t == BSON_TYPE_DOCUMENT)
				bson_iter_document(&it, &l, &d);
			else
				bson_iter_array(&it, &l, &d);
			if (!schema_discover(s, d, l, bson_iter_key(&it), t, arrays, depth + 1))
				return false;
		} else {
			schema_push(s, (sent_t){OP_SCALAR, t, false, bson_iter_key(&it), s->nscalar++});
		}
	}
	schema_push(s, (sent_t){OP_EXIT, type, len == 5, name, -1});
	return true;
}

/* Load each scalar state from the reference (a second walk, same order). */
static void
schema_states(schema_t *s, const uint8_t *doc, uint32_t len, bool arrays, int *k)
{
	bson_t b;
	bson_iter_t it;

	bson_init_static(&b, doc, len);
	bson_iter_init(&it, &b);
	while (bson_iter_next(&it)) {
		uint8_t t = (uint8_t)bson_iter_type(&it);
		if (t == BSON_TYPE_DOCUMENT || (arrays && t == BSON_TYPE_ARRAY)) {
			const uint8_t *d;
			uint32_t l;
			if (t == BSON_TYPE_DOCUMENT)
				bson_iter_document(&it, &l, &d);
			else
				bson_iter_array(&it, &l, &d);
			schema_states(s, d, l, arrays, k);
		} else {
			uint32_t vl;
			const uint8_t *v = iter_value(&it, &vl);
			ds_load_uncompressed(&s->st[(*k)++], t, v, vl);
		}
	}
}

/*
 * Decode one interleaved run starting at *p (its control byte) into o; the
 * last element it produced (object, or missing) becomes the regular
 * state's last value (reg).
 */
static int
decode_interleaved(const uint8_t **p, const uint8_t *end, dout_t *o, dstate_t *reg, terr_t *err)
{
	uint8_t c = **p;
	bool arrays = c != 0xF0;
	uint8_t root = c == 0xF2 ? BSON_TYPE_ARRAY : BSON_TYPE_DOCUMENT;
	schema_t s = {0};
	bbuf_t ob = {0};
	size_t *stack = NULL;
	int64_t rl;
	int ret = 0;
	uint8_t last_t = 0;
	size_t last_off = 0, last_len = 0;

	rl = value_size(BSON_TYPE_DOCUMENT, *p + 1, (size_t)(end - *p - 1));
	if (rl < 0)
		return bc_err(err, "an interleaved reference object overflows the buffer");
	const uint8_t *ref = *p + 1;
	if (!schema_discover(&s, ref, (uint32_t)rl, "", root, arrays, 0) || s.nscalar == 0) {
		bson_free(s.e);
		return bc_err(err, "an interleaved reference object without scalars");
	}
	s.st = bson_malloc0(sizeof(*s.st) * (size_t)s.nscalar);
	{
		int k = 0;
		schema_states(&s, ref, (uint32_t)rl, arrays, &k);
	}
	*p += 1 + rl;
	if (*p >= end || **p == 0) {
		ret = bc_err(err, "interleaved encoding should contain at least one object");
		goto done;
	}
	stack = bson_malloc0(sizeof(*stack) * (s.n + 1));
	for (;;) {
		int top = 0;
		bool exit_run = false;
		ob.len = 0;
		for (size_t i = 0; i < s.n && !exit_run; i++) {
			const sent_t *e = &s.e[i];
			if (e->op == OP_ENTER) {
				if (i > 0) {
					bb_u8(&ob, e->type);
					bb_put(&ob, e->name, strlen(e->name) + 1);
				}
				stack[top++] = ob.len;
				bb_put(&ob, "\0\0\0\0", 4);
			} else if (e->op == OP_EXIT) {
				size_t at = stack[--top];
				if (!e->allow_empty && ob.len == at + 4) {
					/* nothing under it: the sub-object is absent */
					ob.len = at;
					if (i + 1 < s.n)
						ob.len -= 2 + strlen(e->name);
				} else {
					bb_u8(&ob, 0);
					le32_put(ob.p + at, (uint32_t)(ob.len - at));
				}
			} else {
				dstate_t *d = &s.st[e->sidx];
				u128 v;
				bool sk;
				uint8_t t = 0;
				const uint8_t *vp = NULL;
				uint32_t vl = 0;
				int r = ds_next_slot(d, &v, &sk);
				if (r < 0) {
					ret = bc_err(err, "an invalid Simple-8b word");
					goto done;
				}
				if (r == 1) {
					ret = ds_apply(d, v, sk, &t, &vp, &vl, err);
				} else if (*p >= end) {
					ret = bc_err(err, "interleaved encoding overflows the buffer");
				} else if (**p == 0) {
					if (e->sidx != 0) {
						ret = bc_err(err, "Cannot load regular mode after processing interleaved mode");
						goto done;
					}
					(*p)++;
					for (int k = 1; k < s.nscalar; k++)
						if (ds_next_slot(&s.st[k], &v, &sk) != 0) {
							ret = bc_err(err, "Not all interleaved decoders are exhausted");
							goto done;
						}
					exit_run = true;
					continue;
				} else if (is_interleaved_ctl(**p)) {
					ret = bc_err(err, "an interleaved start inside interleaved mode");
				} else {
					ret = ds_load_control(d, p, end, &t, &vp, &vl, err);
				}
				if (ret != 0)
					goto done;
				if (t != 0)
					dout_elem(&ob, t, e->name, strlen(e->name), vp, vl);
			}
		}
		if (exit_run)
			break;
		if (ob.len == 0) {
			ret = dout_emit(o, 0, NULL, 0, err);
			last_t = 0;
		} else {
			ret = dout_emit(o, root, ob.p, (uint32_t)ob.len, err);
			last_t = root;
			last_len = ob.len;
			last_off = o->b.len - ob.len;
		}
		if (ret != 0)
			goto done;
	}
	/* regular mode again: the last object (or missing) is the last value */
	bson_free(reg->owned);
	reg->owned = NULL;
	ds_load_uncompressed(reg, 0, NULL, 0);
	if (last_t != 0) {
		reg->owned = bson_malloc(last_len);
		memcpy(reg->owned, o->b.p + last_off, last_len);
		reg->type = last_t;
		reg->lv = reg->owned;
		reg->lvlen = (uint32_t)last_len;
	}
done:
	for (int k = 0; s.st != NULL && k < s.nscalar; k++)
		bson_free(s.st[k].owned);
	bson_free(s.st);
	bson_free(s.e);
	bson_free(stack);
	bson_free(ob.p);
	return ret;
}

int
bsoncolumn_decode(const uint8_t *data, uint32_t len, bson_t *out, int *count, terr_t *err)
{
	const uint8_t *p = data, *end = data + len;
	dout_t o = {0};
	dstate_t reg;
	int ret = 0;

	memset(&reg, 0, sizeof(reg));
	bb_put(&o.b, "\0\0\0\0", 4);
	if (len == 0) {
		ret = bc_err(err, "BSON Column encoding is empty");
		goto done;
	}
	for (;;) {
		u128 v;
		bool sk;
		uint8_t t = 0;
		const uint8_t *vp = NULL;
		uint32_t vl = 0;
		int r = ds_next_slot(&reg, &v, &sk);
		if (r < 0) {
			ret = bc_err(err, "an invalid Simple-8b word");
			break;
		}
		if (r == 1) {
			if ((ret = ds_apply(&reg, v, sk, &t, &vp, &vl, err)) != 0 || (ret = dout_emit(&o, t, vp, vl, err)) != 0)
				break;
			continue;
		}
		if (p >= end) {
			ret = bc_err(err, "Invalid BSON Column encoding has overflowed buffer");
			break;
		}
		if (*p == 0) {
			if (p + 1 != end)
				ret = bc_err(err, "Final EOO found before reaching end of buffer");
			break;
		}
		if (is_interleaved_ctl(*p)) {
			if ((ret = decode_interleaved(&p, end, &o, &reg, err)) != 0)
				break;
			continue;
		}
		if ((ret = ds_load_control(&reg, &p, end, &t, &vp, &vl, err)) != 0 ||
		    (ret = dout_emit(&o, t, vp, vl, err)) != 0)
			break;
	}
done:
	bson_free(reg.owned);
	bb_u8(&o.b, 0);
	le32_put(o.b.p, (uint32_t)o.b.len);
	if (count != NULL)
		*count = o.count;
	{
		bson_t doc;
		if (bson_init_static(&doc, o.b.p, o.b.len))
			bson_concat(out, &doc);
	}
	bson_free(o.b.p);
	return ret;
}

/* ---- appending (bsoncolumn_append) ---------------------------------------------- */

struct bsoncolumn_tail {
	uint32_t len;                /* the column it describes: its bytes and elements */
	int count;
	uint32_t off;                /* where the tail starts */
	int64_t blk_off;             /* the control byte of the block the tail continues; -1: none */
	uint8_t blk_hi;              /* that block's high nibble (its scale) */
	int blk_words;               /* its words before off */
	uint8_t blk_now;             /* its control byte as written */
	uint32_t rle_carry;          /* repeats of the last slot written as values from off (no elements kept) */
	uint8_t *bytes;              /* the column's bytes from off, as written */
	snap_t st;                   /* the reader's state at off (st.prev.v points into ebuf's end) */
	elem_t *el;                  /* the tail's elements (their values in ebuf; one allocation) */
	size_t nel, ebuf_len;
	uint8_t *ebuf;
};

void
bsoncolumn_tail_free(bsoncolumn_tail_t *t)
{
	if (t == NULL)
		return;
	bson_free(t->el);   /* the elements, their values and the tail's bytes: one block */
	bson_free(t);
}

size_t
bsoncolumn_tail_size(const bsoncolumn_tail_t *t)
{
	return t == NULL ? 0 : sizeof(*t) + (t->len - t->off) + t->st.prev.vlen + t->nel * sizeof(elem_t) + t->ebuf_len;
}

/* Whether t describes col byte for byte where it matters: its length and
 * count, the tail's bytes and the open block's control byte. */
static bool
tail_matches(const bsoncolumn_tail_t *t, const uint8_t *col, uint32_t len, int count)
{
	return t != NULL && col != NULL && t->len == len && t->count == count && t->off < len &&
	    memcmp(col + t->off, t->bytes, len - t->off) == 0 &&
	    (t->blk_off < 0 || ((uint64_t)t->blk_off < t->off && col[t->blk_off] == t->blk_now));
}

/* t's state: st (its previous value copied), owned copies of v[0..n) and
 * of the tail's bytes (nb of them at b). */
static void
tail_fill(bsoncolumn_tail_t *t, const snap_t *st, const elem_t *v, size_t n, const uint8_t *b, size_t nb)
{
	size_t total = 0, at = 0, pl = st->prev.type != 0 ? st->prev.vlen : 0;

	t->st = *st;
	for (size_t i = 0; i < n; i++)
		if (v[i].type != 0)
			total += v[i].vlen;
	/* one block: the elements, their values, the previous value, the bytes */
	t->el = bson_malloc(sizeof(*t->el) * (n + 1) + total + pl + nb + 1);
	t->ebuf = (uint8_t *)(t->el + n + 1);
	t->ebuf_len = total;
	t->bytes = t->ebuf + total + pl;
	memcpy(t->bytes, b, nb);
	if (st->prev.type != 0) {
		memcpy(t->ebuf + total, st->prev.v, st->prev.vlen);
		t->st.prev.v = t->ebuf + total;
	}
	for (size_t i = 0; i < n; i++) {
		t->el[i] = (elem_t){v[i].type, NULL, 0};
		if (v[i].type == 0)
			continue;
		memcpy(t->ebuf + at, v[i].v, v[i].vlen);
		t->el[i].v = t->ebuf + at;
		t->el[i].vlen = v[i].vlen;
		at += v[i].vlen;
	}
	t->nel = n;
}

int
bsoncolumn_append(const uint8_t *col, uint32_t len, int count, const bsoncolumn_tail_t *prev,
                  const bsoncolumn_elem_t *v, int n, bsoncolumn_edit_t *edit, bsoncolumn_tail_t **next,
                  terr_t *err)
{
	snap_t st0 = {.rle_has = true}, *snaps = NULL;
	const snap_t *tst = NULL;   /* the next tail's state, elements */
	const elem_t *tv = NULL;
	size_t tn = 0;
	uint32_t carry = 0;
	const elem_t *old = NULL;
	elem_t *dec = NULL, *all = NULL;
	size_t nold = 0, ne, drop = 0;
	uint32_t off = 0;
	int64_t blk_off = -1;
	uint8_t blk_hi = 0;
	int blk_words = 0;
	bson_t decoded = BSON_INITIALIZER;
	sout_t o = {0};
	senc_t e = {.o = &o, .scale = -1};
	bsoncolumn_tail_t *t = NULL;
	bool docs = false;
	uint64_t newlen;
	int ret = 0;

	memset(edit, 0, sizeof(*edit));
	edit->patch_at = -1;
	*next = NULL;
	if (n < 0 || count < 0 || (int64_t)count + n > BC_MAX_ELEMS)
		return terr_set(err, TERR_BAD_VALUE, "a BSONColumn holds at most %d elements", BC_MAX_ELEMS);
	for (int i = 0; i < n; i++)
		if (v[i].type == BSON_TYPE_CODEWSCOPE)
			return terr_set(err, TERR_BAD_VALUE, "CodeWScope is not a valid BSONColumn element type");
	if (tail_matches(prev, col, len, count)) {
		st0 = prev->st;
		old = prev->el;
		nold = prev->nel;
		off = prev->off;
		blk_off = prev->blk_off;
		blk_hi = prev->blk_hi;
		blk_words = prev->blk_words;
		carry = prev->rle_carry;
	} else {
		/* no state for these bytes: the column decoded and written again */
		dec = bson_malloc0(sizeof(*dec) * ((size_t)count + 1));
		if (col != NULL) {
			bson_iter_t it;
			int dn = 0;
			if ((ret = bsoncolumn_decode(col, len, &decoded, &dn, err)) != 0)
				goto done;
			if (dn != count) {
				ret = terr_set(err, TERR_BAD_VALUE, "a BSONColumn of %d elements where %d were expected", dn, count);
				goto done;
			}
			bson_iter_init(&it, &decoded);
			while (bson_iter_next(&it)) {
				int64_t k = strtoll(bson_iter_key(&it), NULL, 10);
				if (k < 0 || k >= count)
					continue;
				dec[k].type = (uint8_t)bson_iter_type(&it);
				dec[k].v = iter_value(&it, &dec[k].vlen);
			}
		}
		old = dec;
		nold = (size_t)count;
	}
	ne = nold + (size_t)n;
	{
		/* the elements and the states after each: one block (snap_t holds 128-bit fields) */
		size_t at = (sizeof(*all) * (ne + 1) + 15) & ~(size_t)15;
		all = bson_malloc(at + sizeof(*snaps) * (ne + 1));
		snaps = (snap_t *)(void *)((uint8_t *)all + at);
	}
	if (nold > 0)
		memcpy(all, old, sizeof(*all) * nold);
	for (int i = 0; i < n; i++)
		all[nold + (size_t)i] = (elem_t){v[i].type, v[i].v, v[i].vlen};
	for (size_t i = 0; i < ne; i++)
		docs = docs || all[i].type == BSON_TYPE_DOCUMENT;
	o.track = !docs;
	e.prev = st0.prev;
	e.penc = st0.penc;
	e.pdelta = st0.pdelta;
	e.p128 = st0.p128;
	e.p128_ok = st0.p128_ok;
	e.wide = st0.wide;
	e.rle_has = st0.rle_has;
	e.rle_last = st0.rle_last;
	e.rle_carry = carry;
	encode_elems(&e, all, ne, snaps);
	bson_free(e.s);

	/* the block the tail continues: its new words join it when they are
	 * of its kind and fit, else it ends where the tail starts */
	if (blk_off >= 0) {
		int words = blk_words;
		if (!docs && o.nw > 0 && o.w[0].ctl == 0 && (o.b.p[0] & 0xF0) == blk_hi) {
			int w1 = 0;
			while ((size_t)w1 < o.nw && o.w[w1].ctl == 0)
				w1++;
			if (blk_words + w1 <= 16) {
				drop = 1;
				words += w1;
			}
		}
		edit->patch_at = blk_off;
		edit->patch = (uint8_t)(blk_hi | (words - 1));
	}
	newlen = (uint64_t)off + o.b.len - drop + 1;
	if (newlen > INT32_MAX) {
		ret = terr_set(err, TERR_BAD_VALUE, "BSONColumn too large");
		goto done;
	}
	edit->keep = off;
	edit->len = (uint32_t)(o.b.len - drop + 1);
	/* the output's buffer becomes the edit's bytes */
	bb_u8(&o.b, 0);
	if (drop > 0)
		memmove(o.b.p, o.b.p + drop, edit->len);
	edit->bytes = o.b.p;
	o.b.p = NULL;

	/* the next tail: the last word (or literal) written */
	t = bson_malloc0(sizeof(*t));
	t->len = (uint32_t)newlen;
	t->count = count + n;
	t->off = off;
	t->blk_off = blk_off;
	t->blk_hi = blk_hi;
	t->blk_words = blk_words;
	if (!docs && o.n > 0) {
		/* where the bytes that may still change start: the values its run's
		 * end wrote (or the last literal); the words before are final */
		const chunk_t *lc = &o.c[o.n - 1];
		size_t p, c = 0, j = 0;
		int words = 0;
		bool blk = false;
		if (o.nw > 0 && o.w[o.nw - 1].ctl == lc->off) {
			size_t k = o.nw;
			uint32_t cnt = 0;
			while (k > 0 && o.w[k - 1].flush && o.w[k - 1].run == o.w[o.nw - 1].run)
				cnt += o.w[--k].count;
			if (k < o.nw) {
				p = o.w[k].off;
				c = o.w[k].ctl;
				words = o.w[k].idx;
			} else {
				p = o.w[o.nw - 1].off + 8;
				c = o.w[o.nw - 1].ctl;
				words = o.w[o.nw - 1].idx + 1;
			}
			if (c == 0 && drop == 1)
				words += blk_words;   /* the block the tail continued */
			blk = words > 0 && words < 16;
			if (words == 0)
				p = c;
			/* the words count the repeats carried in before all[0] too */
			if (carry + ne > cnt && carry + ne - cnt > carry)
				j = carry + ne - cnt - carry;
			/* the run ended in repeats of one slot written as values: they
			 * stay pending as a count (RLE may still take them), not as
			 * elements to encode again -- when the slot means the same in
			 * any block (a missing value, a delta of 0, or no scale) */
			if (ne > 0 && cnt > 0 && cnt == o.end_rle && o.w[o.nw - 1].run == o.runs &&
			    (!snaps[ne - 1].rle_has || snaps[ne - 1].rle_last == 0 || snaps[ne - 1].prev.type != BSON_TYPE_DOUBLE)) {
				t->rle_carry = cnt;
				j = ne;
			}
		} else {
			p = lc->off;
			j = ne - 1;
		}
		if (j >= 1) {
			t->off = (uint32_t)(off + p - drop);
			if (blk && c == 0 && drop == 1) {
				t->blk_words = words;   /* the merged block: its control byte is blk_off */
			} else if (blk) {
				t->blk_off = (int64_t)(off + c - drop);
				t->blk_hi = edit->bytes[c - drop] & 0xF0;   /* the output, now the edit's bytes */
				t->blk_words = words;
			} else {
				t->blk_off = -1;
			}
			tst = &snaps[j - 1];
			tv = all + j;
			tn = ne - j;
		}
	}
	if (tst == NULL) {
		/* no advance: the same state, its tail grown */
		t->rle_carry = carry;
		tst = &st0;
		tv = all;
		tn = ne;
	}
	tail_fill(t, tst, tv, tn, edit->bytes + (t->off - off), t->len - t->off);
	if (t->blk_off >= 0)
		t->blk_now = (uint64_t)t->blk_off < off ? edit->patch : edit->bytes[t->blk_off - off];
	*next = t;
	t = NULL;
done:
	if (ret != 0) {
		bson_free(edit->bytes);
		memset(edit, 0, sizeof(*edit));
		edit->patch_at = -1;
	}
	bsoncolumn_tail_free(t);
	bson_free(o.b.p);
	bson_free(o.c);
	bson_free(o.w);
	bson_free(all);   /* snaps too */
	bson_free(dec);
	bson_destroy(&decoded);
	return ret;
}
