/*
 * server.h -- tamgad's network side: listeners, one thread per connection,
 * the cursor reaper, clean shutdown.
 *
 * A server_t serves one engine over TCP and Unix domain sockets.  Each
 * accepted connection gets a detached thread and its own client_t (so its
 * own storage session); bytes are framed and parsed by wire.h and every
 * command goes through engine_run_command, the same path the embedded API
 * takes.
 *
 * Not here: option parsing and process setup (tools/tamgad.c), the protocol
 * byte layout (wire.c), command semantics (commands/).
 */
#ifndef TAMGA_SERVER_SERVER_H
#define TAMGA_SERVER_SERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "commands/commands.h"
#include "common/error.h"

typedef struct server server_t;
typedef struct tls_server tls_server_t;

typedef struct server_options {
	const char *bind_ip;         /* comma-separated addresses or host names; NULL = "127.0.0.1" */
	bool bind_ip_all;            /* listen on 0.0.0.0 and :: */
	int port;                    /* 0 = 27017; -1 = any free port (tests; see server_port) */
	int64_t max_conns;           /* 0 = 1000000, capped by the fd limit */
	const char *compressors;     /* mongod's --networkMessageCompressors; NULL = "snappy,zstd,zlib" */
	bool quiet;                  /* no connection accepted/ended lines */
	int64_t cursor_timeout_ms;   /* 0 = 600000 (10 minutes) */
	tls_server_t *tls;           /* borrowed; NULL or disabled = plain TCP (see tls.h) */
	/* Unix domain sockets, as mongod: an entry of bind_ip containing '/' is
	 * a socket path; unix_socket adds <unix_socket_prefix>/mongodb-<port>.sock
	 * (tamgad sets it unless --nounixsocket).  Every socket file gets mode
	 * unix_socket_mode (0 = 0700), is replaced when a crashed server left it
	 * behind (nothing answers on it) and is removed at shutdown. */
	bool unix_socket;
	const char *unix_socket_prefix;  /* NULL = "/tmp" */
	int unix_socket_mode;
} server_options_t;

/*
 * Bind and listen on every address (logging 23015 "Listening on" for each):
 * the TCP ones first, so that a port in use fails before any socket file is
 * touched, then the Unix domain sockets.  A socket file that exists is
 * replaced when it is a socket nobody answers on (left by a crashed
 * server); one with a live server behind it, or a file that is not a
 * socket, is an error.  Returns 0 with *out, or -1 with err: 9001
 * SocketException with the system's message ("Address already in use")
 * when an address cannot be bound.  The engine is borrowed and must
 * outlive the server.
 */
int server_start(engine_t *e, const server_options_t *opts, server_t **out, terr_t *err);

/* The port actually bound (the OS's pick when opts.port was -1). */
int server_port(const server_t *s);

/*
 * Accept connections until server_stop() is called or the engine's shutdown
 * flag is set (the shutdown command).  Before returning it closes the
 * listeners and removes their socket files (23017 "removing socket file"),
 * wakes every connection thread and waits until all have ended and freed
 * their clients, and stops the cursor reaper.  Returns 0.
 */
int server_run(server_t *s);

/* Ask server_run to return.  Async-signal-safe (a write to a pipe). */
void server_stop(server_t *s);

/* Free a server after server_run returned (or instead of it: the socket
 * files it made are removed then). */
void server_free(server_t *s);

/* The connection limit in force (--maxConns capped at 80% of the file
 * descriptor limit, as mongod). */
int64_t server_max_conns(const server_t *s);

/* Connections being served now. */
int64_t server_connection_count(server_t *s);

#endif
