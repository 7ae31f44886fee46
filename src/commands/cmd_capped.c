/*
 * cmd_capped.c -- convertToCapped and cloneCollectionAsCapped: a capped copy
 * of a collection's documents in natural order, as mongod makes it.
 *
 * cloneCollectionAsCapped creates the target with the source's options plus
 * {capped: true, size[, max]} (a new UUID, only the _id index) and inserts
 * every source document in RecordId order, so the capped limits keep the
 * newest ones.  convertToCapped clones into a temporary
 * "tmp<random>.convertToCapped.<coll>" and renames it over the source
 * (dropTarget), so the collection gets a new UUID and loses its secondary
 * indexes, as on mongod.  The copy is committed in batches; on failure the
 * partial target is dropped.  Not done: mongod holds the database lock for
 * the whole copy, so writes to the source that arrive during a
 * convertToCapped are not lost there; here they are not copied.
 *
 * Creating capped collections and collMod of their limits are in
 * cmd_catalog.c / cmd_collmod.c; the capping itself is storage's.
 */
#include "commands/commands_private.h"

#include <string.h>
#include <sys/random.h>

#include "bson/value.h"

/* Documents per transaction of the copy. */
#define CAPPED_COPY_BATCH 1000

/* The target's options: the source's, with capped/size/max replaced. */
static void
clone_options(const storage_coll_t *src, int64_t size, bson_t *out)
{
	bson_iter_t it;
	bool has_max = src->capped && src->capped_max > 0;

	cmd_capped_options_append(out, cmd_capped_size(size), has_max, src->capped_max);
	if (!bson_iter_init(&it, src->options))
		return;
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strcmp(k, "capped") == 0 || strcmp(k, "size") == 0 || strcmp(k, "max") == 0)
			continue;
		bson_append_iter(out, k, -1, &it);
	}
}

/* Copy src's documents into db.to (already created, capped). */
static int
copy_documents(cmd_t *c, storage_session_t *s, storage_coll_t *src, const char *to, terr_t *err)
{
	storage_coll_t *dst = NULL;
	storage_cursor_t *cur = NULL;
	bson_t doc;
	int ret = 0, rc, n = 0;

	ERR(storage_coll_get(c->engine->st, c->db, to, &dst, err));
	ERR(storage_scan_open(s, src, false, &cur, err));
	ERR(storage_txn_begin(s, err));
	while ((rc = storage_cursor_next(cur, NULL, &doc, NULL, NULL, err)) == 1) {
		ERR(storage_doc_insert(s, dst, &doc, NULL, err));
		if (++n % CAPPED_COPY_BATCH == 0) {
			ERR(storage_txn_commit(s, false, err));
			if (cmd_check_deadline(c, err)) {
				ret = -1;
				goto err;
			}
			ERR(storage_txn_begin(s, err));
		}
	}
	if (rc < 0) {
		ret = -1;
		goto err;
	}
	ERR(storage_txn_commit(s, false, err));
err:
	if (storage_txn_active(s))
		storage_txn_rollback(s);
	storage_cursor_close(cur);
	storage_coll_release(dst);
	return ret;
}

/* The clone both commands make: db.to as a capped copy of src. */
static int
capped_clone(cmd_t *c, storage_session_t *s, storage_coll_t *src, const char *to, int64_t size, terr_t *err)
{
	bson_t options = BSON_INITIALIZER;
	int ret = 0;

	clone_options(src, size, &options);
	ERR(storage_coll_create(c->engine->st, s, c->db, to, &options, err));
	if (copy_documents(c, s, src, to, err) != 0) {
		terr_t ignore = TERR_INIT;
		storage_coll_drop(c->engine->st, s, c->db, to, &ignore);
		terr_clear(&ignore);
		ret = -1;
	}
err:
	bson_destroy(&options);
	return ret;
}

/* size: required, >= 1 and at most 1 PB (mongod's IDL for both commands). */
static int
size_arg(cmd_t *c, int64_t *size, terr_t *err)
{
	bool found;

	RET(cmd_capped_number(c, c->body, "size", size, &found, err));
	if (!found)
		return terr_set(err, 40414, "BSON field '%s.size' is missing but a required field", c->name);
	return cmd_capped_range("size", true, *size, NULL, false, 0, err);
}

/* Does the database hold anything (a collection or a view)? */
static bool
db_exists(cmd_t *c)
{
	storage_coll_t **colls = NULL;
	bson_t views = BSON_INITIALIZER;
	int n = 0;
	bool any;

	if (storage_list_colls(c->engine->st, c->db, &colls, &n, NULL) != 0)
		n = 0;
	for (int i = 0; i < n; i++)
		storage_coll_release(colls[i]);
	bson_free(colls);
	storage_list_views(c->engine->st, c->db, &views);
	any = n > 0 || !bson_empty(&views);
	bson_destroy(&views);
	return any;
}

/* The source, as mongod's cloneCollectionAsCapped looks it up: 166
 * "cloneCollectionAsCapped not supported for views: <ns>", 26 "source
 * collection <ns> does not exist" (convertToCapped first: 26 "database <db>
 * not found"). */
static int
source_get(cmd_t *c, const char *name, bool convert, storage_coll_t **out, terr_t *err)
{
	if (storage_coll_get(c->engine->st, c->db, name, out, NULL) == 0)
		return 0;
	if (convert && !db_exists(c))
		return terr_set(err, TERR_NAMESPACE_NOT_FOUND, "database %s not found", c->db);
	if (view_exists(c, c->db, name))
		return terr_set(err, TERR_COMMAND_NOT_SUPPORTED_ON_VIEW,
		    "cloneCollectionAsCapped not supported for views: %s.%s", c->db, name);
	return terr_set(err, TERR_NAMESPACE_NOT_FOUND, "source collection %s.%s does not exist", c->db, name);
}

CMD_HANDLER(cmd_clone_collection_as_capped)
{
	static const char *const fields[] = {"toCollection", "size", "temp", NULL};
	const char *from, *to;
	storage_coll_t *src = NULL, *dst = NULL;
	storage_session_t *s;
	int64_t size = 0;
	bool found;
	int ret = 0;

	ERR(cmd_collection_arg(c, &from, err));
	ERR(cmd_check_fields(c, fields, err));
	ERR(cmd_get_string(c, "toCollection", &to, &found, err));
	if (!found) {
		ret = terr_set(err, 40414, "BSON field 'cloneCollectionAsCapped.toCollection' is missing but a required field");
		goto err;
	}
	ERR(size_arg(c, &size, err));
	ERR(storage_ns_check(c->db, to, err));
	ERR(source_get(c, from, false, &src, err));
	if (storage_coll_get(c->engine->st, c->db, to, &dst, NULL) == 0 || view_exists(c, c->db, to)) {
		ret = terr_set(err, TERR_NAMESPACE_EXISTS,
		    "cloneCollectionAsCapped failed - destination collection %s.%s already exists. source collection: %s.%s",
		    c->db, to, c->db, from);
		goto err;
	}
	if ((s = client_session(c->client, err)) == NULL) {
		ret = -1;
		goto err;
	}
	ERR(capped_clone(c, s, src, to, size, err));
err:
	storage_coll_release(src);
	storage_coll_release(dst);
	return ret;
}

CMD_HANDLER(cmd_convert_to_capped)
{
	static const char *const fields[] = {"size", NULL};
	static const char alnum[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	const char *name;
	storage_coll_t *src = NULL;
	storage_session_t *s;
	uint8_t rnd[5];
	char tmp[300];
	int64_t size = 0;
	int ret = 0;

	ERR(cmd_collection_arg(c, &name, err));
	ERR(cmd_check_fields(c, fields, err));
	ERR(size_arg(c, &size, err));
	ERR(source_get(c, name, true, &src, err));
	if ((s = client_session(c->client, err)) == NULL) {
		ret = -1;
		goto err;
	}
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		memset(rnd, 7, sizeof(rnd));
	snprintf(tmp, sizeof(tmp), "tmp%c%c%c%c%c.convertToCapped.%s", alnum[rnd[0] % 36], alnum[rnd[1] % 36],
	    alnum[rnd[2] % 36], alnum[rnd[3] % 36], alnum[rnd[4] % 36], name);
	ERR(capped_clone(c, s, src, tmp, size, err));
	if (storage_coll_rename(c->engine->st, s, c->db, tmp, c->db, name, true, err) != 0) {
		terr_t ignore = TERR_INIT;
		storage_coll_drop(c->engine->st, s, c->db, tmp, &ignore);
		terr_clear(&ignore);
		ret = -1;
	}
err:
	storage_coll_release(src);
	return ret;
}
