/*
 * fuzz_command.c -- libFuzzer target for the command layer behind the wire:
 * each input is a BSON command document run through engine_run_command on
 * an in-memory engine (database "fuzz"), exactly as tamgad would after
 * parsing a message.  Whatever the document, the engine must answer with a
 * reply (ok: 1, or ok: 0 with a code) and never crash.
 *
 * Inputs that are not valid BSON are skipped (the wire parser rejects them
 * before they could reach the engine).  Built as a libFuzzer binary by
 * `make fuzz`, and as a corpus-replay program (FUZZ_REPLAY_MAIN) in the
 * normal build.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands/commands.h"
#include "server/wire.h"

static engine_t *eng;
static client_t *cl;
static char dir[256];

static void
fuzz_cleanup(void)
{
	char cmd[300];

	client_free(cl);
	engine_close(eng);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

static void
fuzz_init(void)
{
	engine_options_t eo;
	client_info_t ci = {1, "127.0.0.1:1", true};
	terr_t err = TERR_INIT;
	const char *base = getenv("TMPDIR");

	snprintf(dir, sizeof(dir), "%s/tamga-fuzz-command-XXXXXX", base && *base ? base : "/tmp");
	if (mkdtemp(dir) == NULL)
		abort();
	memset(&eo, 0, sizeof(eo));
	eo.storage.create = true;
	eo.storage.in_memory = true;
	if (engine_open(dir, &eo, &eng, &err) != 0) {
		fprintf(stderr, "engine_open: %s\n", err.msg);
		abort();
	}
	cl = client_new(eng, &ci);
	atexit(fuzz_cleanup);
}

/* Commands whose effect would end the run rather than test anything. */
static bool
skipped(const bson_t *cmd)
{
	bson_iter_t it;

	if (!bson_iter_init(&it, cmd) || !bson_iter_next(&it))
		return false;
	return strcmp(bson_iter_key(&it), "shutdown") == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	terr_t err = TERR_INIT;
	uint32_t len;
	bson_t cmd, reply;
	bson_iter_t it;
	int rc;

	if (eng == NULL)
		fuzz_init();
	if (wire_bson_validate(data, size, &len, &err) != 0) {
		terr_clear(&err);
		return 0;
	}
	if (!bson_init_static(&cmd, data, len) || skipped(&cmd))
		return 0;
	rc = engine_run_command(eng, cl, "fuzz", &cmd, &reply, &err);
	/* the reply contract: ok is there, and an error carries its code */
	if (!bson_iter_init_find(&it, &reply, "ok"))
		abort();
	if (rc != 0 && (!bson_iter_init_find(&it, &reply, "code") || !BSON_ITER_HOLDS_INT32(&it)))
		abort();
	bson_destroy(&reply);
	terr_clear(&err);
	return 0;
}

#ifdef FUZZ_REPLAY_MAIN
#include "fuzz_replay_main.h"
#endif
