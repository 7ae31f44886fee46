/*
 * cmd_repl_member.h -- what cmd_repl.c and engine.c ask of the commands
 * side of a replica set of several members (cmd_repl_member.c, issue 24).
 * Every call is a no-op returning false/0 for a standalone or a
 * single-member set, which keep today's path.
 */
#ifndef TAMGA_COMMANDS_CMD_REPL_MEMBER_H
#define TAMGA_COMMANDS_CMD_REPL_MEMBER_H

#include "commands/commands_private.h"
#include "commands/concern.h"

/* True when cfg names more than one member. */
bool cmd_repl_member_config_is_multi(const bson_t *cfg);
/* replSetInitiate of several members: the checks (93 InvalidReplicaSetConfig,
 * 103 for duplicate hosts as repl_set_config_check answers, 23), the quorum
 * check and hand-over to every other member (74 NodeNotFound when one does
 * not answer or refuses; nothing is stored anywhere then), then this node
 * joins and starts its Raft server. */
int cmd_repl_member_initiate(cmd_t *c, const bson_t *cfg, terr_t *err);
/* engine_set_self_host: start the member's Raft server when the stored
 * configuration has several members (errors are logged). */
void cmd_repl_member_on_self_host(engine_t *e);
/* engine_close: stop it (before the oplog closes), and the configuration
 * watch. */
void cmd_repl_member_stop(engine_t *e);

/* How cmd_repl_member_restart starts the Raft server again. */
typedef enum cmd_repl_restart {
	CMD_REPL_RESTART_KEPT,        /* from its kept folder */
	CMD_REPL_RESTART_EMPTIED,     /* its folder emptied but for term and vote (a removed member added again) */
	CMD_REPL_RESTART_FORCED,      /* cfg's members forced into the kept log first (a forced reconfig) */
} cmd_repl_restart_t;
/* This node's Raft server (if any) halted and kept for readers that hold
 * it, then one started for cfg (this node's completed configuration,
 * borrowed) as `how` says; one swap at a time.  0, or -1 with err set
 * (no server running then). */
int cmd_repl_member_restart(engine_t *e, const bson_t *cfg, cmd_repl_restart_t how, terr_t *err);
/*
 * A one-member set that runs without Raft (initiated with one member) moves
 * onto it: its Raft folder emptied whole, Raft bootstrapped with cfg (this
 * node's completed configuration, borrowed, naming this node alone) as its
 * single voter, whatever cfg's version, its term set to `term` + 1 (past
 * the set's) first, the folder marked for a compaction before the first
 * member is added (repl_rejoin_set_compact_pending); the configuration
 * watch started.
 * The caller has taken the single-member path's primary out of service
 * (repl_set_move_to_raft): Raft's election makes it PRIMARY again.  0, or
 * -1 with err (no server running then, the folder emptied again); 109 when
 * a Raft server already runs.
 */
int cmd_repl_member_start_moved(engine_t *e, const bson_t *cfg, int64_t term, terr_t *err);
/* This node's Raft server halted and kept (REMOVED by a newer
 * configuration); 0, or -1 with err set. */
int cmd_repl_member_retire(engine_t *e, terr_t *err);
/* The same when this node is REMOVED and its Raft server runs (checked
 * under the swap lock, so a re-add's new server is never halted); true
 * when it halted one.  Never from a thread of the Raft server itself (it
 * joins them): the configuration applier wakes the watch instead
 * (cmd_repl_watch_poke). */
bool cmd_repl_member_retire_if_removed(engine_t *e);

/* cmd_repl_force.c.  replSetReconfig {force: true} on this node (any
 * state): see the file's comment. */
int cmd_repl_member_force_reconfig(cmd_t *c, const bson_t *cfg, terr_t *err);
/* {_tamgaReplSetForce: cfg} (internal): a member a forced configuration
 * names, told by the member that took it. */
int cmd_tamga_repl_set_force(cmd_t *c, terr_t *err);
/* The configuration watch: every second, the members of this node's
 * configuration are asked for theirs; a newer one of the same set
 * (replicaSetId) is adopted -- REMOVED with the Raft server halted when
 * it leaves this node out.  start is idempotent; stop joins the thread. */
void cmd_repl_watch_start(engine_t *e);
void cmd_repl_watch_stop(engine_t *e);
/* One round of it now, on the caller's thread (about a second at most):
 * 1 when a newer configuration was adopted, else 0. */
int cmd_repl_watch_check_now(engine_t *e);
/* The watch runs a round now rather than at its next period (a no-op
 * when it does not run); any thread, the Raft server's included. */
void cmd_repl_watch_poke(engine_t *e);
/* replSetStepDown of a set of several: stop taking writes and hand the
 * leadership over (repl_member_step_down), waiting up to
 * secondaryCatchUpPeriodSecs (10 s when 0 without force) or maxTimeMS; for
 * the stepdown period secs this member is frozen (no election, no priority
 * takeover).  force: SECONDARY when nobody took over by then (as mongod). */
int cmd_repl_member_step_down(cmd_t *c, int64_t secs, int64_t catch_up_secs, bool force, terr_t *err);
/* replSetFreeze of a set of several (repl_member_freeze): secs 0 unfreezes. */
int cmd_repl_member_freeze(cmd_t *c, int64_t secs, terr_t *err);
/* replSetGetStatus of a set of several: the whole reply body; false when
 * this node is not such a member (the single-member reply applies). */
bool cmd_repl_member_status(engine_t *e, bson_t *reply);
/* hello: append `hosts` (every member) and set *primary_host to the
 * leader's host (NULL when unknown; borrowed from *cfg_out, which the
 * caller destroys whenever true is returned).  false: not such a member. */
bool cmd_repl_member_hello(engine_t *e, bson_t *out, const char **primary_host, bson_t *cfg_out);
/* hello, after `primary`: this member's own `passive` (priority 0),
 * `hidden`, `buildIndexes: false`, `secondaryDelaySecs`, `tags`, as
 * mongod's HelloResponse (nothing for other nodes). */
void cmd_repl_member_hello_self(engine_t *e, bson_t *out);

/* settings.replicaSetId of the configuration cfg (borrowed) into out; false
 * when it has none. */
bool cmd_repl_member_config_rsid(const bson_t *cfg, bson_oid_t *out);

/*
 * Hand host the set's configuration: {_tamgaReplSetJoin: cfg, dryRun} over an
 * authenticated member call (10 s).  0 when it took it; otherwise -1 with err
 * set to the member's own code and errmsg, or 74 NodeNotFound when its reply
 * names none (the caller may then ask cmd_repl_member_join_veto).  cfg is
 * borrowed.  mv_index, mv_term (0: none sent): the primary's last Raft log
 * index and term, the new member's minValid (repl/raft_min_valid.h:
 * `minValidIndex`, `minValidTerm`).
 */
int cmd_repl_member_join(const char *host, const bson_t *cfg, bool dry_run, uint64_t mv_index, uint64_t mv_term,
                         terr_t *err);

/*
 * mongod's quorum-check vetoes (check_quorum_for_config_change.cpp) for a
 * member that refused `_tamgaReplSetJoin` with je: it runs another set
 * (108 from its join: 103 "Our set name did not match that of <host>"), or
 * it already has a configuration whose version is not below `version` (23:
 * its hello's setVersion read, 103 "Our config version of <version> is no
 * larger than the version on <host>, which is <v>").  Returns true with err
 * set for a veto, false otherwise (err untouched: the caller answers 74).
 */
bool cmd_repl_member_join_veto(const char *host, const terr_t *je, int64_t version, terr_t *err);

/* {_tamgaReplSetRemoved: cfg} (internal): the primary hands a member it
 * removed the configuration without it, which leaves it REMOVED. */
int cmd_tamga_repl_set_removed(cmd_t *c, terr_t *err);

/* replSetReconfig of a set of several members (cmd_repl_reconfig.c, see
 * there for the rules and codes). */
int cmd_repl_member_reconfig(cmd_t *c, const bson_t *cfg, bool force, terr_t *err);
/*
 * replSetReconfig without force that adds members to a set initiated with
 * one member (it runs without Raft; this node its PRIMARY): mongod's checks
 * of the reconfig and the quorum check (a dry run of the hand-over to every
 * new member: 74 with mongod's quorum message when one does not answer or
 * has data of its own, 103 for another set's member) -- a failure leaves
 * the set as it was --, then the set moves onto Raft as a one-voter set
 * (repl_set_move_to_raft, cmd_repl_member_start_moved; writes stop until
 * Raft elected this node: 262 when it was not within 30 s, the set then a
 * single member without Raft again), then cmd_repl_member_reconfig runs the
 * reconfig, which compacts the Raft log first so the new members copy the
 * data (initial sync).  A failure from there leaves a working one-voter
 * Raft set, primary, its configuration unchanged.  109 while another
 * reconfig runs.
 */
int cmd_repl_member_grow(cmd_t *c, const bson_t *cfg, terr_t *err);
/* The Raft member's on_config: adopt a configuration from the set's log. */
void cmd_repl_member_on_config(void *arg, const bson_t *entry);
/* This node's role in cfg: *no_lead (priority 0, votes 0: never stays
 * primary) and its secondaryDelaySecs. */
void cmd_repl_member_self_role(const bson_t *cfg, const char *self_host, bool *no_lead, int64_t *delay_secs);

/* One member's options as the (completed) configuration holds them. */
typedef struct member_opts {
	double priority;
	int votes;
	bool hidden, arbiter, build_indexes, has_tags;
	int64_t delay_secs;
	bson_t tags;                  /* static, into cfg (valid while cfg is) */
} member_opts_t;
/* members[i] of cfg (defaults when absent). */
void member_opts_at(const bson_t *cfg, int i, member_opts_t *mo);
/* After a handler that returned 0: true (err set to 11602
 * InterruptedDueToReplStateChange) when this member of a set of several is
 * no longer primary and the reply holds a 10107 write error -- it stepped
 * down while the write ran (the oplog's may_log refused the rest). */
bool cmd_repl_member_interrupted(cmd_t *c, const bson_t *reply, terr_t *err);
/* After a write command that succeeded: wait as its write concern says
 * (see the file's comment); true when a writeConcernError was appended --
 * 11602 at once when the set's term moved past start_term (the term when
 * the command passed the gate; 0: not known) before the wait began. */
bool cmd_repl_member_wait_write(cmd_t *c, const concern_write_t *wc, int64_t start_term, bson_t *reply);

#endif
