/*
 * preimages_opt.h -- the changeStreamPreAndPostImages option of create and
 * collMod (commands/preimages_opt.c), as mongod's IDL reads it.
 */
#ifndef TAMGA_COMMANDS_PREIMAGES_OPT_H
#define TAMGA_COMMANDS_PREIMAGES_OPT_H

#include <stdbool.h>
#include <bson/bson.h>

#include "commands/commands_private.h"

/*
 * it stands on `changeStreamPreAndPostImages` of command cmd ("create" or
 * "collMod"): a document holding exactly `enabled` (bool).  0 with *enabled
 * set; -1 with mongod's IDL errors (14 for the wrong type, 40414 without
 * enabled, 40415 for another field), or 20 on a standalone ("Cannot enable
 * pre- and post-images on a standalone" is not mongod's: mongod accepts the
 * option there, so Tamga does too; pre-images are only written once the
 * oplog exists).  When enabled, config.system.preimages is created.
 */
int cmd_preimages_option(cmd_t *c, const bson_iter_t *it, const char *cmd, bool *enabled, terr_t *err);

#endif
