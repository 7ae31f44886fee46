/*
 * decimal_bid.c -- the decimal trigonometric, hyperbolic, exponential and
 * logarithmic functions, square roots and powers through Intel's decimal
 * floating-point library, as mongod computes them: its Decimal128::sin /
 * ... / atan2 / exp / log / log10 / squareRoot / power call bid128_sin /
 * ... / bid128_sqrt / bid128_pow with round-half-even and throw the status
 * flags away, so the same calls give mongod's digits, including the last
 * one where Intel's result is not the correctly rounded value (sin(1) =
 * ...302991, not ...302990).  Only this file includes Intel's headers (their
 * macros would leak otherwise); the library is the "000" build: arguments
 * by value, rounding mode and flags as arguments.  bson_decimal128_t and
 * BID_UINT128 are the same BID encoding (low word first).
 */
#define DECIMAL_CALL_BY_REFERENCE 0
#define DECIMAL_GLOBAL_ROUNDING 0
#define DECIMAL_GLOBAL_EXCEPTION_FLAGS 0
#include <bid_conf.h>
#include <bid_functions.h>

#include "expr/decimal.h"

static BID_UINT128
to_bid(bson_decimal128_t d)
{
	BID_UINT128 b;

	b.w[0] = d.low;
	b.w[1] = d.high;
	return b;
}

static bson_decimal128_t
from_bid(BID_UINT128 b)
{
	bson_decimal128_t d;

	d.low = b.w[0];
	d.high = b.w[1];
	return d;
}

typedef BID_UINT128 (*bid_unary_fn)(BID_UINT128, _IDEC_round, _IDEC_flags *);

/* Indexed by expr_dtrig_t. */
static const bid_unary_fn trig_fns[] = {
	[DT_SIN] = bid128_sin, [DT_COS] = bid128_cos, [DT_TAN] = bid128_tan,
	[DT_ASIN] = bid128_asin, [DT_ACOS] = bid128_acos, [DT_ATAN] = bid128_atan,
	[DT_SINH] = bid128_sinh, [DT_COSH] = bid128_cosh, [DT_TANH] = bid128_tanh,
	[DT_ASINH] = bid128_asinh, [DT_ACOSH] = bid128_acosh, [DT_ATANH] = bid128_atanh,
};

bool
expr_decimal_trig(expr_dtrig_t fn, bson_decimal128_t a, bson_decimal128_t *out)
{
	_IDEC_flags flags = 0;

	if ((size_t)fn >= sizeof trig_fns / sizeof trig_fns[0] || trig_fns[fn] == NULL)
		return false;
	*out = from_bid(trig_fns[fn](to_bid(a), BID_ROUNDING_TO_NEAREST, &flags));
	return true;
}

bson_decimal128_t
expr_decimal_atan2(bson_decimal128_t y, bson_decimal128_t x)
{
	_IDEC_flags flags = 0;

	return from_bid(bid128_atan2(to_bid(y), to_bid(x), BID_ROUNDING_TO_NEAREST, &flags));
}

bson_decimal128_t
expr_decimal_exp(bson_decimal128_t a)
{
	_IDEC_flags flags = 0;

	return from_bid(bid128_exp(to_bid(a), BID_ROUNDING_TO_NEAREST, &flags));
}

bson_decimal128_t
expr_decimal_ln(bson_decimal128_t a)
{
	_IDEC_flags flags = 0;

	return from_bid(bid128_log(to_bid(a), BID_ROUNDING_TO_NEAREST, &flags));
}

bson_decimal128_t
expr_decimal_log10(bson_decimal128_t a)
{
	_IDEC_flags flags = 0;

	return from_bid(bid128_log10(to_bid(a), BID_ROUNDING_TO_NEAREST, &flags));
}

/* As mongod's Decimal128::power: a base equal to 10 or 2 (by value: 1E+1,
 * 2.0) goes through bid128_exp10 / bid128_exp2, any other through
 * bid128_pow; the result is then added to 0E-6176, which widens an exact
 * result to 34 digits (2^10 = 1024.000000000000000000000000000000) and
 * makes a -0 +0. */
bson_decimal128_t
expr_decimal_pow(bson_decimal128_t base, bson_decimal128_t ex)
{
	_IDEC_flags flags = 0;
	BID_UINT128 b = to_bid(base), e = to_bid(ex), r, zero;

	if (bid128_quiet_equal(b, bid128_from_int32(10), &flags))
		r = bid128_exp10(e, BID_ROUNDING_TO_NEAREST, &flags);
	else if (bid128_quiet_equal(b, bid128_from_int32(2), &flags))
		r = bid128_exp2(e, BID_ROUNDING_TO_NEAREST, &flags);
	else
		r = bid128_pow(b, e, BID_ROUNDING_TO_NEAREST, &flags);
	zero.w[0] = 0;
	zero.w[1] = 0;
	return from_bid(bid128_add(r, zero, BID_ROUNDING_TO_NEAREST, &flags));
}

bson_decimal128_t
expr_decimal_sqrt(bson_decimal128_t a)
{
	_IDEC_flags flags = 0;

	return from_bid(bid128_sqrt(to_bid(a), BID_ROUNDING_TO_NEAREST, &flags));
}
