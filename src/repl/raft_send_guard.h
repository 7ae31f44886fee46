/*
 * raft_send_guard.h -- a guard in front of libraft's raft_io `send` against
 * a bug of canonical/raft 0.15.0 (Debian's libraft2): a follower that
 * stops being a follower while it writes a snapshot or entries it received
 * still answers the leader once the write completes, and takes the
 * leader's id and address from `follower_state.current_leader` of the
 * state union, which then holds another state's fields.  A pre-vote
 * candidate's `in_pre_vote` makes that address 0x100 and UvSend's
 * strlen(address) dies of a SEGV on the loop thread (upstream issues #339
 * and #350; fixed after 0.15.0).  Every AppendEntries result goes through
 * here: it is sent to the configuration's address of its server id; a
 * result for an id the configuration does not hold is sent as is only by a
 * follower with an address, and dropped otherwise (Raft tolerates a lost
 * message: the leader sends again).  Other messages pass untouched.
 *
 * Not here: Raft itself (raft_member.c), the transport (raft_auth.c).
 */
#ifndef TAMGA_REPL_RAFT_SEND_GUARD_H
#define TAMGA_REPL_RAFT_SEND_GUARD_H

#include <raft.h>

typedef int (*repl_raft_send_fn)(struct raft_io *io, struct raft_io_send *req, const struct raft_message *msg,
                                 raft_io_send_cb cb);

/* The address `msg` may be sent to by `r` (see above): the message's own,
 * the configuration's, or NULL for "drop it".  Reads no string; never
 * dereferences msg->server_address. */
const char *repl_raft_send_address(const struct raft *r, const struct raft_message *msg);

/* raft_io `send` through the guard: `inner` is the I/O's own send, io->data
 * the struct raft (as raft_init sets it).  A dropped message answers
 * RAFT_NOCONNECTION without calling `inner` (libraft then frees `req`);
 * otherwise what `inner` answers.  The message is copied when its address
 * is replaced; `inner` keeps nothing of it after returning (UvSend encodes
 * it and copies the address). */
int repl_raft_send_checked(struct raft_io *io, struct raft_io_send *req, const struct raft_message *msg,
                           raft_io_send_cb cb, repl_raft_send_fn inner);

#endif
