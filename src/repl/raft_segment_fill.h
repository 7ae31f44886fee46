/*
 * raft_segment_fill.h -- libraft's open segments written over zeros instead
 * of over fallocated ("unwritten") space, for the members' Raft folders.
 *
 * libraft 0.15's libuv back end prepares each open segment (8 MB) with
 * posix_fallocate().  On ext4 (and xfs) that leaves the range unwritten, so
 * every append -- an O_DIRECT write with RWF_NOWAIT | RWF_DSYNC -- lands in
 * unwritten extents: the kernel answers RWF_NOWAIT with EAGAIN (the extent
 * must be converted), libraft redoes the write blocking on a libuv pool
 * thread, and its RWF_DSYNC completion waits for a journal commit of the
 * conversion, together with whatever else the file system's running
 * transaction holds (WiredTiger's files of the same dbpath).  That is on
 * the path of every w: "majority" write (docs/benchmarks.md, "Session 13 --
 * issue 24").  libraft has no setting for it, so tamgad's executable defines
 * posix_fallocate() itself (tools/raft_fallocate.c, which calls
 * repl_raft_segment_fill_fallocate): the executable's definition is the
 * one libraft's reference binds to.  libtamga defines no posix_fallocate:
 * a program embedding it keeps the C library's, registered folders or not
 * (its members' Raft segments are then fallocated, as libraft does; only
 * slower).  For a file inside a registered
 * folder, and a range wholly at or past the file's end (nothing stored
 * there to lose), it writes zeros over the range and syncs them: libraft's
 * appends then overwrite written blocks (no conversion, no journal commit,
 * no EAGAIN).  Any other call goes to the C library's posix_fallocate
 * unchanged.  Cost: each segment is written once more, by libraft's
 * preparer on a pool thread, ahead of its use.
 */
#ifndef TAMGA_REPL_RAFT_SEGMENT_FILL_H
#define TAMGA_REPL_RAFT_SEGMENT_FILL_H

#include <sys/types.h>

/* Have posix_fallocate() zero-fill new files under dir (a member's Raft
 * folder; it must exist: it is resolved to its real path now).  Idempotent;
 * at most 16 folders per process (more are left to the C library's
 * posix_fallocate: correct, only slower).  Returns 0, or -1 when dir cannot
 * be resolved or the table is full (nothing registered). */
int repl_raft_segment_fill_register(const char *dir);

/* posix_fallocate(3)'s contract (0 or an errno value, errno untouched):
 * zeros over a range at or past the end of a file inside a registered
 * folder, the C library's posix_fallocate (looked up past the caller's
 * object: RTLD_NEXT) for anything else.  What an executable's
 * posix_fallocate() calls to make the zero-fill its own. */
int repl_raft_segment_fill_fallocate(int fd, off_t offset, off_t len);

/* The executable names its posix_fallocate() definition (fn) at start, so
 * repl_raft_segment_fill_active can tell it is the one in force. */
void repl_raft_segment_fill_install(void *fn);

/* Whether posix_fallocate() in this process is the one installed above
 * (false in a program embedding libtamga, or when another definition took
 * precedence at link time). */
int repl_raft_segment_fill_active(void);

#endif
