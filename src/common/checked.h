/*
 * checked.h -- overflow-checked arithmetic for numbers that come from a
 * request.  Every allocation size, array length, loop bound or repeat count
 * computed from a client's number goes through one of these (see
 * docs/security.md for the list of places): signed overflow is undefined
 * behaviour in C and a wrapped size is a heap overflow, so nothing computes
 * such a value with a bare `*`, `+`, `-`, unary minus or a double-to-integer
 * cast.
 *
 * Three families:
 *  - tm_i64_add / _sub / _mul / _neg, tm_i32_add / _mul, tm_size_add / _mul:
 *    the exact result
 *    in *r and false, or true when it does not fit (like the
 *    __builtin_*_overflow they wrap; *r is then unspecified);
 *    tm_i64_add_sat for sums that only bound work (skip + limit);
 *  - tm_double_to_i64 (exact, refuses NaN / inf / out of range),
 *    tm_double_to_i64_sat and tm_double_to_i32_sat (mongod's safeNumberLong
 *    / safeNumberInt: NaN -> 0, saturating): the only double -> integer
 *    conversions of request numbers;
 *  - tm_count_cap: "a count from a request" -- a value in [lo, hi] or the
 *    error the caller names (mongod's code and message where it has one).
 *
 * Header only; includes nothing above common/.
 */
#ifndef TAMGA_COMMON_CHECKED_H
#define TAMGA_COMMON_CHECKED_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

static inline bool
tm_i64_add(int64_t a, int64_t b, int64_t *r)
{
	return __builtin_add_overflow(a, b, r);
}

static inline bool
tm_i64_sub(int64_t a, int64_t b, int64_t *r)
{
	return __builtin_sub_overflow(a, b, r);
}

static inline bool
tm_i64_mul(int64_t a, int64_t b, int64_t *r)
{
	return __builtin_mul_overflow(a, b, r);
}

/* a + b, saturated at INT64_MIN / INT64_MAX: for sums that only bound
 * work ("the first skip + limit documents"), where past 2^63 means "all". */
static inline int64_t
tm_i64_add_sat(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return a < 0 ? INT64_MIN : INT64_MAX;
	return r;
}

/* -a; overflows only for INT64_MIN. */
static inline bool
tm_i64_neg(int64_t a, int64_t *r)
{
	return __builtin_sub_overflow((int64_t)0, a, r);
}

static inline bool
tm_i32_add(int32_t a, int32_t b, int32_t *r)
{
	return __builtin_add_overflow(a, b, r);
}

static inline bool
tm_i32_mul(int32_t a, int32_t b, int32_t *r)
{
	return __builtin_mul_overflow(a, b, r);
}

static inline bool
tm_size_add(size_t a, size_t b, size_t *r)
{
	return __builtin_add_overflow(a, b, r);
}

static inline bool
tm_size_mul(size_t a, size_t b, size_t *r)
{
	return __builtin_mul_overflow(a, b, r);
}

/* n elements of `size` bytes plus `extra` bytes: false with *r the byte
 * count, true when it does not fit a size_t (or n is negative). */
static inline bool
tm_array_bytes(int64_t n, size_t size, size_t extra, size_t *r)
{
	size_t b;

	if (n < 0 || (uint64_t)n > SIZE_MAX)
		return true;
	return tm_size_mul((size_t)n, size, &b) || tm_size_add(b, extra, r);
}

/* d converted to int64 when it is an integer (or not, truncated toward 0)
 * that fits: true with *out; false for NaN, +-inf and anything outside
 * [-2^63, 2^63).  Never undefined, unlike a bare cast. */
static inline bool
tm_double_to_i64(double d, int64_t *out)
{
	/* -2^63 is exact in a double, 2^63 is the first value past INT64_MAX */
	if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
		return false;
	*out = (int64_t)d;
	return true;
}

/* mongod's BSONElement::safeNumberLong for a double: NaN -> 0, beyond the
 * int64 range -> INT64_MIN / INT64_MAX, else truncated toward 0. */
static inline int64_t
tm_double_to_i64_sat(double d)
{
	int64_t r;

	if (isnan(d))
		return 0;
	if (tm_double_to_i64(d, &r))
		return r;
	return d < 0 ? INT64_MIN : INT64_MAX;
}

/* mongod's safeNumberInt for a double: NaN -> 0, beyond the int32 range
 * -> INT32_MIN / INT32_MAX, else truncated toward 0. */
static inline int32_t
tm_double_to_i32_sat(double d)
{
	if (isnan(d))
		return 0;
	if (d >= 2147483647.0)
		return INT32_MAX;
	if (d <= -2147483648.0)
		return INT32_MIN;
	return (int32_t)d;
}

/* A count from a request: 0 when lo <= n <= hi, else sets err to `code` with
 * the printf-style message `fmt` (mongod's, word for word) and returns -1. */
#define tm_count_cap(n, lo, hi, err, code, ...) \
	((int64_t)(n) >= (int64_t)(lo) && (int64_t)(n) <= (int64_t)(hi) ? 0 : terr_set((err), (code), __VA_ARGS__))

#endif
