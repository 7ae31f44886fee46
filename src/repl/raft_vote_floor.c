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

bool
repl_raft_vote_floor_blocks(uint64_t floor, const struct raft_message *msg)
{
	return floor > 0 && msg->type == RAFT_IO_REQUEST_VOTE && !msg->request_vote.pre_vote &&
	    msg->request_vote.term <= floor;
}

static int
path_of(const char *dir, const char *name, char *out, size_t size, terr_t *err)
{
	if (snprintf(out, size, "%s/%s", dir, name) >= (int)size)
		return terr_set(err, TERR_INTERNAL_ERROR, "path too long in %s", dir);
	return 0;
}

int
repl_raft_vote_floor_load(const char *dir, uint64_t *floor, terr_t *err)
{
	char path[4096], buf[64];
	FILE *f;
	size_t n;
	char *end;
	unsigned long long v;

	*floor = 0;
	RET(path_of(dir, REPL_RAFT_VOTE_FLOOR_FILE, path, sizeof(path), err));
	f = fopen(path, "r");
	if (f == NULL)
		return errno == ENOENT ? 0 : terr_set(err, TERR_INTERNAL_ERROR, "cannot open %s: %s", path, strerror(errno));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (end == buf || errno != 0 || (*end != '\n' && *end != '\0'))
		return terr_set(err, TERR_INTERNAL_ERROR, "%s does not hold a term", path);
	*floor = (uint64_t)v;
	return 0;
}

int
repl_raft_vote_floor_raise(const char *dir, uint64_t floor, terr_t *err)
{
	char path[4096], tmp[4096], line[32];
	uint64_t have = 0;
	terr_t le = TERR_INIT;
	int fd, len;

	if (floor == 0)
		return 0;
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return terr_set(err, TERR_INTERNAL_ERROR, "cannot create %s: %s", dir, strerror(errno));
	/* an unreadable file is replaced: the new floor is what matters */
	if (repl_raft_vote_floor_load(dir, &have, &le) == 0 && have >= floor)
		return 0;
	terr_clear(&le);
	RET(path_of(dir, REPL_RAFT_VOTE_FLOOR_FILE, path, sizeof(path), err));
	RET(path_of(dir, REPL_RAFT_VOTE_FLOOR_FILE ".tmp", tmp, sizeof(tmp), err));
	len = snprintf(line, sizeof(line), "%" PRIu64 "\n", floor);
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
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	if (fd < 0 || fsync(fd) != 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return terr_set(err, TERR_INTERNAL_ERROR, "cannot sync %s: %s", dir, strerror(e));
	}
	close(fd);
	return 0;
}
