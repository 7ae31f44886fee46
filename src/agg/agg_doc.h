/*
 * agg_doc.h -- document helpers shared by the stages of src/agg/ (private to
 * the folder).
 */
#ifndef TAMGA_AGG_DOC_H
#define TAMGA_AGG_DOC_H

#include <stdbool.h>
#include <bson/bson.h>

/* Append to out (initialised by the caller) a copy of in (may be NULL =
 * empty) with the dotted path set to v, or removed when v is NULL.  The
 * field keeps its position; a new one goes last; missing or non-document
 * intermediate components become documents.  v may borrow from in. */
void agg_doc_set_path(const bson_t *in, const char *path, const bson_value_t *v, bson_t *out);

/* The value at a dotted path where every component names a field of a
 * document (arrays are not traversed).  *out borrows from doc.  False when
 * missing. */
bool agg_doc_get_path(const bson_t *doc, const char *path, bson_value_t *out);

#endif
