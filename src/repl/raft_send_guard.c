/*
 * raft_send_guard.c -- the guard in front of libraft's `send`
 * (raft_send_guard.h): AppendEntries results go to an address taken from
 * the configuration, never from a state union libraft may have left.
 */
#include "repl/raft_send_guard.h"

#include <stddef.h>

const char *
repl_raft_send_address(const struct raft *r, const struct raft_message *msg)
{
	if (msg->type != RAFT_IO_APPEND_ENTRIES_RESULT)
		return msg->server_address;
	for (unsigned i = 0; i < r->configuration.n; i++)
		if (r->configuration.servers[i].id == msg->server_id && r->configuration.servers[i].address != NULL)
			return r->configuration.servers[i].address;
	/* an id the configuration does not hold: only a follower's own
	 * current_leader (or the sender of the message it answers) is a real
	 * one; in any other state it is another state's fields */
	if (r->state == RAFT_FOLLOWER && msg->server_id != 0 && msg->server_address != NULL)
		return msg->server_address;
	return NULL;
}

int
repl_raft_send_checked(struct raft_io *io, struct raft_io_send *req, const struct raft_message *msg,
                       raft_io_send_cb cb, repl_raft_send_fn inner)
{
	const char *address = repl_raft_send_address(io->data, msg);
	struct raft_message copy;

	if (address == NULL)
		return RAFT_NOCONNECTION;
	if (address == msg->server_address)
		return inner(io, req, msg, cb);
	copy = *msg;
	copy.server_address = address;
	return inner(io, req, &copy, cb);
}
