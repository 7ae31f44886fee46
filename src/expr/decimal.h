/*
 * decimal.h -- IEEE 754-2008 decimal128 (BID encoding, as BSON stores it)
 * arithmetic for the expression language and accumulators.
 *
 * libbson only parses and prints Decimal128; MongoDB computes with Intel's
 * decimal library.  Here: exact add, subtract, multiply, divide and square
 * root rounded
 * to 34 digits half-to-even (IEEE's default, which MongoDB uses), quantize
 * for $round/$trunc, and conversions.  Results carry IEEE's preferred
 * exponents (1.0 + 2.00 = 3.00; 10 / 4 = 2.5) so printing matches mongod.
 *
 * Not here: pow (expr_arith.c builds it from mul, exp and ln).
 */
#ifndef TAMGA_EXPR_DECIMAL_H
#define TAMGA_EXPR_DECIMAL_H

#include <stdbool.h>
#include <stdint.h>
#include <bson/bson.h>

bson_decimal128_t expr_decimal_add(bson_decimal128_t a, bson_decimal128_t b);
bson_decimal128_t expr_decimal_sub(bson_decimal128_t a, bson_decimal128_t b);
bson_decimal128_t expr_decimal_mul(bson_decimal128_t a, bson_decimal128_t b);
/* b == 0 gives +-Infinity (NaN for 0/0); callers check for zero first. */
bson_decimal128_t expr_decimal_div(bson_decimal128_t a, bson_decimal128_t b);
/* Remainder with the sign of a (truncated division, as fmod). */
bson_decimal128_t expr_decimal_mod(bson_decimal128_t a, bson_decimal128_t b);

/* e^a, the natural logarithm, log10 and base^ex as mongod computes them
 * (decimal_bid.c: Intel's bid128_exp / bid128_log / bid128_log10 /
 * bid128_pow, round-half-even, as mongod's Decimal128::exp / log / log10 /
 * power): ln of a negative -> NaN, ln 0 -> -Infinity, a negative base with
 * a non-integral exponent -> NaN. */
bson_decimal128_t expr_decimal_exp(bson_decimal128_t a);
bson_decimal128_t expr_decimal_ln(bson_decimal128_t a);
bson_decimal128_t expr_decimal_log10(bson_decimal128_t a);
bson_decimal128_t expr_decimal_pow(bson_decimal128_t base, bson_decimal128_t ex);
/* e^a, ln and log10 correctly rounded (60-digit intermediates rounded once
 * to 34 digits; log10 exact for powers of ten): the unit tests' reference,
 * which Intel's results lie within one unit of the 34th digit of. */
bson_decimal128_t expr_decimal_exp_exact(bson_decimal128_t a);
bson_decimal128_t expr_decimal_ln_exact(bson_decimal128_t a);
bson_decimal128_t expr_decimal_log10_exact(bson_decimal128_t a);

/* The trigonometric and hyperbolic functions of $sin ... $atanh and
 * $atan2, as mongod computes them (decimal_bid.c): Intel's bid128_sin ...
 * with round-half-even, whose last digit is not always the correctly
 * rounded one.  NaN gives NaN; infinities give IEEE's limits (atan +-pi/2,
 * tanh +-1, sinh/cosh/asinh/acosh +-Infinity); arguments outside a
 * function's domain give NaN (callers refuse them first with 50989).
 * Returns true (false, *out unset, for an fn out of range). */
typedef enum {
	DT_SIN, DT_COS, DT_TAN, DT_ASIN, DT_ACOS, DT_ATAN,
	DT_SINH, DT_COSH, DT_TANH, DT_ASINH, DT_ACOSH, DT_ATANH,
} expr_dtrig_t;
bool expr_decimal_trig(expr_dtrig_t fn, bson_decimal128_t a, bson_decimal128_t *out);
bson_decimal128_t expr_decimal_atan2(bson_decimal128_t y, bson_decimal128_t x);
/* The same functions correctly rounded (decimal.c: 60-digit intermediates,
 * rounded once to 34 digits; $sin/$cos/$tan reduce any finite argument
 * exactly, up to 9.99E+6144, by the digits of 2/pi).  Not what mongod
 * answers: the unit tests' reference, against which Intel's results are
 * checked to lie within one unit in the last place. */
bool expr_decimal_trig_exact(expr_dtrig_t fn, bson_decimal128_t a, bson_decimal128_t *out);
bson_decimal128_t expr_decimal_atan2_exact(bson_decimal128_t y, bson_decimal128_t x);

/* Square root as mongod's Decimal128::squareRoot: Intel's bid128_sqrt,
 * round-half-even, flags thrown away (decimal_bid.c; negative -> NaN, -0 ->
 * -0, the exact root of a square at the exponent nearest half the
 * argument's).  expr_decimal_sqrt_exact is Tamga's own correctly rounded
 * root (decimal.c), the unit tests' reference. */
bson_decimal128_t expr_decimal_sqrt(bson_decimal128_t a);
bson_decimal128_t expr_decimal_sqrt_exact(bson_decimal128_t a);

/* Round to `places` digits after the point (negative: before), half to even
 * (round) or toward zero (trunc=true), as mongod's quantize: the result's
 * exponent is always -places (trailing zeros added; NaN when that needs
 * more than 34 digits). */
bson_decimal128_t expr_decimal_round(bson_decimal128_t a, int places, bool trunc);
/* Round to an integer: mode 0 half-even, 1 floor, 2 ceil, 3 toward zero;
 * the exponent is always 0, as mongod's quantize to kNormalizedZero. */
bson_decimal128_t expr_decimal_to_integral(bson_decimal128_t a, int mode);

bson_decimal128_t expr_decimal_from_int64(int64_t i);
/* As MongoDB's Decimal128(double): rounded to 15 significant digits. */
bson_decimal128_t expr_decimal_from_double(double d);
/* Rounded to ndigits (1..34) significant digits (34: MongoDB's
 * kRoundTo34Digits, used by $round on doubles). */
bson_decimal128_t expr_decimal_from_double_digits(double d, int ndigits);
double expr_decimal_to_double(bson_decimal128_t d);
/* Truncate toward zero to int64; false on NaN/Inf/out of range. */
bool expr_decimal_to_int64(bson_decimal128_t d, int64_t *out);

bool expr_decimal_is_nan(bson_decimal128_t d);
bool expr_decimal_is_inf(bson_decimal128_t d);
bool expr_decimal_is_zero(bson_decimal128_t d);
bool expr_decimal_is_negative(bson_decimal128_t d);
bool expr_decimal_is_integral(bson_decimal128_t d);
bson_decimal128_t expr_decimal_negate(bson_decimal128_t d);
bson_decimal128_t expr_decimal_abs(bson_decimal128_t d);
/* Numeric order (NaN lowest, equal to NaN), ignores trailing zeros. */
int expr_decimal_cmp(bson_decimal128_t a, bson_decimal128_t b);

#endif
