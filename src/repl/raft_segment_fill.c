/*
 * raft_segment_fill.c -- the allocation behind tamgad's posix_fallocate()
 * for libraft's segment files: zeros written over a new file's range
 * inside a member's Raft folder, the C library's posix_fallocate for
 * everything else (the reason and the contract: raft_segment_fill.h).  It
 * changes how libraft's files are allocated, never what they hold: a
 * fallocated range reads as zeros too.  The definition named
 * posix_fallocate is not here but in tamgad's executable
 * (tools/raft_fallocate.c), so a program embedding libtamga keeps the C
 * library's.
 */
#include "repl/raft_segment_fill.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILL_DIRS 16
#define FILL_CHUNK (1u << 20)

static pthread_mutex_t fill_lock = PTHREAD_MUTEX_INITIALIZER;
static char *fill_dirs[FILL_DIRS];
static int fill_ndirs;          /* read without the lock: only grows, each
                                 * slot written before the count */

int
repl_raft_segment_fill_register(const char *dir)
{
	char *real = realpath(dir, NULL);
	int rc = -1;

	if (real == NULL)
		return -1;
	pthread_mutex_lock(&fill_lock);
	for (int i = 0; i < fill_ndirs; i++)
		if (strcmp(fill_dirs[i], real) == 0) {
			rc = 0;
			goto out;
		}
	if (fill_ndirs < FILL_DIRS) {
		fill_dirs[fill_ndirs] = real;
		real = NULL;
		__atomic_store_n(&fill_ndirs, fill_ndirs + 1, __ATOMIC_RELEASE);
		rc = 0;
	}
out:
	pthread_mutex_unlock(&fill_lock);
	free(real);
	return rc;
}

/* Whether fd's file sits directly or deeper inside a registered folder. */
static int
fd_in_fill_dir(int fd)
{
	char link[64], path[PATH_MAX];
	int n = __atomic_load_n(&fill_ndirs, __ATOMIC_ACQUIRE);
	ssize_t len;

	if (n == 0)
		return 0;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	if ((len = readlink(link, path, sizeof(path) - 1)) <= 0)
		return 0;
	path[len] = '\0';
	for (int i = 0; i < n; i++) {
		size_t dl = strlen(fill_dirs[i]);
		if (strncmp(path, fill_dirs[i], dl) == 0 && path[dl] == '/')
			return 1;
	}
	return 0;
}

typedef int (*fallocate_fn)(int, off_t, off_t);

static int
libc_posix_fallocate(int fd, off_t offset, off_t len)
{
	static fallocate_fn next;
	fallocate_fn f = __atomic_load_n(&next, __ATOMIC_ACQUIRE);

	if (f == NULL) {
		f = (fallocate_fn)dlsym(RTLD_NEXT, "posix_fallocate");
		if (f == NULL)
			return ENOSYS;
		__atomic_store_n(&next, f, __ATOMIC_RELEASE);
	}
	return f(fd, offset, len);
}

/* Zeros over [offset, offset + len) of a file whose end is at or before
 * offset, synced, then dropped from the page cache (libraft writes the
 * file with O_DIRECT: cached pages over the range would have to be
 * invalidated by every append).  Returns 0 or an errno value. */
static int
zero_fill(int fd, off_t offset, off_t len)
{
	static char zeros[FILL_CHUNK];   /* never written: .bss, not 1 MB of file */
	off_t done = 0;

	while (done < len) {
		size_t n = (size_t)(len - done) < FILL_CHUNK ? (size_t)(len - done) : FILL_CHUNK;
		ssize_t w = pwrite(fd, zeros, n, offset + done);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		if (w == 0)
			return EIO;
		done += w;
	}
	if (fdatasync(fd) != 0)
		return errno;
	(void)posix_fadvise(fd, offset, len, POSIX_FADV_DONTNEED);
	return 0;
}

/* The C library's contract (posix_fallocate(3)): 0 or an errno value,
 * errno itself untouched. */
int
repl_raft_segment_fill_fallocate(int fd, off_t offset, off_t len)
{
	struct stat st;
	int saved = errno, rc;

	if (offset < 0 || len <= 0)
		return libc_posix_fallocate(fd, offset, len);
	if (fd_in_fill_dir(fd) && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= offset) {
		rc = zero_fill(fd, offset, len);
		errno = saved;
		if (rc != ENOSPC && rc != EDQUOT && rc != 0) {
			/* a file that takes no plain write (whatever the reason):
			 * the C library's allocation, as libraft asked */
			rc = libc_posix_fallocate(fd, offset, len);
			errno = saved;
		}
		return rc;
	}
	rc = libc_posix_fallocate(fd, offset, len);
	errno = saved;
	return rc;
}

static void *fill_interposer;    /* repl_raft_segment_fill_install's */

void
repl_raft_segment_fill_install(void *fn)
{
	__atomic_store_n(&fill_interposer, fn, __ATOMIC_RELEASE);
}

int
repl_raft_segment_fill_active(void)
{
	void *fn = __atomic_load_n(&fill_interposer, __ATOMIC_ACQUIRE);

	return fn != NULL && dlsym(RTLD_DEFAULT, "posix_fallocate") == fn;
}
