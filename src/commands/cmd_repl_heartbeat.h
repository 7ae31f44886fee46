/*
 * cmd_repl_heartbeat.h -- mongod's replSetHeartbeat between the members of
 * a set of several (cmd_repl_heartbeat.c): the command, the threads that
 * send it to every other member, and what rs.status() and
 * serverStatus({repl: 1}) read of their answers.  For operators only:
 * Raft decides leadership, terms and the commit point.
 */
#ifndef TAMGA_COMMANDS_CMD_REPL_HEARTBEAT_H
#define TAMGA_COMMANDS_CMD_REPL_HEARTBEAT_H

#include "commands/commands_private.h"
#include "repl/replset.h"

/* {replSetHeartbeat: <set>, configVersion, configTerm, hbv, from, fromId,
 * term[, primaryId, checkEmpty]}: mongod's parsing and refusals (76 not a
 * replica set, 4/14/2 the fields, 40666 hbv, 9 `from`, 108 another set, 93
 * REMOVED, 2 the sender claims this member's _id), answered from this
 * member's state. */
int cmd_repl_set_heartbeat(cmd_t *c, terr_t *err);

/* {replSetUpdatePosition: 1, optimes: [{appliedOpTime, appliedWallTime,
 * durableOpTime, durableWallTime, memberId, cfgver}, ...]}: mongod's
 * parsing (UpdatePositionArgs: 4/14 for a missing or mistyped field) and
 * refusals (76 not a replica set, 94 not initiated, 13436 REMOVED, 74 a
 * negative or unknown memberId, 93 another configVersion, with this
 * member's in the reply); each member's lastApplied/lastDurable advanced,
 * never moved back.  A secondary's reporter thread sends it to its sync
 * source whenever its applier published entries (started with the
 * heartbeats). */
int cmd_repl_set_update_position(cmd_t *c, terr_t *err);

/* Start the heartbeats of e (idempotent; they run while e's configuration
 * has several members and names this node), stop them (joins every
 * thread: at most one attempt's wait, 2 s, for a paused peer). */
void cmd_repl_hb_start(engine_t *e);
void cmd_repl_hb_stop(engine_t *e);

/* This member's durable optime and its wall time (in: repl_set_info's):
 * on a secondary its last applied one (it applies only entries its Raft
 * log persisted); on the primary, a one-member set's included, the newest
 * oplog entry its journal holds on disk (repl_oplog_durable_optime: the
 * last journal flusher round's, at most ~100 ms behind its last write),
 * as mongod's lastDurable. */
void cmd_repl_hb_durable(engine_t *e, const repl_set_info_t *in, repl_optime_t *out, int64_t *wall);

/* settings.heartbeatIntervalMillis of cfg (2000 when absent). */
int64_t cmd_repl_hb_interval_ms(const bson_t *cfg);

/*
 * rs.status()'s fields of the member at host (after its _id and name)
 * from heartbeats, as mongod's replSetGetStatus: health, state, stateStr,
 * uptime, optime, optimeDurable, their dates, wall times, lastHeartbeat,
 * lastHeartbeatRecv, pingMs, lastHeartbeatMessage, syncSourceHost/Id,
 * infoMessage, electionTime/Date of a primary, configVersion/Term.
 * raft_down: this node's Raft says the member is lost (a leader's view:
 * fresher than a heartbeat that answered; raft_msg its failure text);
 * raft_contact_ms: when Raft last heard of it.  false (nothing appended)
 * when no heartbeat to it finished yet, or Raft heard from it after a
 * failed one: the caller shows Raft's view.
 */
bool cmd_repl_hb_member_append(engine_t *e, bson_t *m, const char *host, const bson_t *cfg, bool raft_down,
                               const char *raft_msg, int64_t raft_contact_ms, int64_t now);
/* serverStatus({repl: N > 0}).repl.replicationProgress: mongod's
 * fillMemberData, one entry per member of the configuration. */
void cmd_repl_hb_progress_append(engine_t *e, bson_t *out);

#endif
