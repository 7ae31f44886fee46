/*
 * test_checked.c -- the corners of common/checked.h: every helper at the
 * int64 / size_t / double limits, where a bare operation would overflow or
 * be undefined.
 */
#include "tt.h"

#include <float.h>
#include <math.h>

#include "common/checked.h"

static void
test_i64(void)
{
	int64_t r;

	TT_ASSERT(!tm_i64_add(INT64_MAX - 1, 1, &r) && r == INT64_MAX);
	TT_ASSERT(tm_i64_add(INT64_MAX, 1, &r));
	TT_ASSERT(tm_i64_add(INT64_MIN, -1, &r));
	TT_ASSERT(!tm_i64_add(INT64_MIN, INT64_MAX, &r) && r == -1);
	TT_ASSERT(tm_i64_sub(INT64_MIN, 1, &r));
	TT_ASSERT(tm_i64_sub(INT64_MAX, INT64_MIN, &r));
	TT_ASSERT(tm_i64_sub(0, INT64_MIN, &r));
	TT_ASSERT(!tm_i64_sub(-1, INT64_MIN, &r) && r == INT64_MAX);
	TT_ASSERT(tm_i64_mul(INT64_MIN, -1, &r));
	TT_ASSERT(tm_i64_mul((int64_t)1 << 32, (int64_t)1 << 31, &r));
	TT_ASSERT(!tm_i64_mul((int64_t)1 << 31, (int64_t)1 << 31, &r) && r == (int64_t)1 << 62);
	TT_ASSERT(!tm_i64_mul(INT64_MIN, 1, &r) && r == INT64_MIN);
	TT_ASSERT(tm_i64_neg(INT64_MIN, &r));
	TT_ASSERT(!tm_i64_neg(INT64_MAX, &r) && r == -INT64_MAX);
	TT_ASSERT(!tm_i64_neg(0, &r) && r == 0);
}

static void
test_sizes(void)
{
	size_t r;

	TT_ASSERT(tm_size_add(SIZE_MAX, 1, &r));
	TT_ASSERT(!tm_size_add(SIZE_MAX - 1, 1, &r) && r == SIZE_MAX);
	TT_ASSERT(tm_size_mul(SIZE_MAX / 2 + 1, 2, &r));
	TT_ASSERT(!tm_size_mul(SIZE_MAX / 8, 8, &r));
	/* $sample's old size: (2^61 + 1) * 8 wraps */
	TT_ASSERT(tm_array_bytes(((int64_t)1 << 61) + 1, 8, 0, &r));
	TT_ASSERT(tm_array_bytes(INT64_MAX, 1, 1, &r) == (INT64_MAX >= SIZE_MAX));
	TT_ASSERT(tm_array_bytes(-1, 8, 0, &r));
	TT_ASSERT(!tm_array_bytes(0, 8, 16, &r) && r == 16);
	TT_ASSERT(!tm_array_bytes(1000, 24, 8, &r) && r == 24008);
	TT_ASSERT(tm_array_bytes(1, SIZE_MAX, 1, &r));
}

static void
test_doubles(void)
{
	int64_t r;

	TT_ASSERT(!tm_double_to_i64(NAN, &r));
	TT_ASSERT(!tm_double_to_i64(INFINITY, &r));
	TT_ASSERT(!tm_double_to_i64(-INFINITY, &r));
	TT_ASSERT(!tm_double_to_i64(9223372036854775808.0, &r));   /* 2^63 */
	TT_ASSERT(!tm_double_to_i64(-9223372036854777856.0, &r));  /* the double below -2^63 */
	TT_ASSERT(!tm_double_to_i64(DBL_MAX, &r));
	TT_ASSERT(tm_double_to_i64(-9223372036854775808.0, &r) && r == INT64_MIN);
	TT_ASSERT(tm_double_to_i64(9223372036854774784.0, &r) && r == 9223372036854774784LL);
	TT_ASSERT(tm_double_to_i64(-0.0, &r) && r == 0);
	TT_ASSERT(tm_double_to_i64(-1.9, &r) && r == -1);
	TT_ASSERT(tm_double_to_i64(4.9e-324, &r) && r == 0);

	TT_EQ_INT(tm_double_to_i64_sat(NAN), 0);
	TT_ASSERT(tm_double_to_i64_sat(INFINITY) == INT64_MAX);
	TT_ASSERT(tm_double_to_i64_sat(-INFINITY) == INT64_MIN);
	TT_ASSERT(tm_double_to_i64_sat(1e300) == INT64_MAX);
	TT_ASSERT(tm_double_to_i64_sat(9223372036854775808.0) == INT64_MAX);
	TT_ASSERT(tm_double_to_i64_sat(-9223372036854775808.0) == INT64_MIN);
	TT_EQ_INT(tm_double_to_i64_sat(2.5), 2);
	TT_EQ_INT(tm_double_to_i64_sat(-2.5), -2);

	TT_EQ_INT(tm_double_to_i32_sat(NAN), 0);
	TT_EQ_INT(tm_double_to_i32_sat(2147483648.0), INT32_MAX);
	TT_EQ_INT(tm_double_to_i32_sat(-2147483649.0), INT32_MIN);
	TT_EQ_INT(tm_double_to_i32_sat(-INFINITY), INT32_MIN);
	TT_EQ_INT(tm_double_to_i32_sat(-2147483648.5), INT32_MIN);
	TT_EQ_INT(tm_double_to_i32_sat(2147483646.9), 2147483646);
}

static void
test_count_cap(void)
{
	terr_t err = TERR_INIT;

	TT_EQ_INT(tm_count_cap(5, 1, 10, &err, 2, "n %d", 5), 0);
	TT_EQ_INT(tm_count_cap(INT64_MIN, 1, 10, &err, 28747, "size argument to $sample must be a positive integer"), -1);
	TT_EQ_INT(err.code, 28747);
	TT_EQ_STR(err.msg, "size argument to $sample must be a positive integer");
	terr_clear(&err);
	TT_EQ_INT(tm_count_cap(INT64_MAX, 0, INT64_MAX, &err, 2, "x"), 0);
	TT_EQ_INT(tm_count_cap(11, 1, 10, &err, 5897900, "Generated %d documents", 11), -1);
	TT_EQ_STR(err.msg, "Generated 11 documents");
	terr_clear(&err);
}

int
main(void)
{
	TT_RUN(test_i64);
	TT_RUN(test_sizes);
	TT_RUN(test_doubles);
	TT_RUN(test_count_cap);
	return tt_finish();
}
