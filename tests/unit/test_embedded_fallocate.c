/*
 * test_embedded_fallocate.c -- a program embedding libtamga keeps the C
 * library's posix_fallocate(): tamgad's zero-filling one
 * (tools/raft_fallocate.c, src/repl/raft_segment_fill.h) is its
 * executable's only.  Like every unit test this program links libtamga
 * and nothing of tamgad: it registers a Raft folder with the zero-fill
 * registry (so the registry's object is in the link), then checks that
 * posix_fallocate is the C library's symbol, that the registry says it is
 * not in force, and that a file fallocated in the registered folder is
 * left with unwritten extents (the C library's allocation on ext4/xfs;
 * reported and not checked where FIEMAP or unwritten extents are missing,
 * e.g. tmpfs).  Before the move every one of these failed: libtamga
 * defined posix_fallocate for the whole process.
 */
#include "tt.h"

#include "repl/raft_segment_fill.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#define SEG (8u << 20)

/* 1: some extent of fd is unwritten, 0: none, -1: FIEMAP unsupported. */
static int
has_unwritten(int fd)
{
	struct {
		struct fiemap fm;
		struct fiemap_extent ext[64];
	} q;

	memset(&q, 0, sizeof(q));
	q.fm.fm_length = ~0ULL;
	q.fm.fm_flags = FIEMAP_FLAG_SYNC;
	q.fm.fm_extent_count = 64;
	if (ioctl(fd, FS_IOC_FIEMAP, &q.fm) != 0)
		return -1;
	for (unsigned i = 0; i < q.fm.fm_mapped_extents; i++)
		if (q.fm.fm_extents[i].fe_flags & FIEMAP_EXTENT_UNWRITTEN)
			return 1;
	return 0;
}

static void
test_symbol_is_libc(void)
{
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	void *ours = dlsym(RTLD_DEFAULT, "posix_fallocate");

	TT_ASSERT(libc != NULL);
	TT_ASSERT(ours != NULL);
	TT_ASSERT(ours == dlsym(libc, "posix_fallocate"));
	TT_ASSERT(!repl_raft_segment_fill_active());
	dlclose(libc);
}

static void
test_registered_folder_fallocated(void)
{
	char *dir = tt_tmpdir("embedded-fallocate");
	char path[4200];
	int fd, u;

	TT_EQ_INT(repl_raft_segment_fill_register(dir), 0);
	snprintf(path, sizeof(path), "%s/open-1", dir);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	TT_ASSERT(fd >= 0);
	TT_EQ_INT(posix_fallocate(fd, 0, SEG), 0);
	u = has_unwritten(fd);
	if (u < 0)
		fprintf(stderr, "note: FIEMAP not supported here: extents not checked\n");
	else if (u == 0)
		fprintf(stderr, "note: this file system leaves no unwritten extents: not told apart\n");
	else
		TT_EQ_INT(u, 1);
	close(fd);
	tt_rmdir(dir);
	bson_free(dir);
}

int
main(void)
{
	TT_RUN(test_symbol_is_libc);
	TT_RUN(test_registered_folder_fallocated);
	return tt_finish();
}
