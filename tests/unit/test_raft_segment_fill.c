/*
 * test_raft_segment_fill.c -- repl/raft_segment_fill.h: posix_fallocate()
 * in a registered folder writes zeros (no unwritten extents left for
 * libraft's O_DIRECT appends to convert), anywhere else it is the C
 * library's (unwritten extents on ext4), a range over stored data keeps the
 * data, and libraft's own segment preparation binds to it (a one-member
 * Raft started in a registered folder: its open segments hold no unwritten
 * extent).  The extent checks read FIEMAP; on a file system without it or
 * without unwritten extents (tmpfs) they are reported and skipped.
 */
#include "tt.h"

#include "repl/raft_segment_fill.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#define SEG (8u << 20)

static char base[4096];
static int fiemap_ok;   /* FIEMAP answers on base's file system */

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

static int
open_new(const char *dir, const char *name)
{
	char path[8192];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
}

static void
test_active(void)
{
	TT_ASSERT(repl_raft_segment_fill_active());
}

static void
test_registered_zeros(void)
{
	char dir[8192], buf[4096];
	struct stat st;
	int fd;

	snprintf(dir, sizeof(dir), "%s/raft", base);
	TT_EQ_INT(mkdir(dir, 0700), 0);
	TT_EQ_INT(repl_raft_segment_fill_register(dir), 0);
	TT_EQ_INT(repl_raft_segment_fill_register(dir), 0);   /* idempotent */
	fd = open_new(dir, "open-1");
	TT_ASSERT(fd >= 0);
	errno = 1234;
	TT_EQ_INT(posix_fallocate(fd, 0, SEG), 0);
	TT_EQ_INT(errno, 1234);
	TT_EQ_INT(fstat(fd, &st), 0);
	TT_EQ_INT(st.st_size, SEG);
	TT_EQ_INT(pread(fd, buf, sizeof(buf), SEG - sizeof(buf)), sizeof(buf));
	for (size_t i = 0; i < sizeof(buf); i++)
		if (buf[i] != 0) {
			TT_ASSERT(buf[i] == 0);
			break;
		}
	if (has_unwritten(fd) < 0)
		fprintf(stderr, "note: FIEMAP not supported here: extents not checked\n");
	else
		TT_EQ_INT(has_unwritten(fd), 0);
	close(fd);
}

static void
test_elsewhere_libc(void)
{
	char dir[8192];
	int fd, u;

	/* a sibling whose name extends the registered one: not inside it */
	snprintf(dir, sizeof(dir), "%s/raft2", base);
	TT_EQ_INT(mkdir(dir, 0700), 0);
	fd = open_new(dir, "other");
	TT_ASSERT(fd >= 0);
	TT_EQ_INT(posix_fallocate(fd, 0, SEG), 0);
	u = has_unwritten(fd);
	if (u < 0)
		fprintf(stderr, "note: FIEMAP not supported here: extents not checked\n");
	else if (u == 0)
		fprintf(stderr, "note: this file system leaves no unwritten extents: pass-through not told apart\n");
	else
		TT_EQ_INT(u, 1);
	close(fd);
}

static void
test_stored_data_kept(void)
{
	char dir[8192], buf[5];
	int fd;

	snprintf(dir, sizeof(dir), "%s/raft", base);
	fd = open_new(dir, "data");
	TT_ASSERT(fd >= 0);
	TT_EQ_INT(pwrite(fd, "hello", 5, 0), 5);
	/* a range over the stored bytes: allocation only, never zeros */
	TT_EQ_INT(posix_fallocate(fd, 0, 1 << 20), 0);
	TT_EQ_INT(pread(fd, buf, 5, 0), 5);
	TT_ASSERT(memcmp(buf, "hello", 5) == 0);
	TT_EQ_INT(posix_fallocate(fd, 0, 0), EINVAL);   /* the C library's answer */
	close(fd);
}

/* ---- libraft's own preparation ---------------------------------------- */

static int
free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = 0;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static int
fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf, void **result)
{
	(void)fsm;
	(void)buf;
	*result = NULL;
	return 0;
}

struct one {
	uv_loop_t loop;
	uv_timer_t timer;
	struct raft_uv_transport transport;
	struct raft_io io;
	struct raft_fsm fsm;
	struct raft raft;
	const char *dir;
	int ticks, checked, unwritten, applied;
	struct raft_apply req;
};

static void
on_applied(struct raft_apply *req, int status, void *result)
{
	struct one *o = req->data;

	(void)result;
	o->applied = status == 0 ? 1 : -1;
}

/* FIEMAP over libraft's open segments (open-1, open-2, ...: prepared ahead
 * of use, so they exist while the member runs) */
static void
check_segments(struct one *o)
{
	for (int i = 1; i <= 8; i++) {
		char path[8300];
		int fd, u;
		snprintf(path, sizeof(path), "%s/open-%d", o->dir, i);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		u = has_unwritten(fd);
		if (u >= 0) {
			o->checked++;
			o->unwritten += u;
		}
		close(fd);
	}
}

static void
on_closed(struct raft *r)
{
	struct one *o = r->data;

	raft_uv_close(&o->io);
	raft_uv_tcp_close(&o->transport);
	uv_close((uv_handle_t *)&o->timer, NULL);
}

static void
on_tick(uv_timer_t *t)
{
	struct one *o = t->data;

	/* libraft prepares open segments for its first append, and keeps some
	 * ready from then on */
	o->ticks++;
	if (raft_state(&o->raft) == RAFT_LEADER && o->applied == 0 && o->req.data == NULL) {
		struct raft_buffer b = {.len = 8, .base = raft_calloc(1, 8)};
		o->req.data = o;
		if (raft_apply(&o->raft, &o->req, &b, 1, on_applied) != 0)
			o->applied = -1;
	}
	if (o->ticks >= 100 || o->applied < 0 || (o->applied > 0 && o->ticks >= 20)) {
		uv_timer_stop(t);
		check_segments(o);
		raft_close(&o->raft, on_closed);
	}
}

static void
test_libraft_segments(void)
{
	char dir[8192], addr[32];
	struct raft_configuration conf;
	struct one *o = calloc(1, sizeof(*o));

	snprintf(dir, sizeof(dir), "%s/raft/member", base);
	TT_EQ_INT(mkdir(dir, 0700), 0);
	/* a port the kernel says is free now (others' servers use 30000-60000) */
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
	TT_EQ_INT(uv_loop_init(&o->loop), 0);
	TT_EQ_INT(raft_uv_tcp_init(&o->transport, &o->loop), 0);
	TT_EQ_INT(raft_uv_init(&o->io, &o->loop, dir, &o->transport), 0);
	o->dir = dir;
	o->fsm = (struct raft_fsm){.version = 1, .apply = fsm_apply};
	TT_EQ_INT(raft_init(&o->raft, &o->io, &o->fsm, 1, addr), 0);
	o->raft.data = o;
	raft_configuration_init(&conf);
	TT_EQ_INT(raft_configuration_add(&conf, 1, addr, RAFT_VOTER), 0);
	TT_EQ_INT(raft_bootstrap(&o->raft, &conf), 0);
	raft_configuration_close(&conf);
	if (raft_start(&o->raft) != 0)
		TT_FAIL_("raft_start: %s", raft_errmsg(&o->raft));
	uv_timer_init(&o->loop, &o->timer);
	o->timer.data = o;
	uv_timer_start(&o->timer, on_tick, 50, 50);
	uv_run(&o->loop, UV_RUN_DEFAULT);
	TT_EQ_INT(uv_loop_close(&o->loop), 0);
	TT_EQ_INT(o->applied, 1);
	if (fiemap_ok)
		TT_ASSERT(o->checked > 0);
	else
		fprintf(stderr, "note: FIEMAP not supported here: libraft's segments not checked\n");
	TT_EQ_INT(o->unwritten, 0);
	free(o);
}

int
main(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(base, sizeof(base), "%s/tamga-segfill-XXXXXX", tmp != NULL && *tmp ? tmp : "/tmp");
	if (mkdtemp(base) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	{
		int fd = open_new(base, "probe");
		fiemap_ok = fd >= 0 && has_unwritten(fd) >= 0;
		if (fd >= 0)
			close(fd);
	}
	TT_RUN(test_active);
	TT_RUN(test_registered_zeros);
	TT_RUN(test_elsewhere_libc);
	TT_RUN(test_stored_data_kept);
	TT_RUN(test_libraft_segments);
	{
		char cmd[4200];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", base);
	}
	return tt_finish();
}
