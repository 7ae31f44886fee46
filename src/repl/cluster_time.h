/*
 * cluster_time.h -- the HMAC keys that sign `$clusterTime` when access
 * control is on (--auth / --keyFile), kept as mongod keeps them in
 * admin.system.keys: {_id: NumberLong(keyId), purpose: "HMAC", key:
 * BinData(0, 20 bytes), expiresAt: Timestamp(secs, 0)}.  A signature is
 * HMAC-SHA1(key, the cluster time as 8 little-endian bytes), as mongod's
 * TimeProofService computes it.
 *
 * Keys are created on first use (the one valid now and the next one, each
 * valid 90 days as mongod's default keyValidForInterval) and rotated when
 * the current one expires.  What this module does not do: decide whether a
 * client may advance the clock (commands/cmd_repl.c) or keep the clock
 * (repl/replset.h).
 */
#ifndef TAMGA_REPL_CLUSTER_TIME_H
#define TAMGA_REPL_CLUSTER_TIME_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "storage/storage.h"

typedef struct cluster_keys cluster_keys_t;

#define CLUSTER_KEY_VALID_SECS (90 * 24 * 3600)

/* Keys over st (nothing is read or written until the first sign or
 * verify).  *out is the caller's until cluster_keys_close. */
int cluster_keys_open(storage_t *st, cluster_keys_t **out, terr_t *err);
void cluster_keys_close(cluster_keys_t *k);

/* Sign cluster time (secs, inc) with the key valid at secs (created when
 * there is none): 0 with *key_id and hash[20], or -1 with err (storage). */
int cluster_keys_sign(cluster_keys_t *k, uint32_t secs, uint32_t inc, int64_t *key_id, uint8_t hash[20],
                      terr_t *err);

/* As cluster_keys_sign, but never creates a key: for a member of a set of
 * several that is not its primary (keys come from the primary through the
 * set's log; a key made here would be another member's secret and a write
 * a secondary may not do).  With no usable key cached it reads
 * admin.system.keys again (at most once a second); 1 when there is still
 * none (the caller signs with keyId 0, as mongod before it has keys). */
int cluster_keys_sign_existing(cluster_keys_t *k, uint32_t secs, uint32_t inc, int64_t *key_id, uint8_t hash[20],
                               terr_t *err);

/* Check a gossiped signature: 0 when hash (len bytes) is the HMAC of (secs,
 * inc) under key key_id; mongod's errors otherwise: 211 KeyNotFound "No keys
 * found for HMAC that is valid for time: { ts: Timestamp(s, i) } with id:
 * N", 204 TimeProofMismatch "Time proof mismatch". */
int cluster_keys_verify(cluster_keys_t *k, uint32_t secs, uint32_t inc, int64_t key_id, const uint8_t *hash,
                        uint32_t len, terr_t *err);

#endif
