/*
 * clustered.h -- clustered collections on the command side: create's
 * clusteredIndex option and the clustered index as listIndexes shows it
 * (clustered.c).  The layout is storage's (storage/storage.h).
 */
#ifndef TAMGA_COMMANDS_CLUSTERED_H
#define TAMGA_COMMANDS_CLUSTERED_H

#include <stdbool.h>
#include <bson/bson.h>

#include "common/error.h"
#include "storage/storage.h"

#include "commands/commands.h"

/*
 * Check a create command's clusteredIndex (and the expireAfterSeconds that
 * needs it) as mongod does, in mongod's order: 5979702 not a bool/object,
 * 40415/40414/14 from the spec's IDL, 6026500 with viewOn, 6049200 size,
 * 6049204 max, 6127800/6049201 capped (a capped clustered collection is
 * then 238: not built), 72 with idIndex, 6026501 autoIndexId false,
 * 5979700 unique not true, 197 a key other than {_id: 1}, 72 a negative
 * expireAfterSeconds, 5979704 v other than 2; 5979703 the legacy
 * {clusteredIndex: true}; 72 expireAfterSeconds without clustering (a
 * time-series create is left to its own checks).  On success *clustered
 * says whether the collection is clustered and canon (initialised by the
 * caller) holds {v, key: {_id: 1}, name, unique} to store as
 * options.clusteredIndex.
 */
int cmd_clustered_check_create(cmd_t *c, bool test_commands, bson_t *canon, bool *clustered, terr_t *err);

/* Append the clustered index ix of coll to out as mongod's listIndexes
 * shows it: {v, key, name, unique[, collation][, expireAfterSeconds],
 * clustered: true}. */
void cmd_clustered_index_spec(const storage_coll_t *coll, const storage_index_t *ix, bson_t *out);

#endif
