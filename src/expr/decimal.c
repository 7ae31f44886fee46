/*
 * decimal.c -- decimal128 arithmetic on BID-encoded values (see decimal.h).
 *
 * Values are unpacked into sign, exponent and a coefficient; intermediate
 * results live in a 256-bit unsigned integer (four 64-bit limbs), which holds
 * any product of two 34-digit coefficients and any aligned sum, so every
 * operation is exact before the single final rounding to 34 digits (half to
 * even, IEEE's default and MongoDB's).  Not a general decimal library: only
 * what the expression language and accumulators need.
 */
#include "expr/decimal.h"
#include "expr/two_over_pi.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEC_BIAS 6176
#define DEC_EMAX 6111
#define DEC_EMIN (-6176)
#define DEC_DIGITS 34

typedef unsigned __int128 u128;

#define NLIMB 8 /* 512 bits: room for products of 60-digit coefficients */

typedef struct big {
	uint64_t w[NLIMB]; /* little-endian limbs */
} big_t;

enum { DK_FINITE, DK_INF, DK_NAN };

typedef struct dec {
	int kind;
	bool neg;
	int exp;
	big_t c;
} dec_t;

/* ---- 256-bit helpers ----------------------------------------------------- */

static bool
big_is_zero(const big_t *a)
{
	uint64_t x = 0;
	for (int i = 0; i < NLIMB; i++)
		x |= a->w[i];
	return x == 0;
}

static void
big_from_u128(big_t *a, u128 v)
{
	memset(a, 0, sizeof(*a));
	a->w[0] = (uint64_t)v;
	a->w[1] = (uint64_t)(v >> 64);
}

static u128
big_to_u128(const big_t *a)
{
	return ((u128)a->w[1] << 64) | a->w[0];
}

/* a = a * m + add; returns the carry out of the top limb. */
static uint64_t
big_mul_small(big_t *a, uint64_t m, uint64_t add)
{
	u128 carry = add;
	for (int i = 0; i < NLIMB; i++) {
		u128 t = (u128)a->w[i] * m + carry;
		a->w[i] = (uint64_t)t;
		carry = t >> 64;
	}
	return (uint64_t)carry;
}

/* a = a / d; returns the remainder. */
static uint64_t
big_div_small(big_t *a, uint64_t d)
{
	u128 rem = 0;
	for (int i = NLIMB - 1; i >= 0; i--) {
		u128 cur = (rem << 64) | a->w[i];
		a->w[i] = (uint64_t)(cur / d);
		rem = cur % d;
	}
	return (uint64_t)rem;
}

static int
big_cmp(const big_t *a, const big_t *b)
{
	for (int i = NLIMB - 1; i >= 0; i--) {
		if (a->w[i] != b->w[i])
			return a->w[i] < b->w[i] ? -1 : 1;
	}
	return 0;
}

static void
big_add(big_t *a, const big_t *b)
{
	u128 carry = 0;
	for (int i = 0; i < NLIMB; i++) {
		u128 t = (u128)a->w[i] + b->w[i] + carry;
		a->w[i] = (uint64_t)t;
		carry = t >> 64;
	}
}

/* a -= b, a >= b */
static void
big_sub(big_t *a, const big_t *b)
{
	uint64_t borrow = 0;
	for (int i = 0; i < NLIMB; i++) {
		uint64_t bi = b->w[i] + borrow;
		uint64_t nb = (bi < borrow) || (a->w[i] < bi);
		a->w[i] -= bi;
		borrow = nb;
	}
}

static void
big_mul_u128(big_t *r, u128 a, u128 b)
{
	uint64_t x[2] = {(uint64_t)a, (uint64_t)(a >> 64)};
	uint64_t y[2] = {(uint64_t)b, (uint64_t)(b >> 64)};
	memset(r, 0, sizeof(*r));
	for (int i = 0; i < 2; i++) {
		u128 carry = 0;
		for (int j = 0; j < 2; j++) {
			u128 t = (u128)x[i] * y[j] + r->w[i + j] + carry;
			r->w[i + j] = (uint64_t)t;
			carry = t >> 64;
		}
		r->w[i + 2] += (uint64_t)carry;
	}
}

/* r = a * b (truncated to NLIMB limbs; callers keep products in range) */
static void
big_mul(big_t *r, const big_t *a, const big_t *b)
{
	big_t t;
	memset(&t, 0, sizeof(t));
	for (int i = 0; i < NLIMB; i++) {
		if (a->w[i] == 0)
			continue;
		u128 carry = 0;
		for (int j = 0; i + j < NLIMB; j++) {
			u128 x = (u128)a->w[i] * b->w[j] + t.w[i + j] + carry;
			t.w[i + j] = (uint64_t)x;
			carry = x >> 64;
		}
	}
	*r = t;
}

static int
big_bits(const big_t *a)
{
	for (int i = NLIMB - 1; i >= 0; i--) {
		if (a->w[i])
			return i * 64 + 64 - __builtin_clzll(a->w[i]);
	}
	return 0;
}

/* Number of decimal digits (0 for zero). */
static int
big_digits(const big_t *a)
{
	big_t t = *a;
	int n = 0;
	/* fast path for values fitting u128 */
	bool small = true;
	for (int i = 2; i < NLIMB; i++)
		small = small && t.w[i] == 0;
	if (small) {
		u128 v = big_to_u128(&t);
		while (v) {
			v /= 10;
			n++;
		}
		return n;
	}
	/* above 64 bits, 19 digits at a time (t >= 2^64 > 10^19) */
	for (;;) {
		uint64_t hi = 0;
		for (int i = 1; i < NLIMB; i++)
			hi |= t.w[i];
		if (hi == 0)
			break;
		big_div_small(&t, 10000000000000000000ULL);
		n += 19;
	}
	for (uint64_t v = t.w[0]; v; v /= 10)
		n++;
	return n;
}

/* Multiply by 10^k; false on overflow of 256 bits. */
static bool
big_mul_pow10(big_t *a, int k)
{
	while (k > 0) {
		int step = k > 19 ? 19 : k;
		uint64_t m = 1;
		for (int i = 0; i < step; i++)
			m *= 10;
		if (big_mul_small(a, m, 0) != 0)
			return false;
		k -= step;
	}
	return true;
}

/* q = a / b, r = a % b (bitwise long division; b != 0). */
static void
big_divmod(const big_t *a, const big_t *b, big_t *q, big_t *r)
{
	memset(q, 0, sizeof(*q));
	memset(r, 0, sizeof(*r));
	for (int i = big_bits(a) - 1; i >= 0; i--) {
		/* r = r << 1 | bit */
		for (int k = NLIMB - 1; k > 0; k--)
			r->w[k] = (r->w[k] << 1) | (r->w[k - 1] >> 63);
		r->w[0] = (r->w[0] << 1) | ((a->w[i / 64] >> (i % 64)) & 1);
		if (big_cmp(r, b) >= 0) {
			big_sub(r, b);
			q->w[i / 64] |= (uint64_t)1 << (i % 64);
		}
	}
}

/* ---- pack / unpack ------------------------------------------------------- */

static const u128 MAX_COEF = (((u128)0x1ed09bead87c0ULL) << 64) | 0x378d8e63ffffffffULL; /* 10^34 - 1 */

static dec_t
dec_unpack(bson_decimal128_t d)
{
	dec_t r;
	uint64_t hi = d.high;

	memset(&r, 0, sizeof(r));
	r.neg = (hi >> 63) != 0;
	if (((hi >> 58) & 0x1f) == 0x1f) {
		r.kind = DK_NAN;
		return r;
	}
	if (((hi >> 58) & 0x1f) == 0x1e) {
		r.kind = DK_INF;
		return r;
	}
	r.kind = DK_FINITE;
	if (((hi >> 61) & 3) == 3) {
		/* 2-bit-shifted form: coefficient >= 2^113, non-canonical -> 0 */
		r.exp = (int)((hi >> 47) & 0x3fff) - DEC_BIAS;
		return r;
	}
	r.exp = (int)((hi >> 49) & 0x3fff) - DEC_BIAS;
	u128 c = ((u128)(hi & 0x1ffffffffffffULL) << 64) | d.low;
	if (c > MAX_COEF)
		c = 0;
	big_from_u128(&r.c, c);
	return r;
}

static bson_decimal128_t
dec_pack_special(int kind, bool neg)
{
	bson_decimal128_t d;
	d.low = 0;
	d.high = kind == DK_NAN ? 0x7c00000000000000ULL : 0x7800000000000000ULL;
	if (neg)
		d.high |= 0x8000000000000000ULL;
	return d;
}

/*
 * Round r to at most 34 digits (half to even), fit the exponent range, and
 * encode.  `sticky` says discarded nonzero digits lie below r's last digit
 * (only used to break ties).
 */
static bson_decimal128_t
dec_finish(dec_t r, bool sticky)
{
	bson_decimal128_t d;

	if (r.kind != DK_FINITE)
		return dec_pack_special(r.kind, r.neg);
	int nd = big_digits(&r.c);
	int drop = nd > DEC_DIGITS ? nd - DEC_DIGITS : 0;
	if (r.exp + drop < DEC_EMIN)
		drop = DEC_EMIN - r.exp;
	if (drop > 0) {
		uint64_t last = 0;
		bool below = sticky;
		for (int i = 0; i < drop; i++) {
			if (last)
				below = true;
			last = big_div_small(&r.c, 10);
			if (big_is_zero(&r.c) && i + 1 < drop) {
				/* everything further is zero coefficient */
				if (last)
					below = true;
				last = 0;
				r.exp += drop - i - 1;
				drop = i + 1;
				break;
			}
		}
		r.exp += drop;
		bool up = last > 5 || (last == 5 && (below || (r.c.w[0] & 1)));
		if (up) {
			big_t one = {{1, 0, 0, 0}};
			big_add(&r.c, &one);
			if (big_digits(&r.c) > DEC_DIGITS) {
				big_div_small(&r.c, 10);
				r.exp++;
			}
		}
	}
	if (r.exp > DEC_EMAX) {
		/* clamp: pad the coefficient with zeros when it has room */
		if (big_is_zero(&r.c)) {
			r.exp = DEC_EMAX;
		} else {
			int room = DEC_DIGITS - big_digits(&r.c);
			int need = r.exp - DEC_EMAX;
			if (need > room)
				return dec_pack_special(DK_INF, r.neg);
			big_mul_pow10(&r.c, need);
			r.exp = DEC_EMAX;
		}
	}
	u128 c = big_to_u128(&r.c);
	uint64_t bexp = (uint64_t)(r.exp + DEC_BIAS);
	d.low = (uint64_t)c;
	d.high = (uint64_t)(c >> 64) | (bexp << 49) | (r.neg ? 0x8000000000000000ULL : 0);
	return d;
}

/* r's coefficient and sign = a + b, both coefficients at the same exponent. */
static void
add_aligned(const dec_t *a, const dec_t *b, dec_t *r)
{
	if (a->neg == b->neg) {
		r->c = a->c;
		big_add(&r->c, &b->c);
		r->neg = a->neg;
	} else if (big_cmp(&a->c, &b->c) >= 0) {
		r->c = a->c;
		big_sub(&r->c, &b->c);
		r->neg = a->neg;
	} else {
		r->c = b->c;
		big_sub(&r->c, &a->c);
		r->neg = b->neg;
	}
}

/* ---- arithmetic ---------------------------------------------------------- */

static bson_decimal128_t
dec_addsub(bson_decimal128_t ad, bson_decimal128_t bd, bool subtract)
{
	dec_t a = dec_unpack(ad), b = dec_unpack(bd), r;
	bool sticky = false;

	if (subtract)
		b.neg = !b.neg;
	if (a.kind == DK_NAN || b.kind == DK_NAN)
		return dec_pack_special(DK_NAN, false);
	if (a.kind == DK_INF || b.kind == DK_INF) {
		if (a.kind == DK_INF && b.kind == DK_INF && a.neg != b.neg)
			return dec_pack_special(DK_NAN, false);
		return dec_pack_special(DK_INF, a.kind == DK_INF ? a.neg : b.neg);
	}
	/* a has the larger exponent */
	if (a.exp < b.exp) {
		dec_t t = a;
		a = b;
		b = t;
	}
	int diff = a.exp - b.exp;
	if (big_is_zero(&a.c)) {
		/* 0 + x: x, at the smaller exponent (exact) */
		r = b;
		if (big_is_zero(&b.c))
			r.neg = a.neg && b.neg;
		return dec_finish(r, false);
	}
	if (diff > 0 && big_is_zero(&b.c)) {
		/* x + 0 keeps the smaller exponent when it can */
		int room = DEC_DIGITS - big_digits(&a.c);
		int sh = diff < room ? diff : room;
		big_mul_pow10(&a.c, sh);
		a.exp -= sh;
		return dec_finish(a, false);
	}
	int nda = big_digits(&a.c);
	if (nda + diff > 76) {
		/* b lies wholly below a's 39th digit: a shifted to 39 digits plus a
		 * unit of b's sign rounds exactly as the true sum does */
		int s = 39 - nda;
		big_mul_pow10(&a.c, s);
		a.exp -= s;
		big_t one = {{1, 0, 0, 0}};
		b.c = one;
		b.exp = a.exp;
	} else {
		big_mul_pow10(&a.c, diff);
		a.exp = b.exp;
	}
	r.kind = DK_FINITE;
	r.exp = a.exp;
	add_aligned(&a, &b, &r);
	if (big_is_zero(&r.c))
		r.neg = false;
	return dec_finish(r, sticky);
}

bson_decimal128_t
expr_decimal_add(bson_decimal128_t a, bson_decimal128_t b)
{
	return dec_addsub(a, b, false);
}

bson_decimal128_t
expr_decimal_sub(bson_decimal128_t a, bson_decimal128_t b)
{
	return dec_addsub(a, b, true);
}

bson_decimal128_t
expr_decimal_mul(bson_decimal128_t ad, bson_decimal128_t bd)
{
	dec_t a = dec_unpack(ad), b = dec_unpack(bd), r;
	bool neg = a.neg != b.neg;

	if (a.kind == DK_NAN || b.kind == DK_NAN)
		return dec_pack_special(DK_NAN, false);
	if (a.kind == DK_INF || b.kind == DK_INF) {
		if ((a.kind == DK_FINITE && big_is_zero(&a.c)) ||
		    (b.kind == DK_FINITE && big_is_zero(&b.c)))
			return dec_pack_special(DK_NAN, false);
		return dec_pack_special(DK_INF, neg);
	}
	r.kind = DK_FINITE;
	r.neg = neg;
	r.exp = a.exp + b.exp;
	big_mul_u128(&r.c, big_to_u128(&a.c), big_to_u128(&b.c));
	return dec_finish(r, false);
}

bson_decimal128_t
expr_decimal_div(bson_decimal128_t ad, bson_decimal128_t bd)
{
	dec_t a = dec_unpack(ad), b = dec_unpack(bd), r;
	bool neg = a.neg != b.neg;
	big_t q, rem;

	if (a.kind == DK_NAN || b.kind == DK_NAN)
		return dec_pack_special(DK_NAN, false);
	if (a.kind == DK_INF) {
		if (b.kind == DK_INF)
			return dec_pack_special(DK_NAN, false);
		return dec_pack_special(DK_INF, neg);
	}
	if (b.kind == DK_INF) {
		r.kind = DK_FINITE;
		r.neg = neg;
		r.exp = DEC_EMIN;
		memset(&r.c, 0, sizeof(r.c));
		return dec_finish(r, false);
	}
	if (big_is_zero(&b.c)) {
		if (big_is_zero(&a.c))
			return dec_pack_special(DK_NAN, false);
		return dec_pack_special(DK_INF, neg);
	}
	int pref = a.exp - b.exp;
	r.kind = DK_FINITE;
	r.neg = neg;
	if (big_is_zero(&a.c)) {
		r.exp = pref;
		memset(&r.c, 0, sizeof(r.c));
		if (r.exp < DEC_EMIN)
			r.exp = DEC_EMIN;
		return dec_finish(r, false);
	}
	int k = big_digits(&b.c) + DEC_DIGITS + 1 - big_digits(&a.c);
	if (k < 0)
		k = 0;
	big_t num = a.c;
	big_mul_pow10(&num, k);
	big_divmod(&num, &b.c, &q, &rem);
	r.exp = pref - k;
	r.c = q;
	if (big_is_zero(&rem)) {
		while (r.exp < pref && !big_is_zero(&r.c)) {
			big_t t = r.c;
			if (big_div_small(&t, 10) != 0)
				break;
			r.c = t;
			r.exp++;
		}
		return dec_finish(r, false);
	}
	return dec_finish(r, true);
}

bson_decimal128_t
expr_decimal_mod(bson_decimal128_t ad, bson_decimal128_t bd)
{
	dec_t a = dec_unpack(ad), b = dec_unpack(bd), r;

	if (a.kind != DK_FINITE || b.kind == DK_NAN || (b.kind == DK_FINITE && big_is_zero(&b.c)))
		return dec_pack_special(DK_NAN, false);
	if (b.kind == DK_INF)
		return ad;
	/* align exponents, then integer remainder */
	int e = a.exp < b.exp ? a.exp : b.exp;
	big_t x = a.c, y = b.c, q, rem;
	if (a.exp - e > 70 || b.exp - e > 70 || !big_mul_pow10(&x, a.exp - e) ||
	    !big_mul_pow10(&y, b.exp - e)) {
		/* out of our exact range: fall back to doubles */
		double v = fmod(expr_decimal_to_double(ad), expr_decimal_to_double(bd));
		return expr_decimal_from_double(v);
	}
	big_divmod(&x, &y, &q, &rem);
	r.kind = DK_FINITE;
	r.neg = a.neg;
	r.exp = e;
	r.c = rem;
	return dec_finish(r, false);
}

static void
big_shr1(big_t *a)
{
	for (int i = 0; i < NLIMB; i++)
		a->w[i] = (a->w[i] >> 1) | (i < NLIMB - 1 ? a->w[i + 1] << 63 : 0);
}

/* floor(sqrt(a)) by Newton's method */
static void
big_isqrt(const big_t *a, big_t *r)
{
	big_t x, q, rem, y;
	int bits = big_bits(a);

	memset(&x, 0, sizeof(x));
	if (bits == 0) {
		*r = x;
		return;
	}
	int sh = (bits + 1) / 2;
	x.w[sh / 64] = (uint64_t)1 << (sh % 64); /* >= sqrt(a) */
	for (;;) {
		big_divmod(a, &x, &q, &rem);
		y = x;
		big_add(&y, &q);
		big_shr1(&y);
		if (big_cmp(&y, &x) >= 0)
			break;
		x = y;
	}
	*r = x;
}

bson_decimal128_t
expr_decimal_sqrt_exact(bson_decimal128_t ad)
{
	dec_t a = dec_unpack(ad), r;

	if (a.kind == DK_NAN)
		return dec_pack_special(DK_NAN, false);
	if (a.kind == DK_FINITE && big_is_zero(&a.c)) {
		r = a;
		r.exp = a.exp >= 0 ? a.exp / 2 : -((-a.exp + 1) / 2);
		return dec_finish(r, false);
	}
	if (a.neg)
		return dec_pack_special(DK_NAN, false);
	if (a.kind == DK_INF)
		return ad;
	int pref = a.exp >= 0 ? a.exp / 2 : -((-a.exp + 1) / 2); /* floor(exp / 2) */
	big_t c = a.c;
	int e = a.exp;
	if (e % 2 != 0) {
		big_mul_pow10(&c, 1);
		e -= 1;
	}
	int k = (72 - big_digits(&c) + 1) / 2;
	if (k < 0)
		k = 0;
	big_mul_pow10(&c, 2 * k);
	big_t root, sq, q2;
	big_isqrt(&c, &root);
	big_mul_u128(&sq, big_to_u128(&root), big_to_u128(&root));
	(void)q2;
	r.kind = DK_FINITE;
	r.neg = false;
	r.exp = e / 2 - k;
	r.c = root;
	if (big_cmp(&sq, &c) == 0) {
		while (r.exp < pref) {
			big_t t = r.c;
			if (big_div_small(&t, 10) != 0)
				break;
			r.c = t;
			r.exp++;
		}
		return dec_finish(r, false);
	}
	return dec_finish(r, true);
}

/* mode: 0 half-even, 1 floor, 2 ceil, 3 toward zero */
static bson_decimal128_t
dec_quantize(bson_decimal128_t ad, int target_exp, int mode)
{
	dec_t a = dec_unpack(ad);

	if (a.kind != DK_FINITE || a.exp >= target_exp)
		return ad;
	int drop = target_exp - a.exp;
	uint64_t last = 0;
	bool below = false;
	if (drop > 40) {
		below = !big_is_zero(&a.c);
		memset(&a.c, 0, sizeof(a.c));
	} else {
		for (int i = 0; i < drop; i++) {
			if (last)
				below = true;
			last = big_div_small(&a.c, 10);
		}
	}
	bool inexact = last || below;
	bool up = false;
	switch (mode) {
	case 0: up = last > 5 || (last == 5 && (below || (a.c.w[0] & 1))); break;
	case 1: up = inexact && a.neg; break;
	case 2: up = inexact && !a.neg; break;
	default: up = false; break;
	}
	if (up) {
		big_t one = {{1, 0, 0, 0}};
		big_add(&a.c, &one);
	}
	a.exp = target_exp;
	return dec_finish(a, false);
}

/* mongod's Decimal128::quantize(10^target, mode) */
static bson_decimal128_t
dec_quantize_to(bson_decimal128_t a, int target, int mode)
{
	dec_t d = dec_unpack(a);

	/* mongod's Decimal128::quantize(1E-places): a value with fewer
	 * digits after the point gains trailing zeros (1.298 at 33 places is
	 * 1.298000000000000000000000000000000); one that would need more
	 * than 34 digits is NaN (IEEE's invalid operation) */
	if (d.kind == DK_FINITE && d.exp > target) {
		int grow = d.exp - target;

		if (!big_is_zero(&d.c) && big_digits(&d.c) + grow > 34)
			return dec_pack_special(DK_NAN, false);
		for (int i = 0; i < grow; i++)
			big_mul_small(&d.c, 10, 0);
		d.exp = target;
		return dec_finish(d, false);
	}
	return dec_quantize(a, target, mode);
}

bson_decimal128_t
expr_decimal_round(bson_decimal128_t a, int places, bool trunc)
{
	return dec_quantize_to(a, -places, trunc ? 3 : 0);
}

bson_decimal128_t
expr_decimal_to_integral(bson_decimal128_t a, int mode)
{
	/* $floor / $ceil / $trunc: quantize to kNormalizedZero (1E+2 -> 100) */
	return dec_quantize_to(a, 0, mode);
}

/* ---- wide internal arithmetic (for exp and ln) --------------------------
 * dec_t values with up to WDIG digits, no exponent limits, rounded half to
 * even after each operation; enough guard digits that the final rounding
 * to 34 digits is correct. */

#define WDIG 60

static const char LN10[] = "23025850929940456840179914546843642076011014886287729760333279";
static const char LN2[] = "69314718055994530941723212145817656807550013436025525412068001";

static void
wround(dec_t *r, bool sticky)
{
	int nd = big_digits(&r->c);
	if (nd <= WDIG)
		return;
	int drop = nd - WDIG;
	uint64_t last = 0;
	bool below = sticky;
	/* all but the last dropped digit only count as sticky: 19 at a time */
	for (int left = drop - 1; left > 0;) {
		int step = left > 19 ? 19 : left;
		uint64_t m = 1;
		for (int i = 0; i < step; i++)
			m *= 10;
		if (big_div_small(&r->c, m) != 0)
			below = true;
		left -= step;
	}
	last = big_div_small(&r->c, 10);
	r->exp += drop;
	if (last > 5 || (last == 5 && (below || (r->c.w[0] & 1)))) {
		big_t one = {{1}};
		big_add(&r->c, &one);
		if (big_digits(&r->c) > WDIG) {
			big_div_small(&r->c, 10);
			r->exp++;
		}
	}
}

static dec_t
wconst(const char *digits, int exp)
{
	dec_t r;
	memset(&r, 0, sizeof(r));
	r.kind = DK_FINITE;
	for (const char *p = digits; *p; p++)
		big_mul_small(&r.c, 10, (uint64_t)(*p - '0'));
	r.exp = exp - (int)strlen(digits) + 1;
	wround(&r, false);
	return r;
}

static dec_t
wint(int64_t v)
{
	dec_t r;
	memset(&r, 0, sizeof(r));
	r.kind = DK_FINITE;
	r.neg = v < 0;
	big_from_u128(&r.c, v < 0 ? (u128)(0 - (uint64_t)v) : (u128)v);
	return r;
}

static dec_t
wadd(dec_t a, dec_t b)
{
	dec_t r;

	if (big_is_zero(&a.c))
		return b;
	if (big_is_zero(&b.c))
		return a;
	if (a.exp < b.exp) {
		dec_t t = a;
		a = b;
		b = t;
	}
	int diff = a.exp - b.exp, nda = big_digits(&a.c);
	if (nda + diff > 150) {
		int sh = WDIG + 3 - nda;
		big_mul_pow10(&a.c, sh);
		a.exp -= sh;
		big_t one = {{1}};
		b.c = one;
		b.exp = a.exp;
	} else {
		big_mul_pow10(&a.c, diff);
		a.exp = b.exp;
	}
	memset(&r, 0, sizeof(r));
	r.kind = DK_FINITE;
	r.exp = a.exp;
	add_aligned(&a, &b, &r);
	wround(&r, false);
	return r;
}

static dec_t
wmul(dec_t a, dec_t b)
{
	dec_t r;
	memset(&r, 0, sizeof(r));
	r.kind = DK_FINITE;
	r.neg = a.neg != b.neg;
	r.exp = a.exp + b.exp;
	big_mul(&r.c, &a.c, &b.c);
	wround(&r, false);
	return r;
}

static dec_t
wdiv(dec_t a, dec_t b)
{
	dec_t r;
	big_t num = a.c, rem;
	int k = big_digits(&b.c) + WDIG + 1 - big_digits(&a.c);

	if (k < 0)
		k = 0;
	big_mul_pow10(&num, k);
	memset(&r, 0, sizeof(r));
	r.kind = DK_FINITE;
	r.neg = a.neg != b.neg;
	big_divmod(&num, &b.c, &r.c, &rem);
	r.exp = a.exp - b.exp - k;
	wround(&r, !big_is_zero(&rem));
	return r;
}

/* wdiv(a, wint(d)) for 0 < d < 2^63, by one-limb division (the same
 * digits: the series divide every term by a small integer) */
static dec_t
wdiv_small(dec_t a, uint64_t d)
{
	dec_t r;
	big_t num = a.c;
	int dd = 0;
	for (uint64_t t = d; t; t /= 10)
		dd++;
	int k = dd + WDIG + 1 - big_digits(&a.c);

	if (k < 0)
		k = 0;
	big_mul_pow10(&num, k);
	memset(&r, 0, sizeof(r));
	r.kind = DK_FINITE;
	r.neg = a.neg;
	uint64_t rem = big_div_small(&num, d);
	r.c = num;
	r.exp = a.exp - k;
	wround(&r, rem != 0);
	return r;
}

/* magnitude bound: value < 10^(digits + exp) */
static int
wmag(const dec_t *a)
{
	return big_digits(&a->c) + a->exp;
}

/* Round a wide value to decimal128 (34 digits, exponent range). */
static bson_decimal128_t
wfinish(dec_t r)
{
	/* drop to 34 digits with the remaining digits as sticky information */
	int nd = big_digits(&r.c);
	bool sticky = false;
	if (nd > DEC_DIGITS + 2) {
		int drop = nd - (DEC_DIGITS + 2);
		for (int i = 0; i < drop; i++) {
			if (big_div_small(&r.c, 10) != 0)
				sticky = true;
		}
		r.exp += drop;
	}
	return dec_finish(r, sticky);
}

bson_decimal128_t
expr_decimal_exp_exact(bson_decimal128_t ad)
{
	dec_t x = dec_unpack(ad);

	if (x.kind == DK_NAN)
		return dec_pack_special(DK_NAN, false);
	if (x.kind == DK_INF) {
		if (!x.neg)
			return ad;
		dec_t z;
		memset(&z, 0, sizeof(z));
		z.kind = DK_FINITE;
		return dec_finish(z, false);
	}
	if (big_is_zero(&x.c))
		return expr_decimal_from_int64(1);
	double xd = expr_decimal_to_double(ad);
	if (xd > 15000)
		return dec_pack_special(DK_INF, false);
	if (xd < -15000) {
		dec_t z;
		memset(&z, 0, sizeof(z));
		z.kind = DK_FINITE;
		z.exp = DEC_EMIN;
		return dec_finish(z, true);
	}
	/* x = k ln10 + r, |r| <= ln10 / 2 */
	int64_t k = llround(xd / 2.302585092994045684);
	dec_t ln10 = wconst(LN10, 0);
	dec_t r = wadd(x, wmul(wint(-k), ln10));
	/* exp(r) = exp(r / 2^10)^(2^10) */
	dec_t rr = wdiv_small(r, 1024);
	dec_t sum = wint(1), term = wint(1);
	for (int n = 1; n < 200; n++) {
		term = wdiv_small(wmul(term, rr), (uint64_t)n);
		if (big_is_zero(&term.c) || wmag(&term) < wmag(&sum) - WDIG - 2)
			break;
		sum = wadd(sum, term);
	}
	for (int i = 0; i < 10; i++)
		sum = wmul(sum, sum);
	sum.exp += (int)k;
	return wfinish(sum);
}

/* ln of a positive finite x, WDIG digits */
static dec_t
wln(dec_t x)
{
	/* x = m * 10^e10 with m in [1, 10) */
	int nd = big_digits(&x.c);
	int e10 = x.exp + nd - 1;
	dec_t m = x;
	m.neg = false;
	m.exp = -(nd - 1);
	/* m = 2^j * t, t in [1, 2) */
	int j = 0;
	dec_t two = wint(2), t = m;
	while (wmag(&t) > 1 || (wmag(&t) == 1 && wadd(t, wint(-2)).neg == false)) {
		t = wdiv(t, two);
		j++;
	}
	/* ln t = 2 atanh z, z = (t - 1) / (t + 1) in [0, 1/3) */
	dec_t one = wint(1);
	dec_t num = wadd(t, wint(-1));
	dec_t sum;
	memset(&sum, 0, sizeof(sum));
	sum.kind = DK_FINITE;
	if (!big_is_zero(&num.c)) {
		dec_t z = wdiv(num, wadd(t, one));
		dec_t z2 = wmul(z, z), p = z;
		sum = z;
		for (int n = 3; n < 400; n += 2) {
			p = wmul(p, z2);
			dec_t termv = wdiv_small(p, (uint64_t)n);
			if (big_is_zero(&termv.c) || wmag(&termv) < wmag(&sum) - WDIG - 2)
				break;
			sum = wadd(sum, termv);
		}
		sum = wmul(sum, two);
	}
	dec_t res = wadd(sum, wmul(wint(j), wconst(LN2, -1)));
	res = wadd(res, wmul(wint(e10), wconst(LN10, 0)));
	if (big_is_zero(&res.c)) {
		res.exp = 0;
		res.neg = false;
	}
	return res;
}

/* The logarithm's special cases (x unpacked from ad): NaN for NaN and
 * negatives, +Inf for +Inf, -Inf for zero.  True with *out set for them. */
static bool
log_special(bson_decimal128_t ad, const dec_t *x, bson_decimal128_t *out)
{
	if (x->kind == DK_NAN || (x->neg && !(x->kind == DK_FINITE && big_is_zero(&x->c))))
		*out = dec_pack_special(DK_NAN, false);
	else if (x->kind == DK_INF)
		*out = ad;
	else if (big_is_zero(&x->c))
		*out = dec_pack_special(DK_INF, true);
	else
		return false;
	return true;
}

bson_decimal128_t
expr_decimal_ln_exact(bson_decimal128_t ad)
{
	dec_t x = dec_unpack(ad);
	bson_decimal128_t special;

	if (log_special(ad, &x, &special))
		return special;
	return wfinish(wln(x));
}

bson_decimal128_t
expr_decimal_log10_exact(bson_decimal128_t ad)
{
	dec_t x = dec_unpack(ad);
	bson_decimal128_t special;

	if (log_special(ad, &x, &special))
		return special;
	/* exact for powers of ten */
	big_t c = x.c;
	int tz = 0;
	while (!big_is_zero(&c)) {
		big_t t = c;
		if (big_div_small(&t, 10) != 0)
			break;
		c = t;
		tz++;
	}
	big_t one = {{1}};
	if (big_cmp(&c, &one) == 0)
		return expr_decimal_from_int64((int64_t)x.exp + tz);
	return wfinish(wdiv(wln(x), wconst(LN10, 0)));
}

/* ---- conversions --------------------------------------------------------- */

bson_decimal128_t
expr_decimal_from_int64(int64_t i)
{
	dec_t r;
	memset(&r, 0, sizeof(r));
	r.kind = DK_FINITE;
	r.neg = i < 0;
	uint64_t m = i < 0 ? (uint64_t)0 - (uint64_t)i : (uint64_t)i;
	big_from_u128(&r.c, m);
	return dec_finish(r, false);
}

bson_decimal128_t
expr_decimal_from_double(double d)
{
	return expr_decimal_from_double_digits(d, 15);
}

bson_decimal128_t
expr_decimal_from_double_digits(double d, int ndigits)
{
	char buf[64], digits[48];
	int n = 0, e10;
	dec_t r;

	if (isnan(d))
		return dec_pack_special(DK_NAN, false);
	if (isinf(d))
		return dec_pack_special(DK_INF, d < 0);
	memset(&r, 0, sizeof(r));
	r.kind = DK_FINITE;
	r.neg = signbit(d) != 0;
	if (d == 0)
		return dec_finish(r, false);
	snprintf(buf, sizeof(buf), "%.*e", ndigits - 1, fabs(d));
	for (const char *p = buf; *p && *p != 'e'; p++) {
		if (*p >= '0' && *p <= '9')
			digits[n++] = *p;
	}
	digits[n] = 0;
	e10 = atoi(strchr(buf, 'e') + 1);
	u128 c = 0;
	for (int i = 0; i < n; i++)
		c = c * 10 + (u128)(digits[i] - '0');
	big_from_u128(&r.c, c);
	r.exp = e10 - (n - 1);
	return dec_finish(r, false);
}

double
expr_decimal_to_double(bson_decimal128_t d)
{
	char s[BSON_DECIMAL128_STRING];
	dec_t a = dec_unpack(d);

	if (a.kind == DK_NAN)
		return NAN;
	if (a.kind == DK_INF)
		return a.neg ? -INFINITY : INFINITY;
	bson_decimal128_to_string(&d, s);
	return strtod(s, NULL);
}

bool
expr_decimal_to_int64(bson_decimal128_t d, int64_t *out)
{
	dec_t a = dec_unpack(expr_decimal_to_integral(d, 3));

	if (a.kind != DK_FINITE)
		return false;
	if (a.exp > 0) {
		if (big_is_zero(&a.c)) {
			*out = 0;
			return true;
		}
		if (a.exp > 20 || !big_mul_pow10(&a.c, a.exp))
			return false;
	}
	for (int i = 1; i < NLIMB; i++) {
		if (a.c.w[i])
			return false;
	}
	uint64_t m = a.c.w[0];
	if (a.neg) {
		if (m > (uint64_t)INT64_MAX + 1)
			return false;
		*out = m == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)m;
	} else {
		if (m > (uint64_t)INT64_MAX)
			return false;
		*out = (int64_t)m;
	}
	return true;
}

bool
expr_decimal_is_nan(bson_decimal128_t d)
{
	return dec_unpack(d).kind == DK_NAN;
}

bool
expr_decimal_is_inf(bson_decimal128_t d)
{
	return dec_unpack(d).kind == DK_INF;
}

bool
expr_decimal_is_zero(bson_decimal128_t d)
{
	dec_t a = dec_unpack(d);
	return a.kind == DK_FINITE && big_is_zero(&a.c);
}

bool
expr_decimal_is_negative(bson_decimal128_t d)
{
	dec_t a = dec_unpack(d);
	return a.kind != DK_NAN && a.neg && !(a.kind == DK_FINITE && big_is_zero(&a.c));
}

bool
expr_decimal_is_integral(bson_decimal128_t d)
{
	dec_t a = dec_unpack(d);
	if (a.kind != DK_FINITE)
		return false;
	if (a.exp >= 0 || big_is_zero(&a.c))
		return true;
	for (int i = 0; i < -a.exp; i++) {
		if (big_div_small(&a.c, 10) != 0)
			return false;
		if (big_is_zero(&a.c))
			return true;
	}
	return true;
}

bson_decimal128_t
expr_decimal_negate(bson_decimal128_t d)
{
	d.high ^= 0x8000000000000000ULL;
	return d;
}

bson_decimal128_t
expr_decimal_abs(bson_decimal128_t d)
{
	d.high &= ~0x8000000000000000ULL;
	return d;
}

int
expr_decimal_cmp(bson_decimal128_t ad, bson_decimal128_t bd)
{
	dec_t a = dec_unpack(ad), b = dec_unpack(bd);

	if (a.kind == DK_NAN || b.kind == DK_NAN)
		return (a.kind == DK_NAN) == (b.kind == DK_NAN) ? 0 : (a.kind == DK_NAN ? -1 : 1);
	bool az = a.kind == DK_FINITE && big_is_zero(&a.c);
	bool bz = b.kind == DK_FINITE && big_is_zero(&b.c);
	int sa = az ? 0 : (a.neg ? -1 : 1);
	int sb = bz ? 0 : (b.neg ? -1 : 1);
	if (sa != sb)
		return sa < sb ? -1 : 1;
	if (sa == 0)
		return 0;
	int mag;
	if (a.kind == DK_INF || b.kind == DK_INF) {
		mag = (a.kind == DK_INF) - (b.kind == DK_INF);
	} else {
		/* compare by magnitude: digits + exponent first, then aligned */
		int ma = big_digits(&a.c) + a.exp, mb = big_digits(&b.c) + b.exp;
		if (ma != mb) {
			mag = ma < mb ? -1 : 1;
		} else {
			big_t x = a.c, y = b.c;
			if (a.exp > b.exp)
				big_mul_pow10(&x, a.exp - b.exp);
			else
				big_mul_pow10(&y, b.exp - a.exp);
			mag = big_cmp(&x, &y);
		}
	}
	return sa > 0 ? mag : -mag;
}

/* ---- trigonometric and hyperbolic functions, correctly rounded -----------
 * mongod computes these with Intel's decimal library (bid128_sin, ...), whose
 * results are good to about 34 digits; the operators call it too
 * (decimal_bid.c).  These are the reference its results are tested against:
 * each is computed with the
 * 60-digit intermediates above and rounded once to 34 digits: the reduction
 * by pi/2 is exact (integer arithmetic on a 115-digit pi/2 below 10^30, on
 * the 6,300 digits of 2/pi in two_over_pi.h above), the inverse
 * functions halve their argument before a Taylor series, and the hyperbolic
 * ones are built from exp and ln. */

/* pi/2 to 115 digits, the first digit in the units place */
static const char PIO2[] =
	"1570796326794896619231321691639751442098584699687552910487472296153908203143104499314017412671058533991074043256641";
#define PIO2_EXP (-(int)(sizeof(PIO2) - 2))

static dec_t
wzero(void)
{
	dec_t z;
	memset(&z, 0, sizeof(z));
	z.kind = DK_FINITE;
	return z;
}

static dec_t
wneg(dec_t a)
{
	a.neg = !a.neg;
	return a;
}

static bool
wis_zero(const dec_t *a)
{
	return big_is_zero(&a->c);
}

static dec_t
wpio2(void)
{
	return wconst(PIO2, 0);
}

/* sqrt of a non-negative wide value, WDIG digits */
static dec_t
wsqrt(dec_t x)
{
	if (wis_zero(&x))
		return wzero();
	big_t c = x.c;
	int e = x.exp;
	int k = 2 * WDIG + 2 - big_digits(&c);
	if (k < 0) {
		for (int i = 0; i < -k; i++)
			big_div_small(&c, 10);
		e -= k;
		k = 0;
	}
	if ((e - k) % 2 != 0)
		k++;
	big_mul_pow10(&c, k);
	e -= k;
	dec_t r = wzero();
	big_isqrt(&c, &r.c);
	r.exp = e / 2;
	wround(&r, true);
	return r;
}

/* a double near a wide value (its leading 17 digits) */
static double
wto_double(const dec_t *x)
{
	big_t c = x->c;
	int e = x->exp, nd = big_digits(&c);
	for (; nd > 17; nd--, e++)
		big_div_small(&c, 10);
	double v = (double)big_to_u128(&c) * pow(10.0, e);
	return x->neg ? -v : v;
}

/* e^x for a finite x with |x| <= 15000, WDIG digits (as expr_decimal_exp_exact) */
static dec_t
wexp(dec_t x)
{
	if (wis_zero(&x))
		return wint(1);
	int64_t k = llround(wto_double(&x) / 2.302585092994045684);
	dec_t r = wadd(x, wmul(wint(-k), wconst(LN10, 0)));
	dec_t rr = wdiv_small(r, 1024);
	dec_t sum = wint(1), term = wint(1);
	for (int n = 1; n < 200; n++) {
		term = wdiv_small(wmul(term, rr), (uint64_t)n);
		if (wis_zero(&term) || wmag(&term) < wmag(&sum) - WDIG - 2)
			break;
		sum = wadd(sum, term);
	}
	for (int i = 0; i < 10; i++)
		sum = wmul(sum, sum);
	sum.exp += (int)k;
	return sum;
}

/* Taylor series of sin/sinh (odd) or cos/cosh (even); `alt` alternates the
 * signs (sin, cos).  For |x| below about 1. */
static dec_t
wtaylor(dec_t x, bool odd, bool alt)
{
	dec_t x2 = wmul(x, x);
	if (alt)
		x2.neg = !x2.neg;
	dec_t term = odd ? x : wint(1), sum = term;
	for (int n = odd ? 2 : 1; n < 400; n += 2) {
		term = wdiv_small(wmul(term, x2), (uint64_t)n * (uint64_t)(n + 1));
		if (wis_zero(&term) || wmag(&term) < wmag(&sum) - WDIG - 2)
			break;
		sum = wadd(sum, term);
	}
	return sum;
}

/* x + s x^3/3 + x^5/5 ... (s = -1: atan, s = +1: atanh), for |x| <= 1/2 */
static dec_t
wodd_series(dec_t x, bool alt)
{
	dec_t x2 = wmul(x, x);
	if (alt)
		x2.neg = !x2.neg;
	dec_t p = x, sum = x;
	for (int n = 3; n < 1000; n += 2) {
		p = wmul(p, x2);
		dec_t t = wdiv_small(p, (uint64_t)n);
		if (wis_zero(&t) || wmag(&t) < wmag(&sum) - WDIG - 2)
			break;
		sum = wadd(sum, t);
	}
	return sum;
}

/* atan of a finite value */
static dec_t
watan(dec_t x)
{
	bool neg = x.neg, inv = false;
	dec_t a = x, one = wint(1);
	a.neg = false;
	if (wis_zero(&a))
		return x;
	if (wmag(&a) > 1 || (wmag(&a) == 1 && !wadd(a, wint(-1)).neg)) {
		if (wmag(&a) > 80) /* pi/2 - 1/a: 1/a lies below 60 digits */
			return neg ? wneg(wpio2()) : wpio2();
		a = wdiv(one, a);
		inv = true;
	}
	/* atan a = 2 atan(a / (1 + sqrt(1 + a^2))), three times: |a| < 0.1 */
	for (int i = 0; i < 3; i++)
		a = wdiv(a, wadd(one, wsqrt(wadd(one, wmul(a, a)))));
	dec_t r = wmul(wodd_series(a, true), wint(8));
	if (inv)
		r = wadd(wpio2(), wneg(r));
	r.neg = neg;
	return r;
}

/* atanh of |x| < 1 */
static dec_t
watanh(dec_t x)
{
	dec_t a = x, one = wint(1);
	a.neg = false;
	if (wmag(&a) <= 0 && wto_double(&a) <= 0.5)
		return wodd_series(x, false);
	/* 1/2 ln((1 + a) / (1 - a)) */
	dec_t r = wdiv(wln(wdiv(wadd(one, a), wadd(one, wneg(a)))), wint(2));
	r.neg = x.neg;
	return r;
}

/* Reduce x (|x| < 10^30) by pi/2: x = k pi/2 + r, |r| <= pi/4 (about);
 * *quadrant = k mod 4.  Exact: x and k pi/2 are aligned as integers. */
static dec_t
wreduce(dec_t x, int *quadrant)
{
	*quadrant = 0;
	if (wmag(&x) <= 0)
		return x;
	/* k = round(|x| / (pi/2)) */
	dec_t ax = x;
	ax.neg = false;
	dec_t q = wdiv(ax, wpio2());
	big_t k = q.c;
	uint64_t last = 0;
	for (int i = 0; i < -q.exp; i++)
		last = big_div_small(&k, 10);
	if (q.exp > 0)
		big_mul_pow10(&k, q.exp);
	if (last >= 5) {
		big_t one = {{1}};
		big_add(&k, &one);
	}
	/* r = |x| - k pi/2 at exponent PIO2_EXP */
	big_t p, kp;
	memset(&p, 0, sizeof(p));
	for (const char *s = PIO2; *s; s++)
		big_mul_small(&p, 10, (uint64_t)(*s - '0'));
	big_mul(&kp, &k, &p);
	dec_t xs = ax, kps = wzero(), r = wzero();
	big_mul_pow10(&xs.c, ax.exp - PIO2_EXP);
	xs.exp = PIO2_EXP;
	kps.c = kp;
	kps.exp = PIO2_EXP;
	kps.neg = true;
	r.exp = PIO2_EXP;
	add_aligned(&xs, &kps, &r);
	wround(&r, false);
	int km = (int)(k.w[0] & 3);
	if (x.neg) {
		r.neg = !r.neg;
		km = (4 - km) & 3;
	}
	*quadrant = km;
	return r;
}

/* Digits of 2/pi kept below the units place by wreduce_big: with a 34-digit
 * coefficient the product below stays under 10^151, inside the 512-bit big_t,
 * and the reduced fraction carries an error under 10^(34-115). */
#define RED_PREC 115

/* The i-th decimal digit of 2/pi (i = 1 is the first after the point; none
 * at or before the units place, whose digit is 0). */
static int
two_over_pi_digit(int i)
{
	return (i >= 1 && i <= TWO_OVER_PI_NDIGITS) ? TWO_OVER_PI[i - 1] - '0' : 0;
}

/* Reduce any finite x = c 10^e (c below 10^34, e >= -RED_PREC + 2) by pi/2,
 * as wreduce, Payne-Hanek style: x 2/pi = c (10^e 2/pi), and of 10^e 2/pi
 * only the digits from the tens place (position e - 1) to RED_PREC places
 * below the units matter -- the higher ones give multiples of 100, which
 * change neither k mod 4 nor the fraction.  N = those RED_PREC + 2 digits as
 * an integer; c N = k 10^RED_PREC + f, r = (f / 10^RED_PREC) pi/2. */
static dec_t
wreduce_big(dec_t x, int *quadrant)
{
	big_t n, t, q, f, pw, half;
	memset(&n, 0, sizeof(n));
	for (int i = x.exp - 1; i <= x.exp + RED_PREC; i++)
		big_mul_small(&n, 10, (uint64_t)two_over_pi_digit(i));
	big_mul(&t, &x.c, &n);
	memset(&pw, 0, sizeof(pw));
	pw.w[0] = 1;
	big_mul_pow10(&pw, RED_PREC);
	big_divmod(&t, &pw, &q, &f);
	int km = (int)(q.w[0] & 3);
	half = pw;
	big_div_small(&half, 2);
	dec_t fr = wzero();
	fr.exp = -RED_PREC;
	if (big_cmp(&f, &half) > 0) { /* round to the nearest k: f - 10^RED_PREC */
		big_sub(&pw, &f);
		fr.c = pw;
		fr.neg = true;
		km = (km + 1) & 3;
	} else {
		fr.c = f;
	}
	wround(&fr, false);
	dec_t r = wmul(fr, wpio2());
	if (x.neg) {
		r.neg = !r.neg;
		km = (4 - km) & 3;
	}
	*quadrant = km;
	return r;
}

bool
expr_decimal_trig_exact(expr_dtrig_t fn, bson_decimal128_t ad, bson_decimal128_t *out)
{
	dec_t x = dec_unpack(ad), one = wint(1), r;

	if (x.kind == DK_NAN) {
		*out = ad;
		return true;
	}
	if (x.kind == DK_INF) {
		bson_decimal128_t inf = dec_pack_special(DK_INF, x.neg);
		switch (fn) {
		case DT_ATAN: *out = wfinish(x.neg ? wneg(wpio2()) : wpio2()); break;
		case DT_SINH: case DT_ASINH: *out = inf; break;
		case DT_COSH: *out = dec_pack_special(DK_INF, false); break;
		case DT_ACOSH: *out = x.neg ? dec_pack_special(DK_NAN, false) : inf; break;
		case DT_TANH: *out = expr_decimal_from_int64(x.neg ? -1 : 1); break;
		default: *out = dec_pack_special(DK_NAN, false); break; /* outside the domain */
		}
		return true;
	}
	dec_t ax = x;
	ax.neg = false;
	switch (fn) {
	case DT_SIN:
	case DT_COS:
	case DT_TAN: {
		int quad;
		dec_t rr = wmag(&x) > 30 ? wreduce_big(x, &quad) : wreduce(x, &quad);
		dec_t s = wtaylor(rr, true, true), c = wtaylor(rr, false, true);
		dec_t sv = (quad == 0) ? s : (quad == 1) ? c : (quad == 2) ? wneg(s) : wneg(c);
		dec_t cv = (quad == 0) ? c : (quad == 1) ? wneg(s) : (quad == 2) ? wneg(c) : s;
		if (fn == DT_SIN)
			r = wis_zero(&x) ? x : sv;
		else if (fn == DT_COS)
			r = cv;
		else
			r = wis_zero(&x) ? x : wdiv(sv, cv);
		break;
	}
	case DT_ASIN:
	case DT_ACOS: {
		int c1 = expr_decimal_cmp(expr_decimal_abs(ad), expr_decimal_from_int64(1));
		if (c1 > 0) {
			*out = dec_pack_special(DK_NAN, false);
			return true;
		}
		dec_t as;
		if (c1 == 0)
			as = x.neg ? wneg(wpio2()) : wpio2();
		else if (wis_zero(&x))
			as = x;
		else
			as = watan(wdiv(x, wsqrt(wmul(wadd(one, wneg(x)), wadd(one, x)))));
		r = fn == DT_ASIN ? as : wadd(wpio2(), wneg(as));
		if (fn == DT_ACOS && wis_zero(&r))
			r = wzero();
		break;
	}
	case DT_ATAN:
		r = watan(x);
		break;
	case DT_SINH:
	case DT_COSH:
	case DT_TANH: {
		if (wmag(&x) > 5) { /* |x| >= 10^5: e^|x| beyond decimal128 */
			if (fn == DT_TANH)
				*out = expr_decimal_from_int64(x.neg ? -1 : 1);
			else
				*out = dec_pack_special(DK_INF, fn == DT_SINH && x.neg);
			return true;
		}
		dec_t s, c;
		if (wmag(&x) <= 0) {
			s = wtaylor(x, true, false);
			c = wtaylor(x, false, false);
		} else {
			dec_t e = wexp(ax), ie = wdiv(one, e);
			s = wdiv(wadd(e, wneg(ie)), wint(2));
			c = wdiv(wadd(e, ie), wint(2));
			s.neg = x.neg;
		}
		r = fn == DT_SINH ? s : fn == DT_COSH ? c : wdiv(s, c);
		if (fn != DT_COSH && wis_zero(&x))
			r = x;
		break;
	}
	case DT_ASINH:
		if (wis_zero(&x)) {
			r = x;
		} else if (wmag(&x) <= 0 && wto_double(&ax) <= 0.5) {
			r = watanh(wdiv(x, wsqrt(wadd(one, wmul(x, x)))));
		} else {
			r = wln(wadd(ax, wsqrt(wadd(wmul(ax, ax), one))));
			r.neg = x.neg;
		}
		break;
	case DT_ACOSH:
		if (expr_decimal_cmp(ad, expr_decimal_from_int64(1)) < 0) {
			*out = dec_pack_special(DK_NAN, false);
			return true;
		}
		r = wln(wadd(x, wsqrt(wmul(wadd(x, wint(-1)), wadd(x, one)))));
		break;
	case DT_ATANH: {
		int c1 = expr_decimal_cmp(expr_decimal_abs(ad), expr_decimal_from_int64(1));
		if (c1 > 0) {
			*out = dec_pack_special(DK_NAN, false);
			return true;
		}
		if (c1 == 0) {
			*out = dec_pack_special(DK_INF, x.neg);
			return true;
		}
		r = wis_zero(&x) ? x : watanh(x);
		break;
	}
	default:
		*out = dec_pack_special(DK_NAN, false);
		return true;
	}
	*out = wfinish(r);
	/* tanh saturating at +-1 answers the integer, as it does for Infinity */
	if (fn == DT_TANH && expr_decimal_cmp(expr_decimal_abs(*out), expr_decimal_from_int64(1)) == 0)
		*out = expr_decimal_from_int64(x.neg ? -1 : 1);
	return true;
}

bson_decimal128_t
expr_decimal_atan2_exact(bson_decimal128_t yd, bson_decimal128_t xd)
{
	dec_t y = dec_unpack(yd), x = dec_unpack(xd), r;
	dec_t pi = wmul(wpio2(), wint(2));

	if (y.kind == DK_NAN || x.kind == DK_NAN)
		return dec_pack_special(DK_NAN, false);
	bool yz = y.kind == DK_FINITE && wis_zero(&y);
	bool xz = x.kind == DK_FINITE && wis_zero(&x);
	if (y.kind == DK_INF) {
		if (x.kind == DK_INF) /* pi/4 or 3 pi/4 */
			r = x.neg ? wdiv(wmul(pi, wint(3)), wint(4)) : wdiv(pi, wint(4));
		else
			r = wpio2();
		r.neg = y.neg;
	} else if (x.kind == DK_INF) {
		if (x.neg) {
			r = pi;
			r.neg = y.neg;
		} else {
			r = yz ? y : wzero();
			r.neg = y.neg;
			if (yz)
				return yd;
		}
	} else if (yz) {
		/* +-0: x > 0 or +0 keeps y; x < 0 or -0 gives +-pi */
		if (x.neg) {
			r = pi;
			r.neg = y.neg;
		} else {
			return yd;
		}
	} else if (xz) {
		r = wpio2();
		r.neg = y.neg;
	} else {
		r = watan(wdiv(y, x));
		if (x.neg)
			r = wadd(r, y.neg ? wneg(pi) : pi);
	}
	return wfinish(r);
}
