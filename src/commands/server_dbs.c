/*
 * server_dbs.c -- the databases a mongod server holds from its first start:
 * admin.system.version with the featureCompatibilityVersion document, and
 * local.startup_log with one document per start (hostname, startTime,
 * startTimeLocal, cmdLine, pid, buildinfo), so listDatabases shows admin and
 * local as mongod does.  tamgad calls it once the engine is open; the
 * embedded API does not (an embedded database holds only what its program
 * writes).  What it does not do: cap local.startup_log at mongod's 10 MB.
 */
#include "commands/commands_private.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/version.h"

static int
ensure_coll(engine_t *e, storage_session_t *s, const char *db, const char *name, storage_coll_t **out,
            terr_t *err)
{
	terr_t local = TERR_INIT;

	if (storage_coll_get(e->st, db, name, out, NULL) == 0)
		return 0;
	if (storage_coll_create(e->st, s, db, name, NULL, &local) != 0 &&
	    local.code != TERR_NAMESPACE_EXISTS) {
		terr_move(err, &local);
		return -1;
	}
	terr_clear(&local);
	return storage_coll_get(e->st, db, name, out, err);
}

int
engine_server_dbs_init(engine_t *e, const bson_t *cmd_line, terr_t *err)
{
	storage_session_t *s = NULL;
	storage_coll_t *ver = NULL, *log = NULL;
	bson_t doc = BSON_INITIALIZER, found, bi;
	bson_value_t id;
	recid_t rid;
	char host[256], idbuf[300], local_time[64];
	time_t now = time(NULL);
	struct tm tmv;
	int64_t now_ms;
	int ret = -1, rc;

	ERR(storage_session_open(e->st, &s, err));
	ERR(ensure_coll(e, s, "admin", "system.version", &ver, err));
	ERR(ensure_coll(e, s, "local", "startup_log", &log, err));
	ERR(storage_txn_begin(s, err));
	id.value_type = BSON_TYPE_UTF8;
	id.value.v_utf8.str = (char *)"featureCompatibilityVersion";
	id.value.v_utf8.len = (uint32_t)strlen(id.value.v_utf8.str);
	rc = storage_doc_find_id(s, ver, &id, &rid, &found, err);
	if (rc < 0)
		goto err;
	if (rc == 1) {
		BSON_APPEND_UTF8(&doc, "_id", "featureCompatibilityVersion");
		BSON_APPEND_UTF8(&doc, "version", "9.0");
		ERR(storage_doc_insert(s, ver, &doc, NULL, err));
	}
	bson_reinit(&doc);
	if (gethostname(host, sizeof host) != 0)
		strcpy(host, "localhost");
	host[sizeof host - 1] = '\0';
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
		now = ts.tv_sec;
	}
	snprintf(idbuf, sizeof idbuf, "%s-%lld", host, (long long)now_ms);
	localtime_r(&now, &tmv);
	strftime(local_time, sizeof local_time, "%a %b %e %H:%M:%S.000", &tmv);
	BSON_APPEND_UTF8(&doc, "_id", idbuf);
	BSON_APPEND_UTF8(&doc, "hostname", host);
	BSON_APPEND_DATE_TIME(&doc, "startTime", now_ms);
	BSON_APPEND_UTF8(&doc, "startTimeLocal", local_time);
	if (cmd_line != NULL)
		BSON_APPEND_DOCUMENT(&doc, "cmdLine", cmd_line);
	BSON_APPEND_INT64(&doc, "pid", (int64_t)getpid());
	BSON_APPEND_DOCUMENT_BEGIN(&doc, "buildinfo", &bi);
	BSON_APPEND_UTF8(&bi, "version", TAMGA_MONGODB_VERSION);
	BSON_APPEND_UTF8(&bi, "tamgaVersion", TAMGA_VERSION);
	bson_append_document_end(&doc, &bi);
	/* two starts within one millisecond (a restart loop, a test) would
	 * share the _id: the log is informational, so the later start keeps
	 * the first document rather than failing to start */
	id.value.v_utf8.str = idbuf;
	id.value.v_utf8.len = (uint32_t)strlen(idbuf);
	rc = storage_doc_find_id(s, log, &id, &rid, &found, err);
	if (rc < 0)
		goto err;
	if (rc == 1)
		ERR(storage_doc_insert(s, log, &doc, NULL, err));
	ERR(storage_txn_commit(s, false, err));
	ret = 0;
err:
	if (s != NULL && storage_txn_active(s))
		storage_txn_rollback(s);
	bson_destroy(&doc);
	storage_coll_release(ver);
	storage_coll_release(log);
	if (s != NULL)
		storage_session_close(s);
	return ret;
}
