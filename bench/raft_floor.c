/*
 * raft_floor.c -- issue 24's floor for w: "majority" writes: the latency of
 * one canonical/raft round trip (libraft with its libuv disk and TCP
 * back ends, as tamgad runs it) for the payload of one write, with nothing
 * else around it: no WiredTiger, no oplog, no feeder, no applier, no
 * client.  docs/benchmarks.md divides a w: 1 write's time by the w: 1 time
 * plus this latency to get the best ratio w: "majority" / w: 1 that a set
 * on this libraft, disk and machine can reach.
 *
 *   raft_floor DIR [ROUNDS] [ENTRIES] [BYTES] [GAP_US]
 *
 * Three Raft servers in one process, each on its own thread and libuv loop
 * (as three tamgad processes each have one), with their logs under
 * DIR/n1..n3 (an empty folder on the disk under test) and the libuv TCP
 * transport on 127.0.0.1 ports the kernel says are free (bound to port 0,
 * as tests/e2e/with_tamgad.sh picks tamgad's; a random pick in a range
 * sometimes met a port another server held).  Once one
 * is leader, it submits ROUNDS times (default 300) ENTRIES entries
 * (default 100: one batched insert of bench_raft.py) of BYTES bytes each
 * (default 256: the oplog entry of one of its inserts, padded to 8 as
 * tamgad pads) with one raft_apply, and times it to the apply callback
 * (the entries committed: durable on a majority, the leader's own append
 * included).  GAP_US (default 0: back to back) keeps the leader's thread
 * busy (spinning, so the CPU never idles) for that long between one
 * round's commit and the next raft_apply, as a tamgad primary is with the
 * next write's local commit: the disk then sees one append per GAP_US, not
 * appends back to back.  Prints the mean, p50, p90 and max in microseconds.  The
 * FSM does nothing; snapshots are off (tamgad takes one every 8192
 * entries).  Nothing is asserted: numbers are printed.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#define NODES 3

typedef struct node {
	int id;
	char dir[4096], addr[64];
	uv_loop_t loop;
	uv_timer_t tick, go;
	struct raft_uv_transport transport;
	struct raft_io io;
	struct raft_fsm fsm;
	struct raft raft;
	pthread_t thread;
} node_t;

static node_t nodes[NODES];
static int rounds = 300, entries = 100, bytes = 256, gap_us;
static int done_rounds, busy;
static double *lat_us;
static struct timespec t0;
static volatile int finished;

static double
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int
fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf, void **result)
{
	(void)fsm;
	(void)buf;
	*result = NULL;
	return 0;
}

static int
fsm_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n)
{
	(void)fsm;
	*bufs = raft_malloc(sizeof(struct raft_buffer));
	(*bufs)[0].len = 8;
	(*bufs)[0].base = raft_calloc(1, 8);
	*n = 1;
	return 0;
}

static int
fsm_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
	(void)fsm;
	raft_free(buf->base);
	return 0;
}

static void submit(node_t *n);

static void
on_go(uv_timer_t *t)
{
	submit(t->data);
}

static void
applied(struct raft_apply *req, int status, void *result)
{
	node_t *n = req->data;
	double us = now_us() - (t0.tv_sec * 1e6 + t0.tv_nsec / 1e3);

	(void)result;
	free(req);
	busy = 0;
	if (status != 0) {
		fprintf(stderr, "raft_apply failed: %s\n", raft_strerror(status));
		finished = 1;
		return;
	}
	lat_us[done_rounds++] = us;
	if (done_rounds >= rounds) {
		finished = 1;
		return;
	}
	for (double end = now_us() + gap_us; now_us() < end;)
		;
	uv_timer_start(&n->go, on_go, 0, 0);
}

static void
submit(node_t *n)
{
	struct raft_buffer *bufs;
	struct raft_apply *req;
	int rv;

	bufs = calloc((size_t)entries, sizeof(*bufs));
	for (int i = 0; i < entries; i++) {
		bufs[i].len = (size_t)bytes;
		bufs[i].base = raft_malloc((size_t)bytes);
		memset(bufs[i].base, 'x' + i % 3, (size_t)bytes);
	}
	req = calloc(1, sizeof(*req));
	req->data = n;
	busy = 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rv = raft_apply(&n->raft, req, bufs, (unsigned)entries, applied);
	free(bufs);   /* raft_apply took the bases */
	if (rv != 0) {
		fprintf(stderr, "raft_apply: %s\n", raft_strerror(rv));
		free(req);
		finished = 1;
	}
}

static void
on_tick(uv_timer_t *t)
{
	node_t *n = t->data;

	if (finished) {
		uv_timer_stop(&n->tick);
		uv_stop(&n->loop);
		return;
	}
	/* the leader drives the rounds once its term's barrier committed */
	if (raft_state(&n->raft) == RAFT_LEADER && !busy && done_rounds == 0 &&
	    raft_last_applied(&n->raft) >= raft_last_index(&n->raft))
		submit(n);
}

static void *
run(void *arg)
{
	node_t *n = arg;

	uv_run(&n->loop, UV_RUN_DEFAULT);
	return NULL;
}

/* n distinct 127.0.0.1 ports free now: each socket bound to port 0 stays
 * bound until all are chosen (so no two are the same), then all are closed
 * for the Raft servers to take.  0, or -1 with errno's message printed. */
static int
free_ports(int *ports, int n)
{
	int fds[NODES], rc = 0;

	for (int i = 0; i < n; i++)
		fds[i] = -1;
	for (int i = 0; i < n && rc == 0; i++) {
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		socklen_t len = sizeof(a);
		if ((fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
		    bind(fds[i], (struct sockaddr *)&a, sizeof(a)) != 0 ||
		    getsockname(fds[i], (struct sockaddr *)&a, &len) != 0) {
			perror("raft_floor: a free port");
			rc = -1;
		} else {
			ports[i] = ntohs(a.sin_port);
		}
	}
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return rc;
}

int
main(int argc, char **argv)
{
	struct raft_configuration conf;
	int ports[NODES];

	if (argc < 2) {
		fprintf(stderr, "usage: raft_floor DIR [ROUNDS] [ENTRIES] [BYTES] [GAP_US]\n");
		return 2;
	}
	if (argc > 2)
		rounds = atoi(argv[2]);
	if (argc > 3)
		entries = atoi(argv[3]);
	if (argc > 4)
		bytes = (atoi(argv[4]) + 7) & ~7;
	if (argc > 5)
		gap_us = atoi(argv[5]);
	if (rounds < 1 || entries < 1 || bytes < 8 || gap_us < 0 || gap_us > 1000000)
		return 2;
	lat_us = calloc((size_t)rounds, sizeof(double));
	if (free_ports(ports, NODES) != 0)
		return 1;
	raft_configuration_init(&conf);
	for (int i = 0; i < NODES; i++) {
		snprintf(nodes[i].addr, sizeof(nodes[i].addr), "127.0.0.1:%d", ports[i]);
		raft_configuration_add(&conf, (raft_id)(i + 1), nodes[i].addr, RAFT_VOTER);
	}
	for (int i = 0; i < NODES; i++) {
		node_t *n = &nodes[i];
		n->id = i + 1;
		snprintf(n->dir, sizeof(n->dir), "%s/n%d", argv[1], n->id);
		mkdir(n->dir, 0755);
		uv_loop_init(&n->loop);
		if (raft_uv_tcp_init(&n->transport, &n->loop) != 0 ||
		    raft_uv_init(&n->io, &n->loop, n->dir, &n->transport) != 0) {
			fprintf(stderr, "raft_uv_init failed\n");
			return 1;
		}
		n->fsm = (struct raft_fsm){.version = 1, .data = n, .apply = fsm_apply, .snapshot = fsm_snapshot,
		    .restore = fsm_restore};
		if (raft_init(&n->raft, &n->io, &n->fsm, (raft_id)n->id, n->addr) != 0) {
			fprintf(stderr, "raft_init failed\n");
			return 1;
		}
		/* tamgad's settings for electionTimeoutMillis 4000: Raft's timeout
		 * half of it, the heartbeat a tenth (at most 200 ms) */
		raft_set_election_timeout(&n->raft, 2000);
		raft_set_heartbeat_timeout(&n->raft, 200);
		raft_set_snapshot_threshold(&n->raft, 1u << 30);
		raft_set_pre_vote(&n->raft, true);
		if (raft_bootstrap(&n->raft, &conf) != 0) {
			fprintf(stderr, "raft_bootstrap failed (DIR must be empty): %s\n", raft_errmsg(&n->raft));
			return 1;
		}
		if (raft_start(&n->raft) != 0) {
			fprintf(stderr, "raft_start failed on %s: %s\n", n->addr, raft_errmsg(&n->raft));
			return 1;
		}
		uv_timer_init(&n->loop, &n->tick);
		uv_timer_init(&n->loop, &n->go);
		n->tick.data = n->go.data = n;
		uv_timer_start(&n->tick, on_tick, 5, 5);
	}
	for (int i = 0; i < NODES; i++)
		pthread_create(&nodes[i].thread, NULL, run, &nodes[i]);
	for (int i = 0; i < NODES; i++)
		pthread_join(nodes[i].thread, NULL);
	if (done_rounds == 0) {
		fprintf(stderr, "no round done\n");
		return 1;
	}
	{
		double sum = 0, *v = lat_us;
		int n = done_rounds;
		for (int i = 0; i < n; i++)
			for (int j = i + 1; j < n; j++)
				if (v[j] < v[i]) {
					double x = v[i];
					v[i] = v[j];
					v[j] = x;
				}
		for (int i = 0; i < n; i++)
			sum += v[i];
		printf("raft round trip, %d rounds of %d entries x %d bytes, gap %d us: mean %.0f us, p50 %.0f us, p90 %.0f us, max %.0f us\n",
		    n, entries, bytes, gap_us, sum / n, v[n / 2], v[n * 9 / 10], v[n - 1]);
	}
	/* the process ends here: the loops stopped mid-flight, nothing more to
	 * measure (closing three Raft servers cleanly adds nothing to the
	 * figure) */
	return 0;
}
