/*
 * auth_member.h -- member authentication (mongod's keyFile): the key file's
 * rules, the process's internal key and what is derived from it -- the
 * `__system@local` user's SCRAM-SHA-256 credentials (mongod 9.0 derives
 * them from the key string itself, saslPrep'd, with a random salt per
 * process), the client side of a SCRAM conversation one member runs
 * against another, and the MACs of the Raft transport's handshake
 * (repl/raft_auth.c).
 *
 * The key is process-wide: tamgad sets it once at startup, before any
 * connection; it is read-only afterwards (no lock on the readers).  An
 * embedded engine never sets it.  No function here logs or returns the
 * key itself.
 */
#ifndef TAMGA_AUTH_AUTH_MEMBER_H
#define TAMGA_AUTH_AUTH_MEMBER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <bson/bson.h>

#include "auth/auth.h"
#include "common/error.h"

#define AUTH_KEY_MIN_LEN 6
#define AUTH_KEY_MAX_LEN 1024
/* mongod: "Security key file %s does not contain any valid keys" */
#define TERR_KEYFILE_EMPTY 50981
/* mongod takes at most two keys (key rollover: log 20258 beyond) */
#define AUTH_KEYS_MAX 2

/* The keys of a key file, in order (each bson_malloc'd). */
typedef struct auth_keys {
	char **key;
	size_t n;
} auth_keys_t;

/* Cleanse and free the keys; k is empty afterwards. */
void auth_keys_clear(auth_keys_t *k);

/*
 * The keys of a key file's text as mongod's readSecurityFile reads its
 * YAML: a string (one key) or a sequence of strings (block `- key` items,
 * nested sequences flattened, or a flow `[k1, k2]`), `#` comments, `---`
 * markers and quotes allowed; in each key whitespace is dropped and
 * anything but base64 characters refused (12 UnsupportedFormat "invalid
 * char in key file <path>"); a mapping or an empty item is 12 "Only
 * strings and sequences are supported for YAML key files", other YAML
 * shapes 12 "error reading file: <path>: <why>"; no key at all 50981.
 * On success *out holds n >= 1 keys (the caller clears it).  The count
 * and length rules are the caller's (mongod logs them separately).
 */
int auth_keyfile_parse(const char *path, const char *text, size_t len, auth_keys_t *out, terr_t *err);

/*
 * Read a key file as mongod's readSecurityFile does (its text through
 * auth_keyfile_parse): 30 InvalidPath "Error
 * reading file <path>: <strerror>" (stat fails), 30 "permissions on <path>
 * are too open" (any group/other bit, POSIX), 30 "error opening file:
 * <path>: <strerror>", 12 UnsupportedFormat "invalid char in key file
 * <path>" (anything but base64 characters and whitespace), 50981 "Security
 * key file <path> does not contain any valid keys" (nothing left).  On
 * success *out holds the keys (whitespace stripped; the caller clears
 * it).  The length rule is separate (auth_keyfile_length_ok): mongod logs
 * it differently.
 */
int auth_keyfile_read_keys(const char *path, auth_keys_t *out, terr_t *err);
/* The same, the first key only (bson_malloc'd; tests of the file rules). */
int auth_keyfile_read(const char *path, char **key, terr_t *err);

/* 6 <= strlen(key) <= 1024, mongod's kMinKeyLength / kMaxKeyLength. */
bool auth_keyfile_length_ok(const char *key);

/*
 * Install key as the process's internal key (copied): computes the
 * `__system` credentials (SCRAM-SHA-256, a random salt, 15000 iterations)
 * and the Raft handshake key.  NULL clears it (tests).  -1 with err when
 * SASLprep or the key derivation fails.
 */
int auth_member_key_set(const char *key, terr_t *err);
/*
 * Key rollover (mongod's two-key file): n (1..2) keys, the first used to
 * authenticate to others (the second tried when the first is refused),
 * either accepted from others: both keys' `__system` credentials share
 * one salt (the second under the credentials' "alternate"), and the Raft
 * handshake has one key per key.  NULL/0 clears.  2 BadValue for more
 * than two.
 */
int auth_member_keys_set(const char *const *keys, size_t n, terr_t *err);
bool auth_member_key_present(void);
/* How many keys are installed (0 without a keyFile). */
size_t auth_member_key_count(void);

/* Whether user@db is the internal user (`__system` in `local`). */
bool auth_member_is_internal_user(const char *user, const char *db);

/*
 * The internal user's credentials for mechanism m as a creds lookup
 * (auth_creds_lookup_fn's contract): 0 and *creds initialised for
 * SCRAM-SHA-256 with a key, AUTH_CREDS_NO_MECH for SCRAM-SHA-1 (mongod 9.0
 * keeps only SCRAM-SHA-256 for `__system`), -1 (no such user) without a
 * key -- so nobody authenticates as `__system` on a node without one.
 */
int auth_member_creds(auth_mech_t m, bson_t *creds);

/* ---- the client side of SCRAM-SHA-256 (one member to another) ------------ */

typedef struct auth_scram_client auth_scram_client_t;

/* A conversation as user with password (SASLprep'd here).  NULL with err
 * when SASLprep refuses the password. */
auth_scram_client_t *auth_scram_client_new(const char *user, const char *password, terr_t *err);
void auth_scram_client_free(auth_scram_client_t *c);
/* The client-first message (borrowed, valid while c lives). */
const char *auth_scram_client_first(auth_scram_client_t *c);
/*
 * Given the server-first message, the client-final one (*out, bson_malloc,
 * NUL-terminated).  18 AuthenticationFailed with a reason when the message
 * is malformed, its nonce does not extend ours, or the iteration count is
 * below 4096 (RFC 7677's minimum; a peer asking for less is not trusted).
 * The salted password is cached per (salt, iterations), as mongod's client
 * does, so a member does PBKDF2 once per peer process.
 */
int auth_scram_client_final(auth_scram_client_t *c, const char *server_first, size_t len, char **out,
                            terr_t *err);
/* Check the server-final message (v=<signature>): 0 when the server proved
 * it holds the credentials, else 18 with a reason. */
int auth_scram_client_verify(auth_scram_client_t *c, const char *server_final, size_t len, terr_t *err);

/* A conversation as `__system` with key number which (0: the first; see
 * auth_member_key_count) for member_rpc.c; NULL with err (238) without
 * that key. */
auth_scram_client_t *auth_member_client_new(size_t which, terr_t *err);

/* ---- the Raft transport's handshake (repl/raft_auth.c) ------------------- */

#define AUTH_MEMBER_NONCE_LEN 32
#define AUTH_MEMBER_MAC_LEN 32

/* Fresh random nonce; -1 when OpenSSL's generator fails. */
int auth_member_nonce(uint8_t out[AUTH_MEMBER_NONCE_LEN]);

/*
 * HMAC-SHA-256 under key number which's Raft handshake key (itself HMAC-SHA-256(key,
 * "tamga raft member v1"), so the key string never keys anything else
 * directly) over: role ('S' for the acceptor's proof, 'C' for the
 * connector's), first and second nonce (the order each proof fixes), and
 * the connector's Raft id, 8 bytes little-endian.  The role byte keeps a
 * proof from being reflected as the other side's; the nonces make each
 * proof good for one connection; the id binds the connector's claim.
 * -1 without that key.
 */
int auth_member_mac(size_t which, char role, const uint8_t n1[AUTH_MEMBER_NONCE_LEN], const uint8_t n2[AUTH_MEMBER_NONCE_LEN],
                    uint64_t id, uint8_t out[AUTH_MEMBER_MAC_LEN]);

/* Constant-time comparison of two MACs. */
bool auth_member_mac_equal(const uint8_t a[AUTH_MEMBER_MAC_LEN], const uint8_t b[AUTH_MEMBER_MAC_LEN]);

#endif
