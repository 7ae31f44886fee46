/*
 * test_rc_support.c -- which commands take which readConcern level outside
 * a transaction (commands/cmd_repl.h's cmd_repl_rc_level_supported), as
 * mongod 9.0's supportsReadConcern answers: the reads take every level,
 * mapReduce local and available, every other command local only (snapshot
 * is checked on its own, and local always passes here).
 */
#include "tt.h"

#include "commands/cmd_repl.h"
#include "commands/concern.h"

static void
test_reads(void)
{
	static const char *const reads[] = {"find", "aggregate", "count", "distinct", "getMore", "explain", NULL};

	for (int i = 0; reads[i] != NULL; i++) {
		TT_ASSERT(cmd_repl_rc_level_supported(reads[i], RC_MAJORITY));
		TT_ASSERT(cmd_repl_rc_level_supported(reads[i], RC_LINEARIZABLE));
		TT_ASSERT(cmd_repl_rc_level_supported(reads[i], RC_AVAILABLE));
	}
}

static void
test_map_reduce(void)
{
	TT_ASSERT(cmd_repl_rc_level_supported("mapReduce", RC_AVAILABLE));
	TT_ASSERT(cmd_repl_rc_level_supported("mapreduce", RC_AVAILABLE));
	TT_ASSERT(!cmd_repl_rc_level_supported("mapReduce", RC_MAJORITY));
	TT_ASSERT(!cmd_repl_rc_level_supported("mapreduce", RC_LINEARIZABLE));
}

static void
test_refused(void)
{
	static const char *const others[] = {"listCollections", "listIndexes", "dbHash", "dbhash", "collStats",
	    "insert", "update", "delete", "findAndModify", "bulkWrite", "hello", "ping", "FIND", "", NULL};

	for (int i = 0; others[i] != NULL; i++) {
		TT_ASSERT(!cmd_repl_rc_level_supported(others[i], RC_MAJORITY));
		TT_ASSERT(!cmd_repl_rc_level_supported(others[i], RC_LINEARIZABLE));
		TT_ASSERT(!cmd_repl_rc_level_supported(others[i], RC_AVAILABLE));
		/* local (and no level) always pass; snapshot has its own check */
		TT_ASSERT(cmd_repl_rc_level_supported(others[i], RC_LOCAL));
		TT_ASSERT(cmd_repl_rc_level_supported(others[i], RC_NONE));
		TT_ASSERT(cmd_repl_rc_level_supported(others[i], RC_SNAPSHOT));
	}
}

int
main(void)
{
	TT_RUN(test_reads);
	TT_RUN(test_map_reduce);
	TT_RUN(test_refused);
	return tt_finish();
}
