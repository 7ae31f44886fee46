/*
 * cmd_admin.c -- the handshake and admin commands a driver or shell sends
 * before and around its real work: hello/isMaster, ping, buildInfo,
 * hostInfo, serverStatus, getParameter, setParameter, getCmdLineOpts,
 * getLog, whatsmyuri,
 * connectionStatus, listCommands, the session commands, shutdown.
 *
 * Replies follow mongod's shapes field for field where a client reads them.
 * Not here: compression negotiation (a transport matter: the wire server
 * adds `compression` to hello's reply) and authentication (auth/, cmd_auth.c: hello
 * and connectionStatus call into it).
 */
#include "auth/auth.h"
#include "auth/auth_x509.h"
#include "commands/cmd_admin.h"
#include "commands/commands_private.h"
#include "commands/cmd_repl.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <openssl/crypto.h>
#include <openssl/opensslv.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bson/value.h"
#include "common/log.h"
#include "common/version.h"
#include "repl/election_log.h"
#include "repl/member_tls.h"
#include "repl/session.h"
#include "repl/replset.h"
#include "query/planner_ttl.h"
#include "toolbelt/toolbelt.h"

#define SESSION_TIMEOUT_MINUTES REPL_SESSION_TIMEOUT_MINUTES
#define CURSOR_TIMEOUT_MS 600000

/* ---- process description ------------------------------------------------ */

static pthread_mutex_t proc_lock = PTHREAD_MUTEX_INITIALIZER;
static bson_t *proc_argv;      /* array */
static bson_t *proc_parsed;
static int64_t proc_max_conns;

void
cmd_admin_set_process(const cmd_admin_process_t *p)
{
	bson_t *argv = bson_new();
	char key[16];
	const char *k;
	int i;

	for (i = 0; i < p->argc; i++) {
		bson_uint32_to_string((uint32_t)i, &k, key, sizeof(key));
		bson_append_utf8(argv, k, -1, p->argv[i], -1);
	}
	pthread_mutex_lock(&proc_lock);
	if (proc_argv != NULL)
		bson_destroy(proc_argv);
	if (proc_parsed != NULL)
		bson_destroy(proc_parsed);
	proc_argv = argv;
	proc_parsed = p->parsed ? bson_copy(p->parsed) : bson_new();
	proc_max_conns = p->max_conns;
	pthread_mutex_unlock(&proc_lock);
}

void
cmd_admin_clear_process(void)
{
	pthread_mutex_lock(&proc_lock);
	if (proc_argv != NULL)
		bson_destroy(proc_argv);
	if (proc_parsed != NULL)
		bson_destroy(proc_parsed);
	proc_argv = proc_parsed = NULL;
	pthread_mutex_unlock(&proc_lock);
}

int
cmd_admin_reap_cursors(engine_t *e, int64_t timeout_ms)
{
	return cursor_reap(e->cursors, timeout_ms);
}

void
cmd_admin_request_shutdown(engine_t *e)
{
	atomic_store(&e->shutdown, true);
	/* awaitData getMores waiting for inserts end now (11600) */
	cursor_registry_shutdown(e->cursors);
}

/* ---- small helpers ------------------------------------------------------ */

static int64_t
now_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The process id for hello's topologyVersion: one ObjectId per process. */
static bson_oid_t topology_pid;
static pthread_once_t topology_once = PTHREAD_ONCE_INIT;

static void
topology_init(void)
{
	/* one process id for the standalone and the replica-set answers */
	bson_oid_copy(repl_set_process_id(), &topology_pid);
}

static void
host_name(char *buf, size_t len)
{
	if (gethostname(buf, len) != 0)
		bson_strncpy(buf, "localhost", len);
	buf[len - 1] = '\0';
}

static const char *
type_name(bson_type_t t)
{
	switch (t) {
	case BSON_TYPE_DOUBLE: return "double";
	case BSON_TYPE_UTF8: return "string";
	case BSON_TYPE_DOCUMENT: return "object";
	case BSON_TYPE_ARRAY: return "array";
	case BSON_TYPE_BOOL: return "bool";
	case BSON_TYPE_NULL: return "null";
	case BSON_TYPE_INT32: return "int";
	case BSON_TYPE_INT64: return "long";
	case BSON_TYPE_DECIMAL128: return "decimal";
	case BSON_TYPE_OID: return "objectId";
	case BSON_TYPE_DATE_TIME: return "date";
	default: return "unknown";
	}
}

/* ---- hello / isMaster --------------------------------------------------- */

static void
log_client_metadata(cmd_t *c, const bson_t *meta)
{
	bson_t attr;
	char ctx[32];

	bson_init(&attr);
	if (c->client->remote)
		BSON_APPEND_UTF8(&attr, "remote", c->client->remote);
	snprintf(ctx, sizeof(ctx), "conn%lld", (long long)c->client->connection_id);
	BSON_APPEND_UTF8(&attr, "client", ctx);
	BSON_APPEND_DOCUMENT(&attr, "doc", meta);
	tlog('I', "NETWORK", 51800, "client metadata", &attr);
	bson_destroy(&attr);
}

/* Awaitable hello (streaming monitoring): when the client's topologyVersion
 * is ours and current, wait up to maxAwaitTimeMS (nothing changes on a
 * standalone; a replica-set member answers at once when its topology counter
 * moves) so monitors do not spin; shutdown cuts the wait short. */
static int
hello_await(cmd_t *c, terr_t *err)
{
	bson_iter_t it, tv;
	int64_t wait_ms = 0, deadline, counter = 0;
	bool have_tv = false;

	if (bson_iter_init_find(&it, c->body, "maxAwaitTimeMS")) {
		if (!BSON_ITER_HOLDS_NUMBER(&it))
			return terr_set(err, TERR_TYPE_MISMATCH,
			    "BSON field 'hello.maxAwaitTimeMS' is the wrong type '%s', expected type 'long'",
			    type_name(bson_iter_type(&it)));
		wait_ms = bson_iter_as_int64(&it);
		if (wait_ms < 0)
			return terr_set(err, TERR_BAD_VALUE, "maxAwaitTimeMS must be a non-negative integer");
	}
	if (bson_iter_init_find(&it, c->body, "topologyVersion")) {
		if (!BSON_ITER_HOLDS_DOCUMENT(&it))
			return terr_set(err, TERR_TYPE_MISMATCH,
			    "BSON field 'hello.topologyVersion' is the wrong type '%s', expected type 'object'",
			    type_name(bson_iter_type(&it)));
		have_tv = true;
	}
	/* mongod: both or neither (31368) */
	if (have_tv != bson_has_field(c->body, "maxAwaitTimeMS"))
		return terr_set(err, 31368, have_tv ? "A request with a 'topologyVersion' must include 'maxAwaitTimeMS'" :
		    "A request with 'maxAwaitTimeMS' must include a 'topologyVersion'");
	if (have_tv && bson_iter_init_find(&it, c->body, "topologyVersion") && bson_iter_recurse(&it, &tv)) {
		bson_iter_t f = tv;
		if (bson_iter_find(&f, "counter") && BSON_ITER_HOLDS_NUMBER(&f)) {
			counter = bson_iter_as_int64(&f);
			if (counter < 0)
				return terr_set(err, 31372, "topologyVersion must have a non-negative counter");
		}
		if (bson_iter_find(&tv, "processId") && BSON_ITER_HOLDS_OID(&tv) &&
		    !bson_oid_equal(bson_iter_oid(&tv), &topology_pid))
			return 0;   /* another process: answer at once */
	}
	if (!have_tv || wait_ms == 0)
		return 0;
	if (wait_ms > 60 * 60 * 1000)
		wait_ms = 60 * 60 * 1000;
	if (c->engine->rs != NULL) {
		/* an older counter: the topology already changed */
		if ((uint64_t)counter == cmd_repl_topology_counter(c->engine))
			cmd_repl_topology_wait(c->engine, (uint64_t)counter, wait_ms);
		return 0;
	}
	deadline = cmd_now_us() + wait_ms * 1000;
	while (!engine_shutdown_requested(c->engine) && cmd_now_us() < deadline) {
		struct timespec ts = {0, 50 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	return 0;
}

CMD_HANDLER(cmd_hello)
{
	bool legacy = strcmp(c->name, "hello") != 0;
	bson_iter_t it;
	bson_t tv;

	pthread_once(&topology_once, topology_init);
	if (bson_iter_init_find(&it, c->body, "client")) {
		if (!BSON_ITER_HOLDS_DOCUMENT(&it))
			return terr_set(err, TERR_TYPE_MISMATCH,
			    "BSON field '%s.client' is the wrong type '%s', expected type 'object'",
			    c->name, type_name(bson_iter_type(&it)));
		if (client_metadata(c->client) != NULL)
			return terr_set(err, 186, "The client metadata document may only be sent in the first %s",
			    c->name);
		{
			const uint8_t *d;
			uint32_t l;
			bson_t view;
			bson_iter_document(&it, &l, &d);
			if (bson_init_static(&view, d, l)) {
				log_client_metadata(c, &view);
				client_set_metadata_steal(c->client, bson_copy(&view));
			}
		}
	}
	if (hello_await(c, err) != 0)
		return -1;
	if (bson_iter_init_find(&it, c->body, "helloOk") && bson_iter_as_bool(&it))
		BSON_APPEND_BOOL(c->reply, "helloOk", true);
	if (c->engine->rs != NULL) {
		/* a replica-set member: setName, hosts, lastWrite, ... (cmd_repl.c) */
		cmd_repl_hello_append(c, legacy);
	} else {
		BSON_APPEND_BOOL(c->reply, legacy ? "ismaster" : "isWritablePrimary", true);
		BSON_APPEND_DOCUMENT_BEGIN(c->reply, "topologyVersion", &tv);
		BSON_APPEND_OID(&tv, "processId", &topology_pid);
		BSON_APPEND_INT64(&tv, "counter", 0);
		bson_append_document_end(c->reply, &tv);
	}
	BSON_APPEND_INT32(c->reply, "maxBsonObjectSize", TAMGA_MAX_BSON_SIZE);
	BSON_APPEND_INT32(c->reply, "maxMessageSizeBytes", TAMGA_MAX_MESSAGE_SIZE);
	BSON_APPEND_INT32(c->reply, "maxWriteBatchSize", TAMGA_MAX_WRITE_BATCH);
	BSON_APPEND_DATE_TIME(c->reply, "localTime", now_wall_ms());
	BSON_APPEND_INT32(c->reply, "logicalSessionTimeoutMinutes", SESSION_TIMEOUT_MINUTES);
	BSON_APPEND_INT64(c->reply, "connectionId", client_connection_id(c->client));
	BSON_APPEND_INT32(c->reply, "minWireVersion", TAMGA_MIN_WIRE_VERSION);
	BSON_APPEND_INT32(c->reply, "maxWireVersion", TAMGA_MAX_WIRE_VERSION);
	BSON_APPEND_BOOL(c->reply, "readOnly", false);
	/* saslSupportedMechs and speculativeAuthenticate (never fails the hello) */
	cmd_hello_auth_append(c, c->reply);
	return 0;
}

/* ---- ping, buildInfo, hostInfo ------------------------------------------ */

CMD_HANDLER(cmd_ping)
{
	return 0;
}

CMD_HANDLER(cmd_build_info)
{
	static const int varr[] = TAMGA_MONGODB_VERSION_ARRAY;
	bson_t a, o, env;
	size_t i;

	BSON_APPEND_UTF8(c->reply, "version", TAMGA_MONGODB_VERSION);
	BSON_APPEND_UTF8(c->reply, "gitVersion", "tamga-" TAMGA_VERSION);
	BSON_APPEND_UTF8(c->reply, "tamgaVersion", TAMGA_VERSION);
	BSON_APPEND_ARRAY_BEGIN(c->reply, "modules", &a);
	bson_append_array_end(c->reply, &a);
	BSON_APPEND_UTF8(c->reply, "allocator", "system");
	BSON_APPEND_UTF8(c->reply, "javascriptEngine", "mozjs");   /* js/: SpiderMonkey, as mongod */
	BSON_APPEND_UTF8(c->reply, "sysInfo", "deprecated");
	BSON_APPEND_ARRAY_BEGIN(c->reply, "versionArray", &a);
	for (i = 0; i < sizeof(varr) / sizeof(varr[0]); i++) {
		char key[8];
		snprintf(key, sizeof(key), "%zu", i);
		BSON_APPEND_INT32(&a, key, varr[i]);
	}
	bson_append_array_end(c->reply, &a);
	BSON_APPEND_DOCUMENT_BEGIN(c->reply, "openssl", &o);
	BSON_APPEND_UTF8(&o, "running", OpenSSL_version(OPENSSL_VERSION));
	BSON_APPEND_UTF8(&o, "compiled", OPENSSL_VERSION_TEXT);
	bson_append_document_end(c->reply, &o);
	BSON_APPEND_DOCUMENT_BEGIN(c->reply, "buildEnvironment", &env);
	BSON_APPEND_UTF8(&env, "distmod", "");
	BSON_APPEND_UTF8(&env, "distarch", "x86_64");
	BSON_APPEND_UTF8(&env, "cc", __VERSION__);
	BSON_APPEND_UTF8(&env, "target_arch", "x86_64");
	BSON_APPEND_UTF8(&env, "target_os", "linux");
	bson_append_document_end(c->reply, &env);
	BSON_APPEND_INT32(c->reply, "bits", 64);
	BSON_APPEND_BOOL(c->reply, "debug", false);
	BSON_APPEND_INT32(c->reply, "maxBsonObjectSize", TAMGA_MAX_BSON_SIZE);
	BSON_APPEND_ARRAY_BEGIN(c->reply, "storageEngines", &a);
	BSON_APPEND_UTF8(&a, "0", "wiredTiger");
	bson_append_array_end(c->reply, &a);
	return 0;
}

CMD_HANDLER(cmd_host_info)
{
	struct utsname u;
	struct rlimit rl;
	char host[256];
	bson_t sys, os, extra;
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	host_name(host, sizeof(host));
	if (uname(&u) != 0)
		memset(&u, 0, sizeof(u));
	BSON_APPEND_DOCUMENT_BEGIN(c->reply, "system", &sys);
	BSON_APPEND_DATE_TIME(&sys, "currentTime", now_wall_ms());
	BSON_APPEND_UTF8(&sys, "hostname", host);
	BSON_APPEND_INT32(&sys, "cpuAddrSize", 64);
	BSON_APPEND_INT64(&sys, "memSizeMB", (int64_t)pages * psize / (1024 * 1024));
	BSON_APPEND_INT64(&sys, "memLimitMB", (int64_t)pages * psize / (1024 * 1024));
	BSON_APPEND_INT32(&sys, "numCores", (int32_t)ncpu);
	BSON_APPEND_INT32(&sys, "numCoresAvailableToProcess", (int32_t)ncpu);
	BSON_APPEND_INT32(&sys, "numPhysicalCores", (int32_t)ncpu);
	BSON_APPEND_INT32(&sys, "numCpuSockets", 1);
	BSON_APPEND_UTF8(&sys, "cpuArch", u.machine[0] ? u.machine : "x86_64");
	BSON_APPEND_BOOL(&sys, "numaEnabled", false);
	BSON_APPEND_INT32(&sys, "numNumaNodes", 1);
	bson_append_document_end(c->reply, &sys);
	BSON_APPEND_DOCUMENT_BEGIN(c->reply, "os", &os);
	BSON_APPEND_UTF8(&os, "type", u.sysname[0] ? u.sysname : "Linux");
	BSON_APPEND_UTF8(&os, "name", u.sysname[0] ? u.sysname : "Linux");
	BSON_APPEND_UTF8(&os, "version", u.release);
	bson_append_document_end(c->reply, &os);
	BSON_APPEND_DOCUMENT_BEGIN(c->reply, "extra", &extra);
	BSON_APPEND_UTF8(&extra, "versionString", u.version);
	BSON_APPEND_UTF8(&extra, "kernelVersion", u.release);
	BSON_APPEND_INT64(&extra, "pageSize", psize);
	BSON_APPEND_INT64(&extra, "numPages", pages);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		BSON_APPEND_INT64(&extra, "maxOpenFiles", (int64_t)rl.rlim_cur);
	bson_append_document_end(c->reply, &extra);
	return 0;
}

/* ---- serverStatus ------------------------------------------------------- */

static int64_t
ld(int64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

CMD_HANDLER(cmd_server_status)
{
	engine_counters_t *k = &c->engine->counters;
	char host[256];
	bson_t sub;
	int64_t up_us = cmd_now_us() - c->engine->start_mono_us, max_conns;
	long rss_pages = 0, vsz_pages = 0, psize = sysconf(_SC_PAGESIZE);
	FILE *f;

	host_name(host, sizeof(host));
	f = fopen("/proc/self/statm", "r");
	if (f != NULL) {
		if (fscanf(f, "%ld %ld", &vsz_pages, &rss_pages) != 2)
			vsz_pages = rss_pages = 0;
		fclose(f);
	}
	pthread_mutex_lock(&proc_lock);
	max_conns = proc_max_conns;
	pthread_mutex_unlock(&proc_lock);

	BSON_APPEND_UTF8(c->reply, "host", host);
	BSON_APPEND_UTF8(c->reply, "version", TAMGA_MONGODB_VERSION);
	BSON_APPEND_UTF8(c->reply, "tamgaVersion", TAMGA_VERSION);
	BSON_APPEND_UTF8(c->reply, "process", "tamgad");
	BSON_APPEND_INT64(c->reply, "pid", (int64_t)getpid());
	BSON_APPEND_DOUBLE(c->reply, "uptime", (double)(up_us / 1000000));
	BSON_APPEND_INT64(c->reply, "uptimeMillis", up_us / 1000);
	BSON_APPEND_INT64(c->reply, "uptimeEstimate", up_us / 1000000);
	BSON_APPEND_DATE_TIME(c->reply, "localTime", now_wall_ms());
	if (c->engine->rs != NULL) {
		/* a set member's serverStatus.repl (cmd_repl.c) */
		BSON_APPEND_DOCUMENT_BEGIN(c->reply, "repl", &sub);
		cmd_repl_server_status_append(c, &sub);
		bson_append_document_end(c->reply, &sub);
	}

	/* mongod's ElectionMetrics section, on every node (repl/election_log.h) */
	BSON_APPEND_DOCUMENT_BEGIN(c->reply, "electionMetrics", &sub);
	repl_election_metrics_append(&sub);
	bson_append_document_end(c->reply, &sub);

	BSON_APPEND_DOCUMENT_BEGIN(c->reply, "connections", &sub);
	BSON_APPEND_INT32(&sub, "current", (int32_t)ld(&k->connections_current));
	BSON_APPEND_INT32(&sub, "available", max_conns > 0 ?
	    (int32_t)(max_conns - ld(&k->connections_current)) : 1000000);
	BSON_APPEND_INT32(&sub, "totalCreated", (int32_t)ld(&k->connections_total));
	/* the establishment rate limiter (server/ratelimit.c) */
	BSON_APPEND_INT64(&sub, "queuedForEstablishment", ld(&k->ingress_queued));
	{
		bson_t rl;
		BSON_APPEND_DOCUMENT_BEGIN(&sub, "establishmentRateLimit", &rl);
		BSON_APPEND_INT64(&rl, "rejected", ld(&k->ingress_rejected));
		BSON_APPEND_INT64(&rl, "exempted", 0);
		BSON_APPEND_INT64(&rl, "interruptedDueToClientDisconnect", 0);
		bson_append_document_end(&sub, &rl);
	}
	bson_append_document_end(c->reply, &sub);

	BSON_APPEND_DOCUMENT_BEGIN(c->reply, "network", &sub);
	BSON_APPEND_INT64(&sub, "bytesIn", ld(&k->bytes_in));
	BSON_APPEND_INT64(&sub, "bytesOut", ld(&k->bytes_out));
	BSON_APPEND_INT64(&sub, "numRequests", ld(&k->requests));
	bson_append_document_end(c->reply, &sub);

	BSON_APPEND_DOCUMENT_BEGIN(c->reply, "opcounters", &sub);
	BSON_APPEND_INT64(&sub, "insert", ld(&k->insert));
	BSON_APPEND_INT64(&sub, "query", ld(&k->query));
	BSON_APPEND_INT64(&sub, "update", ld(&k->update));
	BSON_APPEND_INT64(&sub, "delete", ld(&k->delete_));
	BSON_APPEND_INT64(&sub, "getmore", ld(&k->getmore));
	BSON_APPEND_INT64(&sub, "command", ld(&k->command));
	bson_append_document_end(c->reply, &sub);

	BSON_APPEND_DOCUMENT_BEGIN(c->reply, "mem", &sub);
	BSON_APPEND_INT32(&sub, "bits", 64);
	BSON_APPEND_INT32(&sub, "resident", (int32_t)((int64_t)rss_pages * psize / (1024 * 1024)));
	BSON_APPEND_INT32(&sub, "virtual", (int32_t)((int64_t)vsz_pages * psize / (1024 * 1024)));
	BSON_APPEND_BOOL(&sub, "supported", true);
	bson_append_document_end(c->reply, &sub);

	BSON_APPEND_DOCUMENT_BEGIN(c->reply, "storageEngine", &sub);
	BSON_APPEND_UTF8(&sub, "name", "wiredTiger");
	BSON_APPEND_BOOL(&sub, "supportsCommittedReads", true);
	BSON_APPEND_BOOL(&sub, "persistent", !c->engine->opts.storage.in_memory);
	bson_append_document_end(c->reply, &sub);
	cmd_txn_server_status(c, c->reply);
	cmd_toolbelt_server_status(c);   /* validation counters, $queryStats store (cmd_toolbelt.c) */
	/* metrics.commands: each command's runs (cmd_metrics.c) */
	{
		bson_t m, cmds;

		BSON_APPEND_DOCUMENT_BEGIN(c->reply, "metrics", &m);
		BSON_APPEND_DOCUMENT_BEGIN(&m, "commands", &cmds);
		cmd_metrics_commands_append(&cmds);
		bson_append_document_end(&m, &cmds);
		{
			/* metrics.ttl: the TTL monitor's passes (one sub-pass each) and the
			 * documents (buckets, for time-series) it deleted */
			ttl_stats_t ts;
			ttl_stats_get(&ts);
			BSON_APPEND_DOCUMENT_BEGIN(&m, "ttl", &cmds);
			BSON_APPEND_INT64(&cmds, "deletedDocuments", ts.deleted_documents);
			BSON_APPEND_INT64(&cmds, "passes", ts.passes);
			BSON_APPEND_INT64(&cmds, "subPasses", ts.passes);
			bson_append_document_end(&m, &cmds);
		}
		if (c->engine->rs != NULL) {
			/* metrics.repl: the counters Tamga keeps truly (cmd_repl.c) */
			BSON_APPEND_DOCUMENT_BEGIN(&m, "repl", &cmds);
			cmd_repl_metrics_append(c->engine, &cmds);
			bson_append_document_end(&m, &cmds);
		}
		bson_append_document_end(c->reply, &m);
	}
	return 0;
}

/* ---- getParameter / setParameter ---------------------------------------- */

/*
 * Server parameters, one row each, sorted by name as mongod lists them.
 * Fixed rows report Tamga's constant; held rows keep a value in the engine
 * (an atomic_llong at `off`; a double's bits for PARAM_DOUBLE) that
 * setParameter and --setParameter change, coerced as mongod's IDL
 * parameters are (tryCoerce at runtime, setFromString at startup) and
 * checked against the row's bound (gte min, or gt when strict).
 * `runtime` / `startup` are mongod's set_at: setParameter of a startup-only
 * parameter answers 20, of a runtime one Tamga holds fixed 238;
 * --setParameter of a runtime-only one is refused at startup.
 */
/* PARAM_STR_HOOK: a string another module keeps (str_get / str_set), e.g.
 * internalQueryStatsCacheSize (src/toolbelt/) */
typedef enum { PARAM_INT, PARAM_BOOL, PARAM_STR, PARAM_FCV, PARAM_MECHS, PARAM_DOUBLE, PARAM_STR_HOOK, PARAM_LOGCOMP } param_kind_t;

typedef struct param {
	const char *name;
	param_kind_t kind;
	int64_t i;               /* a fixed row's value */
	const char *s;
	bool runtime, startup;
	bool held;
	size_t off;              /* held: offsetof(engine_t, ...) */
	bool wide;               /* PARAM_INT: long long (else int) */
	int64_t min;             /* PARAM_INT / PARAM_DOUBLE bound */
	bool strict;
	bool wakes_ttl;          /* the TTL monitor re-reads its period */
	const char *(*str_get)(void);                     /* PARAM_STR_HOOK */
	int (*str_set)(const char *value, terr_t *err);   /* PARAM_STR_HOOK */
	/* PARAM_STR_HOOK whose value is a document (getParameter shows it so;
	 * str_set takes its JSON, as mongod's setFromString) */
	void (*doc_get)(bson_t *out, const char *key);
} param_t;

/* The engine's value of a held row. */
static atomic_llong *
held_value(engine_t *e, const param_t *p)
{
	return (atomic_llong *)((char *)e + p->off);
}

static const char *
cluster_auth_mode_get(void)
{
	return auth_cluster_mode_name(auth_cluster_mode());
}

static int
cluster_auth_mode_set(const char *value, terr_t *err)
{
	return auth_cluster_mode_transition(value, repl_member_tls_outgoing(), err);
}

/* mongod's ClusterAuthX509OverrideParameter::setFromString: the JSON of
 * an object (auth/auth_x509.h says its fields and errors).  Tamga reads
 * it with libbson's JSON parser: field names must be quoted (mongod's
 * fromjson also takes bare names), and an unreadable text answers 9
 * FailedToParse with libbson's reason (mongod's fromjson words it its own
 * way). */
static int
cluster_x509_override_set(const char *value, terr_t *err)
{
	bson_t doc;
	bson_error_t be;
	int rc;

	if (!bson_init_from_json(&doc, value, -1, &be))
		return terr_set(err, TERR_FAILED_TO_PARSE, "tlsClusterAuthX509Override: %s", be.message);
	rc = auth_x509_set_member_override(&doc, err);
	bson_destroy(&doc);
	return rc;
}

#define HELD(field) .held = true, .off = offsetof(engine_t, field)
#define BOTH .runtime = true, .startup = true

static const param_t params[] = {
	{"allowDiskUseByDefault", PARAM_BOOL, BOTH, HELD(allow_disk_use_by_default)},
	{"authenticationMechanisms", PARAM_MECHS, .startup = true},
	/* mongod's ClusterAuthModeServerParameter: runtime, one step up at a
	 * time (auth/auth_x509.h) */
	{"clusterAuthMode", PARAM_STR_HOOK, .runtime = true, .held = true,
	 .str_get = cluster_auth_mode_get, .str_set = cluster_auth_mode_set},
	{"cursorTimeoutMillis", PARAM_INT, .i = CURSOR_TIMEOUT_MS, BOTH},
	/* bool, set_at: startup */
	{"enableTestCommands", PARAM_BOOL, .startup = true, HELD(enable_test_commands)},
	{"featureCompatibilityVersion", PARAM_FCV},
	/* double, gte: 1; int, gte: 0; bool; int, gte: 1 (startup and runtime) */
	{"ingressConnectionEstablishmentBurstCapacitySecs", PARAM_DOUBLE, BOTH,
	 HELD(ingress_burst_capacity_secs), .min = 1},
	{"ingressConnectionEstablishmentMaxQueueDepth", PARAM_INT, BOTH, HELD(ingress_max_queue_depth), .min = 0},
	{"ingressConnectionEstablishmentRateLimiterEnabled", PARAM_BOOL, BOTH, HELD(ingress_rate_limiter_enabled)},
	{"ingressConnectionEstablishmentRatePerSec", PARAM_INT, BOTH, HELD(ingress_rate_per_sec), .min = 1},
	/* AtomicWord<long long>, validator gt: 0 (both) */
	{"internalDocumentSourceBucketAutoMaxMemoryBytes", PARAM_INT, BOTH, HELD(bucket_auto_memory_limit),
	 .wide = true, .min = 0, .strict = true},
	{"internalDocumentSourceGroupMaxMemoryBytes", PARAM_INT, BOTH, HELD(group_memory_limit),
	 .wide = true, .min = 0, .strict = true},
	/* AtomicWord<int>, validator gte: 0 */
	{"internalQueryMaxBlockingSortMemoryUsageBytes", PARAM_INT, BOTH, HELD(sort_memory_limit), .min = 0},
	/* string, "1%" of memory or "<n>MB": the $queryStats store's bound */
	{"internalQueryStatsCacheSize", PARAM_STR_HOOK, BOTH, .held = true,
	 .str_get = toolbelt_qstats_cache_size, .str_set = toolbelt_qstats_set_cache_size},
	/* int, gte: -1: $queryStats' recordings per second, 0 off (mongod's
	 * default), -1 every query (src/toolbelt/tb_qstats.c) */
	{"internalQueryStatsRateLimit", PARAM_INT, BOTH, HELD(qstats_rate_limit), .min = -1},
	{"localLogicalSessionTimeoutMinutes", PARAM_INT, .i = SESSION_TIMEOUT_MINUTES, .startup = true},
	{"logComponentVerbosity", PARAM_LOGCOMP, BOTH, HELD(log_level)},
	{"logLevel", PARAM_INT, BOTH, HELD(log_level), .min = 0},
	{"maxBSONDepth", PARAM_INT, .i = 200, .startup = true},
	/* int, set_at: startup, gte: 1 (INT_MAX): operations per applyOps
	 * entry of a transaction (repl/oplog.h, repl_oplog_txn_split) */
	{"maxNumberOfTransactionOperationsInSingleOplogEntry", PARAM_INT, .startup = true,
	 HELD(txn_ops_per_entry), .min = 1},
	{"maxSessions", PARAM_INT, .i = 1000000, .startup = true},
	/* AtomicWord<int> (repl/txn.h): accepted and held; Tamga's transactions
	 * take no lock it would bound */
	{"maxTransactionLockRequestTimeoutMillis", PARAM_INT, BOTH, HELD(max_txn_lock_request_timeout_ms),
	 .min = INT32_MIN},
	/* bool: refuse queries a collection scan would answer (291) */
	{"notablescan", PARAM_BOOL, BOTH, HELD(notablescan)},
	{"quiet", PARAM_BOOL, BOTH},
	/* bool, startup and runtime: commands must name apiVersion (498870) */
	{"requireApiVersion", PARAM_BOOL, BOTH, HELD(require_api_version)},
	{"tamgaVersion", PARAM_STR, .s = TAMGA_VERSION},
	/* int, startup, gte: 2; long long, startup and runtime (0 or less:
	 * 2.5% of the machine's memory): the time-series bucket catalog's
	 * memory bound (commands/cmd_timeseries.c, mongod's timeseries.idl) */
	{"timeseriesIdleBucketExpiryMaxCountPerAttempt", PARAM_INT, .startup = true,
	 HELD(ts_idle_expiry_max_per_attempt), .min = 2},
	{"timeseriesIdleBucketExpiryMemoryUsageThreshold", PARAM_INT, BOTH, HELD(ts_idle_expiry_threshold),
	 .wide = true, .min = INT64_MIN},
	/* mongod 7.0+: a second member-certificate rule during a rollover,
	 * set_at startup */
	{"tlsClusterAuthX509Override", PARAM_STR_HOOK, .startup = true, .held = true,
	 .str_set = cluster_x509_override_set, .doc_get = auth_x509_member_override_append},
	/* AtomicWord<int>, validator gte: 1: the reaper's limit (repl/txn.h) */
	{"transactionLifetimeLimitSeconds", PARAM_INT, BOTH, HELD(txn_lifetime_limit_seconds), .min = 1},
	/* bool; int, gte: 1 (the TTL monitor's period in seconds) */
	{"ttlMonitorEnabled", PARAM_BOOL, BOTH, HELD(ttl_monitor_enabled)},
	{"ttlMonitorSleepSecs", PARAM_INT, BOTH, HELD(ttl_monitor_sleep_secs), .min = 1, .wakes_ttl = true},
};

#undef HELD
#undef BOTH

#define NPARAMS (sizeof(params) / sizeof(params[0]))

static const param_t *
param_find(const char *name)
{
	for (size_t i = 0; i < NPARAMS; i++)
		if (strcmp(params[i].name, name) == 0)
			return &params[i];
	return NULL;
}

/*
 * logComponentVerbosity: mongod's log components, each -1 (inherit the
 * global logLevel) until set; the global verbosity is logLevel itself.
 * Kept here (reported back) and handed to the log (tlog_set_verbosity),
 * which writes the debug lines Tamga has for them (tlog_debug: COMMAND's
 * D1/D2 command lines, every operation's "Slow query" line from COMMAND
 * verbosity 1, as mongod's shouldLogSlowOpWithSampling).
 */
static const char *const log_components[] = {
	"accessControl", "assert", "command", "control", "executor", "geo", "globalIndex", "index",
	"network", "processHealth", "query", "queryStats", "replication", "sharding", "storage", "write",
	"ftdc", "tracking", "transaction", "tenantMigration", "test", "resourceConsumption",
	"streams", NULL,
};
static pthread_mutex_t logcomp_lock = PTHREAD_MUTEX_INITIALIZER;
static int logcomp_level[sizeof log_components / sizeof log_components[0]] = {
	[0 ... sizeof log_components / sizeof log_components[0] - 1] = -1,
};

static int
logcomp_index(const char *name)
{
	for (int i = 0; log_components[i] != NULL; i++)
		if (strcmp(log_components[i], name) == 0)
			return i;
	return -1;
}

static void
logcomp_append(engine_t *e, bson_t *out, const char *key)
{
	bson_t d, one;

	BSON_APPEND_DOCUMENT_BEGIN(out, key, &d);
	BSON_APPEND_INT32(&d, "verbosity", (int32_t)atomic_load(&e->log_level));
	pthread_mutex_lock(&logcomp_lock);
	for (int i = 0; log_components[i] != NULL; i++) {
		BSON_APPEND_DOCUMENT_BEGIN(&d, log_components[i], &one);
		BSON_APPEND_INT32(&one, "verbosity", logcomp_level[i]);
		bson_append_document_end(&d, &one);
	}
	pthread_mutex_unlock(&logcomp_lock);
	bson_append_document_end(out, &d);
}

/* Check (apply false) or apply a logComponentVerbosity document: {verbosity:
 * n, <component>: n | {verbosity: n}, ...}; n an integer >= -1 (the global
 * one >= 0). */
static int
logcomp_set(engine_t *e, const bson_iter_t *in, bool apply, terr_t *err)
{
	bson_iter_t it;

	if (!BSON_ITER_HOLDS_DOCUMENT(in))
		return terr_set(err, TERR_BAD_VALUE,
		    "Invalid logComponentVerbosity: must be an object, not %s", bv_type_name(bson_iter_type(in)));
	bson_iter_recurse(in, &it);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		bson_iter_t v = it, sub;
		int idx = -2;

		if (strcmp(k, "verbosity") != 0 && (idx = logcomp_index(k)) < 0)
			return terr_set(err, TERR_BAD_VALUE, "Invalid component name logComponentVerbosity.%s", k);
		if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
			bson_iter_recurse(&it, &sub);
			if (!bson_iter_find(&sub, "verbosity"))
				continue;
			v = sub;
		}
		if (!BSON_ITER_HOLDS_NUMBER(&v))
			return terr_set(err, TERR_BAD_VALUE, "Expected logComponentVerbosity.%s to be a number", k);
		if (bson_iter_as_int64(&v) < (idx == -2 ? 0 : -1) || bson_iter_as_int64(&v) > 5)
			return terr_set(err, TERR_BAD_VALUE, "Invalid verbosity for logComponentVerbosity.%s: %lld", k,
			    (long long)bson_iter_as_int64(&v));
		if (!apply)
			continue;
		if (idx == -2) {
			atomic_store(&e->log_level, bson_iter_as_int64(&v));
			tlog_set_verbosity(NULL, (int)bson_iter_as_int64(&v));
		} else {
			pthread_mutex_lock(&logcomp_lock);
			logcomp_level[idx] = (int)bson_iter_as_int64(&v);
			pthread_mutex_unlock(&logcomp_lock);
			tlog_set_verbosity(k, (int)bson_iter_as_int64(&v));
		}
	}
	return 0;
}

static void
param_append(engine_t *e, bson_t *out, const char *key, const param_t *p)
{
	int64_t v = p->held ? (int64_t)atomic_load(held_value(e, p)) : p->i;
	bson_t sub;

	switch (p->kind) {
	case PARAM_INT:
		if (p->wide || v > INT32_MAX || v < INT32_MIN)   /* a long long parameter is a NumberLong */
			BSON_APPEND_INT64(out, key, v);
		else
			BSON_APPEND_INT32(out, key, (int32_t)v);
		break;
	case PARAM_DOUBLE:
		BSON_APPEND_DOUBLE(out, key, engine_bits_double((long long)v));
		break;
	case PARAM_BOOL:
		BSON_APPEND_BOOL(out, key, v != 0);
		break;
	case PARAM_STR:
		BSON_APPEND_UTF8(out, key, p->s);
		break;
	case PARAM_STR_HOOK:
		if (p->doc_get != NULL)
			p->doc_get(out, key);
		else
			BSON_APPEND_UTF8(out, key, p->str_get());
		break;
	case PARAM_FCV:
		BSON_APPEND_DOCUMENT_BEGIN(out, key, &sub);
		BSON_APPEND_UTF8(&sub, "version", "9.0");
		bson_append_document_end(out, &sub);
		break;
	case PARAM_MECHS:
		BSON_APPEND_ARRAY_BEGIN(out, key, &sub);
		BSON_APPEND_UTF8(&sub, "0", "SCRAM-SHA-1");
		BSON_APPEND_UTF8(&sub, "1", "SCRAM-SHA-256");
		bson_append_array_end(out, &sub);
		break;
	case PARAM_LOGCOMP:
		logcomp_append(e, out, key);
		break;
	}
}

/* showDetails: {value, settableAtRuntime, settableAtStartup} as mongod. */
static void
param_append_details(engine_t *e, bson_t *out, const param_t *p)
{
	bson_t d;

	BSON_APPEND_DOCUMENT_BEGIN(out, p->name, &d);
	param_append(e, &d, "value", p);
	BSON_APPEND_BOOL(&d, "settableAtRuntime", p->runtime);
	BSON_APPEND_BOOL(&d, "settableAtStartup", p->startup);
	bson_append_document_end(out, &d);
}

CMD_HANDLER(cmd_get_parameter)
{
	bool all = false, details = false;
	int found = 0;
	bson_iter_t it;

	if (BSON_ITER_HOLDS_UTF8(&c->first) && strcmp(bson_iter_utf8(&c->first, NULL), "*") == 0)
		all = true;
	else if (BSON_ITER_HOLDS_DOCUMENT(&c->first)) {
		bson_iter_t sub;
		if (bson_iter_recurse(&c->first, &sub))
			while (bson_iter_next(&sub)) {
				if (strcmp(bson_iter_key(&sub), "allParameters") == 0)
					all = bson_iter_as_bool(&sub);
				else if (strcmp(bson_iter_key(&sub), "showDetails") == 0)
					details = bson_iter_as_bool(&sub);
			}
	}
	for (size_t i = 0; i < NPARAMS; i++) {
		if (!all && !(bson_iter_init_find(&it, c->body, params[i].name)))
			continue;
		if (details)
			param_append_details(c->engine, c->reply, &params[i]);
		else
			param_append(c->engine, c->reply, params[i].name, &params[i]);
		found++;
	}
	if (found == 0)
		return terr_set(err, TERR_INVALID_OPTIONS, "no option found to get");
	return 0;
}

/* BSONElement::tryCoerce to the parameter's int or long long: numbers
 * truncated toward zero within its range, booleans as 0/1. */
static int
param_coerce_int(const param_t *p, const bson_iter_t *it, int64_t *out, terr_t *err)
{
	const char *why = NULL;
	double d;

	switch (bson_iter_type(it)) {
	case BSON_TYPE_BOOL:
		*out = bson_iter_bool(it);
		return 0;
	case BSON_TYPE_INT32:
	case BSON_TYPE_INT64:
		*out = bson_iter_as_int64(it);
		if (!p->wide && (*out > INT32_MAX || *out < INT32_MIN))
			why = "Out of bounds coercing to integral value";
		break;
	case BSON_TYPE_DOUBLE:
	case BSON_TYPE_DECIMAL128:
		d = bv_as_double(bson_iter_value((bson_iter_t *)it));
		if (d != d || d == HUGE_VAL || d == -HUGE_VAL)
			why = "Unable to coerce NaN/Inf to integral type";
		else if (p->wide ? d >= 9223372036854775808.0 || d < -9223372036854775808.0 :
		                   d >= (double)INT32_MAX + 1 || d <= (double)INT32_MIN - 1)
			why = "Out of bounds coercing to integral value";
		else
			*out = (int64_t)d;
		break;
	default:
		why = "Unable to coerce value to integral type";
		break;
	}
	if (why != NULL)
		return terr_set(err, TERR_BAD_VALUE, "Failed validating %s: %s", p->name, why);
	return 0;
}

/* The bound of an int or double row: mongod's IDL validator message. */
static int
param_check_bound(const param_t *p, double v, terr_t *err)
{
	char num[64];

	if (!(v < (double)p->min || (p->strict && v == (double)p->min)))
		return 0;
	if (p->kind == PARAM_DOUBLE)
		bson_snprintf(num, sizeof(num), "%g", v);
	else
		bson_snprintf(num, sizeof(num), "%lld", (long long)v);
	return terr_set(err, TERR_BAD_VALUE, "Invalid value for parameter %s: %s is not %s %lld", p->name, num,
	    p->strict ? "greater than" : "greater than or equal to", (long long)p->min);
}

/* A value for p as its atomic_llong holds it; errors as mongod's. */
static int
param_value_from_bson(const param_t *p, const bson_iter_t *it, long long *out, terr_t *err)
{
	if (p->kind == PARAM_BOOL) {
		*out = bson_iter_as_bool(it);    /* BSONElement::trueValue: any type */
		return 0;
	}
	if (p->kind == PARAM_DOUBLE) {
		double d;
		if (!BSON_ITER_HOLDS_NUMBER(it) && !BSON_ITER_HOLDS_DECIMAL128(it) && !BSON_ITER_HOLDS_BOOL(it))
			return terr_set(err, TERR_BAD_VALUE, "Failed validating %s: Unable to coerce value to double",
			    p->name);
		d = BSON_ITER_HOLDS_BOOL(it) ? (double)bson_iter_bool(it) :
		    bv_as_double(bson_iter_value((bson_iter_t *)it));
		RET(param_check_bound(p, d, err));
		*out = engine_double_bits(d);
		return 0;
	}
	{
		int64_t v = 0;
		RET(param_coerce_int(p, it, &v, err));
		RET(param_check_bound(p, (double)v, err));
		*out = (long long)v;
	}
	return 0;
}

static void
param_changed(engine_t *e, const param_t *p)
{
	if (p->wakes_ttl)
		ttl_monitor_wake(e->ttl);
	if (p->held && p->off == offsetof(engine_t, log_level))   /* logLevel: the log's global verbosity */
		tlog_set_verbosity(NULL, (int)atomic_load(&e->log_level));
}

CMD_HANDLER(cmd_set_parameter)
{
	bson_iter_t it;
	bool first = true;
	int n = 0;

	/* every name is checked before anything is set, as mongod does */
	if (!bson_iter_init(&it, c->body))
		return terr_set(err, TERR_INVALID_OPTIONS, "no option found to set, use help:true to see options ");
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		const param_t *p;

		if (first || cmd_is_generic_field(k)) {
			first = false;
			continue;
		}
		if ((p = param_find(k)) == NULL)
			return terr_set(err, TERR_INVALID_OPTIONS,
			    "attempted to set unrecognized parameter [%s], use help:true to see options ", k);
		if (!p->runtime)
			return terr_set(err, TERR_ILLEGAL_OPERATION, "not allowed to change [%s] at runtime", k);
		if (!p->held)
			return terr_set(err, TERR_NOT_IMPLEMENTED,
			    "setParameter cannot change %s: Tamga holds it fixed", k);
		if (p->kind == PARAM_LOGCOMP)
			RET(logcomp_set(c->engine, &it, false, err));
	}
	bson_iter_init(&it, c->body);
	first = true;
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		const param_t *p;
		long long v = 0;
		bson_t attr;

		if (first || cmd_is_generic_field(k)) {
			first = false;
			continue;
		}
		p = param_find(k);
		if (p->kind == PARAM_STR_HOOK) {
			if (!BSON_ITER_HOLDS_UTF8(&it))
				return terr_set(err, TERR_BAD_VALUE, "Failed validating %s: the value must be a string", k);
			if (n == 0)
				param_append(c->engine, c->reply, "was", p);
			RET(p->str_set(bson_iter_utf8(&it, NULL), err));
			n++;
			continue;
		}
		if (p->kind == PARAM_LOGCOMP) {
			if (n == 0)
				param_append(c->engine, c->reply, "was", p);
			RET(logcomp_set(c->engine, &it, true, err));
			n++;
			continue;
		}
		RET(param_value_from_bson(p, &it, &v, err));
		bson_init(&attr);
		BSON_APPEND_UTF8(&attr, "parameterName", k);
		bson_append_iter(&attr, "newValue", -1, &it);
		param_append(c->engine, &attr, "oldValue", p);
		if (n == 0)
			param_append(c->engine, c->reply, "was", p);
		atomic_store(held_value(c->engine, p), v);
		param_changed(c->engine, p);
		tlog('I', "COMMAND", 23435, "Successfully set parameter to new value", &attr);
		bson_destroy(&attr);
		n++;
	}
	if (n == 0)
		return terr_set(err, TERR_INVALID_OPTIONS, "no option found to set, use help:true to see options ");
	return 0;
}

/* A --setParameter value (text) for p, as mongod's setFromString reads it. */
static int
param_value_from_string(const param_t *p, const char *s, long long *out, terr_t *err)
{
	char *end = NULL;

	errno = 0;
	switch (p->kind) {
	case PARAM_BOOL:
		if (strcmp(s, "true") == 0 || strcmp(s, "1") == 0)
			*out = 1;
		else if (strcmp(s, "false") == 0 || strcmp(s, "0") == 0)
			*out = 0;
		else
			return terr_set(err, TERR_BAD_VALUE, "Bad value for parameter \"%s\": Failed to parse boolean: %s",
			    p->name, s);
		return 0;
	case PARAM_DOUBLE: {
		double d = strtod(s, &end);
		if (*s == '\0' || end == NULL || *end != '\0' || errno != 0 || d != d)
			return terr_set(err, TERR_BAD_VALUE, "Bad value for parameter \"%s\": Failed to parse number: %s",
			    p->name, s);
		if (param_check_bound(p, d, err) != 0)
			goto bound;
		*out = engine_double_bits(d);
		return 0;
	}
	case PARAM_INT: {
		long long v = strtoll(s, &end, 10);
		if (*s == '\0' || end == NULL || *end != '\0' || errno != 0 ||
		    (!p->wide && (v > INT32_MAX || v < INT32_MIN)))
			return terr_set(err, TERR_BAD_VALUE, "Bad value for parameter \"%s\": Failed to parse number: %s",
			    p->name, s);
		if (param_check_bound(p, (double)v, err) != 0)
			goto bound;
		*out = v;
		return 0;
	}
	default:
		return terr_set(err, TERR_NOT_IMPLEMENTED, "setParameter cannot change %s: Tamga holds it fixed",
		    p->name);
	}
bound:
	{
		/* "Bad value for parameter "<name>": <the validator's message>" */
		char *why = bson_strdup(err->msg);
		terr_clear(err);
		terr_set(err, TERR_BAD_VALUE, "Bad value for parameter \"%s\": %s", p->name, why);
		bson_free(why);
	}
	return -1;
}

int
cmd_admin_startup_parameters(engine_t *e, const bson_t *params_doc, terr_t *err)
{
	bson_iter_t it;

	if (params_doc == NULL || !bson_iter_init(&it, params_doc))
		return 0;
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		const param_t *p = param_find(k);
		long long v = 0;
		bson_t attr;

		if (p == NULL)
			return terr_set(err, TERR_BAD_VALUE, "Illegal --setParameter parameter: \"%s\"", k);
		if (!p->startup)
			return terr_set(err, TERR_BAD_VALUE, "Cannot use --setParameter to set \"%s\" at startup", k);
		if (!p->held)
			return terr_set(err, TERR_NOT_IMPLEMENTED, "setParameter cannot change %s: Tamga holds it fixed",
			    k);
		if (!BSON_ITER_HOLDS_UTF8(&it))
			return terr_set(err, TERR_BAD_VALUE, "Bad value for parameter \"%s\": not a string", k);
		if (p->kind == PARAM_STR_HOOK) {
			RET(p->str_set(bson_iter_utf8(&it, NULL), err));
			continue;
		}
		RET(param_value_from_string(p, bson_iter_utf8(&it, NULL), &v, err));
		atomic_store(held_value(e, p), v);
		param_changed(e, p);
		bson_init(&attr);
		BSON_APPEND_UTF8(&attr, "parameter", k);
		BSON_APPEND_UTF8(&attr, "value", bson_iter_utf8(&it, NULL));
		tlog('I', "CONTROL", 4539300, "Setting server parameter", &attr);
		bson_destroy(&attr);
	}
	return 0;
}

/* ---- getCmdLineOpts, getLog, whatsmyuri, connectionStatus -------------- */

CMD_HANDLER(cmd_get_cmd_line_opts)
{
	bson_t empty = BSON_INITIALIZER;

	pthread_mutex_lock(&proc_lock);
	bson_append_array(c->reply, "argv", -1, proc_argv ? proc_argv : &empty);
	BSON_APPEND_DOCUMENT(c->reply, "parsed", proc_parsed ? proc_parsed : &empty);
	pthread_mutex_unlock(&proc_lock);
	return 0;
}

CMD_HANDLER(cmd_get_log)
{
	const char *which;
	bson_t arr;
	int n;

	if (!BSON_ITER_HOLDS_UTF8(&c->first))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "Argument to getLog must be of type String; found %s of type %s",
		    "value", type_name(bson_iter_type(&c->first)));
	which = bson_iter_utf8(&c->first, NULL);
	if (strcmp(which, "*") == 0) {
		BSON_APPEND_ARRAY_BEGIN(c->reply, "names", &arr);
		BSON_APPEND_UTF8(&arr, "0", "global");
		BSON_APPEND_UTF8(&arr, "1", "startupWarnings");
		bson_append_array_end(c->reply, &arr);
		return 0;
	}
	if (strcmp(which, "global") != 0 && strcmp(which, "startupWarnings") != 0)
		return terr_set(err, 96, "No log named '%s'", which);
	bson_init(&arr);
	n = tlog_get(which, &arr);
	BSON_APPEND_INT32(c->reply, "totalLinesWritten", n);
	bson_append_array(c->reply, "log", -1, &arr);
	bson_destroy(&arr);
	return 0;
}

CMD_HANDLER(cmd_whatsmyuri)
{
	BSON_APPEND_UTF8(c->reply, "you", c->client->remote ? c->client->remote : "");
	return 0;
}

CMD_HANDLER(cmd_connection_status)
{
	bson_t ai;
	bool show = false, found = false;
	int rc;

	if (cmd_get_bool(c, "showPrivileges", &show, &found, err) != 0)
		return -1;
	BSON_APPEND_DOCUMENT_BEGIN(c->reply, "authInfo", &ai);
	rc = auth_connection_status(&c->client->auth, show, &ai, err);
	bson_append_document_end(c->reply, &ai);
	return rc;
}

/* ---- listCommands ------------------------------------------------------- */

static int
def_by_name(const void *a, const void *b)
{
	const cmd_def_t *const *x = a, *const *y = b;

	return strcmp((*x)->name, (*y)->name);
}

/* mongod lists commands in name order (its registry is a sorted map). */
CMD_HANDLER(cmd_list_commands)
{
	const cmd_def_t *t, **sorted;
	bson_t all, one, a;
	int n, i;

	t = cmd_table(&n);
	sorted = bson_malloc(sizeof(*sorted) * (size_t)(n > 0 ? n : 1));
	for (i = 0; i < n; i++)
		sorted[i] = &t[i];
	qsort(sorted, (size_t)n, sizeof(*sorted), def_by_name);
	BSON_APPEND_DOCUMENT_BEGIN(c->reply, "commands", &all);
	for (i = 0; i < n; i++) {
		const cmd_def_t *d = sorted[i];
		/* test commands exist only with enableTestCommands */
		if ((d->flags & CMDF_TEST) && !engine_test_commands_enabled(c->engine))
			continue;
		bson_append_document_begin(&all, d->name, -1, &one);
		BSON_APPEND_UTF8(&one, "help", d->help ? d->help : "");
		BSON_APPEND_BOOL(&one, "requiresAuth", !(d->flags & CMDF_NO_AUTH));
		BSON_APPEND_BOOL(&one, "secondaryOk", true);
		BSON_APPEND_BOOL(&one, "adminOnly", (d->flags & CMDF_ADMIN_ONLY) != 0);
		BSON_APPEND_ARRAY_BEGIN(&one, "apiVersions", &a);
		bson_append_array_end(&one, &a);
		BSON_APPEND_ARRAY_BEGIN(&one, "deprecatedApiVersions", &a);
		bson_append_array_end(&one, &a);
		bson_append_document_end(&all, &one);
	}
	bson_append_document_end(c->reply, &all);
	bson_free(sorted);
	return 0;
}

/* the session commands are in cmd_session.c, on repl/session.h */

/* ---- shutdown ----------------------------------------------------------- */

CMD_HANDLER(cmd_shutdown)
{
	bson_t attr;

	bson_init(&attr);
	BSON_APPEND_UTF8(&attr, "command", "shutdown");
	tlog('I', "COMMAND", 4695400, "Terminating via shutdown command", &attr);
	bson_destroy(&attr);
	cmd_admin_request_shutdown(c->engine);
	return 0;
}
