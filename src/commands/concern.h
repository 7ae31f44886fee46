/*
 * concern.h -- readConcern and writeConcern as mongod reads and checks them
 * before a command runs (ReadConcernArgs / WriteConcernOptions and the
 * standalone / replica-set rules of validateWriteConcern and
 * waitForReadConcern), and what the write concern means after the write in
 * a single-member replica set (writeConcernError 100 / 79).
 *
 * Parsing is pure (unit-tested without an engine); the checks that depend on
 * the node take a concern_node_t describing it.
 */
#ifndef TAMGA_COMMANDS_CONCERN_H
#define TAMGA_COMMANDS_CONCERN_H

#include <stdbool.h>
#include <stdint.h>
#include <bson/bson.h>

#include "common/error.h"

typedef enum concern_level {
	RC_NONE = 0, RC_LOCAL, RC_AVAILABLE, RC_MAJORITY, RC_LINEARIZABLE, RC_SNAPSHOT,
} concern_level_t;

typedef struct concern_read {
	bool present;
	concern_level_t level;
	bool has_after_cluster_time, has_at_cluster_time, has_after_op_time;
	uint32_t after_secs, after_inc;      /* afterClusterTime, or afterOpTime.ts */
	uint32_t at_secs, at_inc;
} concern_read_t;

typedef struct concern_write {
	bool present;
	bool has_w;
	int64_t w_num;           /* when w is a number */
	char w_mode[128];        /* when w is a string ("majority", a tag mode); "" otherwise */
	bool w_tags;             /* w is a tag-set object */
	bool j, fsync;
	int64_t wtimeout;
} concern_write_t;

/* Parse `readConcern` (the element's value, it) as ReadConcernArgs::parse:
 * 14 TypeMismatch / 40415 / 2 BadValue "Enumeration value '<v>' for field
 * 'readConcern.level' is not a valid value." / 72 InvalidOptions for the
 * combinations mongod refuses.  0 with *out filled. */
int concern_read_parse(const bson_iter_t *it, concern_read_t *out, terr_t *err);
/* Parse `writeConcern` as WriteConcernOptions::parse: 9 FailedToParse "w has
 * to be a non-negative number and not greater than 50; found: N", "w has to
 * be a number, string, or object", "fsync and j options cannot be used
 * together"; 14 for a j / fsync / wtimeout of the wrong type. */
int concern_write_parse(const bson_iter_t *it, concern_write_t *out, terr_t *err);

/* What the node is, for the checks below. */
typedef struct concern_node {
	bool repl_set;           /* started with --replSet */
	bool initiated;
	bool primary;
	bool ephemeral;          /* in-memory storage: no journal */
	int data_members;        /* data-bearing members of the configuration */
	const bson_t *config;    /* the configuration (settings.getLastErrorModes, members' tags) or NULL */
} concern_node_t;

/* validateWriteConcern: on a standalone 2 BadValue "cannot use 'w' > 1 when
 * a host is not replicated" / "cannot use non-majority 'w' mode \"x\" when a
 * host is not a member of a replica set"; anywhere, j on an ephemeral
 * engine: "cannot use 'j' option when a host does not have journaling
 * enabled". */
int concern_write_validate(const concern_write_t *wc, const concern_node_t *node, terr_t *err);
/* After the write, in a replica set: 0 when the write concern is satisfied,
 * else the writeConcernError mongod reports (err): 100
 * UnsatisfiableWriteConcern "Not enough data-bearing nodes" (w above the
 * data-bearing members), 79 UnknownReplWriteConcern "No write concern mode
 * named '<m>' found in replica set configuration", 100 "Not enough nodes
 * match write concern mode \"<m>\"". */
int concern_write_satisfiable(const concern_write_t *wc, const concern_node_t *node, terr_t *err);
/* waitForReadConcern's checks that do not wait: 123 NotAReplicaSet on a
 * standalone for linearizable / snapshot / afterOpTime, 20 "Cannot specify
 * afterClusterTime readConcern without replication enabled", 10107 for
 * linearizable off the primary; in a set before initiation 94 "Cannot use
 * non-local read concern until replica set is finished initializing.". */
int concern_read_validate(const concern_read_t *rc, const concern_node_t *node, terr_t *err);

#endif
