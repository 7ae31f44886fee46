/*
 * log.h -- structured log lines in mongod's JSON format.
 *
 *   {"t":{"$date":"2026-11-29T18:00:00.000+00:00"},"s":"I","c":"NETWORK",
 *    "id":22943,"ctx":"listener","msg":"Connection accepted","attr":{...}}
 *
 * Every line is kept in an in-memory ring (the last TLOG_RING lines) so the
 * getLog command can return it, and written to the output chosen with
 * tlog_open() (none by default: an embedded library does not print).
 * Thread-safe.
 */
#ifndef TAMGA_COMMON_LOG_H
#define TAMGA_COMMON_LOG_H

#include <stdio.h>
#include <bson/bson.h>

#define TLOG_RING 1024

/* Where lines go: path NULL = stdout, "-" = stdout, "" = nowhere.  append as
 * mongod's --logappend.  Returns 0, or -1 with errno when the file cannot be
 * opened.  quiet suppresses severity 'D' and connection chatter. */
int tlog_open(const char *path, bool append, bool quiet);
void tlog_close(void);

/* Thread-local context name ("conn12", "listener", "initandlisten"...). */
void tlog_set_ctx(const char *ctx);

/*
 * Write one line.  sev is 'F','E','W','I' or 'D'; component as mongod's
 * ("NETWORK", "STORAGE", "COMMAND", "CONTROL", "QUERY", "ACCESS", "INDEX");
 * attr may be NULL and is borrowed.
 */
void tlog(char sev, const char *component, int id, const char *msg, const bson_t *attr);

/*
 * Debug lines (mongod's LOGV2_DEBUG): written, with severity "D1".."D5",
 * only when the component's verbosity (logComponentVerbosity, else the
 * global logLevel) is at least level.  component is the name lines carry
 * ("COMMAND", "QUERY", "REPL"...).
 */
void tlog_debug(int level, const char *component, int id, const char *msg, const bson_t *attr);
bool tlog_debug_on(const char *component, int level);
/* Set the global verbosity (setting NULL: logLevel) or one component's by
 * its logComponentVerbosity name ("command", "replication"...; -1:
 * inherit).  Unknown names are ignored. */
void tlog_set_verbosity(const char *setting, int level);

/* Append the kept lines (JSON strings) of `which` ("global" or
 * "startupWarnings") to arr as array elements; returns the total count. */
int tlog_get(const char *which, bson_t *arr);

/* Mark subsequent 'W' lines as startup warnings (until tlog_startup_done). */
void tlog_startup_done(void);

#endif
