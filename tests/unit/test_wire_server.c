/*
 * test_wire_server.c -- the server over a real (in-memory) engine: one
 * message in, one reply out through conn_handle_message (hello with
 * compression negotiation, OP_QUERY handshake, document sequences,
 * moreToCome, shutdown), the admin commands' reply shapes, and a real
 * listener served by server_run on a loopback port.
 */
#include "tt.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "commands/cmd_admin.h"
#include "commands/commands.h"
#include "common/version.h"
#include "server/server_private.h"
#include "server/wire.h"

static engine_t *eng;
static server_t *srv;
static client_t *cl;
static wire_compression_t comp;
static char *dir;

static void
setup(void)
{
	engine_options_t eo;
	server_options_t so;
	client_info_t ci = {7, "127.0.0.1:5555", true};
	terr_t err = TERR_INIT;

	memset(&eo, 0, sizeof(eo));
	eo.storage.create = true;
	eo.storage.in_memory = true;
	dir = tt_tmpdir("wire-server");
	if (engine_open(dir, &eo, &eng, &err) != 0) {
		fprintf(stderr, "engine_open: %s\n", err.msg);
		abort();
	}
	memset(&so, 0, sizeof(so));
	so.port = -1;
	so.quiet = true;
	so.compressors = "zstd,zlib";
	if (server_start(eng, &so, &srv, &err) != 0) {
		fprintf(stderr, "server_start: %s\n", err.msg);
		abort();
	}
	cl = client_new(eng, &ci);
}

static void
teardown(void)
{
	client_free(cl);
	server_free(srv);
	engine_close(eng);
	tt_rmdir(dir);
	bson_free(dir);
	cmd_admin_clear_process();
}

/* Send cmd (JSON) as OP_MSG with flags; returns the reply document (NULL if
 * none) and whether the connection should close. */
static bson_t *
roundtrip(const char *json, uint32_t flags, bool *closed)
{
	bson_t *cmd = tt_json(json);
	wire_buf_t req, rep;
	terr_t err = TERR_INIT;
	bson_t *out = NULL;
	wire_request_t r;
	conn_exhaust_t ex = {0};
	bool cl_after = false;

	wire_msg_build(1, 0, flags, cmd, WIRE_COMPRESSOR_NONE, &req, &err);
	conn_handle_message(srv, cl, &comp, req.data, req.len, &rep, &cl_after, &ex);
	conn_exhaust_end(&ex);
	if (rep.data != NULL) {
		if (wire_request_parse(rep.data, rep.len, &r, &err) == 0 || r.opcode == WIRE_OP_MSG) {
			/* replies have no $db: read the body directly */
			uint32_t blen;
			if (wire_bson_validate(rep.data + 21, rep.len - 21, &blen, &err) == 0)
				out = bson_new_from_data(rep.data + 21, blen);
		}
		wire_request_clear(&r);
		terr_clear(&err);
		bson_free(rep.data);
	}
	if (closed)
		*closed = cl_after;
	bson_free(req.data);
	bson_destroy(cmd);
	return out;
}

static int64_t
get_int(const bson_t *d, const char *path)
{
	bson_iter_t it, f;

	if (!bson_iter_init(&it, d) || !bson_iter_find_descendant(&it, path, &f))
		return -999999;
	return bson_iter_as_int64(&f);
}

static const char *
get_str(const bson_t *d, const char *path)
{
	bson_iter_t it, f;

	if (!bson_iter_init(&it, d) || !bson_iter_find_descendant(&it, path, &f) || !BSON_ITER_HOLDS_UTF8(&f))
		return NULL;
	return bson_iter_utf8(&f, NULL);
}

static void
test_hello(void)
{
	bson_t *r = roundtrip("{\"hello\": 1, \"helloOk\": true, \"compression\": [\"snappy\", \"zlib\", \"zstd\"],"
	    " \"client\": {\"driver\": {\"name\": \"t\", \"version\": \"1\"}}, \"$db\": \"admin\"}", 0, NULL);
	bson_iter_t it;
	const char *last = NULL;

	TT_ASSERT(r != NULL);
	if (r == NULL)
		return;
	TT_EQ_INT(get_int(r, "ok"), 1);
	TT_EQ_INT(get_int(r, "isWritablePrimary"), 1);
	TT_EQ_INT(get_int(r, "helloOk"), 1);
	TT_EQ_INT(get_int(r, "connectionId"), 7);
	TT_EQ_INT(get_int(r, "maxWireVersion"), TAMGA_MAX_WIRE_VERSION);
	TT_EQ_INT(get_int(r, "maxMessageSizeBytes"), 48000000);
	TT_EQ_INT(get_int(r, "logicalSessionTimeoutMinutes"), 30);
	/* the client's order, filtered by the server's enabled list */
	TT_EQ_STR(get_str(r, "compression.0"), "zlib");
	TT_EQ_STR(get_str(r, "compression.1"), "zstd");
	TT_ASSERT(get_str(r, "compression.2") == NULL);
	bson_iter_init(&it, r);
	while (bson_iter_next(&it))
		last = bson_iter_key(&it);
	TT_EQ_STR(last, "ok");
	bson_destroy(r);
	TT_ASSERT(client_metadata(cl) != NULL);

	/* metadata only once per connection */
	r = roundtrip("{\"hello\": 1, \"client\": {\"driver\": {\"name\": \"t\"}}, \"$db\": \"admin\"}", 0, NULL);
	TT_EQ_INT(get_int(r, "code"), 186);
	bson_destroy(r);

	r = roundtrip("{\"isMaster\": 1, \"$db\": \"admin\"}", 0, NULL);
	TT_EQ_INT(get_int(r, "ismaster"), 1);
	TT_EQ_INT(get_int(r, "isWritablePrimary"), -999999);
	bson_destroy(r);
}

static void
test_op_query_handshake(void)
{
	uint8_t msg[256];
	bson_t *q = tt_json("{\"isMaster\": 1, \"compression\": [\"zlib\"]}");
	size_t len = 0;
	wire_buf_t rep;
	conn_exhaust_t ex = {0};
	bool closed;
	int32_t v;

	memset(msg, 0, sizeof(msg));
	len = 16;
	v = 0;
	memcpy(msg + len, &v, 4);
	len += 4;
	memcpy(msg + len, "admin.$cmd", 11);
	len += 11;
	v = 0;
	memcpy(msg + len, &v, 4);
	len += 4;
	v = -1;
	memcpy(msg + len, &v, 4);
	len += 4;
	memcpy(msg + len, bson_get_data(q), q->len);
	len += q->len;
	v = (int32_t)len;
	memcpy(msg, &v, 4);
	v = 42;
	memcpy(msg + 4, &v, 4);
	v = WIRE_OP_QUERY;
	memcpy(msg + 12, &v, 4);
	conn_handle_message(srv, cl, &comp, msg, len, &rep, &closed, &ex);
	TT_ASSERT(rep.data != NULL && !closed && !ex.active);
	if (rep.data != NULL) {
		bson_t *d = bson_new_from_data(rep.data + 36, rep.len - 36);
		TT_EQ_INT(rep.data[12], WIRE_OP_REPLY);
		TT_EQ_INT(rep.data[8], 42);
		TT_ASSERT(d != NULL);
		if (d) {
			TT_EQ_INT(get_int(d, "ismaster"), 1);
			TT_EQ_STR(get_str(d, "compression.0"), "zlib");
			bson_destroy(d);
		}
		bson_free(rep.data);
	}
	bson_destroy(q);
}

static void
test_sequences_and_flags(void)
{
	bson_t *r;
	bool closed;

	r = roundtrip("{\"ping\": 1, \"$db\": \"admin\"}", WIRE_MSG_MORE_TO_COME, &closed);
	TT_ASSERT(r == NULL);
	TT_ASSERT(!closed);
	r = roundtrip("{\"ping\": 1, \"$db\": \"admin\"}", WIRE_MSG_CHECKSUM | WIRE_MSG_EXHAUST_ALLOWED, &closed);
	TT_EQ_INT(get_int(r, "ok"), 1);
	bson_destroy(r);
	r = roundtrip("{\"noSuchCommand\": 1, \"$db\": \"admin\"}", 0, NULL);
	TT_EQ_INT(get_int(r, "code"), 59);
	TT_EQ_STR(get_str(r, "codeName"), "CommandNotFound");
	bson_destroy(r);
}

static void
test_admin_commands(void)
{
	bson_t *r;

	r = roundtrip("{\"buildInfo\": 1, \"$db\": \"admin\"}", 0, NULL);
	TT_EQ_STR(get_str(r, "version"), "9.0.8");
	TT_EQ_INT(get_int(r, "versionArray.0"), 9);
	TT_EQ_STR(get_str(r, "javascriptEngine"), "mozjs");
	TT_EQ_STR(get_str(r, "storageEngines.0"), "wiredTiger");
	TT_ASSERT(get_str(r, "tamgaVersion") != NULL);
	bson_destroy(r);

	r = roundtrip("{\"getParameter\": 1, \"featureCompatibilityVersion\": 1, \"$db\": \"admin\"}", 0, NULL);
	TT_EQ_STR(get_str(r, "featureCompatibilityVersion.version"), "9.0");
	bson_destroy(r);
	r = roundtrip("{\"getParameter\": \"*\", \"$db\": \"admin\"}", 0, NULL);
	TT_EQ_INT(get_int(r, "cursorTimeoutMillis"), 600000);
	bson_destroy(r);
	r = roundtrip("{\"getParameter\": 1, \"nope\": 1, \"$db\": \"admin\"}", 0, NULL);
	TT_EQ_INT(get_int(r, "code"), 72);
	bson_destroy(r);
	r = roundtrip("{\"getParameter\": 1, \"$db\": \"test\"}", 0, NULL);
	TT_EQ_INT(get_int(r, "code"), 13);
	bson_destroy(r);

	r = roundtrip("{\"serverStatus\": 1, \"$db\": \"admin\"}", 0, NULL);
	TT_EQ_STR(get_str(r, "process"), "tamgad");
	TT_ASSERT(get_int(r, "opcounters.command") > 0);
	TT_ASSERT(get_int(r, "uptimeMillis") >= 0);
	bson_destroy(r);

	r = roundtrip("{\"getLog\": \"*\", \"$db\": \"admin\"}", 0, NULL);
	TT_EQ_STR(get_str(r, "names.1"), "startupWarnings");
	bson_destroy(r);
	r = roundtrip("{\"getLog\": \"nope\", \"$db\": \"admin\"}", 0, NULL);
	TT_EQ_INT(get_int(r, "code"), 96);
	bson_destroy(r);

	r = roundtrip("{\"whatsmyuri\": 1, \"$db\": \"admin\"}", 0, NULL);
	TT_EQ_STR(get_str(r, "you"), "127.0.0.1:5555");
	bson_destroy(r);
	r = roundtrip("{\"listCommands\": 1, \"$db\": \"admin\"}", 0, NULL);
	TT_EQ_INT(get_int(r, "commands.hello.requiresAuth"), 0);
	TT_EQ_INT(get_int(r, "commands.shutdown.adminOnly"), 1);
	bson_destroy(r);
	r = roundtrip("{\"startSession\": 1, \"$db\": \"admin\"}", 0, NULL);
	TT_EQ_INT(get_int(r, "timeoutMinutes"), 30);
	{
		bson_iter_t it, f;
		TT_ASSERT(bson_iter_init(&it, r) && bson_iter_find_descendant(&it, "id.id", &f) &&
		    BSON_ITER_HOLDS_BINARY(&f));
	}
	bson_destroy(r);
	r = roundtrip("{\"endSessions\": 1, \"$db\": \"admin\"}", 0, NULL);
	TT_EQ_INT(get_int(r, "code"), 14);
	bson_destroy(r);
	r = roundtrip("{\"endSessions\": [], \"$db\": \"admin\"}", 0, NULL);
	TT_EQ_INT(get_int(r, "ok"), 1);
	bson_destroy(r);
	r = roundtrip("{\"connectionStatus\": 1, \"showPrivileges\": true, \"$db\": \"admin\"}", 0, NULL);
	TT_EQ_INT(get_int(r, "ok"), 1);
	bson_destroy(r);
}

/* A real listener: connect, ping, stop. */
static void *
run_thread(void *arg)
{
	server_run(arg);
	return NULL;
}

/* Read one OP_MSG reply from fd; returns its body (caller destroys) and
 * its responseTo. */
static bson_t *
read_reply(int fd, int32_t *response_to)
{
	uint8_t hdr[16], *rest;
	int32_t n;
	bson_t body, *out;

	if (recv(fd, hdr, 16, MSG_WAITALL) != 16)
		return NULL;
	memcpy(&n, hdr, 4);
	memcpy(response_to, hdr + 8, 4);
	if (n < 16 + 5 + 5)
		return NULL;
	rest = bson_malloc((size_t)n - 16);
	if (recv(fd, rest, (size_t)n - 16, MSG_WAITALL) != n - 16 || rest[4] != 0 ||
	    !bson_init_static(&body, rest + 5, (size_t)n - 16 - 5)) {
		bson_free(rest);
		return NULL;
	}
	out = bson_copy(&body);
	bson_free(rest);
	return out;
}

/* Send bytes in pieces of at most chunk, pausing between them, so the
 * server sees a message arrive over several reads. */
static void
send_in_pieces(int fd, const uint8_t *p, size_t len, size_t chunk)
{
	while (len > 0) {
		size_t k = len < chunk ? len : chunk;
		TT_ASSERT(send(fd, p, k, 0) == (ssize_t)k);
		p += k;
		len -= k;
		usleep(2000);
	}
}

/* Framing through a real socket: two requests in one write, a header split
 * across writes, a message larger than the read-ahead buffer arriving in
 * pieces, then a small one again (the read-ahead must not keep stale
 * bytes). */
static void
check_framing(int fd)
{
	terr_t err = TERR_INIT;
	wire_buf_t a, b;
	bson_t *cmd, *rep;
	uint8_t *two;
	int32_t to = 0;
	char *pad;
	size_t k;
	int i;

	cmd = tt_json("{\"ping\": 1, \"$db\": \"admin\"}");
	wire_msg_build(11, 0, 0, cmd, WIRE_COMPRESSOR_NONE, &a, &err);
	wire_msg_build(12, 0, 0, cmd, WIRE_COMPRESSOR_NONE, &b, &err);
	two = bson_malloc(a.len + b.len);
	memcpy(two, a.data, a.len);
	memcpy(two + a.len, b.data, b.len);
	TT_ASSERT(send(fd, two, a.len + b.len, 0) == (ssize_t)(a.len + b.len));
	rep = read_reply(fd, &to);
	TT_ASSERT(rep != NULL);
	TT_EQ_INT(to, 11);
	bson_destroy(rep);
	rep = read_reply(fd, &to);
	TT_ASSERT(rep != NULL);
	TT_EQ_INT(to, 12);
	bson_destroy(rep);
	/* a header in two writes */
	send_in_pieces(fd, a.data, a.len, 7);
	rep = read_reply(fd, &to);
	TT_ASSERT(rep != NULL && to == 11);
	bson_destroy(rep);
	bson_free(two);
	bson_free(a.data);
	bson_free(b.data);
	bson_destroy(cmd);

	/* 100 KB: more than the read-ahead holds; stored, then read back byte
	 * for byte */
	pad = bson_malloc(100200);
	k = (size_t)sprintf(pad, "{\"insert\": \"framing\", \"$db\": \"test\", \"documents\": [{\"_id\": 1, \"pad\": \"");
	for (i = 0; i < 100000; i++)
		pad[k + i] = (char)('a' + i % 26);
	strcpy(pad + k + 100000, "\"}]}");
	cmd = tt_json(pad);
	wire_msg_build(13, 0, 0, cmd, WIRE_COMPRESSOR_NONE, &a, &err);
	send_in_pieces(fd, a.data, a.len, 30000);
	rep = read_reply(fd, &to);
	TT_ASSERT(rep != NULL);
	TT_EQ_INT(to, 13);
	TT_EQ_INT(get_int(rep, "n"), 1);
	bson_destroy(rep);
	bson_free(a.data);
	bson_destroy(cmd);
	cmd = tt_json("{\"find\": \"framing\", \"filter\": {\"_id\": 1}, \"$db\": \"test\"}");
	wire_msg_build(15, 0, 0, cmd, WIRE_COMPRESSOR_NONE, &a, &err);
	TT_ASSERT(send(fd, a.data, a.len, 0) == (ssize_t)a.len);
	rep = read_reply(fd, &to);
	TT_ASSERT(rep != NULL);
	{
		const char *got = get_str(rep, "cursor.firstBatch.0.pad");
		TT_ASSERT(got != NULL && strlen(got) == 100000 && memcmp(got, pad + k, 100000) == 0);
	}
	bson_destroy(rep);
	bson_free(a.data);
	bson_destroy(cmd);
	bson_free(pad);
	cmd = tt_json("{\"ping\": 1, \"$db\": \"admin\"}");
	wire_msg_build(14, 0, 0, cmd, WIRE_COMPRESSOR_NONE, &a, &err);
	TT_ASSERT(send(fd, a.data, a.len, 0) == (ssize_t)a.len);
	rep = read_reply(fd, &to);
	TT_ASSERT(rep != NULL);
	TT_EQ_INT(to, 14);
	TT_EQ_INT(get_int(rep, "ok"), 1);
	bson_destroy(rep);
	bson_free(a.data);
	bson_destroy(cmd);
}

static void
test_listener(void)
{
	pthread_t t;
	struct sockaddr_in sa;
	bson_t *cmd = tt_json("{\"ping\": 1, \"$db\": \"admin\"}");
	wire_buf_t req;
	terr_t err = TERR_INIT;
	uint8_t hdr[16];
	int fd, i;

	TT_ASSERT(server_port(srv) > 0);
	pthread_create(&t, NULL, run_thread, srv);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)server_port(srv));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	TT_ASSERT(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	wire_msg_build(3, 0, 0, cmd, WIRE_COMPRESSOR_ZSTD, &req, &err);
	TT_ASSERT(send(fd, req.data, req.len, 0) == (ssize_t)req.len);
	TT_ASSERT(recv(fd, hdr, 16, MSG_WAITALL) == 16);
	TT_EQ_INT(hdr[12], WIRE_OP_COMPRESSED & 0xff);   /* answered with the request's compressor */
	TT_EQ_INT(hdr[8], 3);
	{
		int32_t n;
		uint8_t rest[4096];
		memcpy(&n, hdr, 4);
		TT_ASSERT(n > 16 && n < (int32_t)sizeof(rest));
		TT_ASSERT(recv(fd, rest, (size_t)n - 16, MSG_WAITALL) == n - 16);
	}
	bson_free(req.data);
	check_framing(fd);
	for (i = 0; i < 100 && server_connection_count(srv) != 1; i++)
		usleep(10000);
	TT_EQ_INT(server_connection_count(srv), 1);
	/* stop with a connection open: server_run ends it and returns */
	server_stop(srv);
	pthread_join(t, NULL);
	TT_EQ_INT(server_connection_count(srv), 0);
	TT_EQ_INT(recv(fd, hdr, 16, 0) <= 0, 1);
	close(fd);
	bson_destroy(cmd);
}


/* ---- Unix domain sockets ------------------------------------------------ */

static int
unix_connect(const char *path)
{
	struct sockaddr_un sa;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A socket file with nobody behind it, as a crashed server leaves it. */
static void
make_stale_socket(const char *path)
{
	struct sockaddr_un sa;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	TT_ASSERT(strlen(path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strnlen(path, sizeof(sa.sun_path) - 1));
	TT_ASSERT(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	TT_ASSERT(listen(fd, 1) == 0);
	close(fd);   /* the file stays */
}

/* The engine of the Unix-socket test: test_listener's shutdown has set the
 * shared one's shutdown flag. */
static engine_t *ueng;

static int
start_unix(const char *bind_ip, const char *prefix, int mode, server_t **out, terr_t *err)
{
	server_options_t so;

	memset(&so, 0, sizeof(so));
	so.port = -1;
	so.quiet = true;
	so.bind_ip = bind_ip;
	so.unix_socket = prefix != NULL;
	so.unix_socket_prefix = prefix;
	so.unix_socket_mode = mode;
	return server_start(ueng, &so, out, err);
}

/* The default socket <prefix>/mongodb-<port>.sock: made with the mode asked
 * for, replaces a stale file, refuses a live server's socket and a file that
 * is not a socket (both left as they were), serves a connection that is
 * local and named as mongod names it, and is removed by server_run at
 * shutdown and by server_free when the server never ran. */
static void
test_unix_socket(void)
{
	char *sdir = tt_tmpdir("wire-unix"), path[400], extra[300], sock[300];
	terr_t err = TERR_INIT;
	engine_options_t eo;
	server_t *a = NULL, *b = NULL;
	struct stat st;
	pthread_t t;
	int fd, lfd, port;

	memset(&eo, 0, sizeof(eo));
	eo.storage.create = true;
	eo.storage.in_memory = true;
	TT_ASSERT(engine_open(sdir, &eo, &ueng, &err) == 0);

	/* stale file at the extra path: replaced */
	TT_ASSERT(strlen(sdir) < 200);
	snprintf(extra, sizeof(extra), "%.200s/extra.sock", sdir);
	make_stale_socket(extra);
	snprintf(path, sizeof(path), "127.0.0.1,%s", extra);
	TT_ASSERT(start_unix(path, sdir, 0750, &a, &err) == 0);
	port = server_port(a);
	snprintf(sock, sizeof(sock), "%.200s/mongodb-%d.sock", sdir, port);
	TT_ASSERT(stat(sock, &st) == 0 && S_ISSOCK(st.st_mode));
	TT_EQ_INT(st.st_mode & 07777, 0750);
	TT_ASSERT(stat(extra, &st) == 0 && S_ISSOCK(st.st_mode));
	TT_EQ_INT(st.st_mode & 07777, 0750);

	/* a second server on a path the first one serves: refused, file kept */
	snprintf(path, sizeof(path), "127.0.0.1,%s", extra);
	TT_ASSERT(start_unix(path, NULL, 0, &b, &err) != 0);
	TT_EQ_INT(err.code, 9001);
	TT_ASSERT(strstr(err.msg, "Address already in use") != NULL);
	terr_clear(&err);
	TT_ASSERT(b == NULL);
	TT_ASSERT(stat(extra, &st) == 0);

	/* served: whatsmyuri names the peer as mongod does */
	pthread_create(&t, NULL, run_thread, a);
	fd = unix_connect(sock);
	TT_ASSERT(fd >= 0);
	{
		bson_t *cmd = tt_json("{\"whatsmyuri\": 1, \"$db\": \"admin\"}"), *rep;
		wire_buf_t req;
		int32_t to = 0;
		wire_msg_build(21, 0, 0, cmd, WIRE_COMPRESSOR_NONE, &req, &err);
		TT_ASSERT(send(fd, req.data, req.len, 0) == (ssize_t)req.len);
		rep = read_reply(fd, &to);
		TT_ASSERT(rep != NULL);
		TT_EQ_INT(to, 21);
		TT_EQ_STR(get_str(rep, "you"), "anonymous unix socket:27017");
		bson_destroy(rep);
		bson_free(req.data);
		bson_destroy(cmd);
	}
	server_stop(a);
	pthread_join(t, NULL);
	close(fd);
	/* clean shutdown removes both files */
	TT_ASSERT(stat(sock, &st) != 0 && errno == ENOENT);
	TT_ASSERT(stat(extra, &st) != 0 && errno == ENOENT);
	server_free(a);

	/* a regular file where the socket would go: refused, not deleted */
	snprintf(extra, sizeof(extra), "%.200s/file.sock", sdir);
	lfd = open(extra, O_CREAT | O_WRONLY, 0600);
	TT_ASSERT(lfd >= 0);
	close(lfd);
	snprintf(path, sizeof(path), "127.0.0.1,%s", extra);
	TT_ASSERT(start_unix(path, NULL, 0, &b, &err) != 0);
	TT_EQ_INT(err.code, 9001);
	TT_ASSERT(strstr(err.msg, "not a socket") != NULL);
	terr_clear(&err);
	TT_ASSERT(stat(extra, &st) == 0 && S_ISREG(st.st_mode));

	/* a path too long for sun_path */
	memset(extra, 'a', 200);
	extra[0] = '/';
	extra[200] = '\0';
	snprintf(path, sizeof(path), "127.0.0.1,%s", extra);
	TT_ASSERT(start_unix(path, NULL, 0, &b, &err) != 0);
	TT_ASSERT(strstr(err.msg, "File name too long") != NULL);
	terr_clear(&err);

	/* never run: server_free removes the file; the default mode is 0700 */
	TT_ASSERT(start_unix("127.0.0.1", sdir, 0, &a, &err) == 0);
	snprintf(sock, sizeof(sock), "%.200s/mongodb-%d.sock", sdir, server_port(a));
	TT_ASSERT(stat(sock, &st) == 0);
	TT_EQ_INT(st.st_mode & 07777, 0700);
	lfd = unix_connect(sock);
	TT_ASSERT(lfd >= 0);   /* the backlog takes it even before server_run */
	close(lfd);
	server_free(a);
	TT_ASSERT(stat(sock, &st) != 0 && errno == ENOENT);

	engine_close(ueng);
	tt_rmdir(sdir);
	bson_free(sdir);
}

static void
test_shutdown_command(void)
{
	bool closed = false;
	bson_t *r;

	r = roundtrip("{\"shutdown\": 1, \"$db\": \"admin\"}", 0, &closed);
	TT_ASSERT(r == NULL);
	TT_ASSERT(closed);
	TT_ASSERT(engine_shutdown_requested(eng));
}

/* A session used again right after endSessions is back in the cache: the
 * per-connection shortcut of cmd_admin_session_touch must not hide it. */
static int
local_sessions(void)
{
	bson_t *r = roundtrip("{\"aggregate\": 1, \"pipeline\": [{\"$listLocalSessions\": {}}], \"cursor\": {}, "
	    "\"$db\": \"admin\"}", 0, NULL);
	bson_iter_t it, f;
	int n = -1;

	if (r != NULL && bson_iter_init(&it, r) && bson_iter_find_descendant(&it, "cursor.firstBatch", &f) &&
	    bson_iter_recurse(&f, &it))
		for (n = 0; bson_iter_next(&it);)
			n++;
	if (r != NULL)
		bson_destroy(r);
	return n;
}

static void
test_session_cache(void)
{
	const char *ping = "{\"ping\": 1, \"lsid\": {\"id\": {\"$binary\": {\"base64\": \"AAAAAAAAAAAAAAAAAAAAAQ==\", "
	    "\"subType\": \"04\"}}}, \"$db\": \"admin\"}";
	int before = local_sessions();

	bson_destroy(roundtrip(ping, 0, NULL));
	bson_destroy(roundtrip(ping, 0, NULL));
	TT_EQ_INT(local_sessions(), before + 1);
	bson_destroy(roundtrip("{\"endSessions\": [{\"id\": {\"$binary\": {\"base64\": \"AAAAAAAAAAAAAAAAAAAAAQ==\", "
	    "\"subType\": \"04\"}}}], \"$db\": \"admin\"}", 0, NULL));
	TT_EQ_INT(local_sessions(), before);
	bson_destroy(roundtrip(ping, 0, NULL));
	TT_EQ_INT(local_sessions(), before + 1);
}

/* ---- exhaust ------------------------------------------------------------ */

/* The header fields and body of an uncompressed OP_MSG reply. */
static bson_t *
reply_parts(const wire_buf_t *rep, int32_t *id, int32_t *response_to, uint32_t *flags)
{
	memcpy(id, rep->data + 4, 4);
	memcpy(response_to, rep->data + 8, 4);
	memcpy(flags, rep->data + 16, 4);
	return bson_new_from_data(rep->data + 21, rep->len - 21);
}

static int
batch_len(const bson_t *d, const char *path)
{
	bson_iter_t it, f;
	int n = 0;

	if (bson_iter_init(&it, d) && bson_iter_find_descendant(&it, path, &f) && bson_iter_recurse(&f, &it))
		while (bson_iter_next(&it))
			n++;
	return n;
}

/* Send cmd with exhaustAllowed as request 100; follows the stream to its
 * end (at most max_replies) checking moreToCome and the responseTo chain.
 * Returns the replies' documents in nextBatch/firstBatch, *nreplies, and the
 * last reply (caller destroys). */
static bson_t *
exhaust_stream(const char *json, int max_replies, int *nreplies, int *ndocs, bool *still_active)
{
	bson_t *cmd = tt_json(json), *last = NULL;
	wire_buf_t req, rep;
	terr_t err = TERR_INIT;
	conn_exhaust_t ex = {0};
	int32_t prev = 100, id, to;
	uint32_t flags;
	bool closed = false;

	*nreplies = 0;
	*ndocs = 0;
	wire_msg_build(100, 0, WIRE_MSG_EXHAUST_ALLOWED, cmd, WIRE_COMPRESSOR_NONE, &req, &err);
	conn_handle_message(srv, cl, &comp, req.data, req.len, &rep, &closed, &ex);
	for (;;) {
		TT_ASSERT(rep.data != NULL && !closed);
		if (rep.data == NULL)
			break;
		if (last != NULL)
			bson_destroy(last);
		last = reply_parts(&rep, &id, &to, &flags);
		bson_free(rep.data);
		(*nreplies)++;
		/* each reply answers the previous one; moreToCome exactly while the stream runs */
		TT_EQ_INT(to, prev);
		TT_EQ_INT((flags & WIRE_MSG_MORE_TO_COME) != 0, ex.active);
		TT_EQ_INT(flags & WIRE_MSG_EXHAUST_ALLOWED, 0);
		prev = id;
		*ndocs += batch_len(last, "cursor.nextBatch");
		if (!ex.active || *nreplies >= max_replies)
			break;
		conn_exhaust_next(srv, cl, &comp, &ex, &rep, &closed);
	}
	*still_active = ex.active;
	conn_exhaust_end(&ex);
	bson_free(req.data);
	bson_destroy(cmd);
	return last;
}

static void
test_exhaust(void)
{
	bson_t *r;
	char json[256];
	int64_t id;
	int nrep, ndocs, i;
	bool active;

	for (i = 0; i < 23; i++) {
		snprintf(json, sizeof(json), "{\"insert\": \"ex\", \"documents\": [{\"_id\": %d}], \"$db\": \"t\"}", i);
		bson_destroy(roundtrip(json, 0, NULL));
	}
	r = roundtrip("{\"find\": \"ex\", \"batchSize\": 3, \"$db\": \"t\"}", 0, NULL);
	id = get_int(r, "cursor.id");
	TT_ASSERT(id != 0);
	bson_destroy(r);

	/* getMore streams batches of 5 until the cursor ends */
	snprintf(json, sizeof(json), "{\"getMore\": {\"$numberLong\": \"%lld\"}, \"collection\": \"ex\", "
	    "\"batchSize\": 5, \"$db\": \"t\"}", (long long)id);
	r = exhaust_stream(json, 100, &nrep, &ndocs, &active);
	TT_EQ_INT(ndocs, 20);
	TT_ASSERT(nrep >= 4 && nrep <= 5);
	TT_EQ_INT(get_int(r, "cursor.id"), 0);
	TT_ASSERT(!active);
	bson_destroy(r);
	/* the stream closed the cursor */
	r = roundtrip(json, 0, NULL);
	TT_EQ_INT(get_int(r, "code"), 43);
	bson_destroy(r);

	/* a cursor that ends in the first reply: no moreToCome */
	r = roundtrip("{\"find\": \"ex\", \"batchSize\": 20, \"$db\": \"t\"}", 0, NULL);
	id = get_int(r, "cursor.id");
	bson_destroy(r);
	snprintf(json, sizeof(json), "{\"getMore\": {\"$numberLong\": \"%lld\"}, \"collection\": \"ex\", "
	    "\"$db\": \"t\"}", (long long)id);
	r = exhaust_stream(json, 100, &nrep, &ndocs, &active);
	TT_EQ_INT(nrep, 1);
	TT_EQ_INT(ndocs, 3);
	bson_destroy(r);

	/* an error ends the stream at once */
	r = exhaust_stream("{\"getMore\": {\"$numberLong\": \"12345\"}, \"collection\": \"ex\", \"$db\": \"t\"}", 100,
	    &nrep, &ndocs, &active);
	TT_EQ_INT(nrep, 1);
	TT_EQ_INT(get_int(r, "code"), 43);
	bson_destroy(r);

	/* exhaust hello needs maxAwaitTimeMS (51756) */
	r = exhaust_stream("{\"hello\": 1, \"$db\": \"admin\"}", 100, &nrep, &ndocs, &active);
	TT_EQ_INT(nrep, 1);
	TT_EQ_INT(get_int(r, "code"), 51756);
	bson_destroy(r);

	/* awaitable hello streams (another process's topologyVersion: no wait) */
	r = exhaust_stream("{\"hello\": 1, \"topologyVersion\": {\"processId\": {\"$oid\": \"000000000000000000000001\"}, "
	    "\"counter\": {\"$numberLong\": \"0\"}}, \"maxAwaitTimeMS\": 10, \"$db\": \"admin\"}", 3, &nrep, &ndocs,
	    &active);
	TT_EQ_INT(nrep, 3);
	TT_ASSERT(active);
	TT_EQ_INT(get_int(r, "isWritablePrimary"), 1);
	TT_EQ_INT(get_int(r, "topologyVersion.counter"), 0);
	bson_destroy(r);
}

int
main(void)
{
	setup();
	TT_RUN(test_hello);
	TT_RUN(test_op_query_handshake);
	TT_RUN(test_sequences_and_flags);
	TT_RUN(test_admin_commands);
	TT_RUN(test_listener);
	TT_RUN(test_session_cache);
	TT_RUN(test_exhaust);
	TT_RUN(test_unix_socket);
	TT_RUN(test_shutdown_command);
	teardown();
	return tt_finish();
}
