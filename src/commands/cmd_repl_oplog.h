/*
 * cmd_repl_oplog.h -- the oplog's commands and guards (repl/oplog.h):
 * replSetResizeOplog, and mongod's refusals to drop or rename the live
 * oplog or drop `local` while replicating.
 */
#ifndef TAMGA_COMMANDS_CMD_REPL_OPLOG_H
#define TAMGA_COMMANDS_CMD_REPL_OPLOG_H

#include "commands/commands_private.h"

/*
 * Called by drop, renameCollection and dropDatabase before they change the
 * catalog (ns arguments as the command names them; to_db/to_coll NULL
 * unless renaming): 0 when allowed; on a replica-set member whose oplog
 * exists, 20 IllegalOperation with mongod's words for "can't drop live
 * oplog while replicating", "can't rename live oplog while replicating",
 * "can't rename to live oplog while replicating" and "Cannot drop 'local'
 * database while replication is active".
 */
int cmd_repl_oplog_guard(engine_t *e, const char *db, const char *coll, const char *to_db, const char *to_coll,
                         terr_t *err);

#endif
