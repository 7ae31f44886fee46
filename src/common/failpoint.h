/*
 * failpoint.h -- mongod's fail points: named switches tests turn on with
 * `configureFailPoint` (only when the server runs with --setParameter
 * enableTestCommands=1) and that the code consults by name where the fail
 * point says something should go wrong.
 *
 * A fail point has a mode -- off, alwaysOn, {times: n} (the next n
 * activations, then off), {skip: n} (every activation after the first n) or
 * {activationProbability: p} -- and a `data` document its consumer reads
 * (failCommand's errorCode, closeConnection, ...).  The table of known fail
 * points is in failpoint.c: configuring a name that is not there answers
 * mongod's error, so a test never believes something fires that nothing
 * consults.
 *
 * Thread safety: every function may be called from any thread.  The check
 * on a hot path (failpoint_any_active) is one atomic load.
 */
#ifndef TAMGA_COMMON_FAILPOINT_H
#define TAMGA_COMMON_FAILPOINT_H

#include <stdbool.h>
#include <stdint.h>
#include <bson/bson.h>

#include "common/error.h"

/*
 * configureFailPoint's arguments: set fail point `name` to `mode` (the
 * value of the command's `mode` field) with `data` (NULL: {}).  Returns 0
 * with *count the number of times the fail point fired before this call
 * (configureFailPoint's `count`), or -1 with mongod's errors: 266
 * FailPointSetFailed "<name> not found"; 2 BadValue for a mode or data that
 * does not parse.  data is copied.
 */
int failpoint_configure(const char *name, const bson_iter_t *mode, const bson_t *data, int64_t *count,
                        terr_t *err);

/* True when some fail point is on (cheap; for skipping the lookups). */
bool failpoint_any_active(void);

/*
 * Consult fail point `name`: when it is on and match (NULL = always) says
 * this activation concerns it (match is called with the fail point's data,
 * under the fail point's lock: it must not consult fail points itself), the
 * mode decides (times counts down, skip counts, probability draws).  Returns
 * true when it fires, with a copy of its data in *data (initialised then;
 * bson_destroy it).  *data is untouched when it returns false.
 */
typedef bool (*failpoint_match_fn)(const bson_t *data, void *arg);
bool failpoint_fire(const char *name, failpoint_match_fn match, void *arg, bson_t *data);

/* Turn every fail point off (engine close; tests). */
void failpoint_reset_all(void);

#endif
