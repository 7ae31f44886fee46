/*
 * test_member_rejoin.c -- a removed member added to its set again
 * (repl/member_rejoin.h): which files of its Raft folder it keeps (the
 * term and the vote, canonical/raft's metadata1/metadata2) and the reset
 * itself on a folder shaped as libraft leaves it (closed and open
 * segments, snapshots), a missing folder, and one that cannot be read;
 * the folder of a one-member set moved onto Raft (cleared whole, its
 * compaction mark).
 */
#include "tt.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "repl/member_rejoin.h"

static char *tmp;

static void
touch(const char *dir, const char *name)
{
	char *path = bson_strdup_printf("%s/%s", dir, name);
	FILE *f = fopen(path, "w");

	TT_ASSERT(f != NULL);
	if (f != NULL) {
		fputs("x", f);
		fclose(f);
	}
	bson_free(path);
}

static bool
exists(const char *dir, const char *name)
{
	char *path = bson_strdup_printf("%s/%s", dir, name);
	bool ok = access(path, F_OK) == 0;

	bson_free(path);
	return ok;
}

static void
test_kept_names(void)
{
	TT_ASSERT(repl_rejoin_raft_file_kept("metadata1"));
	TT_ASSERT(repl_rejoin_raft_file_kept("metadata2"));
	TT_ASSERT(!repl_rejoin_raft_file_kept("metadata"));
	TT_ASSERT(!repl_rejoin_raft_file_kept("metadata12"));
	TT_ASSERT(!repl_rejoin_raft_file_kept("0000000000000001-0000000000000128"));
	TT_ASSERT(!repl_rejoin_raft_file_kept("open-1"));
	TT_ASSERT(!repl_rejoin_raft_file_kept("snapshot-1-8192-1765000000000"));
	TT_ASSERT(!repl_rejoin_raft_file_kept("snapshot-1-8192-1765000000000.meta"));
	TT_ASSERT(!repl_rejoin_raft_file_kept(""));
}

static void
test_reset(void)
{
	static const char *const gone[] = {"0000000000000001-0000000000000128", "open-1", "open-2",
	    "snapshot-1-8192-1765000000000", "snapshot-1-8192-1765000000000.meta", NULL};
	char *dir = bson_strdup_printf("%s/raft", tmp);
	terr_t err = TERR_INIT;

	TT_EQ_INT(mkdir(dir, 0700), 0);
	touch(dir, "metadata1");
	touch(dir, "metadata2");
	for (int i = 0; gone[i] != NULL; i++)
		touch(dir, gone[i]);
	TT_EQ_INT(repl_rejoin_reset_raft_dir(dir, &err), 0);
	TT_ASSERT(exists(dir, "metadata1") && exists(dir, "metadata2"));
	for (int i = 0; gone[i] != NULL; i++)
		TT_ASSERT(!exists(dir, gone[i]));
	/* again: nothing left to remove */
	TT_EQ_INT(repl_rejoin_reset_raft_dir(dir, &err), 0);
	TT_ASSERT(exists(dir, "metadata1"));
	bson_free(dir);

	/* a member that never ran Raft here: no folder, nothing to do */
	dir = bson_strdup_printf("%s/none", tmp);
	TT_EQ_INT(repl_rejoin_reset_raft_dir(dir, &err), 0);
	bson_free(dir);

	/* not a folder: an error with the path */
	dir = bson_strdup_printf("%s/metadata-file", tmp);
	touch(tmp, "metadata-file");
	TT_EQ_INT(repl_rejoin_reset_raft_dir(dir, &err), -1);
	TT_ASSERT(err.msg != NULL && strstr(err.msg, "metadata-file") != NULL);
	terr_clear(&err);
	bson_free(dir);
}

/* A one-member set moved onto Raft (rs.add() on a set initiated with one
 * member): its folder emptied whole, metadata too (libraft bootstraps only
 * a folder without a term), and marked for a compaction before its first
 * member is added -- a mark that is no Raft log (a restart before the
 * bootstrap stays the single member) and survives a removed member's reset. */
static void
test_moved(void)
{
	char *dir = bson_strdup_printf("%s/moved", tmp);
	terr_t err = TERR_INIT;

	TT_ASSERT(!repl_rejoin_compact_pending(dir));
	/* the mark creates the folder */
	TT_EQ_INT(repl_rejoin_set_compact_pending(dir, true, &err), 0);
	TT_ASSERT(repl_rejoin_compact_pending(dir));
	TT_ASSERT(repl_rejoin_raft_file_kept(REPL_REJOIN_COMPACT_FILE));
	TT_ASSERT(!repl_rejoin_raft_dir_has_log(dir));
	touch(dir, "metadata1");
	touch(dir, "open-1");
	TT_ASSERT(repl_rejoin_raft_dir_has_log(dir));
	TT_EQ_INT(repl_rejoin_reset_raft_dir(dir, &err), 0);
	TT_ASSERT(repl_rejoin_compact_pending(dir) && exists(dir, "metadata1") && !exists(dir, "open-1"));
	/* cleared whole: the mark and the metadata too */
	touch(dir, "open-1");
	TT_EQ_INT(repl_rejoin_clear_raft_dir(dir, &err), 0);
	TT_ASSERT(!repl_rejoin_compact_pending(dir) && !exists(dir, "metadata1") && !exists(dir, "open-1"));
	/* the mark set and dropped (twice: dropping a missing one is fine) */
	TT_EQ_INT(repl_rejoin_set_compact_pending(dir, true, &err), 0);
	TT_EQ_INT(repl_rejoin_set_compact_pending(dir, false, &err), 0);
	TT_EQ_INT(repl_rejoin_set_compact_pending(dir, false, &err), 0);
	TT_ASSERT(!repl_rejoin_compact_pending(dir));
	/* no folder: nothing to clear */
	bson_free(dir);
	dir = bson_strdup_printf("%s/none2", tmp);
	TT_EQ_INT(repl_rejoin_clear_raft_dir(dir, &err), 0);
	bson_free(dir);
}

int
main(void)
{
	tmp = tt_tmpdir("member_rejoin");
	TT_RUN(test_kept_names);
	TT_RUN(test_reset);
	TT_RUN(test_moved);
	tt_rmdir(tmp);
	bson_free(tmp);
	return tt_finish();
}
