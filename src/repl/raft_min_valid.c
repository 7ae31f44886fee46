/*
 * raft_min_valid.c -- a member's minValid after a hand-over: the rule and
 * its file (see raft_min_valid.h).
 */
#include "repl/raft_min_valid.h"

#include "repl/raft_vote_floor.h"

bool
repl_raft_min_valid_reached(const repl_min_valid_t *mv, uint64_t last_applied, bool later_term_seen)
{
	return mv->index == 0 || last_applied >= mv->index || later_term_seen;
}

int
repl_raft_min_valid_store(const char *dir, const repl_min_valid_t *mv, terr_t *err)
{
	if (mv->index == 0)
		return 0;
	return repl_raft_pair_file_store(dir, REPL_RAFT_MIN_VALID_FILE, mv->index, mv->term, err);
}

int
repl_raft_min_valid_load(const char *dir, repl_min_valid_t *mv, terr_t *err)
{
	return repl_raft_pair_file_load(dir, REPL_RAFT_MIN_VALID_FILE, &mv->index, &mv->term, err);
}

int
repl_raft_min_valid_clear(const char *dir, terr_t *err)
{
	return repl_raft_pair_file_remove(dir, REPL_RAFT_MIN_VALID_FILE, err);
}
