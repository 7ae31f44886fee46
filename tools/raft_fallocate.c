/*
 * raft_fallocate.c -- tamgad's own posix_fallocate(): libraft's segment
 * files inside a member's Raft folder are zero-filled instead of
 * fallocated (why: src/repl/raft_segment_fill.h).  Linked into tamgad's
 * executable only (and the unit test of that behaviour), never into
 * libtamga: a definition of a C library function replaces it for the whole
 * process, so a program embedding libtamga must not get one it did not ask
 * for.  The executable's definition is the one libraft.so's reference
 * binds to; everything outside registered folders goes to the C library's.
 */
#include <fcntl.h>

#include "repl/raft_segment_fill.h"

int
posix_fallocate(int fd, off_t offset, off_t len)
{
	return repl_raft_segment_fill_fallocate(fd, offset, len);
}

/* Named to libtamga once at start (repl_raft_segment_fill_active). */
__attribute__((constructor)) static void
raft_fallocate_install(void)
{
	repl_raft_segment_fill_install((void *)posix_fallocate);
}
