/*
 * replset.h -- this node's replica-set identity: the set's name from
 * --replSet, its configuration (local.system.replset), the election state
 * mongod keeps in `local` (term and last vote, local.replset.election), the
 * member state (PRIMARY; SECONDARY when stepped down; RECOVERING in maintenance), the
 * topologyVersion counter streaming `hello` waits on, and the optimes `hello`
 * and `replSetGetStatus` report.
 *
 * A single member elects itself as mongod's does: on initiate (term 1), on
 * every restart (term + 1, the set comes back as the same initiated set) and
 * when a stepdown or freeze period ends.  A set of several members runs on
 * Raft (repl/raft_member.h), which sets the state and term through
 * repl_set_raft_role; this module then never elects itself.
 *
 * What this module does not do: the commands' argument reading and reply
 * shapes (commands/cmd_repl.c), the oplog (repl/oplog.h), the cluster-time
 * signing keys (repl/cluster_time.h).
 *
 * Thread safety: every function may be called from any connection thread;
 * the state is behind one mutex.
 */
#ifndef TAMGA_REPL_REPLSET_H
#define TAMGA_REPL_REPLSET_H

#include <stdbool.h>
#include <stdint.h>
#include <bson/bson.h>

#include "common/error.h"
#include "storage/storage.h"

typedef struct repl_set repl_set_t;

/* A replication optime: the oplog timestamp (seconds, increment) and the
 * term it was written in (-1 before any election, as mongod). */
typedef struct repl_optime {
	uint32_t secs, inc;
	int64_t term;
} repl_optime_t;

/* Append {key: {ts: Timestamp(secs, inc), t: term}} to b: mongod's optime
 * document, as replies and rs.status() print it. */
void repl_optime_append(bson_t *b, const char *key, const repl_optime_t *o);

/* Member states, mongod's numbers (MemberState). */
typedef enum repl_member_state {
	REPL_STATE_STARTUP = 0,
	REPL_STATE_PRIMARY = 1,
	REPL_STATE_SECONDARY = 2,
	REPL_STATE_RECOVERING = 3,   /* a secondary in maintenance mode, or one that stopped applying */
	REPL_STATE_STARTUP2 = 5,     /* initiated, before Raft told the role */
	REPL_STATE_ROLLBACK = 9,     /* undoing a deposed primary's unreplicated entries (repl/rollback.h) */
	REPL_STATE_REMOVED = 10,     /* its configuration (of several members) does not name this node */
} repl_member_state_t;

/* Mongod's limits on a configuration (repl_set_config.h). */
#define REPL_MAX_MEMBERS 50
#define REPL_MAX_VOTING_MEMBERS 7

/*
 * Open the replica-set state of set `name` on st: loads local.system.replset
 * and local.replset.election.  A stored configuration of another set name is
 * ignored (the node waits for initiation, as mongod logs and does).  When a
 * configuration is found the node elects itself with the next term (written
 * back to local.replset.election, durably).  *out is the caller's until
 * repl_set_close.  name is copied.
 */
int repl_set_open(storage_t *st, const char *name, repl_set_t **out, terr_t *err);
/*
 * The same, for a folder whose Raft log holds the set's history (on_raft:
 * the node ran as a member of several, then a forced reconfig or
 * rs.remove brought the set to one): a one-member configuration does not
 * elect itself on open but waits in STARTUP2 for its Raft server (started
 * once the node's host is known, commands/cmd_repl_member.c), whose single
 * voter elects it (repl_set_raft_role), so its writes go on reaching the
 * set's log and rs.add() grows the set on Raft again.
 */
int repl_set_open_raft(storage_t *st, const char *name, bool on_raft, repl_set_t **out, terr_t *err);
void repl_set_close(repl_set_t *rs);

/* The host:port this node answers at (the default member host, and how a
 * configuration's member is recognised as this node).  Copied. */
void repl_set_set_self(repl_set_t *rs, const char *host_port);
/* The set name from --replSet (borrowed for rs's life). */
const char *repl_set_name(const repl_set_t *rs);
/* True once replSetInitiate succeeded (now or before a restart). */
bool repl_set_initiated(repl_set_t *rs);
/* The topology counter alone (hello's topologyVersion.counter), without
 * the optimes repl_set_info refreshes: what an error reply of a state
 * change carries. */
uint64_t repl_set_topology_counter(repl_set_t *rs);

/* The member state now (a stepdown or freeze that has run out ends first:
 * the node elects itself again). */
repl_member_state_t repl_set_state(repl_set_t *rs);
/* mongod's MemberState::toString of a state ("PRIMARY", "SECONDARY", ...;
 * static storage). */
const char *repl_state_name(repl_member_state_t s);

/* serverStatus().metrics.repl.stateTransition (the last step up, step down
 * or rollback: its name, "" before any, and the operations it killed --
 * Tamga kills none -- and left running) and apply.attemptsToBecomeSecondary
 * (this process's entries into SECONDARY from STARTUP, STARTUP2,
 * RECOVERING or ROLLBACK).  last_transition is static storage. */
typedef struct repl_state_metrics {
	const char *last_transition;
	int64_t operations_killed, operations_running;
	uint64_t attempts_to_become_secondary;
} repl_state_metrics_t;
void repl_set_state_metrics(repl_state_metrics_t *out);
/* True when writes are accepted: initiated and PRIMARY. */
bool repl_set_writable(repl_set_t *rs);

/*
 * Check a configuration document as mongod's ReplSetConfig parse and
 * validate do, for this single node: 0 with *self_index, or -1 with err
 * (the reason mongod gives; replSetInitiate / replSetReconfig answer it as
 * 93 InvalidReplicaSetConfig, see repl_set_initiate).  initiate: `version`
 * may be absent (1).  self_host may be NULL (no member then maps to this
 * node: 74 NodeNotFound's reason).
 */
int repl_set_config_check(const bson_t *cfg, const char *set_name, const char *self_host, bool initiate,
                          int *self_index, terr_t *err);
/* The same, and on an error *validate tells whether it is one of the whole
 * set's (mongod's ReplSetConfig::validate: duplicate _id or host, the
 * member or voter counts, no electable member), which a replSetReconfig
 * answers as 103 NewReplicaSetConfigurationIncompatible (mongod's
 * validateConfigForReconfig), rather than one of a field or member
 * (mongod's parse: 93). */
int repl_set_config_check_stage(const bson_t *cfg, const char *set_name, const char *self_host, bool initiate,
                                int *self_index, bool *validate, terr_t *err);

/*
 * replSetInitiate.  cfg NULL or empty: mongod's default configuration
 * ({_id: <name>, version: 1, members: [{_id: 0, host: <self>}]}) and
 * reply_extra gets {info2, me}.  Errors as mongod: 23 AlreadyInitialized
 * "already initialized" (reply_extra gets `info`), 93
 * InvalidReplicaSetConfig (a bad document, another set name), 238 for a
 * second member.  On success the configuration (completed with mongod's
 * defaults: member fields, settings, replicaSetId, term) is stored durably,
 * the node is PRIMARY in term 1 and the topology counter moved.  reply_extra
 * must be initialised; it may be NULL.
 */
int repl_set_initiate(repl_set_t *rs, const bson_t *cfg, bson_t *reply_extra, terr_t *err);
/*
 * replSetReconfig for this single member: cfg must keep the set name and
 * replicaSetId and (unless force) carry version = current + 1; force picks a
 * version well above the current one as mongod does.  The new configuration
 * is stored and the topology counter moved.  94 NotYetInitialized before
 * initiation, 10107 when not primary (without force), 93 / 103
 * NewReplicaSetConfigurationIncompatible as mongod.
 */
int repl_set_reconfig(repl_set_t *rs, const bson_t *cfg, bool force, terr_t *err);
/* The current configuration (a copy into out, which must be uninitialised;
 * bson_destroy it).  Returns false (out left empty but initialised) before
 * initiation. */
bool repl_set_config_copy(repl_set_t *rs, bson_t *out);

/* Facts hello and replSetGetStatus report (one consistent snapshot). */
typedef struct repl_set_info {
	repl_member_state_t state;
	int64_t term;
	int64_t config_version;
	int64_t config_term;
	int self_id;                  /* the member's _id */
	char self_host[256];          /* the member's host as configured */
	bson_oid_t election_id;       /* mongod's OID::fromTerm(term) */
	repl_optime_t election_optime;
	int64_t election_wall_ms;
	repl_optime_t last_applied;   /* the last write's optime */
	int64_t last_applied_wall_ms;
	uint64_t topology_counter;
	int64_t start_wall_ms;        /* for members.uptime */
	int64_t freeze_until_ms;      /* 0: not frozen */
	int64_t stepdown_until_ms;    /* 0: not stepped down */
} repl_set_info_t;
void repl_set_info(repl_set_t *rs, repl_set_info_t *out);

/* hello's topologyVersion: this process's id and the counter, bumped on
 * every state or configuration change. */
const bson_oid_t *repl_set_process_id(void);
/* Wait until the counter differs from `counter`, the monotonic deadline
 * (microseconds, cmd_now_us's clock) passes or *stop becomes true (checked
 * every 50 ms).  Returns true when the topology changed. */
bool repl_set_topology_wait(repl_set_t *rs, uint64_t counter, int64_t deadline_us, const _Atomic bool *stop);

/*
 * The cluster clock this node keeps (the oplog's clock once repl/clock.h is
 * merged): Timestamps (seconds, increment) that strictly increase.
 * repl_set_clock_tick reserves the next one for a write and records it as
 * the last applied optime (with the wall time).  repl_set_clock_now is the
 * current cluster time (never below the last tick).  repl_set_clock_advance
 * moves the cluster time forward to a gossiped time (never back).
 */
void repl_set_clock_tick(repl_set_t *rs, uint32_t *secs, uint32_t *inc);
/* With an oplog (set once by the engine right after repl_set_open, before
 * commands run; borrowed, outlives rs's use of it): the cluster clock above
 * is the oplog's clock (repl/clock.h) and the last applied optime its newest
 * visible entry (repl_oplog_last_optime); a tick then reads the clock
 * instead of reserving a Timestamp no entry has. */
struct repl_oplog;
void repl_set_attach_oplog(repl_set_t *rs, struct repl_oplog *oplog);
void repl_set_clock_now(repl_set_t *rs, uint32_t *secs, uint32_t *inc);
void repl_set_clock_advance(repl_set_t *rs, uint32_t secs, uint32_t inc);

/*
 * replSetStepDown: secs the node stays SECONDARY (it elects itself again
 * afterwards, with the next term).  Without force a single member has no
 * electable secondary to catch up: 262 ExceededTimeLimit with mongod's
 * message (after waiting catch_up_secs, bounded by deadline_us).  10107
 * "not primary so can't step down" when not primary.
 */
int repl_set_step_down(repl_set_t *rs, int64_t secs, int64_t catch_up_secs, bool force, int64_t deadline_us,
                       terr_t *err);
/* replSetFreeze: 0 unfreezes (and ends a stepdown period: mongod keeps one
 * end for both; a single member elects itself again at once), secs > 0
 * freezes until then or a later end already set; on a primary either is
 * refused (95 NotSecondary) as mongod refuses it.  The reply's `info` /
 * `warning` are the command's. */
int repl_set_freeze(repl_set_t *rs, int64_t secs, terr_t *err);

/* replSetMaintenance: on a member that is not primary, true enters
 * RECOVERING (counted: as many falses leave it) and keeps the member from
 * electing itself; false leaves it.  95 NotSecondary "primaries can't
 * modify maintenance mode"; 96 OperationFailed "already out of maintenance
 * mode" for a false with none left. */
int repl_set_maintenance(repl_set_t *rs, bool on, terr_t *err);

/* Persist the term and vote (local.replset.election) -- for tests. */
int64_t repl_set_term(repl_set_t *rs);

/* ---- a set of several members, on Raft (repl/raft_member.h) ---------------------------
 * A configuration with more than one member is accepted (checked as
 * above); the node is then never elected by this module: Raft's role comes
 * through repl_set_raft_role, and replSetReconfig answers 238
 * NotImplemented for such a set (its replSetStepDown is Raft's leadership
 * transfer: commands/cmd_repl_member.c). */

/* cfg completed with mongod's defaults and a new replicaSetId (kept when
 * cfg has one): what the initiating node sends to the others, so every
 * member stores the same document.  The caller bson_destroys it. */
bson_t *repl_set_config_completed(const bson_t *cfg);
/* True when the stored configuration has several members (no lock: cheap
 * enough for every logged write). */
bool repl_set_multi_member(repl_set_t *rs);
/* Whether a one-member set opened with on_raft still waits for its Raft
 * server's election (cleared once Raft makes it PRIMARY).  Set false when
 * its Raft server could not start: it then elects itself as a single
 * member does (if it waits in STARTUP2). */
void repl_set_set_on_raft(repl_set_t *rs, bool on_raft);
/*
 * A one-member set that runs without Raft moves onto it (rs.add() on a set
 * initiated with one member): its single-member primary stops taking
 * writes (STARTUP2, as a start on Raft: writers get 10107 and retry) and
 * Raft's election makes it PRIMARY again (repl_set_raft_role).  0; 10107
 * when this node is not its primary; 109 when the set has several members
 * or is on Raft already.  repl_set_move_back undoes it when Raft could not
 * start or elect: the single member elects itself again (a new term).
 */
int repl_set_move_to_raft(repl_set_t *rs, terr_t *err);
void repl_set_move_back(repl_set_t *rs);
bool repl_set_on_raft(repl_set_t *rs);
/* Members of the configuration (0 before initiation). */
int repl_set_member_count(repl_set_t *rs);
/* A member that the initiating node told of the set (cmd_repl.c's join):
 * store cfg (checked by the caller) durably as this node's configuration,
 * state STARTUP2.  23 AlreadyInitialized. */
int repl_set_store_config(repl_set_t *rs, const bson_t *cfg, terr_t *err);
/* A set of several members: mongod's completed form of cfg with the given
 * version and term (replicaSetId kept from old when given).  bson_destroy
 * it. */
bson_t *repl_set_config_completed_for(const bson_t *cfg, int64_t version, int64_t term, const bson_t *old);
/* A set of several members adopts full (a completed configuration a
 * reconfig made, from the set's log): stored in local.system.replset,
 * this node's row found again, the topology counter bumped.  A
 * configuration of several members that does not name this node (once its
 * host is known) leaves it REMOVED, whatever Raft says, until a
 * configuration names it again (STARTUP2), across restarts too.  0, or -1 with
 * err (storage's). */
int repl_set_config_replace(repl_set_t *rs, const bson_t *full, terr_t *err);
/* Raft's role: state (PRIMARY, SECONDARY, RECOVERING) in term (stored with
 * local.replset.election when it grew); moves the topology counter. */
void repl_set_raft_role(repl_set_t *rs, repl_member_state_t state, int64_t term);

#endif
