/*
 * cursor.c -- the engine-wide cursor registry and batch building.
 *
 * Cursors are kept in a small open-addressing-free linked table under one
 * mutex; a cursor being used by a getMore is marked busy so a concurrent
 * getMore or killCursors on the same id cannot free it underneath.
 */
#include "commands/cursor.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>

#include "bson/value.h"
#include "common/failpoint.h"
#include "common/mem.h"
#include "common/opctx.h"
#include "common/version.h"

typedef struct cursor {
	int64_t id;
	char *ns;
	char *owner;
	cursor_source_t src;
	int64_t limit;         /* remaining documents allowed, -1 = unlimited */
	bool no_timeout;
	bool tailable;         /* the end of the source does not close it */
	bool await_data;       /* an empty getMore waits for an insert into coll */
	storage_coll_t *coll;  /* referenced (tailable cursors), for the insert notifier */
	atomic_bool killed;    /* killCursors came while an awaitData getMore waited */
	int64_t connection_id; /* the connection that opened it (0: embedded) */
	bool busy;
	int64_t last_used_ms;
	bson_t *pending;       /* a document read ahead that did not fit the last batch */
	size_t last_bytes;     /* the documents' size in the last batch: the next one's room */
	int64_t time_left_us;  /* what remains of the find's maxTimeMS (0 = none) */
	uint64_t read_ts;      /* a snapshot read's timestamp (0 = none) */
	struct cursor *next;
} cursor_t;

struct cursor_registry {
	pthread_mutex_t lock;
	cursor_t *head;
	int count;
	atomic_bool shutting_down;   /* cursor_registry_shutdown */
};

static int64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

cursor_registry_t *
cursor_registry_new(void)
{
	cursor_registry_t *r = tm_malloc0(sizeof(*r));

	pthread_mutex_init(&r->lock, NULL);
	return r;
}

static void
cursor_destroy(cursor_t *c)
{
	if (c->src.free != NULL)
		c->src.free(c->src.state);
	if (c->pending != NULL)
		bson_destroy(c->pending);
	storage_coll_release(c->coll);
	bson_free(c->ns);
	bson_free(c->owner);
	bson_free(c);
}

void
cursor_registry_free(cursor_registry_t *r)
{
	cursor_t *c, *n;

	if (r == NULL)
		return;
	for (c = r->head; c != NULL; c = n) {
		n = c->next;
		cursor_destroy(c);
	}
	pthread_mutex_destroy(&r->lock);
	bson_free(r);
}

/* Cursor ids are random positive int64s, as mongod's, never 0. */
static int64_t
new_id(cursor_registry_t *r)
{
	int64_t id;
	cursor_t *c;

again:
	if (getrandom(&id, sizeof(id), 0) != sizeof(id))
		id = mono_ms() ^ (int64_t)(uintptr_t)&id;
	id &= INT64_MAX;
	if (id == 0)
		goto again;
	for (c = r->head; c != NULL; c = c->next)
		if (c->id == id)
			goto again;
	return id;
}

/* The next array index as a decimal string, in place ("9" -> "10"):
 * cheaper per document than formatting the number again. */
static void
key_next(char *key, int *len)
{
	int i = *len - 1;

	while (i >= 0 && key[i] == '9')
		key[i--] = '0';
	if (i >= 0) {
		key[i]++;
		return;
	}
	memmove(key + 1, key, (size_t)*len + 1);
	key[0] = '1';
	(*len)++;
}

/* A batch being built: the array's bytes (a length word, then elements),
 * in a buffer of our own, so that a document costs one bounds check and
 * two copies (libbson's bson_append_document into a child of a child cost
 * ~360 instructions a document, bson_reserve_buffer ~100); batch_close
 * ends it and writes it into the reply. */
typedef struct batch_buf {
	uint8_t *p;
	size_t len, cap;
} batch_buf_t;

static void
batch_add(batch_buf_t *b, const char *key, int klen, const uint8_t *doc, uint32_t doc_len)
{
	size_t need = b->len + 2 + (size_t)klen + doc_len + 1;   /* + the array's end */
	uint8_t *p;

	if (need > b->cap) {
		size_t cap = b->cap * 2 > need ? b->cap * 2 : need;
		b->p = bson_realloc(b->p, cap);
		b->cap = cap;
	}
	p = b->p + b->len;
	*p++ = BSON_TYPE_DOCUMENT;
	if (klen <= 8) {
		/* one 8-byte store, no memcpy call: the room reserved after the
		 * key (its NUL, a document of at least 5 bytes, the array's
		 * end) is at least 8 - klen bytes, and what passes the key is
		 * overwritten right below; key has 16 bytes */
		memcpy(p, key, 8);
	} else {
		memcpy(p, key, (size_t)klen);
	}
	p += klen;
	*p++ = '\0';
	memcpy(p, doc, doc_len);
	b->len = need - 1;
}

/* mongod's BSONObjMaxInternalSize (16 MB + 16 KB): no change event past it
 * leaves the server. */
#define CHANGE_EVENT_MAX_BSON (16 * 1024 * 1024 + 16 * 1024)

/* A batch being filled, as the sink its source hands documents to
 * (cursor_source_t.next_batch) and the one the document-at-a-time path
 * goes through too, so both count, cut and check alike. */
struct batch_fill {
	doc_sink_t sink;               /* first: fill_take gets this back */
	batch_buf_t *arr;
	int64_t batch_size;            /* -1 = no count limit */
	int64_t n;                     /* documents in the batch */
	size_t bytes;                  /* their size */
	int64_t *limit;                /* the cursor's documents left (-1 = no limit) */
	bson_t **pending;
	char key[16];                  /* the next array index */
	int klen;
};

/* doc_sink_t.take: the document into the batch; when it would take the
 * batch past 16 MiB it is copied into *pending (unless it is that one)
 * to start the next batch, and the batch is full.  Full too once the
 * batch has batch_size documents or the limit is reached.  Every document
 * taken is a unit of work for the interruption check (maxTimeMS, killOp):
 * DOC_SINK_FAILED with err. */
static int
fill_take(doc_sink_t *sink, const uint8_t *data, uint32_t len, terr_t *err)
{
	struct batch_fill *f = (struct batch_fill *)sink;

	if (f->n > 0 && f->bytes + len > (size_t)TAMGA_MAX_BSON_SIZE) {
		if (*f->pending == NULL)
			*f->pending = bson_new_from_data(data, len);
		return DOC_SINK_FULL;
	}
	batch_add(f->arr, f->key, f->klen, data, len);
	key_next(f->key, &f->klen);
	f->bytes += len;
	f->n++;
	if (*f->limit > 0)
		(*f->limit)--;
	if (tm_interrupt_check(err) != 0)
		return DOC_SINK_FAILED;
	return (f->batch_size >= 0 && f->n >= f->batch_size) || *f->limit == 0 ? DOC_SINK_FULL : DOC_SINK_MORE;
}

/*
 * Append up to batch_size documents (-1 = no count limit) to arr, stopping
 * before the batch would pass 16 MiB.  Sources cannot "unread", so the
 * document that did not fit is copied into *pending and starts the next
 * batch.  Sets *exhausted when the source ended or the limit is reached,
 * and *bytes to the documents' total size.  A source with next_batch (and
 * no batch_end) fills the batch in one call; any other is asked for one
 * document at a time.
 */
static int
fill_batch(cursor_source_t *src, storage_session_t *s, batch_buf_t *arr, int64_t batch_size,
    int64_t *limit, bson_t **pending, bool *exhausted, size_t *bytes_out, bool *ended, int64_t *n_out,
    terr_t *err)
{
	struct batch_fill f = {
		.sink = {.take = fill_take}, .arr = arr, .batch_size = batch_size, .limit = limit,
		.pending = pending, .key = "0", .klen = 1,
	};
	bson_t doc;
	int rc = 0;

	*exhausted = false;
	*ended = false;
	while (batch_size < 0 || f.n < batch_size) {
		if (*limit == 0) {
			*exhausted = true;
			break;
		}
		if (*pending != NULL) {
			int64_t before = f.n;
			rc = fill_take(&f.sink, bson_get_data(*pending), (*pending)->len, err);
			if (f.n > before) {
				bson_destroy(*pending);
				*pending = NULL;
			}
		} else if (src->next_batch != NULL && src->batch_end == NULL) {
			rc = src->next_batch(src->state, s, &f.sink, err);
			if (rc == 0) {
				*exhausted = true;
				*ended = true;
				break;
			}
		} else {
			rc = src->next(src->state, s, &doc, err);
			if (rc == 0) {
				*exhausted = true;
				*ended = true;
				break;
			}
			if (rc > 0 && src->batch_end != NULL && doc.len > CHANGE_EVENT_MAX_BSON) {
				/* a change event past mongod's internal BSON limit
				 * (BSONObjMaxInternalSize): $changeStreamSplitLargeEvent
				 * would have cut it */
				bson_iter_t it;
				const char *hex = NULL;
				if (bson_iter_init_find(&it, &doc, "_id") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
					bson_iter_t d;
					if (bson_iter_recurse(&it, &d) && bson_iter_find(&d, "_data") &&
					    BSON_ITER_HOLDS_UTF8(&d))
						hex = bson_iter_utf8(&d, NULL);
				}
				rc = terr_set(err, 10334,
				    "Executor error during getMore :: caused by :: BSONObj size: %u (0x%X) is invalid. Size must be between 0 and 16793600(16MB) First element: _id: { _data: \"%s\" }",
				    doc.len, doc.len, hex != NULL ? hex : "");
			} else if (rc > 0) {
				rc = fill_take(&f.sink, bson_get_data(&doc), doc.len, err);
			}
		}
		if (rc < 0)
			break;
		if (rc == DOC_SINK_FULL)
			break;
	}
	*bytes_out = f.bytes;
	*n_out = f.n;
	if (rc < 0)
		return -1;
	if (*limit == 0)
		*exhausted = true;
	return 0;
}

/*
 * The batch is written straight into the reply ({cursor: {firstBatch: [
 * opened here, closed by batch_close), so each document is copied once, from
 * the source into the reply.  An empty reply first gets room for about
 * `expect` bytes (a first batch: ~1 KiB with the reserve, past libbson's
 * inline 120 bytes and under glibc's per-thread cache limit; a
 * getMore: the previous batch's size), so that the batch does not grow the
 * buffer (and copy it) a dozen times on the way.
 */
static void
batch_open(bson_t *reply, size_t expect, batch_buf_t *arr)
{
	if (reply->len == 5 && expect > 0 && expect < (size_t)TAMGA_MAX_BSON_SIZE &&
	    bson_reserve_buffer(reply, (uint32_t)expect + 512) != NULL)
		bson_reinit(reply); /* keeps the buffer */
	arr->cap = expect > 64 && expect < (size_t)TAMGA_MAX_BSON_SIZE ? expect : 64;
	arr->p = bson_malloc(arr->cap);
	arr->len = 4;                         /* the length word, written at the end */
}

/* End the array (its terminator and length) and view it as a document. */
static void
batch_seal(batch_buf_t *b, bson_t *view)
{
	uint32_t n = (uint32_t)(b->len + 1);

	b->p[b->len] = '\0';
	b->p[0] = (uint8_t)(n & 0xff);
	b->p[1] = (uint8_t)((n >> 8) & 0xff);
	b->p[2] = (uint8_t)((n >> 16) & 0xff);
	b->p[3] = (uint8_t)((n >> 24) & 0xff);
	bson_init_static(view, b->p, n);
}

static uint8_t *
put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v & 0xff);
	p[1] = (uint8_t)((v >> 8) & 0xff);
	p[2] = (uint8_t)((v >> 16) & 0xff);
	p[3] = (uint8_t)((v >> 24) & 0xff);
	return p + 4;
}

/* Append {cursor: {<batch_name>: arr, <extra's fields>, id, ns}} (id and ns
 * only when with_id) to reply as raw bytes: libbson's appenders into a
 * child document were ~2 000 instructions of a find by _id.  False when
 * reply is not a document of its own (the caller then uses libbson). */
static bool
cursor_doc_raw(bson_t *reply, const char *batch_name, const bson_t *arr, const bson_t *extra, bool with_id,
               int64_t id, const char *ns)
{
	size_t bn = strlen(batch_name), nl = with_id ? strlen(ns) : 0;
	uint32_t ex = extra != NULL ? extra->len - 5 : 0;
	uint64_t body = 4 + (1 + bn + 1 + arr->len) + ex + (with_id ? (1 + 3 + 8) + (1 + 3 + 4 + nl + 1) : 0) + 1;
	uint64_t elem = 1 + 7 + body;          /* 0x03 "cursor\0" body */
	uint32_t old = reply->len;
	uint8_t *p;

	if (body > (uint64_t)INT32_MAX || old + elem > (uint64_t)INT32_MAX ||
	    (p = bson_reserve_buffer(reply, old + (uint32_t)elem)) == NULL)
		return false;
	put_le32(p, old + (uint32_t)elem);
	p += old - 1;                         /* over the trailing NUL */
	*p++ = BSON_TYPE_DOCUMENT;
	memcpy(p, "cursor", 7);
	p += 7;
	p = put_le32(p, (uint32_t)body);
	*p++ = BSON_TYPE_ARRAY;
	memcpy(p, batch_name, bn + 1);
	p += bn + 1;
	memcpy(p, bson_get_data(arr), arr->len);
	p += arr->len;
	if (ex > 0) {
		memcpy(p, bson_get_data(extra) + 4, ex);
		p += ex;
	}
	if (with_id) {
		uint64_t u = (uint64_t)id;
		*p++ = BSON_TYPE_INT64;
		memcpy(p, "id", 3);
		p += 3;
		for (int i = 0; i < 8; i++)
			*p++ = (uint8_t)(u >> (8 * i));
		*p++ = BSON_TYPE_UTF8;
		memcpy(p, "ns", 3);
		p += 3;
		p = put_le32(p, (uint32_t)(nl + 1));
		memcpy(p, ns, nl + 1);
		p += nl + 1;
	}
	*p++ = '\0';                          /* the cursor document's end */
	*p = '\0';                            /* the reply's */
	return true;
}

/* Close what batch_open opened: the cursor document with the batch, and id
 * and ns unless the batch failed (the dispatcher then replaces the whole
 * reply with the error); a source's batch_end adds its fields first (src
 * may be NULL).  Frees the batch's buffer. */
static void
batch_close(bson_t *reply, const char *batch_name, batch_buf_t *buf, bool failed, int64_t id, const char *ns,
            const cursor_source_t *src, bool ended, bool pending)
{
	bson_t extra, cur, view, *arr = &view;
	bool has_extra = !failed && src != NULL && src->batch_end != NULL;

	batch_seal(buf, &view);

	if (has_extra) {
		bson_init(&extra);
		src->batch_end(src->state, ended, pending, &extra);
	}
	if (!cursor_doc_raw(reply, batch_name, arr, has_extra ? &extra : NULL, !failed, id, ns)) {
		bson_append_document_begin(reply, "cursor", 6, &cur);
		bson_append_array(&cur, batch_name, -1, arr);
		if (has_extra)
			bson_concat(&cur, &extra);
		if (!failed) {
			BSON_APPEND_INT64(&cur, "id", id);
			BSON_APPEND_UTF8(&cur, "ns", ns);
		}
		bson_append_document_end(reply, &cur);
	}
	if (has_extra)
		bson_destroy(&extra);
	bson_free(buf->p);
	buf->p = NULL;
}

/* What a first batch put in reply, for the operation's readers
 * ($queryStats' nreturned: tm_opctx_t.batch_*). */
static void
batch_note(bson_t *reply, int64_t n, int64_t id)
{
	tm_opctx_t *op = tm_opctx_current();

	if (op == NULL)
		return;
	op->batch_reply = reply;
	op->batch_reply_len = reply->len;
	op->batch_n = n;
	op->batch_cursor_id = id;
}

void
cursor_reply_one(bson_t *reply, const char *ns, const bson_t *doc)
{
	/* {cursor: {firstBatch: [doc], id: 0, ns}} written once into reply:
	 * the document is copied only there (no array built first) */
	size_t nl = strlen(ns);
	uint64_t arr = 4 + (doc != NULL ? 1 + 2 + (uint64_t)doc->len : 0) + 1;
	uint64_t body = 4 + (1 + 10 + 1 + arr) + (1 + 3 + 8) + (1 + 3 + 4 + nl + 1) + 1;
	uint64_t elem = 1 + 7 + body;
	uint32_t old = reply->len;
	uint8_t *p = NULL;
	bson_t view, cur;

	if (old + elem + 512 <= (uint64_t)TAMGA_MAX_BSON_SIZE) {
		/* an empty reply gets room for the dispatcher's fields too (ok:
		 * 1), as batch_open makes, in one reservation (~110 instructions
		 * each): its length is set to what is written below */
		p = bson_reserve_buffer(reply, old + (uint32_t)elem + (old == 5 ? 512 : 0));
	}
	if (p != NULL) {
		reply->len = old + (uint32_t)elem;   /* bson_t's public length: a top-level document */
		put_le32(p, old + (uint32_t)elem);
		p += old - 1;                 /* over the trailing NUL */
		*p++ = BSON_TYPE_DOCUMENT;
		memcpy(p, "cursor", 7);
		p = put_le32(p + 7, (uint32_t)body);
		*p++ = BSON_TYPE_ARRAY;
		memcpy(p, "firstBatch", 11);
		p = put_le32(p + 11, (uint32_t)arr);
		if (doc != NULL) {
			*p++ = BSON_TYPE_DOCUMENT;
			*p++ = '0';
			*p++ = '\0';
			memcpy(p, bson_get_data(doc), doc->len);
			p += doc->len;
		}
		*p++ = '\0';                  /* the array's end */
		*p++ = BSON_TYPE_INT64;
		memcpy(p, "id", 3);
		memset(p + 3, 0, 8);
		p += 11;
		*p++ = BSON_TYPE_UTF8;
		memcpy(p, "ns", 3);
		p = put_le32(p + 3, (uint32_t)(nl + 1));
		memcpy(p, ns, nl + 1);
		p += nl + 1;
		*p++ = '\0';                  /* the cursor document's end */
		*p = '\0';                    /* the reply's */
	} else {
		bson_append_document_begin(reply, "cursor", 6, &cur);
		bson_append_array_begin(&cur, "firstBatch", 10, &view);
		if (doc != NULL)
			bson_append_document(&view, "0", 1, doc);
		bson_append_array_end(&cur, &view);
		BSON_APPEND_INT64(&cur, "id", 0);
		BSON_APPEND_UTF8(&cur, "ns", ns);
		bson_append_document_end(reply, &cur);
	}
	batch_note(reply, doc != NULL ? 1 : 0, 0);
}

int
cursor_first_batch(cursor_registry_t *r, storage_session_t *s, const char *ns,
                   cursor_source_t *src, const cursor_opts_t *opts,
                   bson_t *reply, terr_t *err)
{
	batch_buf_t arr;
	bson_t *pending = NULL;
	bool exhausted, ended;
	int64_t n;
	int64_t limit = opts->limit > 0 ? opts->limit : -1;
	int64_t bs = opts->batch_size >= 0 ? opts->batch_size : 101;
	int64_t id = 0;
	size_t bytes;
	cursor_t *c;

	if (opts->batch_size < 0 && opts->single_batch)
		bs = -1;	/* singleBatch without batchSize: everything up to 16 MiB */
	if (limit > 0 && (bs < 0 || bs > limit))
		bs = limit;
	batch_open(reply, 480, &arr);
	if (fill_batch(src, s, &arr, bs, &limit, &pending, &exhausted, &bytes, &ended, &n, err) != 0) {
		batch_close(reply, "firstBatch", &arr, true, 0, ns, NULL, false, false);
		if (pending)
			bson_destroy(pending);
		src->free(src->state);
		return -1;
	}
	/* a tailable cursor outlives the end of the data, not its limit */
	if (opts->tailable && ended && limit != 0 && !(src->finished != NULL && src->finished(src->state)))
		exhausted = false;
	if (exhausted || opts->single_batch) {
		batch_close(reply, "firstBatch", &arr, false, 0, ns, src, ended, pending != NULL);
		batch_note(reply, n, 0);
		src->free(src->state);
		if (pending)
			bson_destroy(pending);
	} else {
		if (src->save != NULL && src->save(src->state, err) != 0) {
			batch_close(reply, "firstBatch", &arr, true, 0, ns, NULL, false, false);
			if (pending)
				bson_destroy(pending);
			src->free(src->state);
			return -1;
		}
		c = tm_malloc0(sizeof(*c));
		c->ns = bson_strdup(ns);
		c->owner = opts->owner ? bson_strdup(opts->owner) : NULL;
		c->src = *src;
		c->limit = limit;
		c->no_timeout = opts->no_timeout;
		c->connection_id = opts->connection_id;
		c->read_ts = opts->read_ts;
		c->tailable = opts->tailable;
		c->await_data = opts->await_data && opts->coll != NULL;
		if (opts->tailable && opts->coll != NULL) {
			storage_coll_ref(opts->coll);
			c->coll = opts->coll;
		}
		c->last_used_ms = mono_ms();
		c->pending = pending;
		c->last_bytes = bytes;
		/* maxTimeMS bounds the cursor's whole work, as mongod's leftover
		 * time: what the first batch did not use goes to the getMores */
		if (tm_opctx_deadline() != 0) {
			c->time_left_us = tm_opctx_deadline() - tm_now_us();
			if (c->time_left_us < 1)
				c->time_left_us = 1;
		}
		pthread_mutex_lock(&r->lock);
		id = new_id(r);
		c->id = id;
		c->next = r->head;
		r->head = c;
		r->count++;
		pthread_mutex_unlock(&r->lock);
		batch_close(reply, "firstBatch", &arr, false, id, ns, &c->src, ended, pending != NULL);
		batch_note(reply, n, id);
		return 0;
	}
	return 0;
}

static cursor_t *
take(cursor_registry_t *r, int64_t id, bool remove)
{
	cursor_t **pp, *c;

	for (pp = &r->head; (c = *pp) != NULL; pp = &c->next) {
		if (c->id == id) {
			if (remove) {
				*pp = c->next;
				r->count--;
			}
			return c;
		}
	}
	return NULL;
}

#define CURSOR_KILLED 237    /* CursorKilled */

void
cursor_change_stream_labels(terr_t *err)
{
	/* mongod's isResumableChangeStreamError candidates (retriable,
	 * network and shard-retargeting errors, RetryChangeStream,
	 * FailedToSatisfyReadPreference) and ChangeStreamFatalError */
	static const int resumable[] = {6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436, 63, 150,
		13388, 234, 133};
	const char *label = NULL;
	bson_t *extra, arr;
	bson_iter_t it;

	if (err == NULL || !terr_is_set(err) ||
	    (err->extra != NULL && bson_iter_init_find(&it, err->extra, "errorLabels")))
		return;
	if (err->code == 280)
		label = "NonResumableChangeStreamError";
	for (size_t i = 0; i < sizeof(resumable) / sizeof(resumable[0]) && label == NULL; i++)
		if (resumable[i] == err->code)
			label = "ResumableChangeStreamError";
	if (label == NULL)
		return;
	extra = bson_new();
	if (err->extra != NULL && bson_iter_init(&it, err->extra))
		while (bson_iter_next(&it))
			bson_append_iter(extra, bson_iter_key(&it), -1, &it);
	bson_append_array_begin(extra, "errorLabels", -1, &arr);
	BSON_APPEND_UTF8(&arr, "0", label);
	bson_append_array_end(extra, &arr);
	terr_set_extra_steal(err, extra);
}

/* failGetMoreAfterCursorCheckout: the getMore fails with data.errorCode
 * once it holds the cursor. */
static int
get_more_fail_point(terr_t *err)
{
	bson_t data;
	bson_iter_t it;
	int code = TERR_INTERNAL_ERROR;

	if (!failpoint_any_active() || !failpoint_fire("failGetMoreAfterCursorCheckout", NULL, NULL, &data))
		return 0;
	if (bson_iter_init_find(&it, &data, "errorCode") && BSON_ITER_HOLDS_NUMBER(&it))
		code = (int)bson_iter_as_int64(&it);
	bson_destroy(&data);
	return terr_set(err, code, "Failing command via 'failGetMoreAfterCursorCheckout' failpoint");
}
#define INTERRUPTED_AT_SHUTDOWN 11600

/* How long a change stream's getMore woken by a commit waits for more. */
#define CHANGE_STREAM_COALESCE_US 300

/* Default wait of an awaitData getMore without maxTimeMS (mongod's 1 s). */
#define AWAIT_DATA_DEFAULT_US 1000000

/*
 * One getMore's batch: fill it; a tailable awaitData cursor that found
 * nothing new (the source at its end, no document in the batch) releases
 * its storage resources and sleeps on the collection's insert notifier
 * until an insert commits or await_until passes, then looks again.  The
 * insert sequence is read before each look, so an insert that commits
 * between the look and the wait is not missed.
 */
static int
get_more_fill(cursor_registry_t *r, cursor_t *c, storage_session_t *s, batch_buf_t *arr, int64_t batch_size,
              int64_t await_until, bool *exhausted, size_t *bytes, bool *ended_out, terr_t *err)
{
	cursor_source_t *src = &c->src;
	bool ended;
	int64_t n;

	for (;;) {
		uint64_t seen = c->await_data ? storage_coll_insert_seq(c->coll) : 0;
		if (atomic_load(&c->killed))
			return terr_set(err, CURSOR_KILLED, "operation was interrupted");
		if (fill_batch(src, s, arr, batch_size, &c->limit, &c->pending, exhausted, bytes, &ended, &n,
		    err) != 0)
			return -1;
		*ended_out = ended;
		if (c->tailable && ended && c->limit != 0 && !(src->finished != NULL && src->finished(src->state)))
			*exhausted = false;
		if (!c->await_data || !ended || n > 0 || *exhausted || tm_now_us() >= await_until)
			return 0;
		if (atomic_load(&r->shutting_down))
			return terr_set(err, INTERRUPTED_AT_SHUTDOWN, "interrupted at shutdown");
		if (src->save != NULL && src->save(src->state, err) != 0)
			return -1;
		/* a change stream woken by a commit lets the commits right behind it
		 * land too (one batch for a burst of writes instead of one getMore
		 * per write); at most CHANGE_STREAM_COALESCE_US, never past the wait */
		if (storage_coll_wait_insert(c->coll, seen, await_until) == 1 && src->batch_end != NULL) {
			int64_t left = await_until - tm_now_us();
			struct timespec d = {0, (long)(left < CHANGE_STREAM_COALESCE_US ? (left > 0 ? left : 0) :
			    CHANGE_STREAM_COALESCE_US) * 1000};
			nanosleep(&d, NULL);
		}
		/* killCursors interrupts the wait, as mongod's interrupts the op */
		if (atomic_load(&c->killed))
			return terr_set(err, CURSOR_KILLED, "operation was interrupted");
		if (atomic_load(&r->shutting_down))
			return terr_set(err, INTERRUPTED_AT_SHUTDOWN, "interrupted at shutdown");
		if (src->restore != NULL && src->restore(src->state, s, err) != 0)
			return -1;
	}
}

uint64_t
cursor_read_ts(cursor_registry_t *r, int64_t id)
{
	uint64_t ts = 0;
	cursor_t *c;

	pthread_mutex_lock(&r->lock);
	if ((c = take(r, id, false)) != NULL)
		ts = c->read_ts;
	pthread_mutex_unlock(&r->lock);
	return ts;
}

int
cursor_get_more(cursor_registry_t *r, storage_session_t *s, int64_t id, const char *ns,
                const char *owner, int64_t batch_size, int64_t deadline_us, bool has_max_time,
                bson_t *reply, terr_t *err)
{
	cursor_t *c;
	cursor_source_t *src;
	batch_buf_t arr;
	size_t bytes = 0;
	bool exhausted = false, ended = false;
	int64_t await_until = 0;
	int rc = 0;

	pthread_mutex_lock(&r->lock);
	c = take(r, id, false);
	if (c == NULL) {
		pthread_mutex_unlock(&r->lock);
		return terr_set(err, TERR_CURSOR_NOT_FOUND, "cursor id %lld not found", (long long)id);
	}
	if (strcmp(c->ns, ns) != 0) {
		pthread_mutex_unlock(&r->lock);
		return terr_set(err, TERR_UNAUTHORIZED,
		    "Requested getMore on namespace '%s', but cursor belongs to a different namespace %s",
		    ns, c->ns);
	}
	if ((c->owner != NULL || owner != NULL) &&
	    (c->owner == NULL || owner == NULL || strcmp(c->owner, owner) != 0)) {
		pthread_mutex_unlock(&r->lock);
		return terr_set(err, TERR_UNAUTHORIZED,
		    "cursor id %lld was not created by the authenticated user", (long long)id);
	}
	if (c->busy) {
		pthread_mutex_unlock(&r->lock);
		return terr_set(err, 20 /* IllegalOperation? mongod: CursorInUse */,
		    "Cursor already in use (namespace: '%s', id: %lld).", ns, (long long)id);
	}
	if (has_max_time && !c->await_data) {
		pthread_mutex_unlock(&r->lock);
		return terr_set(err, TERR_BAD_VALUE,
		    "cannot set maxTimeMS on getMore command for a non-awaitData cursor");
	}
	c->busy = true;
	pthread_mutex_unlock(&r->lock);
	if (c->await_data)
		await_until = has_max_time && deadline_us != 0 ? deadline_us :
		    has_max_time ? tm_now_us() : tm_now_us() + AWAIT_DATA_DEFAULT_US;

	/* The operation's deadline: for an awaitData cursor the getMore's
	 * maxTimeMS is only how long it waits for inserts (await_until), never
	 * a time limit; any other cursor gets the originating command's
	 * leftover time. */
	int64_t t0 = tm_now_us();
	if (c->await_data)
		tm_opctx_set_deadline(0);
	else if (c->time_left_us != 0)
		tm_opctx_set_deadline(t0 + c->time_left_us);
	src = &c->src;
	batch_open(reply, c->last_bytes + c->last_bytes / 8, &arr);
	if (get_more_fail_point(err) != 0) {
		rc = -1;
	} else if (src->restore != NULL && src->restore(src->state, s, err) != 0) {
		rc = -1;
	} else {
		rc = get_more_fill(r, c, s, &arr, batch_size > 0 ? batch_size : -1, await_until,
		    &exhausted, &bytes, &ended, err);
		if (rc == 0 && !exhausted && src->save != NULL)
			rc = src->save(src->state, err);
	}

	pthread_mutex_lock(&r->lock);
	c->busy = false;
	c->last_used_ms = mono_ms();
	if (c->time_left_us != 0) {
		c->time_left_us -= tm_now_us() - t0;
		if (c->time_left_us < 1)
			c->time_left_us = 1;
	}
	c->last_bytes = bytes;
	if (rc != 0 || exhausted)
		take(r, id, true);
	pthread_mutex_unlock(&r->lock);

	batch_close(reply, "nextBatch", &arr, rc != 0, exhausted ? 0 : id, ns, &c->src, ended, c->pending != NULL);
	if (rc != 0) {
		if (c->src.batch_end != NULL && c->tailable)   /* a change stream (not a resumable scan) */
			cursor_change_stream_labels(err);
		cursor_destroy(c);
		return -1;
	}
	if (exhausted)
		cursor_destroy(c);
	return 0;
}

void
cursor_close_connection(cursor_registry_t *r, int64_t connection_id)
{
	cursor_t **pp, *c, *dead = NULL;

	if (r == NULL || connection_id <= 0)
		return;
	pthread_mutex_lock(&r->lock);
	for (pp = &r->head; (c = *pp) != NULL;) {
		if (c->connection_id == connection_id && c->src.batch_end != NULL && !c->busy) {
			*pp = c->next;
			r->count--;
			c->next = dead;
			dead = c;
		} else {
			pp = &c->next;
		}
	}
	pthread_mutex_unlock(&r->lock);
	while ((c = dead) != NULL) {
		dead = c->next;
		cursor_destroy(c);
	}
}

void
cursor_kill(cursor_registry_t *r, const char *ns, const int64_t *ids, int n, bson_t *reply)
{
	bson_t killed = BSON_INITIALIZER, not_found = BSON_INITIALIZER, alive = BSON_INITIALIZER;
	int nk = 0, nn = 0, na = 0, i;
	char key[16];
	const char *k;

	for (i = 0; i < n; i++) {
		cursor_t *c;
		pthread_mutex_lock(&r->lock);
		c = take(r, ids[i], false);
		if (c != NULL && strcmp(c->ns, ns) == 0 && !c->busy) {
			take(r, ids[i], true);
			pthread_mutex_unlock(&r->lock);
			cursor_destroy(c);
			bson_uint32_to_string((uint32_t)nk++, &k, key, sizeof(key));
			bson_append_int64(&killed, k, -1, ids[i]);
		} else if (c != NULL && strcmp(c->ns, ns) == 0 && c->await_data) {
			/* a getMore waits on it: interrupt the wait; the getMore
			 * fails with 237 and frees it */
			atomic_store(&c->killed, true);
			storage_coll_wake(c->coll);
			pthread_mutex_unlock(&r->lock);
			bson_uint32_to_string((uint32_t)nk++, &k, key, sizeof(key));
			bson_append_int64(&killed, k, -1, ids[i]);
		} else if (c != NULL && strcmp(c->ns, ns) == 0) {
			pthread_mutex_unlock(&r->lock);
			bson_uint32_to_string((uint32_t)na++, &k, key, sizeof(key));
			bson_append_int64(&alive, k, -1, ids[i]);
		} else {
			pthread_mutex_unlock(&r->lock);
			bson_uint32_to_string((uint32_t)nn++, &k, key, sizeof(key));
			bson_append_int64(&not_found, k, -1, ids[i]);
		}
	}
	bson_append_array(reply, "cursorsKilled", -1, &killed);
	bson_append_array(reply, "cursorsNotFound", -1, &not_found);
	bson_append_array(reply, "cursorsAlive", -1, &alive);
	{
		bson_t unknown = BSON_INITIALIZER;
		bson_append_array(reply, "cursorsUnknown", -1, &unknown);
		bson_destroy(&unknown);
	}
	bson_destroy(&killed);
	bson_destroy(&not_found);
	bson_destroy(&alive);
}

void
cursor_registry_shutdown(cursor_registry_t *r)
{
	cursor_t *c;

	if (r == NULL)
		return;
	atomic_store(&r->shutting_down, true);
	pthread_mutex_lock(&r->lock);
	for (c = r->head; c != NULL; c = c->next)
		if (c->busy && c->await_data)
			storage_coll_wake(c->coll);
	pthread_mutex_unlock(&r->lock);
}

int
cursor_reap(cursor_registry_t *r, int64_t timeout_ms)
{
	cursor_t **pp, *c, *dead = NULL;
	int64_t now = mono_ms();
	int n = 0;

	pthread_mutex_lock(&r->lock);
	for (pp = &r->head; (c = *pp) != NULL;) {
		if (!c->busy && !c->no_timeout && now - c->last_used_ms > timeout_ms) {
			*pp = c->next;
			r->count--;
			c->next = dead;
			dead = c;
			n++;
		} else {
			pp = &c->next;
		}
	}
	pthread_mutex_unlock(&r->lock);
	while (dead != NULL) {
		c = dead->next;
		cursor_destroy(dead);
		dead = c;
	}
	return n;
}

int
cursor_count(cursor_registry_t *r)
{
	int n;

	pthread_mutex_lock(&r->lock);
	n = r->count;
	pthread_mutex_unlock(&r->lock);
	return n;
}
