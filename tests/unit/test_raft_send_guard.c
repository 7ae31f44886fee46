/*
 * test_raft_send_guard.c -- the guard of repl/raft_send_guard.h against
 * libraft 0.15.0's answer from a stale state union (upstream #339/#350):
 * the union's layout that turns a pre-vote candidate into the address
 * 0x100 (the SEGV the fault-injection test met), the routing of every
 * AppendEntries result, and libraft's own UvSend: called as libraft 0.15.0
 * calls it (in a child process) it dies on that address; through the guard
 * it answers RAFT_NOCONNECTION.
 */
#include "tt.h"

#include <stddef.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <raft/uv.h>
#include <uv.h>

#include "repl/raft_send_guard.h"

static struct {
	int calls;
	const char *address;
	raft_id id;
	int type;
} S;

static int
stub_send(struct raft_io *io, struct raft_io_send *req, const struct raft_message *msg, raft_io_send_cb cb)
{
	(void)io, (void)req, (void)cb;
	S.calls++;
	S.address = msg->server_address;
	S.id = msg->server_id;
	S.type = msg->type;
	return 0;
}

/* A struct raft holding a 3-member configuration (ids 1..3), io->data set
 * as raft_init sets it. */
static void
fixture(struct raft *r, struct raft_io *io)
{
	memset(r, 0, sizeof(*r));
	memset(io, 0, sizeof(*io));
	io->data = r;
	r->io = io;
	raft_configuration_init(&r->configuration);
	TT_EQ_INT(raft_configuration_add(&r->configuration, 1, "127.0.0.1:31001", RAFT_VOTER), 0);
	TT_EQ_INT(raft_configuration_add(&r->configuration, 2, "127.0.0.1:31002", RAFT_VOTER), 0);
	TT_EQ_INT(raft_configuration_add(&r->configuration, 3, "127.0.0.1:31003", RAFT_VOTER), 0);
	memset(&S, 0, sizeof(S));
}

/* The AppendEntries result as 0.15.0's sendAppendEntriesResult builds it:
 * from follower_state.current_leader whatever the state is. */
static struct raft_message
stale_result(struct raft *r)
{
	struct raft_message msg;

	memset(&msg, 0, sizeof(msg));
	msg.type = RAFT_IO_APPEND_ENTRIES_RESULT;
	msg.server_id = r->follower_state.current_leader.id;
	msg.server_address = r->follower_state.current_leader.address;
	msg.append_entries_result.term = 7;
	return msg;
}

static void
make_pre_vote_candidate(struct raft *r, bool *votes)
{
	r->state = RAFT_CANDIDATE;
	memset(&r->leader_state, 0, sizeof(r->leader_state));
	r->candidate_state.votes = votes;
	r->candidate_state.disrupt_leader = false;
	r->candidate_state.in_pre_vote = true;
}

static void
test_union_layout(void)
{
	struct raft r;
	struct raft_io io;
	bool votes[3];

	/* libraft.so.2's sendAppendEntriesResult reads the address at 0xe8 and
	 * the id at 0xe0 of struct raft (objdump of the Debian build) */
	TT_EQ_INT(offsetof(struct raft, follower_state.current_leader.address), 0xe8);
	TT_EQ_INT(offsetof(struct raft, follower_state.current_leader.id), 0xe0);
	TT_EQ_INT(offsetof(struct raft, follower_state.current_leader.address),
	    offsetof(struct raft, candidate_state.disrupt_leader));
	fixture(&r, &io);
	make_pre_vote_candidate(&r, votes);
	TT_EQ_INT((uintptr_t)r.follower_state.current_leader.address, 0x100);
	TT_EQ_INT(r.follower_state.current_leader.id, (raft_id)(uintptr_t)votes);
	raft_configuration_close(&r.configuration);
}

static void
test_routing(void)
{
	struct raft r;
	struct raft_io io;
	struct raft_io_send req;
	struct raft_message msg;
	bool votes[3];
	char leader[] = "127.0.0.1:31002", peer[] = "127.0.0.1:31003", stranger[] = "127.0.0.1:31009";

	/* a pre-vote candidate's stale answer: dropped, the I/O never sees it */
	fixture(&r, &io);
	make_pre_vote_candidate(&r, votes);
	msg = stale_result(&r);
	TT_EQ_INT(repl_raft_send_checked(&io, &req, &msg, NULL, stub_send), RAFT_NOCONNECTION);
	TT_EQ_INT(S.calls, 0);
	TT_ASSERT(repl_raft_send_address(&r, &msg) == NULL);

	/* a leader's (the ABA of upstream #343): change NULL, promotee 2 */
	r.state = RAFT_LEADER;
	memset(&r.leader_state, 0, sizeof(r.leader_state));
	r.leader_state.promotee_id = 2;
	msg = stale_result(&r);
	TT_EQ_INT((uintptr_t)msg.server_address, 2);
	TT_EQ_INT(repl_raft_send_checked(&io, &req, &msg, NULL, stub_send), RAFT_NOCONNECTION);
	TT_EQ_INT(S.calls, 0);

	/* a follower that knows no leader (id 0, NULL: upstream #350) */
	r.state = RAFT_FOLLOWER;
	memset(&r.leader_state, 0, sizeof(r.leader_state));
	msg = stale_result(&r);
	TT_EQ_INT(repl_raft_send_checked(&io, &req, &msg, NULL, stub_send), RAFT_NOCONNECTION);
	TT_EQ_INT(S.calls, 0);

	/* a follower answering its leader: sent, to the configuration's address */
	r.follower_state.current_leader.id = 2;
	r.follower_state.current_leader.address = leader;
	msg = stale_result(&r);
	TT_EQ_INT(repl_raft_send_checked(&io, &req, &msg, NULL, stub_send), 0);
	TT_EQ_INT(S.calls, 1);
	TT_EQ_INT(S.id, 2);
	TT_EQ_STR(S.address, "127.0.0.1:31002");
	TT_ASSERT(S.address == r.configuration.servers[1].address);

	/* a candidate rejecting a stale leader's AppendEntries (libraft's
	 * recvAppendEntries answers with the sender's id and address): sent */
	make_pre_vote_candidate(&r, votes);
	msg.server_id = 3;
	msg.server_address = peer;
	TT_EQ_INT(repl_raft_send_checked(&io, &req, &msg, NULL, stub_send), 0);
	TT_EQ_INT(S.calls, 2);
	TT_EQ_INT(S.id, 3);
	TT_EQ_STR(S.address, "127.0.0.1:31003");

	/* ... from a server the configuration does not hold: a candidate's is
	 * dropped, a follower's (a member still joining) sent as is */
	msg.server_id = 9;
	msg.server_address = stranger;
	TT_EQ_INT(repl_raft_send_checked(&io, &req, &msg, NULL, stub_send), RAFT_NOCONNECTION);
	TT_EQ_INT(S.calls, 2);
	r.state = RAFT_FOLLOWER;
	memset(&r.leader_state, 0, sizeof(r.leader_state));
	TT_EQ_INT(repl_raft_send_checked(&io, &req, &msg, NULL, stub_send), 0);
	TT_EQ_INT(S.calls, 3);
	TT_ASSERT(S.address == stranger);

	/* other messages pass untouched, whatever the state */
	make_pre_vote_candidate(&r, votes);
	memset(&msg, 0, sizeof(msg));
	msg.type = RAFT_IO_REQUEST_VOTE;
	msg.server_id = 9;
	msg.server_address = stranger;
	TT_EQ_INT(repl_raft_send_checked(&io, &req, &msg, NULL, stub_send), 0);
	TT_EQ_INT(S.calls, 4);
	TT_EQ_INT(S.type, RAFT_IO_REQUEST_VOTE);
	TT_ASSERT(S.address == stranger);
	raft_configuration_close(&r.configuration);
}

static int closed;

static void
on_io_closed(struct raft_io *io)
{
	(void)io;
	closed++;
}

/* libraft's own I/O: the stale answer kills UvSend unguarded, not guarded. */
static void
test_uv_send(void)
{
	char *dir = tt_tmpdir("raft_send_guard");
	uv_loop_t loop;
	struct raft_uv_transport transport;
	struct raft r;
	struct raft_io io;
	struct raft_io_send req;
	struct raft_message msg;
	bool votes[3];
	pid_t pid;
	int st = 0;

	TT_EQ_INT(uv_loop_init(&loop), 0);
	TT_EQ_INT(raft_uv_tcp_init(&transport, &loop), 0);
	fixture(&r, &io);
	TT_EQ_INT(raft_uv_init(&io, &loop, dir, &transport), 0);
	io.data = &r;
	r.io = &io;
	TT_EQ_INT(io.init(&io, 1, "127.0.0.1:31001"), 0);
	make_pre_vote_candidate(&r, votes);
	msg = stale_result(&r);

	/* as 0.15.0 calls it: the child dies in strlen(0x100) */
	fflush(NULL);
	pid = fork();
	TT_ASSERT(pid >= 0);
	if (pid == 0) {
		struct rlimit no_core = {0, 0};
		FILE *null = freopen("/dev/null", "w", stderr);
		(void)null;
		setrlimit(RLIMIT_CORE, &no_core);   /* the crash is expected: no core file */
		io.send(&io, &req, &msg, NULL);
		_exit(0);
	}
	TT_EQ_INT(waitpid(pid, &st, 0), pid);
	TT_ASSERT(!(WIFEXITED(st) && WEXITSTATUS(st) == 0));

	/* through the guard: refused, nothing read */
	TT_EQ_INT(repl_raft_send_checked(&io, &req, &msg, NULL, io.send), RAFT_NOCONNECTION);

	r.state = RAFT_UNAVAILABLE;
	io.close(&io, on_io_closed);
	uv_run(&loop, UV_RUN_DEFAULT);
	TT_EQ_INT(closed, 1);
	raft_uv_close(&io);
	raft_uv_tcp_close(&transport);
	uv_run(&loop, UV_RUN_DEFAULT);
	TT_EQ_INT(uv_loop_close(&loop), 0);
	raft_configuration_close(&r.configuration);
	tt_rmdir(dir);
	bson_free(dir);
}

int
main(void)
{
	TT_RUN(test_union_layout);
	TT_RUN(test_routing);
	TT_RUN(test_uv_send);
	return tt_finish();
}
