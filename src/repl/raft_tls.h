/*
 * raft_tls.h -- TLS on canonical/raft's libuv TCP transport, as a relay:
 * libraft (and the keyFile handshake above it, raft_auth.h) reads and
 * writes one end of a socketpair; the relay runs OpenSSL (memory BIOs) on
 * the real TCP socket and moves the bytes between the two on the member's
 * loop thread.  libraft needs no change and never sees a TLS byte.
 *
 * Stack: libraft -> raft_auth (keyFile, optional) -> raft_tls -> raft_uv_tcp.
 * libraft's connection preamble (its protocol version, the connector's Raft
 * id and address) is written by raft_uv_tcp before the relay starts, so
 * it crosses in clear; every byte after it -- the keyFile handshake and
 * every Raft message -- is inside TLS.
 *
 * Connecting out (preferTLS/requireTLS; member_tls.h): a TLS client of the
 * peer's Raft address, its certificate and host name checked; the
 * connection is libraft's once the handshake is done.  Connecting out
 * under allowTLS goes straight to raft_uv_tcp.  Accepting: the first byte
 * decides -- a TLS record (0x16) gets a TLS server handshake (the peer
 * must present a certificate that verifies), anything else is relayed in
 * clear under allowTLS/preferTLS and closed under requireTLS.  A handshake
 * that fails or takes more than 5 s closes the connection (a connector
 * reports RAFT_NOCONNECTION; libraft tries again), noted for rs.status().
 * Writes are bounded: a side whose peer is more than 4 MiB behind stops
 * being read until it drains.
 */
#ifndef TAMGA_REPL_RAFT_TLS_H
#define TAMGA_REPL_RAFT_TLS_H

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#define REPL_RAFT_TLS_TIMEOUT_MS 5000
#define REPL_RAFT_TLS_QUEUE_MAX (4u << 20)

/*
 * Make outer a transport running inner (an initialised raft_uv_tcp
 * transport on loop, owned and released by the caller after outer) with
 * TLS as above.  Needs member TLS configured (repl_member_tls_configure).
 * 0, or RAFT_NOMEM.  Release with repl_raft_tls_close once libraft (or the
 * layer above) closed outer.
 */
int repl_raft_tls_init(struct raft_uv_transport *outer, struct raft_uv_transport *inner, uv_loop_t *loop);
void repl_raft_tls_close(struct raft_uv_transport *outer);

#endif
