/*
 * command_table.c -- every command Tamga answers, one row each.
 *
 * Adding a command is one row here and one handler in the family file named
 * in the comment.  Lookup is by exact name (mongod's names are
 * case-sensitive), then by alias.  Rows are kept sorted by name within each
 * family for reading, not for lookup.
 */
#include "commands/commands_private.h"

#include <string.h>

/* cmd_catalog.c */
CMD_HANDLER(cmd_create);
CMD_HANDLER(cmd_drop);
CMD_HANDLER(cmd_drop_database);
CMD_HANDLER(cmd_list_collections);
CMD_HANDLER(cmd_list_databases);
CMD_HANDLER(cmd_rename_collection);
CMD_HANDLER(cmd_db_stats);
CMD_HANDLER(cmd_coll_stats);
/* cmd_collmod.c */
CMD_HANDLER(cmd_coll_mod);
CMD_HANDLER(cmd_clone_collection_as_capped);
CMD_HANDLER(cmd_convert_to_capped);
/* cmd_crud.c */
CMD_HANDLER(cmd_insert);
CMD_HANDLER(cmd_find);
CMD_HANDLER(cmd_get_more);
CMD_HANDLER(cmd_kill_cursors);
CMD_HANDLER(cmd_delete);
CMD_HANDLER(cmd_count);
CMD_HANDLER(cmd_distinct);
/* cmd_update.c */
CMD_HANDLER(cmd_update);
CMD_HANDLER(cmd_find_and_modify);
/* client bulkWrite: cmd_bulkwrite.c */
CMD_HANDLER(cmd_bulk_write);

/* aggregation: cmd_aggregate.c */
CMD_HANDLER(cmd_aggregate);
/* server-side JavaScript: cmd_mapreduce.c */
CMD_HANDLER(cmd_map_reduce);

/* indexes and explain: cmd_index.c, cmd_explain.c */
CMD_HANDLER(cmd_create_indexes);
CMD_HANDLER(cmd_list_indexes);
CMD_HANDLER(cmd_drop_indexes);
CMD_HANDLER(cmd_explain);

/* authentication and users: cmd_auth.c */
CMD_HANDLER(cmd_sasl_start);
CMD_HANDLER(cmd_sasl_continue);
CMD_HANDLER(cmd_logout);
CMD_HANDLER(cmd_authenticate);
CMD_HANDLER(cmd_create_user);
CMD_HANDLER(cmd_update_user);
CMD_HANDLER(cmd_drop_user);
CMD_HANDLER(cmd_drop_all_users_from_database);
CMD_HANDLER(cmd_users_info);
CMD_HANDLER(cmd_grant_roles_to_user);
CMD_HANDLER(cmd_revoke_roles_from_user);
CMD_HANDLER(cmd_create_role);
CMD_HANDLER(cmd_update_role);
CMD_HANDLER(cmd_drop_role);
CMD_HANDLER(cmd_drop_all_roles_from_database);
CMD_HANDLER(cmd_roles_info);
CMD_HANDLER(cmd_grant_privileges_to_role);
CMD_HANDLER(cmd_revoke_privileges_from_role);
CMD_HANDLER(cmd_grant_roles_to_role);
CMD_HANDLER(cmd_revoke_roles_from_role);

/* handshake and admin: cmd_admin.c */
CMD_HANDLER(cmd_hello);
CMD_HANDLER(cmd_ping);
CMD_HANDLER(cmd_build_info);
CMD_HANDLER(cmd_host_info);
CMD_HANDLER(cmd_server_status);
CMD_HANDLER(cmd_get_parameter);
CMD_HANDLER(cmd_set_parameter);
CMD_HANDLER(cmd_get_cmd_line_opts);
CMD_HANDLER(cmd_get_log);
CMD_HANDLER(cmd_whatsmyuri);
CMD_HANDLER(cmd_connection_status);
CMD_HANDLER(cmd_list_commands);
CMD_HANDLER(cmd_end_sessions);
CMD_HANDLER(cmd_start_session);
CMD_HANDLER(cmd_shutdown);
CMD_HANDLER(cmd_commit_transaction);
CMD_HANDLER(cmd_abort_transaction);
CMD_HANDLER(cmd_kill_all_sessions);
CMD_HANDLER(cmd_kill_all_sessions_by_pattern);
CMD_HANDLER(cmd_refresh_logical_session_cache_now);
/* replica set and test commands: cmd_repl.c */
CMD_HANDLER(cmd_repl_set_initiate);
CMD_HANDLER(cmd_tamga_repl_set_join);
CMD_HANDLER(cmd_tamga_repl_set_force);
CMD_HANDLER(cmd_tamga_priority_takeover);
CMD_HANDLER(cmd_repl_set_get_rbid);
CMD_HANDLER(cmd_tamga_repl_set_removed);
CMD_HANDLER(cmd_repl_set_get_status);
CMD_HANDLER(cmd_repl_set_get_config);
CMD_HANDLER(cmd_repl_set_reconfig);
CMD_HANDLER(cmd_repl_set_step_down);
CMD_HANDLER(cmd_repl_set_freeze);
CMD_HANDLER(cmd_repl_set_heartbeat);
CMD_HANDLER(cmd_repl_set_update_position);
CMD_HANDLER(cmd_repl_set_maintenance);
/* the oplog's: cmd_repl_oplog.c */
CMD_HANDLER(cmd_repl_set_resize_oplog);
CMD_HANDLER(cmd_configure_fail_point);
/* the schema toolbelt: cmd_toolbelt.c */
CMD_HANDLER(cmd_validate);
CMD_HANDLER(cmd_profile);
CMD_HANDLER(cmd_validation_preview);
CMD_HANDLER(cmd_infer_schema);
CMD_HANDLER(cmd_schema_advice);
/* cmd_currentop.c */
CMD_HANDLER(cmd_current_op);
CMD_HANDLER(cmd_kill_op);
/* tools' commands (issue 22 item 7): cmd_tools.c, cmd_top.c */
CMD_HANDLER(cmd_data_size);
CMD_HANDLER(cmd_db_hash);
CMD_HANDLER(cmd_filemd5);
CMD_HANDLER(cmd_get_diagnostic_data);
CMD_HANDLER(cmd_apply_ops);
CMD_HANDLER(cmd_top);
/* cluster parameters: cmd_clusterparam.c */
CMD_HANDLER(cmd_set_cluster_parameter);
CMD_HANDLER(cmd_get_cluster_parameter);
/* index filters: cmd_plancache.c */
CMD_HANDLER(cmd_plan_cache_set_filter);
CMD_HANDLER(cmd_plan_cache_list_filters);
CMD_HANDLER(cmd_plan_cache_clear_filters);
CMD_HANDLER(cmd_plan_cache_clear);

static const cmd_def_t commands[] = {
	/* aggregation: cmd_aggregate.c */
	{"aggregate", NULL, cmd_aggregate, CMDF_MAXTIME, "run an aggregation pipeline"},
	{"mapReduce", "mapreduce", cmd_map_reduce, CMDF_MAXTIME | CMDF_WRITE, "map-reduce in JavaScript (rewritten as an aggregation, as mongod 5.0+)"},
	/* handshake and admin: cmd_admin.c */
	{"abortTransaction", NULL, cmd_abort_transaction, CMDF_ADMIN_ONLY | CMDF_WRITE, "abort a multi-document transaction (cmd_txn.c)"},
	{"buildInfo", "buildinfo", cmd_build_info, CMDF_NO_AUTH, "version and build information"},
	{"commitTransaction", NULL, cmd_commit_transaction, CMDF_ADMIN_ONLY | CMDF_WRITE, "commit a multi-document transaction (cmd_txn.c)"},
	{"connectionStatus", NULL, cmd_connection_status, CMDF_NO_AUTH, "the connection's authenticated users and roles"},
	{"endSessions", NULL, cmd_end_sessions, CMDF_NO_AUTH, "end logical sessions"},
	{"getCmdLineOpts", NULL, cmd_get_cmd_line_opts, CMDF_ADMIN_ONLY, "the server's command line options"},
	{"getClusterParameter", NULL, cmd_get_cluster_parameter, CMDF_ADMIN_ONLY, "cluster-wide parameters (cmd_clusterparam.c)"},
	{"getLog", NULL, cmd_get_log, CMDF_ADMIN_ONLY, "recent log lines"},
	{"getParameter", NULL, cmd_get_parameter, CMDF_ADMIN_ONLY, "server parameters"},
	{"hello", "isMaster", cmd_hello, CMDF_NO_AUTH, "the handshake: server role, limits and wire versions"},
	{"hostInfo", NULL, cmd_host_info, CMDF_NONE, "information about the host system"},
	{"ismaster", NULL, cmd_hello, CMDF_NO_AUTH, "legacy spelling of hello"},
	{"killAllSessions", NULL, cmd_kill_all_sessions, CMDF_NONE, "kill every session of the users named (cmd_session.c)"},
	{"killAllSessionsByPattern", NULL, cmd_kill_all_sessions_by_pattern, CMDF_NONE, "kill the sessions matching the patterns (cmd_session.c)"},
	{"killSessions", NULL, cmd_end_sessions, CMDF_NONE, "kill logical sessions"},
	{"listCommands", NULL, cmd_list_commands, CMDF_NO_AUTH, "list the commands this server answers"},
	{"ping", NULL, cmd_ping, CMDF_NO_AUTH, "a no-op to test that the server answers"},
	{"refreshLogicalSessionCacheNow", NULL, cmd_refresh_logical_session_cache_now, CMDF_TEST,
	 "write the logical session cache to config.system.sessions now (test command)"},
	{"refreshSessions", NULL, cmd_end_sessions, CMDF_NONE, "refresh logical sessions"},
	{"serverStatus", NULL, cmd_server_status, CMDF_NONE, "server statistics"},
	{"setClusterParameter", NULL, cmd_set_cluster_parameter, CMDF_ADMIN_ONLY | CMDF_WRITE, "set a cluster-wide parameter (cmd_clusterparam.c)"},
	{"setParameter", NULL, cmd_set_parameter, CMDF_ADMIN_ONLY, "change server parameters at runtime"},
	{"shutdown", NULL, cmd_shutdown, CMDF_ADMIN_ONLY, "stop the server cleanly"},
	{"startSession", NULL, cmd_start_session, CMDF_NONE, "start a logical session"},
	{"whatsmyuri", NULL, cmd_whatsmyuri, CMDF_NO_AUTH, "the client's address as the server sees it"},
	/* replica set and test commands: cmd_repl.c */
	{"configureFailPoint", NULL, cmd_configure_fail_point, CMDF_ADMIN_ONLY | CMDF_TEST, "turn a fail point on or off (test command)"},
	{"replSetFreeze", NULL, cmd_repl_set_freeze, CMDF_ADMIN_ONLY, "keep this member from seeking election"},
	{"replSetGetConfig", NULL, cmd_repl_set_get_config, CMDF_ADMIN_ONLY, "the replica set's configuration"},
	{"replSetGetStatus", NULL, cmd_repl_set_get_status, CMDF_ADMIN_ONLY, "the replica set's status"},
	{"replSetHeartbeat", NULL, cmd_repl_set_heartbeat, CMDF_ADMIN_ONLY, "internal: a member's heartbeat (cmd_repl_heartbeat.c)"},
	{"replSetUpdatePosition", NULL, cmd_repl_set_update_position, CMDF_ADMIN_ONLY, "internal: a secondary's applied and durable optimes (cmd_repl_heartbeat.c)"},
	{"replSetGetRBID", NULL, cmd_repl_set_get_rbid, CMDF_ADMIN_ONLY, "the rollback id: it changes with each rollback"},
	{"replSetInitiate", NULL, cmd_repl_set_initiate, CMDF_ADMIN_ONLY, "initiate the replica set"},
	{"replSetMaintenance", NULL, cmd_repl_set_maintenance, CMDF_ADMIN_ONLY, "enter or leave maintenance mode"},
	{"replSetReconfig", NULL, cmd_repl_set_reconfig, CMDF_ADMIN_ONLY, "replace the replica set's configuration"},
	{"replSetResizeOplog", NULL, cmd_repl_set_resize_oplog, CMDF_ADMIN_ONLY, "resize oplog size in MB"},
	{"replSetStepDown", NULL, cmd_repl_set_step_down, CMDF_ADMIN_ONLY, "step down as primary"},
	{"_tamgaReplSetJoin", NULL, cmd_tamga_repl_set_join, CMDF_ADMIN_ONLY, "internal: join a set of several members (cmd_repl_member.c)"},
	{"_tamgaPriorityTakeover", NULL, cmd_tamga_priority_takeover, CMDF_ADMIN_ONLY, "internal: a secondary of higher priority asks for the leadership (cmd_repl_member.c)"},
	{"_tamgaReplSetRemoved", NULL, cmd_tamga_repl_set_removed, CMDF_ADMIN_ONLY, "internal: a member told it was removed from its set (cmd_repl_member.c)"},
	{"_tamgaReplSetForce", NULL, cmd_tamga_repl_set_force, CMDF_ADMIN_ONLY, "internal: a member named by a configuration forced on another one (cmd_repl_force.c)"},
	/* running operations: cmd_currentop.c */
	{"currentOp", NULL, cmd_current_op, CMDF_ADMIN_ONLY, "the operations running now"},
	{"killOp", NULL, cmd_kill_op, CMDF_ADMIN_ONLY, "interrupt a running operation"},
	/* catalog: cmd_catalog.c */
	{"collMod", NULL, cmd_coll_mod, CMDF_WRITE, "change a collection's options (validation)"},
	{"collStats", "collstats", cmd_coll_stats, CMDF_NONE, "storage statistics of a collection"},
	/* capped copies: cmd_capped.c */
	{"cloneCollectionAsCapped", NULL, cmd_clone_collection_as_capped, CMDF_WRITE | CMDF_MAXTIME,
	    "copy a collection into a new capped collection"},
	{"convertToCapped", NULL, cmd_convert_to_capped, CMDF_WRITE | CMDF_MAXTIME,
	    "replace a collection by a capped copy of it"},
	{"create", NULL, cmd_create, CMDF_WRITE, "create a collection"},
	{"dbStats", "dbstats", cmd_db_stats, CMDF_NONE, "storage statistics of a database"},
	{"drop", NULL, cmd_drop, CMDF_WRITE, "drop a collection"},
	{"dropDatabase", NULL, cmd_drop_database, CMDF_WRITE, "drop a database"},
	{"listCollections", NULL, cmd_list_collections, CMDF_NONE, "list collections"},
	{"listDatabases", NULL, cmd_list_databases, CMDF_ADMIN_ONLY, "list databases"},
	{"renameCollection", NULL, cmd_rename_collection, CMDF_ADMIN_ONLY | CMDF_WRITE, "rename a collection"},
	/* documents: cmd_crud.c */
	{"count", NULL, cmd_count, CMDF_MAXTIME, "count documents"},
	{"delete", NULL, cmd_delete, CMDF_WRITE, "delete documents"},
	{"distinct", NULL, cmd_distinct, CMDF_MAXTIME, "distinct values of a field"},
	{"find", NULL, cmd_find, CMDF_MAXTIME, "query documents"},
	{"getMore", NULL, cmd_get_more, CMDF_MAXTIME, "next batch of a cursor"},
	{"insert", NULL, cmd_insert, CMDF_WRITE, "insert documents"},
	{"killCursors", NULL, cmd_kill_cursors, CMDF_NONE, "close cursors"},
	/* indexes and explain: cmd_index.c, cmd_explain.c */
	{"createIndexes", NULL, cmd_create_indexes, CMDF_WRITE, "create indexes on a collection"},
	{"dropIndexes", "deleteIndexes", cmd_drop_indexes, CMDF_WRITE, "drop indexes from a collection"},
	{"explain", NULL, cmd_explain, CMDF_MAXTIME, "explain how a command would run"},
	{"listIndexes", NULL, cmd_list_indexes, CMDF_NONE, "list a collection's indexes"},
	/* client bulkWrite: cmd_bulkwrite.c */
	{"bulkWrite", NULL, cmd_bulk_write, CMDF_ADMIN_ONLY | CMDF_WRITE | CMDF_MAXTIME, "insert, update and delete across namespaces"},
	/* updates: cmd_update.c */
	{"findAndModify", "findandmodify", cmd_find_and_modify, CMDF_WRITE, "find, then update or remove one document"},
	{"update", NULL, cmd_update, CMDF_WRITE, "update documents"},
	/* authentication and users: cmd_auth.c */
	{"authenticate", NULL, cmd_authenticate, CMDF_NO_AUTH, "authenticate with a non-SASL mechanism"},
	{"createRole", NULL, cmd_create_role, CMDF_WRITE, "create a custom role"},
	{"createUser", NULL, cmd_create_user, CMDF_WRITE, "create a user"},
	{"dropAllRolesFromDatabase", NULL, cmd_drop_all_roles_from_database, CMDF_WRITE, "drop every custom role of a database"},
	{"dropAllUsersFromDatabase", NULL, cmd_drop_all_users_from_database, CMDF_WRITE, "drop every user of a database"},
	{"dropRole", NULL, cmd_drop_role, CMDF_WRITE, "drop a custom role"},
	{"dropUser", NULL, cmd_drop_user, CMDF_WRITE, "drop a user"},
	{"grantPrivilegesToRole", NULL, cmd_grant_privileges_to_role, CMDF_WRITE, "add privileges to a custom role"},
	{"grantRolesToRole", NULL, cmd_grant_roles_to_role, CMDF_WRITE, "make a custom role inherit roles"},
	{"grantRolesToUser", NULL, cmd_grant_roles_to_user, CMDF_WRITE, "grant roles to a user"},
	{"logout", NULL, cmd_logout, CMDF_NO_AUTH, "end the authenticated session on this database"},
	{"revokePrivilegesFromRole", NULL, cmd_revoke_privileges_from_role, CMDF_WRITE, "remove privileges from a custom role"},
	{"revokeRolesFromRole", NULL, cmd_revoke_roles_from_role, CMDF_WRITE, "remove inherited roles from a custom role"},
	{"revokeRolesFromUser", NULL, cmd_revoke_roles_from_user, CMDF_WRITE, "revoke roles from a user"},
	{"rolesInfo", NULL, cmd_roles_info, CMDF_NONE, "describe roles"},
	{"saslContinue", NULL, cmd_sasl_continue, CMDF_NO_AUTH, "next step of a SASL conversation"},
	{"saslStart", NULL, cmd_sasl_start, CMDF_NO_AUTH, "first step of a SASL conversation"},
	{"updateRole", NULL, cmd_update_role, CMDF_WRITE, "replace a custom role's privileges or roles"},
	{"updateUser", NULL, cmd_update_user, CMDF_WRITE, "change a user's password, custom data or roles"},
	{"usersInfo", NULL, cmd_users_info, CMDF_NONE, "describe users"},
	/* the schema toolbelt: cmd_toolbelt.c (src/toolbelt/) */
	{"profile", NULL, cmd_profile, CMDF_NONE, "the database profiler's level, slowms, sampleRate and filter"},
	{"tamgaInferSchema", NULL, cmd_infer_schema, CMDF_MAXTIME, "infer a $jsonSchema validator from the documents"},
	{"tamgaSchemaAdvice", NULL, cmd_schema_advice, CMDF_MAXTIME, "schema anti-patterns found from the server's evidence"},
	{"tamgaValidationPreview", NULL, cmd_validation_preview, CMDF_MAXTIME,
	    "what a validator would say of the documents stored, per rule"},
	{"validate", NULL, cmd_validate, CMDF_MAXTIME, "check a collection's records, indexes and validator"},
	/* tools' commands (issue 22 item 7): cmd_tools.c */
	{"applyOps", NULL, cmd_apply_ops, CMDF_WRITE, "apply oplog entries (insert, update, delete, command, no-op)"},
	{"dataSize", "datasize", cmd_data_size, CMDF_MAXTIME, "the size in bytes of a collection's documents"},
	{"dbHash", "dbhash", cmd_db_hash, CMDF_MAXTIME, "an MD5 hash of each collection's documents"},
	{"filemd5", NULL, cmd_filemd5, CMDF_MAXTIME, "the MD5 of a GridFS file's chunks"},
	{"planCacheClear", NULL, cmd_plan_cache_clear, CMDF_NONE, "drop cached plans (Tamga caches none)"},
	{"planCacheClearFilters", NULL, cmd_plan_cache_clear_filters, CMDF_NONE, "drop index filters"},
	{"planCacheListFilters", NULL, cmd_plan_cache_list_filters, CMDF_NONE, "list a collection's index filters"},
	{"planCacheSetFilter", NULL, cmd_plan_cache_set_filter, CMDF_NONE, "restrict a query shape to some indexes"},
	{"top", NULL, cmd_top, CMDF_ADMIN_ONLY, "time and counts of the operations on each collection"},
	{"getDiagnosticData", NULL, cmd_get_diagnostic_data, CMDF_ADMIN_ONLY, "the latest diagnostic sample (serverStatus)"},
};

static const size_t ncommands = sizeof(commands) / sizeof(commands[0]);

const cmd_def_t *
cmd_lookup(const char *name)
{
	size_t i;

	for (i = 0; i < ncommands; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	for (i = 0; i < ncommands; i++)
		if (commands[i].alias != NULL && strcmp(commands[i].alias, name) == 0)
			return &commands[i];
	return NULL;
}

const cmd_def_t *
cmd_table(int *n)
{
	*n = (int)ncommands;
	return commands;
}
