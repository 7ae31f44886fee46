/*
 * value.c -- BSON values in MongoDB's order, exact cross-type number
 * comparison, Decimal128 decoding, type names, and mongod-style rendering.
 *
 * Per-type behaviour (rank, comparison, rendering) lives in one table indexed
 * by BSON type code.  Numbers are compared exactly: int32/int64/double with
 * integer tricks, Decimal128 through its decoded coefficient and exponent
 * (IEEE 754-2008 BID, the encoding libbson stores) and, against doubles,
 * through an exactly computed "floor to double" of the decimal.
 *
 * Not here: dotted paths (path.c), index key encoding (keystring.c, which
 * bv_hash reuses), arithmetic on Decimal128 (higher layers).
 */
#include "bson/value.h"
#include "bson/keystring.h"
#include "bson/collation.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned __int128 u128;

/* ------------------------------------------------------------------ */
/* Decimal128 decoding                                                 */
/* ------------------------------------------------------------------ */

#define DEC_EXP_BIAS 6176

void
bv_decimal_decode(const bson_decimal128_t *d, bv_decimal_parts_t *out)
{
	uint64_t hi = d->high, lo = d->low;
	uint32_t comb = (uint32_t)((hi >> 58) & 0x1F);
	u128 coef;

	memset(out, 0, sizeof *out);
	out->negative = (hi >> 63) != 0;
	if (comb == 0x1F) {
		out->kind = BV_DEC_NAN;
		return;
	}
	if (comb == 0x1E) {
		out->kind = out->negative ? BV_DEC_NEG_INF : BV_DEC_POS_INF;
		return;
	}
	out->kind = BV_DEC_FINITE;
	if (((hi >> 61) & 3) == 3) {
		/* "11" form: implicit 100 prefix makes the coefficient > 10^34-1,
		 * which is non-canonical and therefore zero. */
		out->exponent = (int)((hi >> 47) & 0x3FFF) - DEC_EXP_BIAS;
		out->coef_hi = 0;
		out->coef_lo = 0;
		return;
	}
	out->exponent = (int)((hi >> 49) & 0x3FFF) - DEC_EXP_BIAS;
	coef = ((u128)(hi & 0x1FFFFFFFFFFFFULL) << 64) | lo;
	/* 10^34 - 1 = 0x1ED09BEAD87C0378D8E63FFFFFFFF */
	{
		u128 max = ((u128)0x1ED09BEAD87C0ULL << 64) | 0x378D8E63FFFFFFFFULL;
		if (coef > max)
			coef = 0;
	}
	out->coef_hi = (uint64_t)(coef >> 64);
	out->coef_lo = (uint64_t)coef;
}

bson_decimal128_t
bv_decimal_make(bool negative, uint64_t coef_hi, uint64_t coef_lo, int exponent)
{
	bson_decimal128_t d;
	uint64_t biased = (uint64_t)(exponent + DEC_EXP_BIAS) & 0x3FFF;

	d.high = ((uint64_t)(negative ? 1 : 0) << 63) | (biased << 49) | (coef_hi & 0x1FFFFFFFFFFFFULL);
	d.low = coef_lo;
	return d;
}

/* Decimal digits of a 128-bit coefficient into buf (no leading zeros, "0"
 * for zero); returns the digit count. buf holds >= 40 bytes. */
static int
u128_digits(u128 v, char *buf)
{
	char tmp[48];
	int n = 0, i;

	if (v == 0) {
		buf[0] = '0';
		buf[1] = '\0';
		return 1;
	}
	while (v != 0) {
		tmp[n++] = (char)('0' + (int)(v % 10));
		v /= 10;
	}
	for (i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n] = '\0';
	return n;
}

/*
 * Normal form of a finite number: sign, significant digits without leading
 * or trailing zeros, and exponent x with value = 0.d1d2...dn * 10^x.
 * Zero has nd == 0.
 */
typedef struct dnum {
	bool neg;
	int nd;
	int x;
	char d[40];
} dnum_t;

static void
dnum_from_coef(dnum_t *n, bool neg, u128 coef, int exponent)
{
	int len;

	n->neg = neg;
	if (coef == 0) {
		n->nd = 0;
		n->x = 0;
		n->neg = false;
		return;
	}
	len = u128_digits(coef, n->d);
	n->x = len + exponent;
	while (len > 0 && n->d[len - 1] == '0')
		len--;
	n->nd = len;
}

void
bv_decimal_normalize(const bson_decimal128_t *d, bv_decimal_parts_t *parts,
                     bool *negative, int *x, char *digits, int *ndigits)
{
	dnum_t n;

	bv_decimal_decode(d, parts);
	if (parts->kind != BV_DEC_FINITE) {
		*negative = parts->negative;
		*x = 0;
		*ndigits = 0;
		digits[0] = '\0';
		return;
	}
	dnum_from_coef(&n, parts->negative, ((u128)parts->coef_hi << 64) | parts->coef_lo,
	               parts->exponent);
	*negative = n.neg;
	*x = n.x;
	*ndigits = n.nd;
	memcpy(digits, n.d, (size_t)n.nd);
	digits[n.nd] = '\0';
}

/* ------------------------------------------------------------------ */
/* Small unsigned big integers (for exact decimal -> double)            */
/* ------------------------------------------------------------------ */

#define BIG_LIMBS 72 /* 2304 bits: enough for 10^310 * 2^64 and 5^360 << 64 */

typedef struct big {
	int n; /* limbs in use; no leading zero limbs */
	uint32_t l[BIG_LIMBS];
} big_t;

static void
big_set_u128(big_t *b, u128 v)
{
	b->n = 0;
	while (v != 0) {
		b->l[b->n++] = (uint32_t)v;
		v >>= 32;
	}
}

static void
big_mul_small(big_t *b, uint32_t m)
{
	uint64_t carry = 0;
	int i;

	for (i = 0; i < b->n; i++) {
		uint64_t t = (uint64_t)b->l[i] * m + carry;
		b->l[i] = (uint32_t)t;
		carry = t >> 32;
	}
	if (carry != 0 && b->n < BIG_LIMBS)
		b->l[b->n++] = (uint32_t)carry;
}

static void
big_mul_pow(big_t *b, uint32_t base, int e)
{
	/* base^k for the largest k whose power fits 32 bits, repeatedly */
	uint32_t chunk = 1;
	int k = 0;

	while ((uint64_t)chunk * base <= 0xFFFFFFFFULL) {
		chunk *= base;
		k++;
	}
	while (e >= k) {
		big_mul_small(b, chunk);
		e -= k;
	}
	while (e-- > 0)
		big_mul_small(b, base);
}

static int
big_bits(const big_t *b)
{
	if (b->n == 0)
		return 0;
	return (b->n - 1) * 32 + (32 - __builtin_clz(b->l[b->n - 1]));
}

static void
big_shl(big_t *b, int s)
{
	int limbs = s / 32, bits = s % 32, i;

	if (b->n == 0)
		return;
	if (bits != 0) {
		uint32_t carry = 0;
		for (i = 0; i < b->n; i++) {
			uint32_t v = b->l[i];
			b->l[i] = (v << bits) | carry;
			carry = v >> (32 - bits);
		}
		if (carry != 0)
			b->l[b->n++] = carry;
	}
	if (limbs != 0) {
		for (i = b->n - 1; i >= 0; i--)
			b->l[i + limbs] = b->l[i];
		for (i = 0; i < limbs; i++)
			b->l[i] = 0;
		b->n += limbs;
	}
}

static void
big_shr1(big_t *b)
{
	int i;

	for (i = 0; i < b->n; i++) {
		b->l[i] >>= 1;
		if (i + 1 < b->n)
			b->l[i] |= b->l[i + 1] << 31;
	}
	while (b->n > 0 && b->l[b->n - 1] == 0)
		b->n--;
}

static int
big_cmp(const big_t *a, const big_t *b)
{
	int i;

	if (a->n != b->n)
		return a->n < b->n ? -1 : 1;
	for (i = a->n - 1; i >= 0; i--)
		if (a->l[i] != b->l[i])
			return a->l[i] < b->l[i] ? -1 : 1;
	return 0;
}

static void
big_sub(big_t *a, const big_t *b) /* a -= b, a >= b */
{
	int64_t borrow = 0;
	int i;

	for (i = 0; i < a->n; i++) {
		int64_t t = (int64_t)a->l[i] - (i < b->n ? b->l[i] : 0) - borrow;
		borrow = t < 0;
		a->l[i] = (uint32_t)(t + (borrow ? ((int64_t)1 << 32) : 0));
	}
	while (a->n > 0 && a->l[a->n - 1] == 0)
		a->n--;
}

/* Top 64 bits of b (b->n > 0): *q = floor(b / 2^shift) with shift chosen so
 * q has exactly 64 bits when b has more; *sticky = dropped bits nonzero. */
static uint64_t
big_top64(const big_t *b, int *shift, bool *sticky)
{
	int nb = big_bits(b), s = nb > 64 ? nb - 64 : 0, i;
	uint64_t q = 0;

	*sticky = false;
	for (i = nb - 1; i >= s; i--) {
		uint64_t bit = (b->l[i / 32] >> (i % 32)) & 1;
		q = (q << 1) | bit;
	}
	for (i = 0; i < s && !*sticky; i++)
		if ((b->l[i / 32] >> (i % 32)) & 1)
			*sticky = true;
	*shift = s;
	return q;
}

/* Round (q + sticky fraction) * 2^e2 toward zero to a double; q != 0. */
static double
trunc_to_double(uint64_t q, int e2, bool sticky, bool *exact)
{
	int nb = 64 - __builtin_clzll(q);
	int top = nb - 1 + e2;
	int ulp, shift;
	uint64_t mant;

	if (top > 1023) {
		*exact = false;
		return DBL_MAX;
	}
	ulp = top - 52;
	if (ulp < -1074)
		ulp = -1074;
	shift = ulp - e2;
	if (shift <= 0) {
		*exact = !sticky;
		return ldexp((double)q, e2);
	}
	if (shift >= 64) {
		*exact = false;
		return 0.0;
	}
	mant = q >> shift;
	*exact = !sticky && (q & ((((uint64_t)1) << shift) - 1)) == 0;
	return ldexp((double)mant, ulp);
}

/* |c * 10^q| rounded toward zero to a double; *exact says whether equal. */
static double
dec_mag_trunc(u128 c, int q, bool *exact)
{
	big_t a, b;
	char digs[48];
	int nd, shift, i, k;
	uint64_t quo;
	bool sticky;

	if (c == 0) {
		*exact = true;
		return 0.0;
	}
	/* Fast path: c and 10^|q| both exact doubles; one rounding, and fma
	 * gives the exact sign of the rounding error. */
	if (c < ((u128)1 << 53) && q >= -22 && q <= 22) {
		static const double p10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8,
			1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20,
			1e21, 1e22};
		double dc = (double)c, a, r;

		if (q >= 0) {
			a = dc * p10[q];
			r = fma(dc, p10[q], -a);   /* true - a */
		} else {
			a = dc / p10[-q];
			r = -fma(a, p10[-q], -dc); /* (true - a) * 10^-q */
		}
		*exact = r == 0.0;
		return r < 0.0 ? nextafter(a, 0.0) : a;
	}
	nd = u128_digits(c, digs);
	if (q >= 0) {
		if (nd + q > 310) {
			*exact = false;
			return DBL_MAX;
		}
		big_set_u128(&a, c);
		big_mul_pow(&a, 10, q);
		quo = big_top64(&a, &shift, &sticky);
		return trunc_to_double(quo, shift, sticky, exact);
	}
	if (nd + q < -326) {
		*exact = false;
		return 0.0;
	}
	/* c / 10^p = c / (5^p * 2^p): divide c (scaled) by 5^p exactly. */
	big_set_u128(&a, c);
	big_set_u128(&b, 1);
	big_mul_pow(&b, 5, -q);
	k = 62 - (big_bits(&a) - big_bits(&b)); /* quotient ends up < 2^63 */
	if (k > 0)
		big_shl(&a, k);
	else if (k < 0)
		big_shl(&b, -k);
	/* restoring division, quotient < 2^64 */
	quo = 0;
	big_shl(&b, 63);
	for (i = 63; i >= 0; i--) {
		if (big_cmp(&a, &b) >= 0) {
			big_sub(&a, &b);
			quo |= (uint64_t)1 << i;
		}
		big_shr1(&b);
	}
	sticky = a.n != 0;
	return trunc_to_double(quo, q - k, sticky, exact);
}

double
bv_decimal_floor_double(const bson_decimal128_t *d, bool *exact)
{
	bv_decimal_parts_t p;
	double m;
	bool ex;

	bv_decimal_decode(d, &p);
	if (p.kind == BV_DEC_NAN) {
		*exact = true;
		return NAN;
	}
	if (p.kind == BV_DEC_POS_INF) {
		*exact = true;
		return INFINITY;
	}
	if (p.kind == BV_DEC_NEG_INF) {
		*exact = true;
		return -INFINITY;
	}
	m = dec_mag_trunc(((u128)p.coef_hi << 64) | p.coef_lo, p.exponent, &ex);
	*exact = ex;
	if (m == 0.0 && ex)
		return 0.0;
	if (!p.negative)
		return m;
	if (ex)
		return -m;
	return -nextafter(m, INFINITY); /* DBL_MAX -> inf: below -DBL_MAX */
}

/* ------------------------------------------------------------------ */
/* Numbers                                                             */
/* ------------------------------------------------------------------ */

static int
cmp3_i64(int64_t a, int64_t b)
{
	return a < b ? -1 : (a > b ? 1 : 0);
}

static int
cmp_double(double a, double b)
{
	if (a < b)
		return -1;
	if (a > b)
		return 1;
	if (a == b)
		return 0;
	if (isnan(a))
		return isnan(b) ? 0 : -1;
	return 1;
}

/* exact int64 vs double */
static int
cmp_i64_double(int64_t i, double d)
{
	int64_t t;

	if (isnan(d))
		return 1;
	if (d >= 9223372036854775808.0)
		return -1;
	if (d < -9223372036854775808.0)
		return 1;
	t = (int64_t)d; /* truncation; exact in range */
	if (i != t)
		return i < t ? -1 : 1;
	return cmp_double((double)t, d);
}

/* 10^0 .. 10^38 as 128-bit integers */
static const u128 pow10_table[39] = {
	0x1ULL,
	0xaULL,
	0x64ULL,
	0x3e8ULL,
	0x2710ULL,
	0x186a0ULL,
	0xf4240ULL,
	0x989680ULL,
	0x5f5e100ULL,
	0x3b9aca00ULL,
	0x2540be400ULL,
	0x174876e800ULL,
	0xe8d4a51000ULL,
	0x9184e72a000ULL,
	0x5af3107a4000ULL,
	0x38d7ea4c68000ULL,
	0x2386f26fc10000ULL,
	0x16345785d8a0000ULL,
	0xde0b6b3a7640000ULL,
	0x8ac7230489e80000ULL,
	(((u128)0x5ULL) << 64) | 0x6bc75e2d63100000ULL,
	(((u128)0x36ULL) << 64) | 0x35c9adc5dea00000ULL,
	(((u128)0x21eULL) << 64) | 0x19e0c9bab2400000ULL,
	(((u128)0x152dULL) << 64) | 0x2c7e14af6800000ULL,
	(((u128)0xd3c2ULL) << 64) | 0x1bcecceda1000000ULL,
	(((u128)0x84595ULL) << 64) | 0x161401484a000000ULL,
	(((u128)0x52b7d2ULL) << 64) | 0xdcc80cd2e4000000ULL,
	(((u128)0x33b2e3cULL) << 64) | 0x9fd0803ce8000000ULL,
	(((u128)0x204fce5eULL) << 64) | 0x3e25026110000000ULL,
	(((u128)0x1431e0faeULL) << 64) | 0x6d7217caa0000000ULL,
	(((u128)0xc9f2c9cd0ULL) << 64) | 0x4674edea40000000ULL,
	(((u128)0x7e37be2022ULL) << 64) | 0xc0914b2680000000ULL,
	(((u128)0x4ee2d6d415bULL) << 64) | 0x85acef8100000000ULL,
	(((u128)0x314dc6448d93ULL) << 64) | 0x38c15b0a00000000ULL,
	(((u128)0x1ed09bead87c0ULL) << 64) | 0x378d8e6400000000ULL,
	(((u128)0x13426172c74d82ULL) << 64) | 0x2b878fe800000000ULL,
	(((u128)0xc097ce7bc90715ULL) << 64) | 0xb34b9f1000000000ULL,
	(((u128)0x785ee10d5da46d9ULL) << 64) | 0xf436a000000000ULL,
	(((u128)0x4b3b4ca85a86c47aULL) << 64) | 0x98a224000000000ULL,
};

static u128
pow10_u128(int k)
{
	return pow10_table[k];
}

/* number of decimal digits of c (c != 0, c < 10^38) */
static int
u128_ndigits(u128 c)
{
	int n = 1;

	while (n < 39 && c >= pow10_u128(n))
		n++;
	return n;
}

static int
cmp_u128(u128 a, u128 b)
{
	return a < b ? -1 : (a > b ? 1 : 0);
}

static u128
parts_coef(const bv_decimal_parts_t *p)
{
	return ((u128)p->coef_hi << 64) | p->coef_lo;
}

/* class for specials: 0 NaN, 1 -inf, 2 finite, 3 +inf */
static int
dec_class(const bv_decimal_parts_t *p)
{
	switch (p->kind) {
	case BV_DEC_NAN:
		return 0;
	case BV_DEC_NEG_INF:
		return 1;
	case BV_DEC_POS_INF:
		return 3;
	default:
		return 2;
	}
}

/* -1, 0, 1: sign of a finite decimal */
static int
parts_sign(const bv_decimal_parts_t *p)
{
	if (p->coef_hi == 0 && p->coef_lo == 0)
		return 0;
	return p->negative ? -1 : 1;
}

/* |c1 * 10^q1| vs |c2 * 10^q2|, both nonzero, c < 10^34 */
static int
cmp_dec_mag(u128 c1, int q1, u128 c2, int q2)
{
	int a1 = u128_ndigits(c1) + q1, a2 = u128_ndigits(c2) + q2;

	if (a1 != a2)
		return a1 < a2 ? -1 : 1;
	/* same adjusted exponent: the one with the larger exponent has that
	 * many fewer digits, so scaling it up stays below 10^34 */
	if (q1 > q2)
		return cmp_u128(c1 * pow10_u128(q1 - q2), c2);
	if (q2 > q1)
		return cmp_u128(c1, c2 * pow10_u128(q2 - q1));
	return cmp_u128(c1, c2);
}

int
bv_decimal_compare(const bson_decimal128_t *a, const bson_decimal128_t *b)
{
	bv_decimal_parts_t pa, pb;
	int ca, cb, sa, sb, m;

	bv_decimal_decode(a, &pa);
	bv_decimal_decode(b, &pb);
	ca = dec_class(&pa);
	cb = dec_class(&pb);
	if (ca != cb)
		return ca < cb ? -1 : 1;
	if (ca != 2)
		return 0;
	sa = parts_sign(&pa);
	sb = parts_sign(&pb);
	if (sa != sb)
		return sa < sb ? -1 : 1;
	if (sa == 0)
		return 0;
	m = cmp_dec_mag(parts_coef(&pa), pa.exponent, parts_coef(&pb), pb.exponent);
	return sa < 0 ? -m : m;
}

/* |c * 10^q| vs m (c != 0) */
static int
cmp_dec_mag_u64(u128 c, int q, uint64_t m)
{
	u128 ip, rem, p10;
	int c2;

	if (m == 0)
		return 1;
	if (q >= 0) {
		if (q > 38 || c > ~(u128)0 / pow10_u128(q))
			return 1; /* >= 10^38 > 2^64 */
		return cmp_u128(c * pow10_u128(q), (u128)m);
	}
	if (-q > 38)
		return -1; /* c < 10^34, so the value is < 1 <= m */
	p10 = pow10_u128(-q);
	ip = c / p10;
	rem = c % p10;
	c2 = cmp_u128(ip, (u128)m);
	if (c2 != 0)
		return c2;
	return rem != 0 ? 1 : 0;
}

static int
cmp_dec_i64(const bson_decimal128_t *a, int64_t i)
{
	bv_decimal_parts_t pa;
	int sa, si, m;

	bv_decimal_decode(a, &pa);
	if (pa.kind == BV_DEC_NAN || pa.kind == BV_DEC_NEG_INF)
		return -1;
	if (pa.kind == BV_DEC_POS_INF)
		return 1;
	sa = parts_sign(&pa);
	si = i < 0 ? -1 : (i > 0);
	if (sa != si)
		return sa < si ? -1 : 1;
	if (sa == 0)
		return 0;
	m = cmp_dec_mag_u64(parts_coef(&pa), pa.exponent,
	                    i < 0 ? (uint64_t)0 - (uint64_t)i : (uint64_t)i);
	return sa < 0 ? -m : m;
}

/* exact decimal vs double */
static int
cmp_dec_double(const bson_decimal128_t *dec, double d)
{
	bv_decimal_parts_t p;
	bool exact;
	double f;
	int sa, sd, e2, adj;

	bv_decimal_decode(dec, &p);
	if (p.kind != BV_DEC_FINITE || isnan(d) || isinf(d)) {
		int ca = dec_class(&p);
		int cd = isnan(d) ? 0 : (isinf(d) ? (d < 0 ? 1 : 3) : 2);
		if (ca != cd)
			return ca < cd ? -1 : 1;
		if (ca != 2)
			return 0;
	}
	sa = parts_sign(&p);
	sd = d < 0 ? -1 : (d > 0);
	if (sa != sd)
		return sa < sd ? -1 : 1;
	if (sa == 0)
		return 0;
	/* magnitudes far apart: log2|dec| in [(adj-1)*L, adj*L), log2|d| in
	 * [e2-1, e2), L = log2(10); the margin of 1 covers rounding here */
	frexp(d, &e2);
	adj = u128_ndigits(parts_coef(&p)) + p.exponent;
	if ((double)adj * 3.321928094887362 + 1.0 < (double)(e2 - 1))
		return -sa;
	if ((double)(adj - 1) * 3.321928094887362 - 1.0 > (double)e2)
		return sa;
	f = bv_decimal_floor_double(dec, &exact);
	if (f < d)
		return -1; /* dec < next(f) <= d */
	if (f > d)
		return 1;
	return exact ? 0 : 1;
}

/* Any number vs any number, exact. */
static int
cmp_numbers(const bson_value_t *a, const bson_value_t *b)
{
	bson_type_t ta = a->value_type, tb = b->value_type;
	int64_t ia, ib;

	if (ta == BSON_TYPE_DECIMAL128) {
		if (tb == BSON_TYPE_DECIMAL128)
			return bv_decimal_compare(&a->value.v_decimal128, &b->value.v_decimal128);
		if (tb == BSON_TYPE_DOUBLE)
			return cmp_dec_double(&a->value.v_decimal128, b->value.v_double);
		ib = tb == BSON_TYPE_INT32 ? b->value.v_int32 : b->value.v_int64;
		return cmp_dec_i64(&a->value.v_decimal128, ib);
	}
	if (tb == BSON_TYPE_DECIMAL128)
		return -cmp_numbers(b, a);
	if (ta == BSON_TYPE_DOUBLE) {
		if (tb == BSON_TYPE_DOUBLE)
			return cmp_double(a->value.v_double, b->value.v_double);
		ib = tb == BSON_TYPE_INT32 ? b->value.v_int32 : b->value.v_int64;
		return -cmp_i64_double(ib, a->value.v_double);
	}
	ia = ta == BSON_TYPE_INT32 ? a->value.v_int32 : a->value.v_int64;
	if (tb == BSON_TYPE_DOUBLE)
		return cmp_i64_double(ia, b->value.v_double);
	ib = tb == BSON_TYPE_INT32 ? b->value.v_int32 : b->value.v_int64;
	return cmp3_i64(ia, ib);
}

bool
bv_is_number(const bson_value_t *v)
{
	switch (v->value_type) {
	case BSON_TYPE_INT32:
	case BSON_TYPE_INT64:
	case BSON_TYPE_DOUBLE:
	case BSON_TYPE_DECIMAL128:
		return true;
	default:
		return false;
	}
}

bool
bv_is_nan(const bson_value_t *v)
{
	bv_decimal_parts_t p;

	if (v->value_type == BSON_TYPE_DOUBLE)
		return isnan(v->value.v_double);
	if (v->value_type == BSON_TYPE_DECIMAL128) {
		bv_decimal_decode(&v->value.v_decimal128, &p);
		return p.kind == BV_DEC_NAN;
	}
	return false;
}

double
bv_decimal_to_double(const bson_decimal128_t *d)
{
	char buf[BSON_DECIMAL128_STRING];

	bson_decimal128_to_string(d, buf);
	return strtod(buf, NULL); /* glibc strtod rounds correctly; parses NaN/Infinity */
}

double
bv_as_double(const bson_value_t *v)
{
	switch (v->value_type) {
	case BSON_TYPE_INT32:
		return v->value.v_int32;
	case BSON_TYPE_INT64:
		return (double)v->value.v_int64;
	case BSON_TYPE_DOUBLE:
		return v->value.v_double;
	case BSON_TYPE_DECIMAL128:
		return bv_decimal_to_double(&v->value.v_decimal128);
	default:
		return 0.0;
	}
}

bool
bv_as_int64_exact(const bson_value_t *v, int64_t *out)
{
	double d;

	switch (v->value_type) {
	case BSON_TYPE_INT32:
		*out = v->value.v_int32;
		return true;
	case BSON_TYPE_INT64:
		*out = v->value.v_int64;
		return true;
	case BSON_TYPE_DOUBLE:
		d = v->value.v_double;
		if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
			return false;
		if (d != trunc(d))
			return false;
		*out = (int64_t)d;
		return true;
	case BSON_TYPE_DECIMAL128: {
		bv_decimal_parts_t p;
		u128 c, lim;
		int e;

		bv_decimal_decode(&v->value.v_decimal128, &p);
		if (p.kind != BV_DEC_FINITE)
			return false;
		c = ((u128)p.coef_hi << 64) | p.coef_lo;
		e = p.exponent;
		if (c == 0) {
			*out = 0;
			return true;
		}
		while (e < 0) {
			if (c % 10 != 0)
				return false;
			c /= 10;
			e++;
		}
		lim = p.negative ? ((u128)1 << 63) : (((u128)1 << 63) - 1);
		while (e > 0) {
			if (c > lim / 10)
				return false;
			c *= 10;
			e--;
		}
		if (c > lim)
			return false;
		*out = p.negative ? (int64_t)(0 - (uint64_t)c) : (int64_t)c;
		return true;
	}
	default:
		return false;
	}
}

bson_decimal128_t
bv_decimal_from_int64(int64_t i)
{
	uint64_t mag = i < 0 ? (uint64_t)0 - (uint64_t)i : (uint64_t)i;

	return bv_decimal_make(i < 0, 0, mag, 0);
}

bson_decimal128_t
bv_decimal_from_double_digits(double d, int ndigits)
{
	char buf[64];
	char *p, *e;
	uint64_t lo = 0, hi = 0;
	u128 c = 0;
	int exp10, nd = 0;
	bool neg = signbit(d) != 0;

	if (isnan(d)) {
		bson_decimal128_t r = {0, 0x7C00000000000000ULL};
		return r;
	}
	if (isinf(d)) {
		bson_decimal128_t r = {0, neg ? 0xF800000000000000ULL : 0x7800000000000000ULL};
		return r;
	}
	if (d == 0.0)
		return bv_decimal_make(neg, 0, 0, 0);
	if (ndigits < 1)
		ndigits = 1;
	if (ndigits > 34)
		ndigits = 34;
	snprintf(buf, sizeof buf, "%.*e", ndigits - 1, fabs(d));
	for (p = buf; *p && *p != 'e'; p++) {
		if (*p >= '0' && *p <= '9') {
			c = c * 10 + (u128)(*p - '0');
			nd++;
		}
	}
	exp10 = (int)strtol(p + 1, &e, 10) - (nd - 1);
	hi = (uint64_t)(c >> 64);
	lo = (uint64_t)c;
	return bv_decimal_make(neg, hi, lo, exp10);
}

bson_decimal128_t
bv_decimal_from_double(double d)
{
	return bv_decimal_from_double_digits(d, 15);
}

/* ------------------------------------------------------------------ */
/* Per-type table                                                      */
/* ------------------------------------------------------------------ */

typedef struct strbuf {
	char *p;
	size_t len, cap;
} strbuf_t;

static void
sb_put(strbuf_t *s, const char *data, size_t n)
{
	if (s->len + n + 1 > s->cap) {
		size_t cap = s->cap ? s->cap : 64;
		while (cap < s->len + n + 1)
			cap *= 2;
		s->p = bson_realloc(s->p, cap);
		s->cap = cap;
	}
	memcpy(s->p + s->len, data, n);
	s->len += n;
	s->p[s->len] = '\0';
}

static void
sb_str(strbuf_t *s, const char *str)
{
	sb_put(s, str, strlen(str));
}

static void BSON_GNUC_PRINTF(2, 3)
sb_printf(strbuf_t *s, const char *fmt, ...)
{
	va_list ap;
	char *t;

	va_start(ap, fmt);
	t = bson_strdupv_printf(fmt, ap);
	va_end(ap);
	sb_str(s, t);
	bson_free(t);
}

typedef int (*cmp_fn)(const bson_value_t *a, const bson_value_t *b);
typedef void (*str_fn)(strbuf_t *s, const bson_value_t *v, int depth);

typedef struct type_info {
	const char *name;
	int rank;
	cmp_fn cmp;
	str_fn str;
} type_info_t;

static int cmp_docs_data(const uint8_t *a, uint32_t alen, const uint8_t *b, uint32_t blen,
                         const coll_t *coll);
static void str_doc_data(strbuf_t *s, const uint8_t *data, uint32_t len, bool is_array, int depth);

static int
cmp_bytes(const void *a, size_t alen, const void *b, size_t blen)
{
	size_t m = alen < blen ? alen : blen;
	int c = m ? memcmp(a, b, m) : 0;

	if (c != 0)
		return c < 0 ? -1 : 1;
	return alen == blen ? 0 : (alen < blen ? -1 : 1);
}

static int
cmp_equal(const bson_value_t *a, const bson_value_t *b)
{
	return 0;
}

static const char *
str_of(const bson_value_t *v, size_t *len)
{
	switch (v->value_type) {
	case BSON_TYPE_UTF8:
		*len = v->value.v_utf8.len;
		return v->value.v_utf8.str;
	case BSON_TYPE_SYMBOL:
		*len = v->value.v_symbol.len;
		return v->value.v_symbol.symbol;
	case BSON_TYPE_CODE:
		*len = v->value.v_code.code_len;
		return v->value.v_code.code;
	default:
		*len = 0;
		return "";
	}
}

static int
cmp_string(const bson_value_t *a, const bson_value_t *b)
{
	size_t la, lb;
	const char *sa = str_of(a, &la), *sb = str_of(b, &lb);

	return cmp_bytes(sa, la, sb, lb);
}

static int
cmp_doc(const bson_value_t *a, const bson_value_t *b)
{
	return cmp_docs_data(a->value.v_doc.data, a->value.v_doc.data_len,
	                     b->value.v_doc.data, b->value.v_doc.data_len, NULL);
}

/* mongod compares BinData by its stored length; for the old subtype 2 that
 * includes an inner int32 length, which libbson strips from data/data_len. */
static uint64_t
binary_stored_len(const bson_value_t *v)
{
	return (uint64_t)v->value.v_binary.data_len +
	       (v->value.v_binary.subtype == BSON_SUBTYPE_BINARY_DEPRECATED ? 4 : 0);
}

static int
cmp_binary(const bson_value_t *a, const bson_value_t *b)
{
	uint64_t la = binary_stored_len(a), lb = binary_stored_len(b);
	int c;

	if (la != lb)
		return la < lb ? -1 : 1;
	if (a->value.v_binary.subtype != b->value.v_binary.subtype)
		return (uint8_t)a->value.v_binary.subtype < (uint8_t)b->value.v_binary.subtype ? -1 : 1;
	/* same subtype and stored length: any inner length prefix is equal too */
	c = a->value.v_binary.data_len ?
	    memcmp(a->value.v_binary.data, b->value.v_binary.data, a->value.v_binary.data_len) : 0;
	return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

static int
cmp_oid(const bson_value_t *a, const bson_value_t *b)
{
	int c = memcmp(a->value.v_oid.bytes, b->value.v_oid.bytes, 12);
	return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

static int
cmp_bool(const bson_value_t *a, const bson_value_t *b)
{
	int x = a->value.v_bool ? 1 : 0, y = b->value.v_bool ? 1 : 0;
	return x - y;
}

static int
cmp_date(const bson_value_t *a, const bson_value_t *b)
{
	return cmp3_i64(a->value.v_datetime, b->value.v_datetime);
}

static int
cmp_timestamp(const bson_value_t *a, const bson_value_t *b)
{
	uint64_t x = ((uint64_t)a->value.v_timestamp.timestamp << 32) | a->value.v_timestamp.increment;
	uint64_t y = ((uint64_t)b->value.v_timestamp.timestamp << 32) | b->value.v_timestamp.increment;
	return x < y ? -1 : (x > y ? 1 : 0);
}

static int
cmp_regex(const bson_value_t *a, const bson_value_t *b)
{
	const char *ra = a->value.v_regex.regex ? a->value.v_regex.regex : "";
	const char *rb = b->value.v_regex.regex ? b->value.v_regex.regex : "";
	const char *fa = a->value.v_regex.options ? a->value.v_regex.options : "";
	const char *fb = b->value.v_regex.options ? b->value.v_regex.options : "";
	int c = strcmp(ra, rb);

	if (c == 0)
		c = strcmp(fa, fb);
	return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

static int
cmp_dbpointer(const bson_value_t *a, const bson_value_t *b)
{
	uint32_t la = a->value.v_dbpointer.collection_len, lb = b->value.v_dbpointer.collection_len;
	int c;

	if (la != lb)
		return la < lb ? -1 : 1;
	c = la ? memcmp(a->value.v_dbpointer.collection, b->value.v_dbpointer.collection, la) : 0;
	if (c == 0)
		c = memcmp(a->value.v_dbpointer.oid.bytes, b->value.v_dbpointer.oid.bytes, 12);
	return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

static int
cmp_codewscope(const bson_value_t *a, const bson_value_t *b)
{
	int c = cmp_bytes(a->value.v_codewscope.code, a->value.v_codewscope.code_len,
	                  b->value.v_codewscope.code, b->value.v_codewscope.code_len);
	if (c != 0)
		return c;
	return cmp_docs_data(a->value.v_codewscope.scope_data, a->value.v_codewscope.scope_len,
	                     b->value.v_codewscope.scope_data, b->value.v_codewscope.scope_len, NULL);
}

/* --- rendering (mongod's BSONElement::toString, non-"full" form) --- */

static void
str_double(strbuf_t *s, const bson_value_t *v, int depth)
{
	char buf[40];

	snprintf(buf, sizeof buf, "%.16g", v->value.v_double);
	sb_str(s, buf);
	/* mongod appends ".0" unless it sees '.', 'E' or 'N' (so 1e+20.0, inf.0) */
	if (!strchr(buf, '.') && !strchr(buf, 'E') && !strchr(buf, 'N'))
		sb_str(s, ".0");
}

static void
str_quoted(strbuf_t *s, const bson_value_t *v, int depth)
{
	size_t len;
	const char *p = str_of(v, &len);

	sb_str(s, "\"");
	if (len + 1 > 160) {
		sb_put(s, p, 150);
		sb_str(s, "...\"");
	} else {
		sb_put(s, p, len);
		sb_str(s, "\"");
	}
}

static void
str_doc(strbuf_t *s, const bson_value_t *v, int depth)
{
	str_doc_data(s, v->value.v_doc.data, v->value.v_doc.data_len,
	             v->value_type == BSON_TYPE_ARRAY, depth + 1);
}

static void
str_hex(strbuf_t *s, const uint8_t *p, size_t n, bool upper)
{
	static const char *lo = "0123456789abcdef", *up = "0123456789ABCDEF";
	const char *digits = upper ? up : lo;
	char pair[2];
	size_t i;

	for (i = 0; i < n; i++) {
		pair[0] = digits[p[i] >> 4];
		pair[1] = digits[p[i] & 15];
		sb_put(s, pair, 2);
	}
}

static void
str_binary(strbuf_t *s, const bson_value_t *v, int depth)
{
	const uint8_t *d = v->value.v_binary.data;
	uint32_t len = v->value.v_binary.data_len;
	int sub = (int)(uint8_t)v->value.v_binary.subtype;

	if (sub == 4 && len == 16) {
		sb_str(s, "UUID(\"");
		str_hex(s, d, 4, false);
		sb_str(s, "-");
		str_hex(s, d + 4, 2, false);
		sb_str(s, "-");
		str_hex(s, d + 6, 2, false);
		sb_str(s, "-");
		str_hex(s, d + 8, 2, false);
		sb_str(s, "-");
		str_hex(s, d + 10, 6, false);
		sb_str(s, "\")");
		return;
	}
	sb_printf(s, "BinData(%d, ", sub);
	if (len > 80) {
		str_hex(s, d, 70, true);
		sb_str(s, "...)");
	} else {
		str_hex(s, d, len, true);
		sb_str(s, ")");
	}
}

static void
str_undefined(strbuf_t *s, const bson_value_t *v, int depth)
{
	sb_str(s, "undefined");
}

static void
str_oid(strbuf_t *s, const bson_value_t *v, int depth)
{
	sb_str(s, "ObjectId('");
	str_hex(s, v->value.v_oid.bytes, 12, false);
	sb_str(s, "')");
}

static void
str_bool(strbuf_t *s, const bson_value_t *v, int depth)
{
	sb_str(s, v->value.v_bool ? "true" : "false");
}

static void
str_date(strbuf_t *s, const bson_value_t *v, int depth)
{
	sb_printf(s, "new Date(%lld)", (long long)v->value.v_datetime);
}

static void
str_null(strbuf_t *s, const bson_value_t *v, int depth)
{
	sb_str(s, "null");
}

static void
str_regex(strbuf_t *s, const bson_value_t *v, int depth)
{
	sb_str(s, "/");
	sb_str(s, v->value.v_regex.regex ? v->value.v_regex.regex : "");
	sb_str(s, "/");
	sb_str(s, v->value.v_regex.options ? v->value.v_regex.options : "");
}

static void
str_dbpointer(strbuf_t *s, const bson_value_t *v, int depth)
{
	sb_str(s, "DBRef('");
	sb_put(s, v->value.v_dbpointer.collection, v->value.v_dbpointer.collection_len);
	sb_str(s, "',");
	str_hex(s, v->value.v_dbpointer.oid.bytes, 12, false);
	sb_str(s, ")");
}

static void
str_code(strbuf_t *s, const bson_value_t *v, int depth)
{
	size_t len;
	const char *p = str_of(v, &len);

	if (len + 1 > 80) {
		sb_put(s, p, 70);
		sb_str(s, "...");
	} else
		sb_put(s, p, len);
}

static void
str_codewscope(strbuf_t *s, const bson_value_t *v, int depth)
{
	/* mongod streams the code as a C string and the scope with a fresh depth */
	sb_str(s, "CodeWScope( ");
	sb_str(s, v->value.v_codewscope.code ? v->value.v_codewscope.code : "");
	sb_str(s, ", ");
	str_doc_data(s, v->value.v_codewscope.scope_data, v->value.v_codewscope.scope_len, false, 0);
	sb_str(s, ")");
}

static void
str_int32(strbuf_t *s, const bson_value_t *v, int depth)
{
	sb_printf(s, "%d", (int)v->value.v_int32);
}

static void
str_timestamp(strbuf_t *s, const bson_value_t *v, int depth)
{
	sb_printf(s, "Timestamp(%u, %u)", (unsigned)v->value.v_timestamp.timestamp,
	          (unsigned)v->value.v_timestamp.increment);
}

static void
str_int64(strbuf_t *s, const bson_value_t *v, int depth)
{
	sb_printf(s, "%lld", (long long)v->value.v_int64);
}

static void
str_decimal(strbuf_t *s, const bson_value_t *v, int depth)
{
	char buf[BSON_DECIMAL128_STRING];

	bson_decimal128_to_string(&v->value.v_decimal128, buf);
	sb_str(s, buf);
}

static void
str_minkey(strbuf_t *s, const bson_value_t *v, int depth)
{
	sb_str(s, "MinKey");
}

static void
str_maxkey(strbuf_t *s, const bson_value_t *v, int depth)
{
	sb_str(s, "MaxKey");
}

static void
str_eoo(strbuf_t *s, const bson_value_t *v, int depth)
{
	sb_str(s, "EOO");
}

/* Indexed by BSON type code 0x00..0x13; MinKey and MaxKey separately. */
static const type_info_t type_table[] = {
	[BSON_TYPE_EOD] = {"missing", 0, cmp_equal, str_eoo},
	[BSON_TYPE_DOUBLE] = {"double", 10, cmp_numbers, str_double},
	[BSON_TYPE_UTF8] = {"string", 15, cmp_string, str_quoted},
	[BSON_TYPE_DOCUMENT] = {"object", 20, cmp_doc, str_doc},
	[BSON_TYPE_ARRAY] = {"array", 25, cmp_doc, str_doc},
	[BSON_TYPE_BINARY] = {"binData", 30, cmp_binary, str_binary},
	[BSON_TYPE_UNDEFINED] = {"undefined", 0, cmp_equal, str_undefined},
	[BSON_TYPE_OID] = {"objectId", 35, cmp_oid, str_oid},
	[BSON_TYPE_BOOL] = {"bool", 40, cmp_bool, str_bool},
	[BSON_TYPE_DATE_TIME] = {"date", 45, cmp_date, str_date},
	[BSON_TYPE_NULL] = {"null", 5, cmp_equal, str_null},
	[BSON_TYPE_REGEX] = {"regex", 50, cmp_regex, str_regex},
	[BSON_TYPE_DBPOINTER] = {"dbPointer", 55, cmp_dbpointer, str_dbpointer},
	[BSON_TYPE_CODE] = {"javascript", 60, cmp_string, str_code},
	[BSON_TYPE_SYMBOL] = {"symbol", 15, cmp_string, str_quoted},
	[BSON_TYPE_CODEWSCOPE] = {"javascriptWithScope", 65, cmp_codewscope, str_codewscope},
	[BSON_TYPE_INT32] = {"int", 10, cmp_numbers, str_int32},
	[BSON_TYPE_TIMESTAMP] = {"timestamp", 47, cmp_timestamp, str_timestamp},
	[BSON_TYPE_INT64] = {"long", 10, cmp_numbers, str_int64},
	[BSON_TYPE_DECIMAL128] = {"decimal", 10, cmp_numbers, str_decimal},
};
static const type_info_t minkey_info = {"minKey", -1, cmp_equal, str_minkey};
static const type_info_t maxkey_info = {"maxKey", 127, cmp_equal, str_maxkey};

static const type_info_t *
type_info(bson_type_t t)
{
	if ((unsigned)t < sizeof type_table / sizeof type_table[0] && type_table[t].name != NULL)
		return &type_table[t];
	if (t == BSON_TYPE_MINKEY)
		return &minkey_info;
	if (t == BSON_TYPE_MAXKEY)
		return &maxkey_info;
	return NULL;
}

int
bv_type_rank(bson_type_t t)
{
	const type_info_t *ti = type_info(t);

	return ti ? ti->rank : 200; /* invalid types: after everything, never crash */
}

const char *
bv_type_name(bson_type_t t)
{
	const type_info_t *ti = type_info(t);

	return ti ? ti->name : "unknown";
}

bool
bv_type_from_name(const char *name, bson_type_t *out)
{
	static const bson_type_t all[] = {
		BSON_TYPE_DOUBLE, BSON_TYPE_UTF8, BSON_TYPE_DOCUMENT, BSON_TYPE_ARRAY,
		BSON_TYPE_BINARY, BSON_TYPE_UNDEFINED, BSON_TYPE_OID, BSON_TYPE_BOOL,
		BSON_TYPE_DATE_TIME, BSON_TYPE_NULL, BSON_TYPE_REGEX, BSON_TYPE_DBPOINTER,
		BSON_TYPE_CODE, BSON_TYPE_SYMBOL, BSON_TYPE_CODEWSCOPE, BSON_TYPE_INT32,
		BSON_TYPE_TIMESTAMP, BSON_TYPE_INT64, BSON_TYPE_DECIMAL128, BSON_TYPE_MINKEY,
		BSON_TYPE_MAXKEY,
	};
	size_t i;

	if (name == NULL)
		return false;
	for (i = 0; i < sizeof all / sizeof all[0]; i++) {
		if (strcmp(bv_type_name(all[i]), name) == 0) {
			*out = all[i];
			return true;
		}
	}
	return false;
}

/* ------------------------------------------------------------------ */
/* Comparison                                                          */
/* ------------------------------------------------------------------ */

int
bv_compare(const bson_value_t *a, const bson_value_t *b)
{
	const type_info_t *ta, *tb;
	int ra, rb;

	/* fast path for the common same-type cases (sorting, index bounds) */
	if (a->value_type == b->value_type) {
		switch (a->value_type) {
		case BSON_TYPE_INT32:
			return a->value.v_int32 < b->value.v_int32 ? -1 : (a->value.v_int32 > b->value.v_int32);
		case BSON_TYPE_INT64:
			return cmp3_i64(a->value.v_int64, b->value.v_int64);
		case BSON_TYPE_DOUBLE:
			return cmp_double(a->value.v_double, b->value.v_double);
		case BSON_TYPE_UTF8:
			return cmp_bytes(a->value.v_utf8.str, a->value.v_utf8.len,
			                 b->value.v_utf8.str, b->value.v_utf8.len);
		case BSON_TYPE_OID:
			return cmp_oid(a, b);
		default:
			break;
		}
	}
	ta = type_info(a->value_type);
	tb = type_info(b->value_type);
	ra = ta ? ta->rank : 200;
	rb = tb ? tb->rank : 200;

	if (ra != rb)
		return ra < rb ? -1 : 1;
	if (ta == NULL || tb == NULL)
		return 0;
	return ta->cmp(a, b);
}

/* Under a collation only strings and symbols change order, wherever they
 * sit inside documents and arrays (mongod's compareElementValues with a
 * StringData comparator); field names and every other type compare as
 * without one. */
int
bv_compare_coll(const bson_value_t *a, const bson_value_t *b, const coll_t *coll)
{
	int ra, rb;
	size_t la, lb;
	const char *sa, *sb;

	if (coll == NULL)
		return bv_compare(a, b);
	ra = bv_type_rank(a->value_type);
	rb = bv_type_rank(b->value_type);
	if (ra != rb)
		return ra < rb ? -1 : 1;
	switch (a->value_type) {
	case BSON_TYPE_UTF8:
	case BSON_TYPE_SYMBOL:
		sa = str_of(a, &la);
		sb = str_of(b, &lb);
		return coll_compare(coll, sa, la, sb, lb);
	case BSON_TYPE_DOCUMENT:
	case BSON_TYPE_ARRAY:
		return cmp_docs_data(a->value.v_doc.data, a->value.v_doc.data_len,
		                     b->value.v_doc.data, b->value.v_doc.data_len, coll);
	default:
		return bv_compare(a, b);
	}
}

bool
bv_equal_coll(const bson_value_t *a, const bson_value_t *b, const coll_t *coll)
{
	return bv_compare_coll(a, b, coll) == 0;
}

/* Documents: element by element (rank, field name, value), then length.
 * Arrays go through the same path: their names "0","1",... agree. */
static int
cmp_docs_data(const uint8_t *a, uint32_t alen, const uint8_t *b, uint32_t blen,
              const coll_t *coll)
{
	bson_iter_t ia, ib;
	bool oka, okb, ma, mb;

	oka = a != NULL && bson_iter_init_from_data(&ia, a, alen);
	okb = b != NULL && bson_iter_init_from_data(&ib, b, blen);
	if (!oka || !okb)
		return oka == okb ? 0 : (oka ? 1 : -1);
	for (;;) {
		const bson_value_t *va, *vb;
		int c, ra, rb;

		ma = bson_iter_next(&ia);
		mb = bson_iter_next(&ib);
		if (!ma || !mb)
			return ma == mb ? 0 : (ma ? 1 : -1);
		va = bson_iter_value(&ia);
		vb = bson_iter_value(&ib);
		ra = bv_type_rank(va->value_type);
		rb = bv_type_rank(vb->value_type);
		if (ra != rb)
			return ra < rb ? -1 : 1;
		c = cmp_bytes(bson_iter_key(&ia), bson_iter_key_len(&ia),
		              bson_iter_key(&ib), bson_iter_key_len(&ib));
		if (c != 0)
			return c;
		c = coll ? bv_compare_coll(va, vb, coll) : bv_compare(va, vb);
		if (c != 0)
			return c;
	}
}

int
bv_compare_docs(const bson_t *a, const bson_t *b)
{
	return cmp_docs_data(bson_get_data(a), a->len, bson_get_data(b), b->len, NULL);
}

bool
bv_equal(const bson_value_t *a, const bson_value_t *b)
{
	return bv_compare(a, b) == 0;
}

uint64_t
bv_hash(const bson_value_t *v)
{
	return bv_hash_coll(v, NULL);
}

uint64_t
bv_hash_coll(const bson_value_t *v, const coll_t *coll)
{
	keystring_t ks;
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a, then a final mix */
	size_t i;

	keystring_init(&ks);
	keystring_append_value_coll(&ks, v, false, coll);
	for (i = 0; i < ks.len; i++) {
		h ^= ks.buf[i];
		h *= 0x100000001b3ULL;
	}
	keystring_destroy(&ks);
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

/* ------------------------------------------------------------------ */
/* Appending and rendering                                             */
/* ------------------------------------------------------------------ */

static void
le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/*
 * Code, CodeWScope and DBPointer strings may hold NUL bytes, which libbson's
 * bson_append_value drops (it takes them as C strings).  Build the element
 * by hand in a one-element document and concatenate it.
 */
static bool
append_raw_string_element(bson_t *doc, const char *key, size_t keylen, const bson_value_t *v)
{
	const char *str;
	uint32_t slen, extra = 0, total, elen;
	uint8_t *buf, *p;
	bson_t tmp;
	bool ok;

	switch (v->value_type) {
	case BSON_TYPE_CODE:
		str = v->value.v_code.code;
		slen = v->value.v_code.code_len;
		break;
	case BSON_TYPE_CODEWSCOPE:
		str = v->value.v_codewscope.code;
		slen = v->value.v_codewscope.code_len;
		extra = 4 + v->value.v_codewscope.scope_len; /* leading total length + scope */
		break;
	default: /* DBPOINTER */
		str = v->value.v_dbpointer.collection;
		slen = v->value.v_dbpointer.collection_len;
		extra = 12;
		break;
	}
	if (slen > (uint32_t)INT32_MAX - 64 - extra || keylen > (size_t)INT32_MAX - 64 - slen - extra)
		return false;
	elen = 4 + slen + 1 + extra;
	total = 4 + 1 + (uint32_t)keylen + 1 + elen + 1;
	buf = bson_malloc(total);
	p = buf;
	le32(p, total);
	p += 4;
	*p++ = (uint8_t)v->value_type;
	memcpy(p, key, keylen);
	p += keylen;
	*p++ = 0;
	if (v->value_type == BSON_TYPE_CODEWSCOPE) {
		le32(p, elen);
		p += 4;
	}
	le32(p, slen + 1);
	p += 4;
	if (slen)
		memcpy(p, str, slen);
	p += slen;
	*p++ = 0;
	if (v->value_type == BSON_TYPE_CODEWSCOPE) {
		if (v->value.v_codewscope.scope_len)
			memcpy(p, v->value.v_codewscope.scope_data, v->value.v_codewscope.scope_len);
		p += v->value.v_codewscope.scope_len;
	} else if (v->value_type == BSON_TYPE_DBPOINTER) {
		memcpy(p, v->value.v_dbpointer.oid.bytes, 12);
		p += 12;
	}
	*p = 0;
	ok = bson_init_static(&tmp, buf, total) && bson_concat(doc, &tmp);
	bson_free(buf);
	return ok;
}

bool
bv_append_raw(bson_t *doc, const uint8_t *elems, uint32_t n)
{
	uint8_t stackbuf[1024], *buf = stackbuf, *p;
	uint32_t old = doc->len, total;
	bson_t tmp;
	bool ok;

	if (n == 0)
		return true;
	if (n > (uint32_t)INT32_MAX - 5 || old > (uint32_t)INT32_MAX - n)
		return false;
	/* a document of its own (not a child, not read-only): grow it and copy
	 * the bytes over its trailing NUL */
	if ((p = bson_reserve_buffer(doc, old + n)) != NULL) {
		memcpy(p + old - 1, elems, n);
		p[old + n - 1] = 0;
		le32(p, old + n);
		return true;
	}
	total = n + 5;
	if (total > sizeof stackbuf)
		buf = bson_malloc(total);
	le32(buf, total);
	memcpy(buf + 4, elems, n);
	buf[4 + n] = 0;
	ok = bson_init_static(&tmp, buf, total) && bson_concat(doc, &tmp);
	if (buf != stackbuf)
		bson_free(buf);
	return ok;
}

/* The common scalar types written as one raw element (type, key, value)
 * and appended with bv_append_raw: libbson's bson_append_value goes through
 * a va_list appender that costs several times the bytes it writes.  False
 * when v is not such a value or the element is larger than the buffer (the
 * caller then takes libbson's path). */
static bool
append_scalar_raw(bson_t *doc, const char *key, size_t klen, const bson_value_t *v)
{
	uint8_t buf[256], *p;
	uint64_t u;
	uint32_t slen;

	if (klen > 128)
		return false;
	p = buf;
	*p++ = (uint8_t)v->value_type;
	memcpy(p, key, klen);
	p += klen;
	*p++ = 0;
	switch (v->value_type) {
	case BSON_TYPE_DOUBLE:
		memcpy(&u, &v->value.v_double, 8);
		u = BSON_UINT64_TO_LE(u);
		memcpy(p, &u, 8);
		p += 8;
		break;
	case BSON_TYPE_INT64:
	case BSON_TYPE_DATE_TIME:
		u = BSON_UINT64_TO_LE((uint64_t)(v->value_type == BSON_TYPE_INT64 ? v->value.v_int64 :
		    v->value.v_datetime));
		memcpy(p, &u, 8);
		p += 8;
		break;
	case BSON_TYPE_INT32:
		le32(p, (uint32_t)v->value.v_int32);
		p += 4;
		break;
	case BSON_TYPE_BOOL:
		*p++ = v->value.v_bool ? 1 : 0;
		break;
	case BSON_TYPE_NULL:
		break;
	case BSON_TYPE_UTF8:
		slen = v->value.v_utf8.len;
		if (slen > sizeof(buf) - (size_t)(p - buf) - 5)
			return false;
		le32(p, slen + 1);
		p += 4;
		memcpy(p, v->value.v_utf8.str, slen);
		p += slen;
		*p++ = 0;
		break;
	default:
		return false;
	}
	return bv_append_raw(doc, buf, (uint32_t)(p - buf));
}

bool
bv_append(bson_t *doc, const char *key, int keylen, const bson_value_t *v)
{
	size_t klen = keylen < 0 ? strlen(key) : (size_t)keylen;

	if (memchr(key, 0, klen) != NULL)
		return false;
	switch (v->value_type) {
	case BSON_TYPE_DOUBLE: case BSON_TYPE_INT64: case BSON_TYPE_DATE_TIME: case BSON_TYPE_INT32:
	case BSON_TYPE_BOOL: case BSON_TYPE_NULL: case BSON_TYPE_UTF8:
		if (append_scalar_raw(doc, key, klen, v))
			return true;
		break;
	case BSON_TYPE_CODE:
		if (memchr(v->value.v_code.code, 0, v->value.v_code.code_len) == NULL)
			break;
		return append_raw_string_element(doc, key, klen, v);
	case BSON_TYPE_CODEWSCOPE:
		if (memchr(v->value.v_codewscope.code, 0, v->value.v_codewscope.code_len) == NULL)
			break;
		return append_raw_string_element(doc, key, klen, v);
	case BSON_TYPE_DBPOINTER:
		if (memchr(v->value.v_dbpointer.collection, 0, v->value.v_dbpointer.collection_len) == NULL)
			break;
		return append_raw_string_element(doc, key, klen, v);
	default:
		break;
	}
	return bson_append_value(doc, key, (int)klen, v);
}

#define BV_MAX_TOSTRING_DEPTH 100

static void
str_value(strbuf_t *s, const bson_value_t *v, int depth)
{
	const type_info_t *ti = type_info(v->value_type);

	if (ti == NULL) {
		sb_printf(s, "?type=%d", (int)v->value_type);
		return;
	}
	ti->str(s, v, depth);
}

static void
str_doc_data(strbuf_t *s, const uint8_t *data, uint32_t len, bool is_array, int depth)
{
	bson_iter_t it;
	bool first = true;

	if (data == NULL || !bson_iter_init_from_data(&it, data, len)) {
		sb_str(s, is_array ? "[]" : "{}");
		return;
	}
	if (len <= 5) {
		sb_str(s, is_array ? "[]" : "{}");
		return;
	}
	sb_str(s, is_array ? "[ " : "{ ");
	while (bson_iter_next(&it)) {
		if (!first)
			sb_str(s, ", ");
		first = false;
		if (depth > BV_MAX_TOSTRING_DEPTH) {
			sb_str(s, "..."); /* mongod: no field name either */
			continue;
		}
		if (!is_array) {
			sb_put(s, bson_iter_key(&it), bson_iter_key_len(&it));
			sb_str(s, ": ");
		}
		str_value(s, bson_iter_value(&it), depth);
	}
	sb_str(s, is_array ? " ]" : " }");
}

char *
bv_to_mongo_string(const bson_value_t *v)
{
	strbuf_t s = {NULL, 0, 0};

	str_value(&s, v, 0);
	if (s.p == NULL)
		return bson_strdup("");
	return s.p;
}

char *
bv_doc_to_mongo_string(const bson_t *doc)
{
	strbuf_t s = {NULL, 0, 0};

	str_doc_data(&s, bson_get_data(doc), doc->len, false, 0);
	return s.p;
}

size_t
bv_array_key(uint32_t i, char *buf)
{
	char tmp[10];
	size_t n = 0, len;

	do {
		tmp[n++] = (char)('0' + i % 10);
		i /= 10;
	} while (i != 0);
	len = n;
	for (size_t j = 0; j < len; j++)
		buf[j] = tmp[--n];
	buf[len] = '\0';
	return len;
}
