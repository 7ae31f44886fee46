/*
 * raft_auth.h -- canonical/raft's libuv TCP transport wrapped so that no
 * Raft message crosses a connection before both ends proved they hold the
 * set's keyFile (a challenge-response keyed with an HMAC of the key,
 * auth/auth_member.h; why this scheme: src/repl/README.md, "Member
 * authentication").
 *
 * On the wire, after libraft's own preamble (its protocol, the connector's
 * Raft id and address), before any Raft message:
 *   connector -> acceptor   "TMGRAFT1" 0x00 * 8 Nc              (48 bytes)
 *   acceptor  -> connector  "TMGRAFT1" Ns MAC1('S', Nc, Ns, id)
 *                           MAC2('S', Nc, Ns, id)               (104 bytes)
 *   connector -> acceptor   MACk('C', Ns, Nc, id)               (32 bytes)
 * where Nc / Ns are 32 fresh random bytes of each side, id is the
 * connector's Raft id, MAC1/MAC2 are under the acceptor's first and second
 * key (the first twice with one key) and k is the connector's first key
 * that verifies one of them: during a key rollover (two keys in the key
 * file, auth_member.h) members pass as long as they share a key.  The eight zero bytes are where libraft's message
 * preamble holds a header length: a member without the keyFile reads the
 * hello as a message of length 0 and drops the connection at once instead
 * of allocating a random size.  Each side reads exactly the handshake's bytes
 * (libuv reads into buffers sized to what is missing), so the first Raft
 * byte is left for libraft.  A handshake that fails or takes more than 5 s
 * closes the connection: an acceptor never hands it to Raft, a connector
 * reports RAFT_NOCONNECTION (libraft tries again a second later), and the
 * peer's failure is noted for rs.status() (repl_member_auth_note).
 *
 * Everything runs on the member's loop thread, as libraft's transport does.
 */
#ifndef TAMGA_REPL_RAFT_AUTH_H
#define TAMGA_REPL_RAFT_AUTH_H

#include <stdint.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#define REPL_RAFT_AUTH_MAGIC "TMGRAFT1"
#define REPL_RAFT_AUTH_MAGIC_LEN 8
#define REPL_RAFT_AUTH_HELLO_LEN 48   /* magic, 8 zero bytes, Nc */
#define REPL_RAFT_AUTH_NC_AT 16
#define REPL_RAFT_AUTH_KEY_SLOTS 2
#define REPL_RAFT_AUTH_ANSWER_LEN (8 + 32 + 32 * REPL_RAFT_AUTH_KEY_SLOTS)
#define REPL_RAFT_AUTH_TIMEOUT_MS 5000

/*
 * Make outer a transport that runs inner (an initialised raft_uv_tcp
 * transport on loop, owned by the caller and released by it after outer)
 * with the handshake above.  Needs the member key (auth_member_key_set).
 * 0, or RAFT_NOMEM.  Release with repl_raft_auth_close once libraft closed
 * outer (its close callback ran).
 */
int repl_raft_auth_init(struct raft_uv_transport *outer, struct raft_uv_transport *inner, uv_loop_t *loop);
void repl_raft_auth_close(struct raft_uv_transport *outer);

/*
 * The handshake's steps as pure functions (the transport above and the
 * unit tests share them).  Each returns 0, or -1 when the bytes are not
 * what an honest peer holding the same key sends (wrong magic, wrong MAC).
 */
/* connector: its hello (48 bytes) from its nonce */
void repl_raft_auth_hello(const uint8_t nc[32], uint8_t out[REPL_RAFT_AUTH_HELLO_LEN]);
/* acceptor: given the hello and the connector's claimed id, its answer
 * (REPL_RAFT_AUTH_ANSWER_LEN bytes) with a fresh nonce ns (kept for the
 * last step) */
int repl_raft_auth_answer(const uint8_t hello[REPL_RAFT_AUTH_HELLO_LEN], uint64_t id, uint8_t ns[32],
                          uint8_t out[REPL_RAFT_AUTH_ANSWER_LEN]);
/* connector: check the answer against nc and its own id (any key pair
 * shared); its proof (32) */
int repl_raft_auth_prove(const uint8_t nc[32], uint64_t id, const uint8_t answer[REPL_RAFT_AUTH_ANSWER_LEN],
                         uint8_t out[32]);
/* acceptor: check the connector's proof (under any of its keys) */
int repl_raft_auth_check(const uint8_t hello[REPL_RAFT_AUTH_HELLO_LEN], const uint8_t ns[32], uint64_t id, const uint8_t proof[32]);

#endif
