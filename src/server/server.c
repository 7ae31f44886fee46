/*
 * server.c -- listeners (TCP and Unix domain sockets), the accept loop, the
 * connection registry, the cursor reaper and clean shutdown (see server.h).
 *
 * Not here: what happens on a connection (conn.c).
 */
#include "server/server_private.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "commands/cmd_admin.h"
#include "common/log.h"

#define DEFAULT_MAX_CONNS 1000000
#define REAP_INTERVAL_MS 5000
#define DEFAULT_SOCKET_PREFIX "/tmp"
#define DEFAULT_SOCKET_MODE 0700
/* what mongod calls a peer on a Unix domain socket (HostAndPort of an
 * unnamed address, whose port defaults to 27017 whatever the server's) */
#define UNIX_PEER_NAME "anonymous unix socket:27017"

static int
socket_error(terr_t *err, const char *addr, int port, int e)
{
	return terr_set(err, 9001, "Failed to listen on %s:%d: %s", addr, port, strerror(e));
}

/* One listener for a numeric address ("127.0.0.1", "::1", "0.0.0.0"). */
static int
listen_numeric(server_t *s, const char *addr, terr_t *err)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int fd = -1, one = 1, e;
	bson_t attr;
	char buf[80];

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, addr, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)s->port);
		sl = sizeof(*sin);
	} else if (inet_pton(AF_INET6, addr, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)s->port);
		sl = sizeof(*sin6);
	} else {
		return terr_set(err, 9001, "Invalid bind address: %s", addr);
	}
	if (s->nlisten >= SERVER_MAX_LISTENERS)
		return terr_set(err, TERR_BAD_VALUE, "too many bind addresses");
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return socket_error(err, addr, s->port, errno);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl) != 0 || listen(fd, SOMAXCONN) != 0) {
		e = errno;
		close(fd);
		return socket_error(err, addr, s->port, e);
	}
	if (s->port == 0) {
		/* the OS picked: every further listener uses the same port */
		struct sockaddr_storage got;
		socklen_t gl = sizeof(got);
		if (getsockname(fd, (struct sockaddr *)&got, &gl) == 0)
			s->port = ntohs(got.ss_family == AF_INET ? ((struct sockaddr_in *)&got)->sin_port :
			    ((struct sockaddr_in6 *)&got)->sin6_port);
	}
	s->listen_fds[s->nlisten++] = fd;
	bson_init(&attr);
	snprintf(buf, sizeof(buf), ss.ss_family == AF_INET6 ? "[%s]:%d" : "%s:%d", addr, s->port);
	BSON_APPEND_UTF8(&attr, "address", buf);
	tlog('I', "NETWORK", 23015, "Listening on", &attr);
	bson_destroy(&attr);
	return 0;
}

/* One --bind_ip entry: a numeric address, or a host name resolved to each
 * of its addresses (as mongod; "localhost" is 127.0.0.1). */
static int
listen_on(server_t *s, const char *addr, terr_t *err)
{
	struct addrinfo hints, *res = NULL, *ai;
	char ip[INET6_ADDRSTRLEN];
	unsigned char probe[sizeof(struct in6_addr)];
	int rc, n = 0;

	if (strcmp(addr, "localhost") == 0)
		return listen_numeric(s, "127.0.0.1", err);
	if (inet_pton(AF_INET, addr, probe) == 1 || inet_pton(AF_INET6, addr, probe) == 1)
		return listen_numeric(s, addr, err);
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	rc = getaddrinfo(addr, NULL, &hints, &res);
	if (rc != 0)
		return terr_set(err, 9001, "getaddrinfo(\"%s\") failed: %s", addr, gai_strerror(rc));
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		const void *a = ai->ai_family == AF_INET ? (const void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr :
		    (const void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;
		if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
			continue;
		inet_ntop(ai->ai_family, a, ip, sizeof(ip));
		if ((rc = listen_numeric(s, ip, err)) != 0)
			break;
		n++;
	}
	freeaddrinfo(res);
	if (rc != 0)
		return rc;
	return n > 0 ? 0 : terr_set(err, 9001, "no address found for %s", addr);
}

/* ---- Unix domain sockets ------------------------------------------------ */

static int
unix_error(terr_t *err, const char *path, int e)
{
	return terr_set(err, 9001, "Failed to listen on %s: %s", path, strerror(e));
}

/* Is a server accepting connections on the socket file path? */
static bool
unix_socket_live(const struct sockaddr_un *sa)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool live;

	if (fd < 0)
		return false;
	live = connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0;
	close(fd);
	return live;
}

/*
 * What is at path before binding: nothing (fine), a socket file a crashed
 * server left behind (removed, as mongod removes it), a live server's
 * socket (EADDRINUSE, where mongod would take the path from under it) or a
 * file that is not a socket (refused: it is not ours to delete).
 */
static int
unix_clear_stale(const struct sockaddr_un *sa, terr_t *err)
{
	const char *path = sa->sun_path;
	struct stat st;

	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0 : unix_error(err, path, errno);
	if (!S_ISSOCK(st.st_mode))
		return terr_set(err, 9001, "Failed to listen on %s: the file exists and is not a socket", path);
	if (unix_socket_live(sa))
		return unix_error(err, path, EADDRINUSE);
	if (unlink(path) != 0 && errno != ENOENT) {
		bson_t attr;
		int e = errno;
		bson_init(&attr);
		BSON_APPEND_UTF8(&attr, "path", path);
		BSON_APPEND_UTF8(&attr, "error", strerror(e));
		tlog('E', "NETWORK", 23024, "Failed to unlink socket file", &attr);
		bson_destroy(&attr);
		return terr_set(err, 9001, "Failed to unlink socket file %s %s", path, strerror(e));
	}
	return 0;
}

/* One listener on the Unix domain socket path (a --bind_ip entry with a '/',
 * or the default <prefix>/mongodb-<port>.sock). */
static int
listen_unix(server_t *s, const char *path, terr_t *err)
{
	struct sockaddr_un sa;
	bson_t attr;
	int fd, e, i;

	for (i = 0; i < s->nsock_paths; i++)
		if (strcmp(s->sock_paths[i], path) == 0)
			return 0;   /* listed twice (mongod keeps a set of endpoints) */
	if (s->nlisten >= SERVER_MAX_LISTENERS)
		return terr_set(err, TERR_BAD_VALUE, "too many bind addresses");
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa.sun_path))
		return unix_error(err, path, ENAMETOOLONG);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (unix_clear_stale(&sa, err) != 0)
		return -1;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return unix_error(err, path, errno);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		e = errno;
		close(fd);
		return unix_error(err, path, e);
	}
	/* from here the file is ours: removed at shutdown, or now on failure */
	s->sock_paths[s->nsock_paths++] = bson_strdup(path);
	if (chmod(path, (mode_t)s->unix_socket_mode) != 0) {
		e = errno;
		close(fd);
		bson_init(&attr);
		BSON_APPEND_UTF8(&attr, "path", path);
		BSON_APPEND_UTF8(&attr, "error", strerror(e));
		tlog('E', "NETWORK", 23026, "Failed to chmod socket file", &attr);
		bson_destroy(&attr);
		return terr_set(err, 9001, "Failed to chmod socket file %s %s", path, strerror(e));
	}
	if (listen(fd, SOMAXCONN) != 0) {
		e = errno;
		close(fd);
		return unix_error(err, path, e);
	}
	s->listen_unix[s->nlisten] = true;
	s->listen_fds[s->nlisten++] = fd;
	bson_init(&attr);
	BSON_APPEND_UTF8(&attr, "address", path);
	tlog('I', "NETWORK", 23015, "Listening on", &attr);
	bson_destroy(&attr);
	return 0;
}

/* Remove the socket files made, logging as mongod does at shutdown (quiet
 * when a failed start undoes them). */
static void
remove_socket_files(server_t *s, bool log)
{
	int i;

	for (i = 0; i < s->nsock_paths; i++) {
		bson_t attr;
		if (log) {
			bson_init(&attr);
			BSON_APPEND_UTF8(&attr, "path", s->sock_paths[i]);
			tlog('I', "NETWORK", 23017, "removing socket file", &attr);
			bson_destroy(&attr);
		}
		if (unlink(s->sock_paths[i]) != 0 && log) {
			bson_init(&attr);
			BSON_APPEND_UTF8(&attr, "path", s->sock_paths[i]);
			BSON_APPEND_UTF8(&attr, "error", strerror(errno));
			tlog('W', "NETWORK", 23022, "Unable to remove UNIX socket", &attr);
			bson_destroy(&attr);
		}
		bson_free(s->sock_paths[i]);
	}
	s->nsock_paths = 0;
}

static void *
reaper_main(void *arg)
{
	server_t *s = arg;

	tlog_set_ctx("clientcursormon");
	pthread_mutex_lock(&s->reaper_lock);
	while (!atomic_load(&s->stopping)) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += REAP_INTERVAL_MS / 1000;
		pthread_cond_timedwait(&s->reaper_wake, &s->reaper_lock, &ts);
		if (atomic_load(&s->stopping))
			break;
		pthread_mutex_unlock(&s->reaper_lock);
		cmd_admin_reap_cursors(s->engine, s->cursor_timeout_ms);
		pthread_mutex_lock(&s->reaper_lock);
	}
	pthread_mutex_unlock(&s->reaper_lock);
	return NULL;
}

int
server_start(engine_t *e, const server_options_t *o, server_t **out, terr_t *err)
{
	server_t *s = bson_malloc0(sizeof(*s));
	struct rlimit rl;
	char *list, *tok, *save = NULL;
	int ret = 0, i, pass;

	*out = NULL;
	s->engine = e;
	s->port = o->port > 0 ? o->port : (o->port == 0 ? 27017 : 0);
	if (o->port < 0)
		s->port = 0;   /* tests: let the OS pick */
	s->bind_ip = bson_strdup(o->bind_ip_all ? "0.0.0.0,::" : (o->bind_ip ? o->bind_ip : "127.0.0.1"));
	s->compressors = bson_strdup(o->compressors ? o->compressors : "snappy,zstd,zlib");
	s->quiet = o->quiet;
	s->tls = o->tls;
	s->unix_socket = o->unix_socket;
	s->unix_socket_prefix = bson_strdup(o->unix_socket_prefix ? o->unix_socket_prefix : DEFAULT_SOCKET_PREFIX);
	s->unix_socket_mode = o->unix_socket_mode > 0 ? o->unix_socket_mode : DEFAULT_SOCKET_MODE;
	s->cursor_timeout_ms = o->cursor_timeout_ms > 0 ? o->cursor_timeout_ms : 600000;
	s->max_conns = o->max_conns > 0 ? o->max_conns : DEFAULT_MAX_CONNS;
	/* as mongod: at most 80% of the file descriptor limit */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    s->max_conns > (int64_t)(rl.rlim_cur * 8 / 10))
		s->max_conns = (int64_t)(rl.rlim_cur * 8 / 10);
	s->wake_pipe[0] = s->wake_pipe[1] = -1;
	atomic_init(&s->stopping, false);
	atomic_init(&s->next_conn_id, 1);
	pthread_mutex_init(&s->lock, NULL);
	ratelimit_init(&s->ingress);
	pthread_cond_init(&s->conns_done, NULL);
	pthread_mutex_init(&s->reaper_lock, NULL);
	pthread_cond_init(&s->reaper_wake, NULL);
	if (pipe2(s->wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
		ret = terr_set(err, TERR_INTERNAL_ERROR, "pipe: %s", strerror(errno));
		goto err;
	}
	/* TCP first (the port is known and a port in use fails before any
	 * socket file is touched), then the socket paths of bind_ip */
	for (pass = 0; pass < 2 && ret == 0; pass++) {
		list = bson_strdup(s->bind_ip);
		for (tok = strtok_r(list, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
			while (*tok == ' ')
				tok++;
			if (*tok == '\0' || (strchr(tok, '/') != NULL) != (pass == 1))
				continue;
			if ((ret = pass == 0 ? listen_on(s, tok, err) : listen_unix(s, tok, err)) != 0)
				break;
		}
		bson_free(list);
	}
	if (ret == 0 && s->unix_socket) {
		char *path = bson_strdup_printf("%s/mongodb-%d.sock", s->unix_socket_prefix, s->port);
		ret = listen_unix(s, path, err);
		bson_free(path);
	}
	if (ret != 0)
		goto err;
	if (s->nlisten == 0) {
		ret = terr_set(err, TERR_BAD_VALUE, "no address to listen on");
		goto err;
	}
	*out = s;
	return 0;
err:
	for (i = 0; i < s->nlisten; i++)
		close(s->listen_fds[i]);
	s->nlisten = 0;
	remove_socket_files(s, false);
	server_free(s);
	return ret;
}

int
server_port(const server_t *s)
{
	return s->port;
}

int64_t
server_max_conns(const server_t *s)
{
	return s->max_conns;
}

int64_t
server_connection_count(server_t *s)
{
	int64_t n;

	pthread_mutex_lock(&s->lock);
	n = s->nconns;
	pthread_mutex_unlock(&s->lock);
	return n;
}

void
server_stop(server_t *s)
{
	ssize_t r;

	atomic_store(&s->stopping, true);
	if (s->wake_pipe[1] >= 0)
		r = write(s->wake_pipe[1], "x", 1);
	(void)r;
}

static void
remote_name(const struct sockaddr_storage *ss, socklen_t sl, char *buf, size_t len, bool *is_local)
{
	char ip[INET6_ADDRSTRLEN] = "";

	*is_local = false;
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;
		inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip));
		snprintf(buf, len, "%s:%d", ip, ntohs(sin->sin_port));
		*is_local = (ntohl(sin->sin_addr.s_addr) >> 24) == 127;
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;
		inet_ntop(AF_INET6, &sin6->sin6_addr, ip, sizeof(ip));
		snprintf(buf, len, "[%s]:%d", ip, ntohs(sin6->sin6_port));
		*is_local = IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr);
	} else if (ss->ss_family == AF_UNIX) {
		/* as mongod: an unnamed peer (the usual case) has a fixed name, a
		 * bound one its path; either way it is local (localhost exception) */
		const struct sockaddr_un *sun = (const struct sockaddr_un *)ss;
		if (sl > (socklen_t)offsetof(struct sockaddr_un, sun_path) && sun->sun_path[0] != '\0')
			snprintf(buf, len, "%.*s", (int)(sl - offsetof(struct sockaddr_un, sun_path)), sun->sun_path);
		else
			snprintf(buf, len, "%s", UNIX_PEER_NAME);
		*is_local = true;
	} else {
		snprintf(buf, len, "unknown");
	}
}

static void
accept_one(server_t *s, int lfd, bool is_unix)
{
	engine_counters_t *k = engine_counters(s->engine);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	pthread_attr_t attr;
	pthread_t tid;
	conn_t *c;
	bson_t la;
	int fd, one = 1, count;

	fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	c = bson_malloc0(sizeof(*c));
	c->srv = s;
	c->fd = fd;
	remote_name(&ss, sl, c->remote, sizeof(c->remote), &c->is_local);
	c->unix_domain = is_unix;
	if (!is_unix) {
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	}

	pthread_mutex_lock(&s->lock);
	if (s->nconns >= s->max_conns) {
		pthread_mutex_unlock(&s->lock);
		bson_init(&la);
		BSON_APPEND_UTF8(&la, "remote", c->remote);
		BSON_APPEND_INT64(&la, "connectionCount", s->max_conns);
		tlog('I', "NETWORK", 22942, "Connection refused because there are too many open connections", &la);
		bson_destroy(&la);
		close(fd);
		bson_free(c);
		return;
	}
	c->id = atomic_fetch_add(&s->next_conn_id, 1);
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	count = (int)++s->nconns;
	__atomic_fetch_add(&k->connections_current, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&k->connections_total, 1, __ATOMIC_RELAXED);
	if (!s->quiet) {
		bson_init(&la);
		BSON_APPEND_UTF8(&la, "remote", c->remote);
		BSON_APPEND_INT64(&la, "connectionId", c->id);
		BSON_APPEND_INT32(&la, "connectionCount", count);
		tlog('I', "NETWORK", 22943, "Connection accepted", &la);
		bson_destroy(&la);
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&tid, &attr, conn_main, c) != 0) {
		/* undo the registration; the peer sees the socket close */
		if (c->prev)
			c->prev->next = c->next;
		else
			s->conns = c->next;
		if (c->next)
			c->next->prev = c->prev;
		s->nconns--;
		__atomic_fetch_sub(&k->connections_current, 1, __ATOMIC_RELAXED);
		close(fd);
		bson_free(c);
		tlog('W', "NETWORK", 22948, "Failed to create service entry worker thread", NULL);
	}
	pthread_mutex_unlock(&s->lock);
	pthread_attr_destroy(&attr);
}

int
server_run(server_t *s)
{
	struct pollfd pfd[SERVER_MAX_LISTENERS + 1];
	bson_t attr;
	conn_t *c;
	int i, n;

	tlog_set_ctx("listener");
	if (pthread_create(&s->reaper, NULL, reaper_main, s) == 0)
		s->reaper_started = true;
	bson_init(&attr);
	BSON_APPEND_INT32(&attr, "port", s->port);
	BSON_APPEND_UTF8(&attr, "ssl", s->tls != NULL && tls_server_mode(s->tls) != TLS_MODE_DISABLED ? "on" : "off");
	tlog('I', "NETWORK", 23016, "Waiting for connections", &attr);
	bson_destroy(&attr);

	while (!atomic_load(&s->stopping) && !engine_shutdown_requested(s->engine)) {
		for (i = 0; i < s->nlisten; i++) {
			pfd[i].fd = s->listen_fds[i];
			pfd[i].events = POLLIN;
			pfd[i].revents = 0;
		}
		pfd[s->nlisten].fd = s->wake_pipe[0];
		pfd[s->nlisten].events = POLLIN;
		pfd[s->nlisten].revents = 0;
		n = poll(pfd, (nfds_t)s->nlisten + 1, 250);
		if (n <= 0)
			continue;
		for (i = 0; i < s->nlisten; i++)
			if (pfd[i].revents & POLLIN)
				accept_one(s, s->listen_fds[i], s->listen_unix[i]);
	}

	/* shutdown: stop listening, wake every connection, wait for them */
	atomic_store(&s->stopping, true);
	cmd_admin_request_shutdown(s->engine);   /* ends waits such as awaitable hello */
	tlog('I', "CONTROL", 20562, "Shutdown: going to close listening sockets", NULL);
	for (i = 0; i < s->nlisten; i++)
		close(s->listen_fds[i]);
	s->nlisten = 0;
	remove_socket_files(s, true);
	pthread_mutex_lock(&s->lock);
	for (c = s->conns; c != NULL; c = c->next)
		shutdown(c->fd, SHUT_RDWR);
	while (s->nconns > 0)
		pthread_cond_wait(&s->conns_done, &s->lock);
	pthread_mutex_unlock(&s->lock);
	if (s->reaper_started) {
		pthread_mutex_lock(&s->reaper_lock);
		pthread_cond_broadcast(&s->reaper_wake);
		pthread_mutex_unlock(&s->reaper_lock);
		pthread_join(s->reaper, NULL);
		s->reaper_started = false;
	}
	return 0;
}

void
server_free(server_t *s)
{
	int i;

	if (s == NULL)
		return;
	for (i = 0; i < s->nlisten; i++)
		close(s->listen_fds[i]);
	remove_socket_files(s, false);
	if (s->wake_pipe[0] >= 0)
		close(s->wake_pipe[0]);
	if (s->wake_pipe[1] >= 0)
		close(s->wake_pipe[1]);
	pthread_mutex_destroy(&s->lock);
	ratelimit_destroy(&s->ingress);
	pthread_cond_destroy(&s->conns_done);
	pthread_mutex_destroy(&s->reaper_lock);
	pthread_cond_destroy(&s->reaper_wake);
	bson_free(s->bind_ip);
	bson_free(s->compressors);
	bson_free(s->unix_socket_prefix);
	bson_free(s);
}
