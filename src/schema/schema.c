/*
 * schema.c -- placeholder while the $jsonSchema compiler is written: every
 * entry point fails clearly (238 NotImplemented) instead of guessing.
 */
#include "schema/schema.h"

int
schema_compile(const bson_t *json_schema, schema_t **out, terr_t *err)
{
	*out = NULL;
	return terr_set(err, TERR_NOT_IMPLEMENTED, "$jsonSchema is not implemented yet");
}

void
schema_free(schema_t *s)
{
}

bool
schema_matches(const schema_t *s, const bson_t *doc)
{
	return false;
}

bool
schema_explain(const schema_t *s, const bson_t *doc, bson_t *details)
{
	return false;
}

bool
schema_explain_append(const schema_t *s, const bson_t *doc, bson_t *parent, const char *key)
{
	return false;
}

const char *
schema_title(const schema_t *s)
{
	return NULL;
}
