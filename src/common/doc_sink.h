/*
 * doc_sink.h -- where a producer of documents hands them, one after another,
 * when the consumer copies each one at once (a reply batch being filled).
 *
 * A producer that drives a sink keeps its whole loop in one call (a plan
 * scanning a collection calls take for each result) instead of being called
 * through its layers once per document, and may hand out memory it only
 * lends for the duration of take (WiredTiger's own bytes,
 * storage_cursor_next_view).  Layers that decorate documents one by one
 * keep their per-document interface; this is only the fast lane between a
 * collection scan and a batch.
 */
#ifndef TAMGA_COMMON_DOC_SINK_H
#define TAMGA_COMMON_DOC_SINK_H

#include <stdint.h>

#include "common/error.h"

/* What take answers. */
enum {
	DOC_SINK_MORE = 0,     /* taken; hand the next one */
	DOC_SINK_FULL = 1,     /* taken (or kept aside by the sink), and no more now */
	DOC_SINK_FAILED = -2,  /* the sink failed (err set by it): stop, pass it on untouched */
};

typedef struct doc_sink {
	/*
	 * One document: len bytes of BSON at data, a view valid only during
	 * the call (the sink copies what it keeps).  Returns DOC_SINK_MORE,
	 * DOC_SINK_FULL, or DOC_SINK_FAILED with err.  A producer returns a
	 * result other than DOC_SINK_MORE as it is, without adding context to
	 * err (the error is the sink's, not the producer's).
	 */
	int (*take)(struct doc_sink *sink, const uint8_t *data, uint32_t len, terr_t *err);
} doc_sink_t;

#endif
