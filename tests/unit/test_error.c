/* test_error.c -- terr_t: codes, names, wrapping. */
#include "tt.h"
#include "common/error.h"

static void
test_code_names(void)
{
	char buf[32];

	TT_EQ_STR(terr_code_name(2, buf), "BadValue");
	TT_EQ_STR(terr_code_name(11000, buf), "DuplicateKey");
	TT_EQ_STR(terr_code_name(121, buf), "DocumentValidationFailure");
	TT_EQ_STR(terr_code_name(59, buf), "CommandNotFound");
	TT_EQ_STR(terr_code_name(12370902, buf), "Location12370902");
}

static void
test_wrap_and_clear(void)
{
	terr_t e = TERR_INIT;

	TT_ASSERT(!terr_is_set(&e));
	TT_EQ_INT(terr_set(&e, 121, "Document failed %s", "validation"), -1);
	terr_wrap(&e, "Plan executor error during update");
	TT_EQ_STR(e.msg, "Plan executor error during update :: caused by :: Document failed validation");
	TT_EQ_INT(e.code, 121);
	terr_set_info_steal(&e, tt_json("{\"a\": 1}"));
	terr_clear(&e);
	TT_ASSERT(e.msg == NULL && e.info == NULL && e.code == 0);
}

int
main(void)
{
	TT_RUN(test_code_names);
	TT_RUN(test_wrap_and_clear);
	return tt_finish();
}
