/*
 * tamgad.c -- the server binary: mongod's command-line and YAML options,
 * logging setup, open the data folder, serve the wire protocol until
 * SIGINT/SIGTERM or the shutdown command, then close cleanly (checkpoint).
 *
 * Not here: the protocol (src/server/) or any command (src/commands/).
 * Exit codes follow mongod: 0 clean, 2 bad options, 48 cannot listen,
 * 100 cannot open the data folder.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bson/bson.h>

#include <openssl/crypto.h>

#include "auth/auth_member.h"
#include "auth/auth_x509.h"
#include "commands/cmd_admin.h"
#include "js/js.h"
#include "commands/commands.h"
#include "common/log.h"
#include "common/version.h"
#include "repl/member_rpc.h"
#include "server/server.h"
#include "repl/member_tls.h"
#include "server/tls.h"

#define EXIT_BADOPTIONS 2
#define EXIT_NET_ERROR 48
#define EXIT_UNCAUGHT 100

typedef struct opts {
	char *config;
	int port;
	char *bind_ip;
	bool bind_ip_all;
	char *dbpath;
	char *logpath;
	bool logappend;
	int64_t max_conns;
	bool quiet;
	char *compressors;
	char *pidfile;
	bool in_memory;
	bool auth;
	char *cache_size;
	char *tls_mode;
	char *tls_cert_key_file;
	char *tls_cert_key_password;
	char *tls_ca_file;
	char *tls_cluster_file;        /* --tlsClusterFile: the certificate a member presents to others */
	char *tls_cluster_password;    /* --tlsClusterPassword */
	char *tls_cluster_ca_file;     /* --tlsClusterCAFile: verifies members connecting in */
	bool tls_allow_invalid_hostnames;
	char *cluster_auth_mode;       /* --clusterAuthMode / security.clusterAuthMode */
	char *cluster_x509_attributes; /* net.tls.clusterAuthX509.attributes (auth_x509_set_member_rule) */
	char *cluster_x509_extension;  /* net.tls.clusterAuthX509.extensionValue (auth_x509_set_member_rule) */
	bool tls_allow_invalid_certs;
	bool tls_allow_no_cert;
	bool no_unix_socket;
	bool unix_socket_given;        /* net.unixDomainSocket.enabled was set (echoed as set) */
	char *unix_socket_prefix;
	int unix_socket_mode;          /* 0 = not given (0700) */
	char *repl_set;                /* --replSet / replication.replSetName */
	int64_t oplog_size_mb;         /* --oplogSize / replication.oplogSizeMB (0 = default) */
	bool auto_initiate;            /* --replSetAutoInitiate (Tamga): initiate once if needed */
	char *key_file;                /* --keyFile / security.keyFile (implies --auth) */
	bson_t *set_params;            /* --setParameter / setParameter: {name: "value"}, in order */
	bool enable_test_commands;     /* setParameter enableTestCommands (startup only) */
} opts_t;

static server_t *g_server;
static volatile sig_atomic_t g_signal;

static void
usage(FILE *f)
{
	fprintf(f,
	    "Usage: tamgad [options]\n"
	    "\n"
	    "General options:\n"
	    "  -h [ --help ]                  Show this usage information\n"
	    "  --version                      Show version information\n"
	    "  -f [ --config ] arg            Configuration file (YAML, mongod's option names)\n"
	    "  --port arg                     Specify port number - 27017 by default\n"
	    "  --bind_ip arg                  Comma separated list of ip addresses to listen on\n"
	    "                                 - localhost by default\n"
	    "  --bind_ip_all                  Bind to all ip addresses\n"
	    "  --maxConns arg                 Max number of simultaneous connections\n"
	    "  --networkMessageCompressors arg  Comma-separated list of compressors to use for\n"
	    "                                 network messages (snappy,zstd,zlib by default;\n"
	    "                                 'disabled' for none)\n"
	    "  --logpath arg                  Log file to send write to instead of stdout\n"
	    "  --logappend                    Append to logpath instead of over-writing\n"
	    "  --quiet                        Quieter output\n"
	    "  --pidfilepath arg              Full path to pidfile\n"
	    "  --auth                         Run with security (clients must authenticate)\n"
	    "  --keyFile arg                  Private key for cluster authentication (implies --auth)\n"
	    "  --noauth                       Run without security\n"
	    "  --noscripting                  Disable the scripting engine\n"
	    "  --tlsMode arg                  disabled, allowTLS, preferTLS or requireTLS\n"
	    "  --tlsCertificateKeyFile arg    PEM file with the server's certificate and key\n"
	    "  --tlsCertificateKeyFilePassword arg  Password of an encrypted key\n"
	    "  --tlsCAFile arg                CAs for client certificates (then required, unless\n"
	    "                                 --tlsAllowConnectionsWithoutCertificates)\n"
	    "  --tlsAllowInvalidCertificates  Accept client certificates that do not verify\n"
	    "  --tlsClusterFile arg           PEM a member presents connecting to other members\n"
	    "                                 (default: --tlsCertificateKeyFile)\n"
	    "  --tlsClusterPassword arg       Password of --tlsClusterFile's key\n"
	    "  --tlsClusterCAFile arg         CAs for the certificates of members connecting in\n"
	    "                                 (default: --tlsCAFile)\n"
	    "  --tlsAllowInvalidHostnames     Do not check other members' host names\n"
	    "  --clusterAuthMode arg          keyFile, sendKeyFile, sendX509 or x509 (members\n"
	    "                                 authenticate with --tlsClusterFile's certificate)\n"
	    "  --nounixsocket                 Disable listening on unix sockets\n"
	    "  --unixSocketPrefix arg         Alternative directory for UNIX domain sockets\n"
	    "                                 (defaults to /tmp)\n"
	    "  --filePermissions arg          Permissions to set on UNIX domain socket file -\n"
	    "                                 0700 by default\n"
	    "\n"
	    "Replication options:\n"
	    "  --replSet arg                  arg is <setname>: run as a member of that replica set\n"
	    "  --replSetAutoInitiate          (Tamga) initiate the set with the default\n"
	    "                                 configuration on start if it is not yet\n"
	    "  --oplogSize arg                Size to use (in MB) for replication op log. Default is\n"
	    "                                 5%% of disk space (i.e. large is good)\n"
	    "\n"
	    "Storage options:\n"
	    "  --dbpath arg                   Directory for datafiles - defaults to /data/db\n"
	    "  --storageEngine arg            wiredTiger (default) or inMemory (tests)\n"
	    "  --wiredTigerCacheSizeGB arg    WiredTiger cache size in GB (0.25 to 10000)\n"
	    "  --setParameter arg             Set a configurable parameter (name=value; repeatable)\n");
}

static void
print_version(void)
{
	printf("db version v%s\n", TAMGA_MONGODB_VERSION);
	printf("Build Info: {\n"
	    "    \"version\": \"%s\",\n"
	    "    \"tamgaVersion\": \"%s\",\n"
	    "    \"allocator\": \"system\",\n"
	    "    \"environment\": {\n"
	    "        \"distarch\": \"x86_64\",\n"
	    "        \"target_arch\": \"x86_64\"\n"
	    "    }\n"
	    "}\n", TAMGA_MONGODB_VERSION, TAMGA_VERSION);
}

static void
set_str(char **dst, const char *v)
{
	bson_free(*dst);
	*dst = bson_strdup(v);
}

static bool
parse_bool(const char *v)
{
	return strcmp(v, "true") == 0 || strcmp(v, "1") == 0 || strcmp(v, "yes") == 0;
}

static int
parse_int(const char *name, const char *v, int64_t lo, int64_t hi, int64_t *out)
{
	char *end;
	long long n;

	errno = 0;
	n = strtoll(v, &end, 10);
	if (errno != 0 || *v == '\0' || *end != '\0' || n < lo || n > hi) {
		fprintf(stderr, "Error parsing option \"%s\" as int: %s\n", name, v);
		return -1;
	}
	*out = n;
	return 0;
}

/*
 * Apply one option by its YAML (dotted) name.  Command-line flags are
 * mapped onto the same names, so both paths share the checks.
 */
static int
apply(opts_t *o, const char *name, const char *v)
{
	int64_t n;

	if (strcmp(name, "net.port") == 0) {
		if (parse_int("net.port", v, 0, 65535, &n) != 0)
			return -1;
		o->port = n == 0 ? -1 : (int)n;
	} else if (strcmp(name, "net.bindIp") == 0) {
		set_str(&o->bind_ip, v);
	} else if (strcmp(name, "net.bindIpAll") == 0) {
		o->bind_ip_all = parse_bool(v);
	} else if (strcmp(name, "net.maxIncomingConnections") == 0) {
		if (parse_int("net.maxIncomingConnections", v, 1, INT32_MAX, &n) != 0)
			return -1;
		o->max_conns = n;
	} else if (strcmp(name, "net.compression.compressors") == 0) {
		set_str(&o->compressors, v);
	} else if (strcmp(name, "net.ipv6") == 0) {
		/* accepted; tamgad listens on the addresses given */
	} else if (strcmp(name, "net.unixDomainSocket.enabled") == 0) {
		o->no_unix_socket = !parse_bool(v);
		o->unix_socket_given = true;
	} else if (strcmp(name, "net.unixDomainSocket.pathPrefix") == 0) {
		set_str(&o->unix_socket_prefix, v);
	} else if (strcmp(name, "net.unixDomainSocket.filePermissions") == 0) {
		/* an integer read as mongod reads one: "0700" is octal, "0x1c0" hex */
		char *end;
		long m;
		errno = 0;
		m = strtol(v, &end, 0);
		if (errno != 0 || *v == '\0' || *end != '\0' || m <= 0 || m > 07777) {
			fprintf(stderr, "Error parsing option \"net.unixDomainSocket.filePermissions\" as int: %s\n", v);
			return -1;
		}
		o->unix_socket_mode = (int)m;
	} else if (strcmp(name, "security.authorization") == 0) {
		if (strcmp(v, "enabled") == 0 || strcmp(v, "true") == 0)
			o->auth = true;
		else if (strcmp(v, "disabled") == 0 || strcmp(v, "false") == 0)
			o->auth = false;
		else {
			fprintf(stderr, "Error: security.authorization must be enabled or disabled\n");
			return -1;
		}
	} else if (strcmp(name, "net.tls.mode") == 0 || strcmp(name, "net.ssl.mode") == 0) {
		tls_mode_t m;
		if (tls_mode_parse(v, &m) != 0) {
			fprintf(stderr, "Error: unsupported value for %s: %s\n", name, v);
			return -1;
		}
		set_str(&o->tls_mode, v);
	} else if (strcmp(name, "net.tls.certificateKeyFile") == 0 || strcmp(name, "net.ssl.PEMKeyFile") == 0) {
		set_str(&o->tls_cert_key_file, v);
	} else if (strcmp(name, "net.tls.certificateKeyFilePassword") == 0 ||
	    strcmp(name, "net.ssl.PEMKeyPassword") == 0) {
		set_str(&o->tls_cert_key_password, v);
	} else if (strcmp(name, "net.tls.clusterFile") == 0 || strcmp(name, "net.ssl.clusterFile") == 0) {
		set_str(&o->tls_cluster_file, v);
	} else if (strcmp(name, "net.tls.clusterPassword") == 0 || strcmp(name, "net.ssl.clusterPassword") == 0) {
		set_str(&o->tls_cluster_password, v);
	} else if (strcmp(name, "net.tls.clusterCAFile") == 0 || strcmp(name, "net.ssl.clusterCAFile") == 0) {
		set_str(&o->tls_cluster_ca_file, v);
	} else if (strcmp(name, "net.tls.allowInvalidHostnames") == 0 ||
	    strcmp(name, "net.ssl.allowInvalidHostnames") == 0) {
		o->tls_allow_invalid_hostnames = parse_bool(v);
	} else if (strcmp(name, "security.clusterAuthMode") == 0) {
		set_str(&o->cluster_auth_mode, v);
		/* mongod: x.509 member authentication implies authorization */
		if (strcmp(v, "x509") == 0 || strcmp(v, "sendX509") == 0)
			o->auth = true;
	} else if (strcmp(name, "net.tls.clusterAuthX509.attributes") == 0) {
		set_str(&o->cluster_x509_attributes, v);
	} else if (strcmp(name, "net.tls.clusterAuthX509.extensionValue") == 0) {
		set_str(&o->cluster_x509_extension, v);
	} else if (strcmp(name, "net.tls.CAFile") == 0 || strcmp(name, "net.ssl.CAFile") == 0) {
		set_str(&o->tls_ca_file, v);
	} else if (strcmp(name, "net.tls.allowInvalidCertificates") == 0 ||
	    strcmp(name, "net.ssl.allowInvalidCertificates") == 0) {
		o->tls_allow_invalid_certs = parse_bool(v);
	} else if (strcmp(name, "net.tls.allowConnectionsWithoutCertificates") == 0 ||
	    strcmp(name, "net.ssl.allowConnectionsWithoutCertificates") == 0) {
		o->tls_allow_no_cert = parse_bool(v);
	} else if (strcmp(name, "replication.replSetName") == 0 || strcmp(name, "replication.replSet") == 0) {
		if (*v == '\0') {
			fprintf(stderr, "Error: replication.replSetName must not be empty\n");
			return -1;
		}
		set_str(&o->repl_set, v);
	} else if (strcmp(name, "replication.autoInitiate") == 0) {
		o->auto_initiate = parse_bool(v);
	} else if (strcmp(name, "replication.enableMajorityReadConcern") == 0) {
		/* accepted */
	} else if (strcmp(name, "security.keyFile") == 0) {
		/* read (and its rules checked) once logging is up: setup_key_file */
		set_str(&o->key_file, v);
		o->auth = true;
	} else if (strcmp(name, "security.javascriptEnabled") == 0) {
		/* --noscripting: $where, $function, $accumulator, mapReduce refuse
		 * with mongod's codes (js/js.h) */
		js_set_enabled(parse_bool(v));
	} else if (strcmp(name, "setParameter.jsHeapLimitMB") == 0) {
		js_set_heap_limit_mb((uint32_t)strtoul(v, NULL, 10));
	} else if (strcmp(name, "security.noauth") == 0) {
		o->auth = !parse_bool(v);
	} else if (strcmp(name, "storage.dbPath") == 0) {
		set_str(&o->dbpath, v);
	} else if (strcmp(name, "storage.engine") == 0) {
		if (strcmp(v, "inMemory") == 0)
			o->in_memory = true;
		else if (strcmp(v, "wiredTiger") != 0) {
			fprintf(stderr, "Error: unknown storage engine: %s\n", v);
			return -1;
		}
	} else if (strcmp(name, "storage.wiredTiger.engineConfig.cacheSizeGB") == 0) {
		char *end;
		double gb = strtod(v, &end);
		if (*v == '\0' || *end != '\0' || !(gb >= 0.25 && gb <= 10000)) {
			fprintf(stderr, "Error: storage.wiredTiger.engineConfig.cacheSizeGB must be a number between 0.25 and 10000\n");
			return -1;
		}
		bson_free(o->cache_size);
		o->cache_size = bson_strdup_printf("%lldM", (long long)(gb * 1024));
	} else if (strcmp(name, "storage.journal.enabled") == 0) {
		/* the journal is always on */
	} else if (strcmp(name, "systemLog.path") == 0) {
		set_str(&o->logpath, v);
	} else if (strcmp(name, "systemLog.destination") == 0) {
		if (strcmp(v, "file") != 0 && strcmp(v, "stdout") != 0) {
			fprintf(stderr, "Error: systemLog.destination must be file or stdout (syslog is not supported)\n");
			return -1;
		}
	} else if (strcmp(name, "systemLog.logAppend") == 0) {
		o->logappend = parse_bool(v);
	} else if (strcmp(name, "systemLog.quiet") == 0) {
		o->quiet = parse_bool(v);
	} else if (strcmp(name, "systemLog.verbosity") == 0) {
		/* accepted */
	} else if (strcmp(name, "processManagement.fork") == 0) {
		/* mongod's `--fork` flag arrives here as "true" */
		if (parse_bool(v)) {
			fprintf(stderr, "Error: processManagement.fork is not supported; run tamgad under a supervisor\n");
			return -1;
		}
	} else if (strcmp(name, "processManagement.pidFilePath") == 0) {
		set_str(&o->pidfile, v);
	} else if (strcmp(name, "replication.oplogSizeMB") == 0) {
		char *end;
		long long mb = strtoll(v, &end, 10);
		if (*v == '\0' || *end != '\0' || mb <= 0) {
			fprintf(stderr, "Error: bad --oplogSize, arg must be greater than 0, found: %s\n", v);
			return -1;
		}
		if (mb > 1024LL * 1024 * 1024) {
			fprintf(stderr, "Error: --oplogSize of %lldMB is too big\n", mb);
			return -1;
		}
		o->oplog_size_mb = mb;
	} else if (strncmp(name, "setParameter.", 13) == 0 && name[13] != '\0') {
		/* applied to the engine once it is open (cmd_admin_startup_parameters);
		 * enableTestCommands also goes to the engine options (the replica
		 * set's test commands read engine_options_t) */
		if (strcmp(name + 13, "enableTestCommands") == 0)
			o->enable_test_commands = strcmp(v, "1") == 0 || strcmp(v, "true") == 0;
		if (o->set_params == NULL)
			o->set_params = bson_new();
		BSON_APPEND_UTF8(o->set_params, name + 13, v);
	} else if (strcmp(name, "setParameter") == 0) {
		/* --setParameter name=value */
		const char *eq = strchr(v, '=');
		char *pname;
		int r;
		if (eq == NULL || eq == v) {
			fprintf(stderr, "Error parsing command line: the argument ('%s') for option '--setParameter' is invalid: expected name=value\n", v);
			return -1;
		}
		pname = bson_strdup_printf("setParameter.%.*s", (int)(eq - v), v);
		r = apply(o, pname, eq + 1);
		bson_free(pname);
		return r;
	} else {
		fprintf(stderr, "Error parsing YAML config file: Unrecognized option: %s\n", name);
		return -1;
	}
	return 0;
}

/* Strip a trailing comment and surrounding blanks; unquote. */
static char *
yaml_scalar(char *v)
{
	char *e;
	bool in_s = false, in_d = false;

	for (e = v; *e; e++) {
		if (*e == '\'' && !in_d)
			in_s = !in_s;
		else if (*e == '"' && !in_s)
			in_d = !in_d;
		else if (*e == '#' && !in_s && !in_d && (e == v || e[-1] == ' ' || e[-1] == '\t')) {
			*e = '\0';
			break;
		}
	}
	while (*v == ' ' || *v == '\t')
		v++;
	e = v + strlen(v);
	while (e > v && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	if (e - v >= 2 && ((v[0] == '"' && e[-1] == '"') || (v[0] == '\'' && e[-1] == '\''))) {
		e[-1] = '\0';
		v++;
	}
	return v;
}

/*
 * The YAML subset mongod's config files use: nested maps by indentation,
 * `key: scalar`, comments, quoted strings.  Flow lists ("[a, b]") are read
 * as their comma-joined text, which is what bindIp and compressors take.
 */
static int
load_config(opts_t *o, const char *path)
{
	FILE *f = fopen(path, "r");
	char line[4096];
	char *stack[16];
	int indent[16], depth = 0, lineno = 0, ret = 0;

	if (f == NULL) {
		fprintf(stderr, "Error reading config file: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		char *p = line, *colon, *key, *val;
		int ind = 0;

		lineno++;
		line[strcspn(line, "\n")] = '\0';
		while (*p == ' ') {
			p++;
			ind++;
		}
		if (*p == '\t') {
			fprintf(stderr, "Error parsing YAML config file: line %d: tabs are not allowed\n", lineno);
			ret = -1;
			break;
		}
		if (*p == '\0' || *p == '#' || strncmp(p, "---", 3) == 0)
			continue;
		colon = strchr(p, ':');
		if (colon == NULL) {
			fprintf(stderr, "Error parsing YAML config file: line %d: expected 'key: value'\n", lineno);
			ret = -1;
			break;
		}
		*colon = '\0';
		key = yaml_scalar(p);
		val = yaml_scalar(colon + 1);
		while (depth > 0 && indent[depth - 1] >= ind)
			bson_free(stack[--depth]);
		if (*val == '\0') {
			if (depth >= 16) {
				ret = -1;
				break;
			}
			stack[depth] = bson_strdup(key);
			indent[depth++] = ind;
			continue;
		} else {
			bson_string_t *full = bson_string_new("");
			int i;
			char *flat = NULL;
			for (i = 0; i < depth; i++) {
				bson_string_append(full, stack[i]);
				bson_string_append_c(full, '.');
			}
			bson_string_append(full, key);
			if (val[0] == '[') {
				/* flow list -> "a,b" */
				bson_string_t *j = bson_string_new("");
				char *q, *save = NULL, *tok;
				q = val + 1;
				q[strcspn(q, "]")] = '\0';
				for (tok = strtok_r(q, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
					if (j->len)
						bson_string_append_c(j, ',');
					bson_string_append(j, yaml_scalar(tok));
				}
				flat = bson_string_free(j, false);
				val = flat;
			}
			if (apply(o, full->str, val) != 0)
				ret = -1;
			bson_free(flat);
			bson_string_free(full, true);
			if (ret != 0)
				break;
		}
	}
	while (depth > 0)
		bson_free(stack[--depth]);
	fclose(f);
	return ret;
}

/* mongod's `parsed` document for getCmdLineOpts. */
static bson_t *
parsed_doc(const opts_t *o)
{
	bson_t *d = bson_new(), sub, sub2;

	if (o->config)
		BSON_APPEND_UTF8(d, "config", o->config);
	BSON_APPEND_DOCUMENT_BEGIN(d, "net", &sub);
	if (o->bind_ip_all)
		BSON_APPEND_BOOL(&sub, "bindIpAll", true);
	else
		BSON_APPEND_UTF8(&sub, "bindIp", o->bind_ip ? o->bind_ip : "127.0.0.1");
	if (o->compressors) {
		BSON_APPEND_DOCUMENT_BEGIN(&sub, "compression", &sub2);
		BSON_APPEND_UTF8(&sub2, "compressors", o->compressors);
		bson_append_document_end(&sub, &sub2);
	}
	if (o->max_conns)
		BSON_APPEND_INT32(&sub, "maxIncomingConnections", (int32_t)o->max_conns);
	if (o->tls_mode) {
		BSON_APPEND_DOCUMENT_BEGIN(&sub, "tls", &sub2);
		if (o->tls_ca_file)
			BSON_APPEND_UTF8(&sub2, "CAFile", o->tls_ca_file);
		if (o->tls_allow_no_cert)
			BSON_APPEND_BOOL(&sub2, "allowConnectionsWithoutCertificates", true);
		if (o->tls_allow_invalid_certs)
			BSON_APPEND_BOOL(&sub2, "allowInvalidCertificates", true);
		if (o->tls_allow_invalid_hostnames)
			BSON_APPEND_BOOL(&sub2, "allowInvalidHostnames", true);
		if (o->tls_cert_key_file)
			BSON_APPEND_UTF8(&sub2, "certificateKeyFile", o->tls_cert_key_file);
		if (o->tls_cert_key_password)
			BSON_APPEND_UTF8(&sub2, "certificateKeyFilePassword", "<password>");
		if (o->tls_cluster_ca_file)
			BSON_APPEND_UTF8(&sub2, "clusterCAFile", o->tls_cluster_ca_file);
		if (o->tls_cluster_file)
			BSON_APPEND_UTF8(&sub2, "clusterFile", o->tls_cluster_file);
		if (o->tls_cluster_password)
			BSON_APPEND_UTF8(&sub2, "clusterPassword", "<password>");
		BSON_APPEND_UTF8(&sub2, "mode", o->tls_mode);
		bson_append_document_end(&sub, &sub2);
	}
	BSON_APPEND_INT32(&sub, "port", o->port > 0 ? o->port : (o->port == 0 ? 27017 : 0));
	if (o->unix_socket_given || o->unix_socket_prefix || o->unix_socket_mode) {
		BSON_APPEND_DOCUMENT_BEGIN(&sub, "unixDomainSocket", &sub2);
		if (o->unix_socket_given)
			BSON_APPEND_BOOL(&sub2, "enabled", !o->no_unix_socket);
		if (o->unix_socket_mode)
			BSON_APPEND_INT32(&sub2, "filePermissions", o->unix_socket_mode);
		if (o->unix_socket_prefix)
			BSON_APPEND_UTF8(&sub2, "pathPrefix", o->unix_socket_prefix);
		bson_append_document_end(&sub, &sub2);
	}
	bson_append_document_end(d, &sub);
	if (o->repl_set || o->oplog_size_mb) {
		BSON_APPEND_DOCUMENT_BEGIN(d, "replication", &sub);
		if (o->oplog_size_mb)
			BSON_APPEND_INT32(&sub, "oplogSizeMB", (int32_t)o->oplog_size_mb);
		if (o->repl_set)
			BSON_APPEND_UTF8(&sub, "replSet", o->repl_set);
		bson_append_document_end(d, &sub);
	}
	if (o->auth || o->cluster_auth_mode) {
		BSON_APPEND_DOCUMENT_BEGIN(d, "security", &sub);
		if (o->auth)
			BSON_APPEND_UTF8(&sub, "authorization", "enabled");
		if (o->cluster_auth_mode)
			BSON_APPEND_UTF8(&sub, "clusterAuthMode", o->cluster_auth_mode);
		if (o->key_file)
			BSON_APPEND_UTF8(&sub, "keyFile", o->key_file);
		bson_append_document_end(d, &sub);
	}
	if (o->pidfile) {
		BSON_APPEND_DOCUMENT_BEGIN(d, "processManagement", &sub);
		BSON_APPEND_UTF8(&sub, "pidFilePath", o->pidfile);
		bson_append_document_end(d, &sub);
	}
	if (o->set_params != NULL)
		BSON_APPEND_DOCUMENT(d, "setParameter", o->set_params);
	BSON_APPEND_DOCUMENT_BEGIN(d, "storage", &sub);
	BSON_APPEND_UTF8(&sub, "dbPath", o->dbpath);
	if (o->in_memory)
		BSON_APPEND_UTF8(&sub, "engine", "inMemory");
	bson_append_document_end(d, &sub);
	if (o->logpath || o->quiet) {
		BSON_APPEND_DOCUMENT_BEGIN(d, "systemLog", &sub);
		if (o->logpath) {
			BSON_APPEND_UTF8(&sub, "destination", "file");
			if (o->logappend)
				BSON_APPEND_BOOL(&sub, "logAppend", true);
			BSON_APPEND_UTF8(&sub, "path", o->logpath);
		}
		if (o->quiet)
			BSON_APPEND_BOOL(&sub, "quiet", true);
		bson_append_document_end(d, &sub);
	}
	return d;
}

/* Command-line flags, mapped to the YAML names. */
static const struct flag {
	const char *flag;
	const char *name;      /* YAML name, or NULL for special handling */
	bool takes_arg;
	const char *value;     /* a switch's value for name (NULL = "true") */
} flags[] = {
	{"--port", "net.port", true},
	{"--bind_ip", "net.bindIp", true},
	{"--bind_ip_all", "net.bindIpAll", false},
	{"--ipv6", "net.ipv6", false},
	{"--maxConns", "net.maxIncomingConnections", true},
	{"--networkMessageCompressors", "net.compression.compressors", true},
	{"--dbpath", "storage.dbPath", true},
	{"--storageEngine", "storage.engine", true},
	{"--wiredTigerCacheSizeGB", "storage.wiredTiger.engineConfig.cacheSizeGB", true},
	{"--logpath", "systemLog.path", true},
	{"--logappend", "systemLog.logAppend", false},
	{"--quiet", "systemLog.quiet", false},
	{"--pidfilepath", "processManagement.pidFilePath", true},
	{"--fork", "processManagement.fork", false},
	{"--auth", "security.authorization", false},
	{"--keyFile", "security.keyFile", true},
	{"--replSet", "replication.replSetName", true},
	{"--replSetAutoInitiate", "replication.autoInitiate", false},
	{"--oplogSize", "replication.oplogSizeMB", true},
	{"--noauth", "security.noauth", false},
	{"--noscripting", "security.javascriptEnabled", false, "false"},
	{"--tlsMode", "net.tls.mode", true},
	{"--tlsCertificateKeyFile", "net.tls.certificateKeyFile", true},
	{"--tlsCertificateKeyFilePassword", "net.tls.certificateKeyFilePassword", true},
	{"--tlsCAFile", "net.tls.CAFile", true},
	{"--tlsClusterFile", "net.tls.clusterFile", true},
	{"--tlsClusterPassword", "net.tls.clusterPassword", true},
	{"--tlsClusterCAFile", "net.tls.clusterCAFile", true},
	{"--tlsAllowInvalidHostnames", "net.tls.allowInvalidHostnames", false},
	{"--clusterAuthMode", "security.clusterAuthMode", true},
	{"--tlsClusterAuthX509Attributes", "net.tls.clusterAuthX509.attributes", true},
	{"--tlsClusterAuthX509ExtensionValue", "net.tls.clusterAuthX509.extensionValue", true},
	{"--tlsAllowInvalidCertificates", "net.tls.allowInvalidCertificates", false},
	{"--tlsAllowConnectionsWithoutCertificates", "net.tls.allowConnectionsWithoutCertificates", false},
	{"--sslMode", "net.ssl.mode", true},
	{"--sslPEMKeyFile", "net.ssl.PEMKeyFile", true},
	{"--sslPEMKeyPassword", "net.ssl.PEMKeyPassword", true},
	{"--sslCAFile", "net.ssl.CAFile", true},
	{"--sslClusterFile", "net.ssl.clusterFile", true},
	{"--sslClusterPassword", "net.ssl.clusterPassword", true},
	{"--sslClusterCAFile", "net.ssl.clusterCAFile", true},
	{"--sslAllowInvalidHostnames", "net.ssl.allowInvalidHostnames", false},
	{"--sslAllowInvalidCertificates", "net.ssl.allowInvalidCertificates", false},
	{"--sslAllowConnectionsWithoutCertificates", "net.ssl.allowConnectionsWithoutCertificates", false},
	{"--nounixsocket", "net.unixDomainSocket.enabled", false, "false"},
	{"--unixSocketPrefix", "net.unixDomainSocket.pathPrefix", true},
	{"--filePermissions", "net.unixDomainSocket.filePermissions", true},
	{"--setParameter", "setParameter", true},
};

static int
parse_args(opts_t *o, int argc, char **argv)
{
	int i;
	size_t k;

	/* the config file first, so flags override it */
	for (i = 1; i < argc; i++) {
		if ((strcmp(argv[i], "--config") == 0 || strcmp(argv[i], "-f") == 0) && i + 1 < argc) {
			set_str(&o->config, argv[i + 1]);
			if (load_config(o, argv[i + 1]) != 0)
				return -1;
		} else if (strncmp(argv[i], "--config=", 9) == 0) {
			set_str(&o->config, argv[i] + 9);
			if (load_config(o, argv[i] + 9) != 0)
				return -1;
		}
	}
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *eq = strchr(a, '=');
		size_t alen = eq ? (size_t)(eq - a) : strlen(a);
		bool matched = false;

		if (strcmp(a, "--config") == 0 || strcmp(a, "-f") == 0) {
			i++;
			continue;
		}
		if (strncmp(a, "--config=", 9) == 0)
			continue;
		for (k = 0; k < sizeof(flags) / sizeof(flags[0]); k++) {
			if (strlen(flags[k].flag) != alen || strncmp(flags[k].flag, a, alen) != 0)
				continue;
			matched = true;
			if (flags[k].takes_arg) {
				const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
				if (v == NULL) {
					fprintf(stderr, "Error parsing command line: the required argument for option '%s' is missing\n",
					    flags[k].flag);
					return -1;
				}
				if (apply(o, flags[k].name, v) != 0)
					return -1;
			} else if (apply(o, flags[k].name, eq ? eq + 1 : flags[k].value ? flags[k].value : "true") != 0) {
				return -1;
			}
		}
		if (!matched) {
			fprintf(stderr, "Error parsing command line: unrecognised option '%s'\n", a);
			fprintf(stderr, "try 'tamgad --help' for more information\n");
			return -1;
		}
	}
	return 0;
}

static void
on_signal(int sig)
{
	g_signal = sig;
	if (g_server != NULL)
		server_stop(g_server);
}

static void log_error(int id, const char *msg, const terr_t *err);

/*
 * --keyFile: read the key with mongod's rules (auth/auth_member.h) and
 * install it for member authentication.  On a refusal, mongod's lines:
 * I ACCESS 20254 "Read security file failed" with the error (or E ACCESS
 * 20255 for the length), then F CONTROL 20575 "Error creating service
 * context"; -1 (mongod exits 1).
 */
static int
setup_key_file(const char *path)
{
	terr_t err = TERR_INIT;
	auth_keys_t keys = {NULL, 0};
	const char *key = NULL;
	bson_t attr;
	int ret = 0;

	if (auth_keyfile_read_keys(path, &keys, &err) != 0) {
		bson_t e;
		char buf[32];
		bson_init(&attr);
		BSON_APPEND_DOCUMENT_BEGIN(&attr, "error", &e);
		BSON_APPEND_INT32(&e, "code", err.code);
		BSON_APPEND_UTF8(&e, "codeName", terr_code_name(err.code, buf));
		BSON_APPEND_UTF8(&e, "errmsg", err.msg ? err.msg : "");
		bson_append_document_end(&attr, &e);
		tlog('I', "ACCESS", 20254, "Read security file failed", &attr);
		bson_destroy(&attr);
		fprintf(stderr, "tamgad: %s\n", err.msg ? err.msg : "cannot read the key file");
		ret = -1;
	} else if (keys.n > AUTH_KEYS_MAX) {
		/* key rollover takes two keys at most, as mongod */
		bson_init(&attr);
		BSON_APPEND_INT64(&attr, "numKeys", (int64_t)keys.n);
		BSON_APPEND_UTF8(&attr, "filename", path);
		tlog('E', "ACCESS", 20258, "Only two keys are supported in the security key file", &attr);
		bson_destroy(&attr);
		fprintf(stderr, "tamgad: only two keys are supported in the security key file, %zu are specified in %s\n",
		    keys.n, path);
		ret = -1;
	} else if ((key = keys.n > 1 && !auth_keyfile_length_ok(keys.key[1]) ? keys.key[1] : keys.key[0]) != NULL &&
	    !auth_keyfile_length_ok(key)) {
		bson_init(&attr);
		BSON_APPEND_UTF8(&attr, "filename", path);
		BSON_APPEND_INT64(&attr, "size", (int64_t)strlen(key));
		BSON_APPEND_INT64(&attr, "minimumLength", AUTH_KEY_MIN_LEN);
		BSON_APPEND_INT64(&attr, "maximumLength", AUTH_KEY_MAX_LEN);
		tlog('E', "ACCESS", 20255, "Security key size is out range", &attr);
		bson_destroy(&attr);
		fprintf(stderr, "tamgad: security key in %s has length %zu, must be between %d and %d chars\n", path,
		    strlen(key), AUTH_KEY_MIN_LEN, AUTH_KEY_MAX_LEN);
		ret = -1;
	} else if (auth_member_keys_set((const char *const *)keys.key, keys.n, &err) != 0) {
		bson_init(&attr);
		BSON_APPEND_UTF8(&attr, "error", err.msg ? err.msg : "");
		tlog('E', "ACCESS", 20256, "Could not prep security key file for SCRAM-SHA-256", &attr);
		bson_destroy(&attr);
		fprintf(stderr, "tamgad: %s\n", err.msg ? err.msg : "cannot use the key");
		ret = -1;
	}
	if (ret != 0) {
		bson_init(&attr);
		BSON_APPEND_UTF8(&attr, "error", "Location5579201: Unable to acquire security key[s]");
		tlog('F', "CONTROL", 20575, "Error creating service context", &attr);
		bson_destroy(&attr);
	}
	auth_keys_clear(&keys);
	terr_clear(&err);
	return ret;
}

/*
 * --clusterAuthMode as mongod validates it at startup (BadValue: "Invalid
 * clusterAuthMode '<v>'", "need to enable TLS via the tlsMode flag" for
 * the modes that use TLS, "cannot have x.509 cluster authentication in
 * allowTLS mode"), and "Specifying a tlsClusterCAFile requires a tlsCAFile
 * also be specified"; the x.509 modes need --tlsCAFile and a server
 * certificate; net.tls.clusterAuthX509.attributes/extensionValue need a
 * mode that takes member certificates (mongod's messages), the two together
 * or an outgoing certificate without the attributes are refused
 * (auth_x509_set_member_rule).  Then the
 * mode and the certificates' subjects for x.509 authentication
 * (auth/auth_x509.h) and TLS between members from the TLS options
 * (repl/member_tls.h).  -1 after printing the reason (exit 2).
 */
static int
setup_member_tls(const opts_t *o)
{
	static const char *const modes[] = {"keyFile", "sendKeyFile", "sendX509", "x509"};
	tls_mode_t m = TLS_MODE_DISABLED;
	repl_member_tls_options_t mo;
	terr_t err = TERR_INIT;
	int cam = 0;

	if (o->tls_mode != NULL)
		tls_mode_parse(o->tls_mode, &m);
	if (o->cluster_auth_mode != NULL) {
		cam = -1;
		for (int i = 0; i < 4; i++)
			if (strcmp(o->cluster_auth_mode, modes[i]) == 0)
				cam = i;
		if (cam < 0) {
			fprintf(stderr, "BadValue: Invalid clusterAuthMode '%s'\n", o->cluster_auth_mode);
			return -1;
		}
		if (cam > 0 && m == TLS_MODE_DISABLED) {
			fprintf(stderr, "BadValue: need to enable TLS via the tlsMode flag\n");
			return -1;
		}
		if (cam >= 2 && m == TLS_MODE_ALLOW) {
			fprintf(stderr, "BadValue: cannot have x.509 cluster authentication in allowTLS mode\n");
			return -1;
		}
		if (cam >= 2 && (o->tls_ca_file == NULL || o->tls_cert_key_file == NULL)) {
			/* Tamga's: without a CA no client certificate is asked for,
			 * without a server certificate there is no member rule */
			fprintf(stderr, "BadValue: --clusterAuthMode %s needs --tlsCAFile and --tlsCertificateKeyFile "
			    "(member certificates are verified against the CA and matched against the server's own)\n",
			    o->cluster_auth_mode);
			return -1;
		}
	}
	/* mongod's storeSSLServerOptions: the member rules need a mode that
	 * takes member certificates (sendKeyFile, sendX509, x509) */
	if (o->cluster_x509_extension != NULL && cam < 1) {
		fprintf(stderr, "BadValue: net.tls.clusterAuthX509.extensionValue requires a clusterAuthMode which "
		    "allows for usage of X509\n");
		return -1;
	}
	if (o->cluster_x509_attributes != NULL && cam < 1) {
		fprintf(stderr, "BadValue: Cannot set clusterAuthX509.attributes when clusterAuthMode does not allow "
		    "X.509\n");
		return -1;
	}
	{
		auth_cluster_mode_t am = AUTH_CLUSTER_UNDEFINED;
		if (o->cluster_auth_mode != NULL)
			auth_cluster_mode_parse(o->cluster_auth_mode, &am);
		else if (o->key_file != NULL)
			am = AUTH_CLUSTER_KEYFILE;
		auth_cluster_mode_set(am);
		if (m != TLS_MODE_DISABLED) {
			if (auth_x509_set_server_certificate(o->tls_cert_key_file, &err) != 0 ||
			    auth_x509_set_cluster_certificate(o->tls_cluster_file != NULL ? o->tls_cluster_file :
			    o->tls_cert_key_file, &err) != 0) {
				fprintf(stderr, "tamgad: %s\n", err.msg ? err.msg : "cannot read the certificate");
				terr_clear(&err);
				return -1;
			}
		}
		if (auth_x509_set_member_rule(o->cluster_x509_attributes, o->cluster_x509_extension, &err) != 0) {
			fprintf(stderr, "BadValue: %s\n", err.msg ? err.msg : "invalid net.tls.clusterAuthX509");
			terr_clear(&err);
			return -1;
		}
	}
	if (m != TLS_MODE_DISABLED && o->tls_cluster_ca_file != NULL && o->tls_ca_file == NULL) {
		fprintf(stderr, "BadValue: Specifying a tlsClusterCAFile requires a tlsCAFile also be specified\n");
		return -1;
	}
	memset(&mo, 0, sizeof(mo));
	mo.mode = m == TLS_MODE_ALLOW ? REPL_MEMBER_TLS_ALLOW : m == TLS_MODE_PREFER ? REPL_MEMBER_TLS_PREFER :
	    m == TLS_MODE_REQUIRE ? REPL_MEMBER_TLS_REQUIRE : REPL_MEMBER_TLS_OFF;
	mo.certificate_key_file = o->tls_cert_key_file;
	mo.certificate_key_password = o->tls_cert_key_password;
	mo.cluster_file = o->tls_cluster_file;
	mo.cluster_password = o->tls_cluster_password;
	mo.ca_file = o->tls_ca_file;
	mo.cluster_ca_file = o->tls_cluster_ca_file;
	mo.allow_invalid_certificates = o->tls_allow_invalid_certs;
	mo.allow_invalid_hostnames = o->tls_allow_invalid_hostnames;
	if (repl_member_tls_configure(&mo, &err) != 0) {
		log_error(23248, "Failed to set up TLS", &err);
		fprintf(stderr, "tamgad: %s\n", err.msg ? err.msg : "cannot set up TLS between members");
		terr_clear(&err);
		return -1;
	}
	return 0;
}

static void
log_error(int id, const char *msg, const terr_t *err)
{
	bson_t attr;
	char buf[32];
	bson_t e;

	bson_init(&attr);
	BSON_APPEND_DOCUMENT_BEGIN(&attr, "error", &e);
	BSON_APPEND_INT32(&e, "code", err->code);
	BSON_APPEND_UTF8(&e, "codeName", terr_code_name(err->code, buf));
	BSON_APPEND_UTF8(&e, "errmsg", err->msg ? err->msg : "");
	bson_append_document_end(&attr, &e);
	tlog('E', "CONTROL", id, msg, &attr);
	bson_destroy(&attr);
}

/* --replSetAutoInitiate: replSetInitiate with the default configuration
 * unless the set is initiated already (what `make run` uses). */
static int
auto_initiate(engine_t *engine)
{
	client_info_t ci = {0, NULL, true};
	client_t *cl = client_new(engine, &ci);
	bson_t cmd, reply;
	terr_t err = TERR_INIT;
	int rc;

	bson_init(&cmd);
	BSON_APPEND_INT32(&cmd, "replSetInitiate", 1);
	rc = engine_run_command(engine, cl, "admin", &cmd, &reply, &err);
	if (rc != 0 && rc != TERR_ALREADY_INITIALIZED)
		log_error(21439, "replSetInitiate failed", &err);
	bson_destroy(&cmd);
	bson_destroy(&reply);
	terr_clear(&err);
	client_free(cl);
	return rc == 0 || rc == TERR_ALREADY_INITIALIZED ? 0 : -1;
}

int
main(int argc, char **argv)
{
	opts_t o;
	engine_options_t eo;
	engine_t *engine = NULL;
	server_options_t so;
	terr_t err = TERR_INIT;
	bson_t *parsed = NULL, attr;
	cmd_admin_process_t proc;
	struct sigaction sa;
	struct stat st;
	tls_server_t *tls = NULL;
	tls_options_t to;
	char host[256];
	int i, code = 0;

	memset(&o, 0, sizeof(o));
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		}
		if (strcmp(argv[i], "--version") == 0) {
			print_version();
			return 0;
		}
	}
	if (parse_args(&o, argc, argv) != 0) {
		code = EXIT_BADOPTIONS;
		goto out;
	}
	if (o.dbpath == NULL)
		o.dbpath = bson_strdup("/data/db");

	if (tlog_open(o.logpath, o.logappend, o.quiet) != 0) {
		fprintf(stderr, "Failed to open log file %s: %s\n", o.logpath, strerror(errno));
		code = EXIT_BADOPTIONS;
		goto out;
	}
	tlog_set_ctx("main");
	if (o.logpath != NULL)
		tlog('I', "CONTROL", 20698, "***** SERVER RESTARTED *****", NULL);
	tlog_set_ctx("initandlisten");
	if (gethostname(host, sizeof(host)) != 0)
		strcpy(host, "localhost");
	host[sizeof(host) - 1] = '\0';
	bson_init(&attr);
	BSON_APPEND_INT64(&attr, "pid", (int64_t)getpid());
	BSON_APPEND_INT32(&attr, "port", o.port > 0 ? o.port : 27017);
	BSON_APPEND_UTF8(&attr, "dbPath", o.dbpath);
	BSON_APPEND_UTF8(&attr, "architecture", "64-bit");
	BSON_APPEND_UTF8(&attr, "host", host);
	tlog('I', "CONTROL", 4615611, "MongoDB starting", &attr);
	bson_destroy(&attr);
	bson_init(&attr);
	BSON_APPEND_UTF8(&attr, "version", TAMGA_MONGODB_VERSION);
	BSON_APPEND_UTF8(&attr, "tamgaVersion", TAMGA_VERSION);
	tlog('I', "CONTROL", 23403, "Build Info", &attr);
	bson_destroy(&attr);
	parsed = parsed_doc(&o);
	bson_init(&attr);
	BSON_APPEND_DOCUMENT(&attr, "options", parsed);
	tlog('I', "CONTROL", 21951, "Options set by command line", &attr);
	bson_destroy(&attr);

	if (o.key_file != NULL && setup_key_file(o.key_file) != 0) {
		code = EXIT_FAILURE;
		goto out;
	}
	if (setup_member_tls(&o) != 0) {
		code = EXIT_BADOPTIONS;
		goto out;
	}

	memset(&proc, 0, sizeof(proc));
	proc.argc = argc;
	proc.argv = (const char *const *)argv;
	proc.parsed = parsed;
	proc.max_conns = o.max_conns;

	if (!o.in_memory && (stat(o.dbpath, &st) != 0 || !S_ISDIR(st.st_mode))) {
		terr_set(&err, TERR_NON_EXISTENT_PATH,
		    "Data directory %s not found. Create the missing directory or specify another path using "
		    "(1) the --dbpath command line option, or (2) by adding the 'storage.dbPath' option in the "
		    "configuration file.", o.dbpath);
		log_error(20557, "DBException in initAndListen, terminating", &err);
		fprintf(stderr, "tamgad: %s\n", err.msg);
		code = EXIT_UNCAUGHT;
		goto out;
	}
	memset(&eo, 0, sizeof(eo));
	eo.storage.create = o.in_memory;
	eo.storage.in_memory = o.in_memory;
	eo.auth = o.auth;
	eo.repl_set_name = o.repl_set;
	eo.enable_test_commands = o.enable_test_commands;
	eo.oplog_size_mb = (double)o.oplog_size_mb;
	eo.storage.cache_size = o.cache_size;
	if (engine_open(o.dbpath, &eo, &engine, &err) != 0) {
		log_error(20557, "DBException in initAndListen, terminating", &err);
		fprintf(stderr, "tamgad: %s\n", err.msg ? err.msg : "cannot open the data folder");
		code = EXIT_UNCAUGHT;
		goto out;
	}
	if (cmd_admin_startup_parameters(engine, o.set_params, &err) != 0) {
		fprintf(stderr, "%s\ntry '%s --help' for more information\n", err.msg, argv[0]);
		code = EXIT_BADOPTIONS;
		goto out;
	}
	if (engine_server_dbs_init(engine, NULL, &err) != 0) {
		log_error(20557, "DBException in initAndListen, terminating", &err);
		code = EXIT_UNCAUGHT;
		goto out;
	}
	if (!o.auth)
		tlog('W', "CONTROL", 22120,
		    "Access control is not enabled for the database. Read and write access to data and configuration is unrestricted",
		    NULL);
	tlog_startup_done();

	memset(&to, 0, sizeof(to));
	to.mode = TLS_MODE_DISABLED;
	if (o.tls_mode != NULL)
		tls_mode_parse(o.tls_mode, &to.mode);
	to.certificate_key_file = o.tls_cert_key_file;
	to.certificate_key_password = o.tls_cert_key_password;
	/* mongod: certificates of connecting clients (members among them) are
	 * validated with --tlsClusterCAFile when it is given, else --tlsCAFile */
	to.ca_file = o.tls_cluster_ca_file != NULL ? o.tls_cluster_ca_file : o.tls_ca_file;
	to.require_client_cert = to.ca_file != NULL && !o.tls_allow_no_cert;
	to.allow_invalid_certificates = o.tls_allow_invalid_certs;
	if (tls_server_new(&to, &tls, &err) != 0) {
		log_error(23248, "Failed to set up TLS", &err);
		fprintf(stderr, "tamgad: %s\n", err.msg ? err.msg : "cannot set up TLS");
		code = EXIT_BADOPTIONS;
		goto out;
	}

	memset(&so, 0, sizeof(so));
	so.tls = tls;
	so.bind_ip = o.bind_ip;
	so.bind_ip_all = o.bind_ip_all;
	so.port = o.port;
	so.max_conns = o.max_conns;
	so.compressors = o.compressors;
	so.quiet = o.quiet;
	so.unix_socket = !o.no_unix_socket;
	so.unix_socket_prefix = o.unix_socket_prefix;
	so.unix_socket_mode = o.unix_socket_mode;
	if (server_start(engine, &so, &g_server, &err) != 0) {
		log_error(22856, "Error setting up listener", &err);
		fprintf(stderr, "tamgad: %s\n", err.msg);
		code = EXIT_NET_ERROR;
		goto out;
	}
	proc.max_conns = server_max_conns(g_server);
	cmd_admin_set_process(&proc);
	if (o.repl_set != NULL) {
		/* the member host this node answers at: the first bind address
		 * (127.0.0.1 for "localhost" or all addresses) and the port */
		char self[300], addr[256];
		const char *b = o.bind_ip_all || o.bind_ip == NULL ? "127.0.0.1" : o.bind_ip;
		size_t n = strcspn(b, ",");
		if (n >= sizeof(addr))
			n = sizeof(addr) - 1;
		memcpy(addr, b, n);
		addr[n] = '\0';
		if (strcmp(addr, "0.0.0.0") == 0 || strcmp(addr, "localhost") == 0 || addr[0] == '/')
			bson_strncpy(addr, "127.0.0.1", sizeof(addr));
		snprintf(self, sizeof(self), "%s:%d", addr, server_port(g_server));
		engine_set_self_host(engine, self);
		if (o.auto_initiate && auto_initiate(engine) != 0) {
			code = EXIT_UNCAUGHT;
			goto out;
		}
	}
	if (o.pidfile != NULL) {
		FILE *pf = fopen(o.pidfile, "w");
		if (pf != NULL) {
			fprintf(pf, "%ld\n", (long)getpid());
			fclose(pf);
		}
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	server_run(g_server);

	if (g_signal != 0) {
		tlog_set_ctx("SignalHandler");
		bson_init(&attr);
		BSON_APPEND_INT32(&attr, "signal", (int32_t)g_signal);
		BSON_APPEND_UTF8(&attr, "error", strsignal((int)g_signal));
		tlog('I', "CONTROL", 23377, "Received signal", &attr);
		bson_destroy(&attr);
	}
	tlog_set_ctx("initandlisten");
	tlog('I', "STORAGE", 4784930, "Shutting down the storage engine", NULL);
out:
	if (g_server != NULL) {
		server_t *s = g_server;
		g_server = NULL;
		server_free(s);
	}
	if (engine != NULL)
		engine_close(engine);
	if (tls != NULL)
		tls_server_free(tls);
	if (code == 0 || engine != NULL || parsed != NULL) {
		bson_init(&attr);
		BSON_APPEND_INT32(&attr, "exitCode", code);
		tlog('I', "CONTROL", 23138, "Shutting down", &attr);
		bson_destroy(&attr);
	}
	cmd_admin_clear_process();
	if (parsed)
		bson_destroy(parsed);
	tlog_close();
	terr_clear(&err);
	bson_free(o.config);
	bson_free(o.bind_ip);
	bson_free(o.dbpath);
	bson_free(o.logpath);
	bson_free(o.compressors);
	bson_free(o.pidfile);
	bson_free(o.cache_size);
	bson_free(o.tls_mode);
	bson_free(o.tls_cert_key_file);
	bson_free(o.tls_cert_key_password);
	bson_free(o.tls_ca_file);
	bson_free(o.tls_cluster_file);
	bson_free(o.tls_cluster_password);
	bson_free(o.tls_cluster_ca_file);
	bson_free(o.cluster_auth_mode);
	bson_free(o.unix_socket_prefix);
	bson_free(o.repl_set);
	bson_free(o.key_file);
	bson_free(o.cluster_x509_attributes);
	bson_free(o.cluster_x509_extension);
	if (o.set_params != NULL)
		bson_destroy(o.set_params);
	return code;
}
