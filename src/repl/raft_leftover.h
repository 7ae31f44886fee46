/*
 * raft_leftover.h -- a removed member's Raft log tail, the entries its
 * applier never put in its oplog (it was killed first), saved as mongod's
 * rollback files before the member's Raft folder is emptied to join the
 * set again (commands/cmd_repl_member.c, readd; src/repl/README.md
 * "Forced reconfig").  See raft_leftover.c for how.
 */
#ifndef TAMGA_REPL_RAFT_LEFTOVER_H
#define TAMGA_REPL_RAFT_LEFTOVER_H

#include <stdbool.h>
#include <stdint.h>
#include <bson/bson.h>

#include "common/error.h"
#include "repl/clock.h"

typedef struct repl_raft_leftover_stats {
	int64_t entries;   /* oplog entries of the Raft log past the local oplog */
	int64_t undone;    /* of those, the ones the set does not hold (same ts and term) */
	int64_t saved;     /* documents written to rollback files */
	bool unknown;      /* no member of cfg answered: nothing taken for undone */
} repl_raft_leftover_stats_t;

/*
 * Read the Raft log in raft_dir (no Raft server may use it), take its
 * oplog entries past oplog_last, drop those another member of cfg (not
 * self_host) holds in its oplog with the same term, and save the
 * documents the others hold whole (inserts, replacements, the same in an
 * applyOps) to <dbpath>/rollback/<uuid>/removed.<time>.<n>.bson.  0 with
 * *out (also when no member answered: out->unknown, nothing saved), -1
 * with err when the log cannot be read or a file cannot be written.
 * Blocks up to a few seconds per member asked.
 */
int repl_raft_leftover_save(const char *raft_dir, const char *dbpath, repl_ts_t oplog_last, const bson_t *cfg,
                            const char *self_host, repl_raft_leftover_stats_t *out, terr_t *err);

#endif
