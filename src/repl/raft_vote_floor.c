/*
 * raft_vote_floor.c -- a wiped member's vote floor: the rule and its file
 * (see raft_vote_floor.h).
 */
#include "repl/raft_vote_floor.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

uint64_t
repl_raft_vote_floor_for(uint64_t primary_term)
{
	if (primary_term == 0 || primary_term == UINT64_MAX)
		return primary_term;
	return primary_term + 1;
}

raft_term
repl_raft_last_term(const struct raft *r)
{
	const struct raft_log *l = &r->log;

	/* libraft's log: a ring of entries [front, back) after its snapshot */
	if (l->front != l->back)
		return l->entries[(l->back == 0 ? l->size : l->back) - 1].term;
	return l->snapshot.last_term;
}

bool
repl_raft_vote_floor_log_held(const repl_vote_floor_t *f, raft_index last_index, raft_term last_term)
{
	uint64_t t = f->term > 0 ? f->term - 1 : 0;   /* the hand-over's term */

	return f->index == 0 || last_term > t || (last_index >= f->index && last_term >= t);
}

bool
repl_raft_vote_floor_blocks(const repl_vote_floor_t *f, bool log_held, const struct raft_message *msg)
{
	return msg->type == RAFT_IO_REQUEST_VOTE && !msg->request_vote.pre_vote &&
	    (msg->request_vote.term <= f->term || !log_held);
}

static int
path_of(const char *dir, const char *name, char *out, size_t size, terr_t *err)
{
	if (snprintf(out, size, "%s/%s", dir, name) >= (int)size)
		return terr_set(err, TERR_INTERNAL_ERROR, "path too long in %s", dir);
	return 0;
}

/* One decimal number at *p (advanced past it); false when none or out of
 * range. */
static bool
number(const char **p, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (**p < '0' || **p > '9')
		return false;
	errno = 0;
	v = strtoull(*p, &end, 10);
	if (errno != 0)
		return false;
	*out = (uint64_t)v;
	*p = end;
	return true;
}

/* Sync the folder dir (a rename or unlink in it made durable). */
static int
dir_sync(const char *dir, terr_t *err)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY);

	if (fd < 0 || fsync(fd) != 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return terr_set(err, TERR_INTERNAL_ERROR, "cannot sync %s: %s", dir, strerror(e));
	}
	close(fd);
	return 0;
}

int
repl_raft_pair_file_load(const char *dir, const char *name, uint64_t *a, uint64_t *b, terr_t *err)
{
	char path[4096], buf[64];
	const char *p = buf;
	uint64_t va = 0, vb = 0;
	FILE *fp;
	size_t n;

	*a = *b = 0;
	RET(path_of(dir, name, path, sizeof(path), err));
	fp = fopen(path, "r");
	if (fp == NULL)
		return errno == ENOENT ? 0 : terr_set(err, TERR_INTERNAL_ERROR, "cannot open %s: %s", path, strerror(errno));
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	if (!number(&p, &va) || (*p == ' ' && (p++, !number(&p, &vb))) || (*p != '\n' && *p != '\0'))
		return terr_set(err, TERR_INTERNAL_ERROR, "%s does not hold one or two numbers", path);
	*a = va;
	*b = vb;
	return 0;
}

int
repl_raft_vote_floor_load(const char *dir, repl_vote_floor_t *f, terr_t *err)
{
	return repl_raft_pair_file_load(dir, REPL_RAFT_VOTE_FLOOR_FILE, &f->term, &f->index, err);
}

int
repl_raft_pair_file_store(const char *dir, const char *name, uint64_t a, uint64_t b, terr_t *err)
{
	char path[4096], tmp[4096], line[48];
	int fd, len;

	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return terr_set(err, TERR_INTERNAL_ERROR, "cannot create %s: %s", dir, strerror(errno));
	RET(path_of(dir, name, path, sizeof(path), err));
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return terr_set(err, TERR_INTERNAL_ERROR, "path too long in %s", dir);
	len = snprintf(line, sizeof(line), "%" PRIu64 " %" PRIu64 "\n", a, b);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return terr_set(err, TERR_INTERNAL_ERROR, "cannot create %s: %s", tmp, strerror(errno));
	if (write(fd, line, (size_t)len) != len || fsync(fd) != 0) {
		int e = errno;
		close(fd);
		unlink(tmp);
		return terr_set(err, TERR_INTERNAL_ERROR, "cannot write %s: %s", tmp, strerror(e));
	}
	close(fd);
	if (rename(tmp, path) != 0) {
		int e = errno;
		unlink(tmp);
		return terr_set(err, TERR_INTERNAL_ERROR, "cannot rename %s: %s", tmp, strerror(e));
	}
	return dir_sync(dir, err);
}

int
repl_raft_pair_file_remove(const char *dir, const char *name, terr_t *err)
{
	char path[4096];

	RET(path_of(dir, name, path, sizeof(path), err));
	if (unlink(path) != 0)
		return errno == ENOENT ? 0 : terr_set(err, TERR_INTERNAL_ERROR, "cannot remove %s: %s", path, strerror(errno));
	return dir_sync(dir, err);
}

/* Write f as dir's floor. */
static int
store(const char *dir, const repl_vote_floor_t *f, terr_t *err)
{
	return repl_raft_pair_file_store(dir, REPL_RAFT_VOTE_FLOOR_FILE, f->term, f->index, err);
}

int
repl_raft_vote_floor_raise(const char *dir, const repl_vote_floor_t *f, terr_t *err)
{
	repl_vote_floor_t have = {0, 0}, want;
	terr_t le = TERR_INIT;

	if (f->term == 0 && f->index == 0)
		return 0;
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return terr_set(err, TERR_INTERNAL_ERROR, "cannot create %s: %s", dir, strerror(errno));
	/* an unreadable file is replaced: the new floor is what matters */
	if (repl_raft_vote_floor_load(dir, &have, &le) != 0)
		have.term = have.index = 0;
	terr_clear(&le);
	want.term = f->term > have.term ? f->term : have.term;
	want.index = f->index > have.index ? f->index : have.index;
	if (want.term == have.term && want.index == have.index)
		return 0;
	return store(dir, &want, err);
}

int
repl_raft_vote_floor_clear_index(const char *dir, terr_t *err)
{
	repl_vote_floor_t f;

	RET(repl_raft_vote_floor_load(dir, &f, err));
	if (f.index == 0)
		return 0;
	f.index = 0;
	return store(dir, &f, err);
}
