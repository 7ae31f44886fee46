/*
 * damage.c -- byte-level differences between two BSON documents (damage.h):
 * a parallel walk of both documents' elements, recursing into embedded
 * documents and arrays whose key and type agree.
 */
#include "bson/damage.h"

#include <bson/bson.h>
#include <string.h>

/* Changes separated by at most this many unchanged bytes become one entry
 * (an entry costs WiredTiger about as much as a few bytes of data). */
#define DAMAGE_MERGE_GAP 8
/* Deeper nesting is compared as whole values (bounded recursion). */
#define DAMAGE_MAX_DEPTH 100

typedef struct diff_ctx {
	const uint8_t *old, *new_doc;
	bdamages_t *out;
} diff_ctx_t;

static uint32_t
le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void
bdamages_reset(bdamages_t *dm)
{
	dm->n = 0;
	dm->last_old_end = 0;
}

void
bdamages_add(bdamages_t *o, uint32_t old_pos, uint32_t new_pos, uint32_t old_len, uint32_t new_len)
{
	if (old_len == 0 && new_len == 0)
		return;
	if (o->n > 0 && old_pos - o->last_old_end <= DAMAGE_MERGE_GAP) {
		/* the bytes in between are unchanged, so they are as far apart in
		 * both documents: one entry covers both changes and the gap */
		bdamage_t *l = &o->d[o->n - 1];
		uint32_t gap = old_pos - o->last_old_end;
		l->old_len += gap + old_len;
		l->new_len += gap + new_len;
		o->last_old_end = old_pos + old_len;
		return;
	}
	if (o->n == o->cap) {
		o->cap = o->cap ? o->cap * 2 : 16;
		o->d = bson_realloc(o->d, sizeof(*o->d) * (size_t)o->cap);
	}
	o->d[o->n++] = (bdamage_t){.offset = new_pos, .old_len = old_len, .new_len = new_len};
	o->last_old_end = old_pos + old_len;
}

static void
emit(diff_ctx_t *x, uint32_t old_pos, uint32_t new_pos, uint32_t old_len, uint32_t new_len)
{
	bdamages_add(x->out, old_pos, new_pos, old_len, new_len);
}

/* The documents (or arrays) at oo in old and no in new_doc. */
static bool
diff_doc(diff_ctx_t *x, uint32_t oo, uint32_t no, int depth)
{
	uint32_t olen = le32(x->old + oo), nlen = le32(x->new_doc + no);
	bson_iter_t oi, ni;

	if (olen < 5 || nlen < 5 || !bson_iter_init_from_data(&oi, x->old + oo, olen) ||
	    !bson_iter_init_from_data(&ni, x->new_doc + no, nlen))
		return false;
	if (olen == nlen && memcmp(x->old + oo + 4, x->new_doc + no + 4, olen - 4) == 0)
		return true;
	if (olen != nlen)
		emit(x, oo, no, 4, 4);
	if (olen < nlen && memcmp(x->old + oo + 4, x->new_doc + no + 4, olen - 5) == 0) {
		/* elements appended (a bucket's column): one memcmp, no walk */
		emit(x, oo + olen - 1, no + olen - 1, 0, nlen - olen);
		return true;
	}
	for (;;) {
		bool ho = bson_iter_next(&oi), hn = bson_iter_next(&ni);
		if (!ho || !hn || oi.d1 - oi.off != ni.d1 - ni.off ||
		    memcmp(x->old + oo + oi.off, x->new_doc + no + ni.off, oi.d1 - oi.off) != 0) {
			/* the lists part here: the rest of old's elements become the
			 * rest of new's (both lists keep their terminating nul) */
			uint32_t os = ho ? oi.off : olen - 1, ns = hn ? ni.off : nlen - 1;
			if ((!ho && oi.err_off != 0) || (!hn && ni.err_off != 0))
				return false;
			emit(x, oo + os, no + ns, olen - 1 - os, nlen - 1 - ns);
			return true;
		}
		bson_type_t t = bson_iter_type(&oi);
		if ((t == BSON_TYPE_DOCUMENT || t == BSON_TYPE_ARRAY) && depth < DAMAGE_MAX_DEPTH) {
			if (!diff_doc(x, oo + oi.d1, no + ni.d1, depth + 1))
				return false;
		} else {
			uint32_t ol = oi.next_off - oi.d1, nl = ni.next_off - ni.d1;
			if (ol != nl || memcmp(x->old + oo + oi.d1, x->new_doc + no + ni.d1, ol) != 0)
				emit(x, oo + oi.d1, no + ni.d1, ol, nl);
		}
	}
}

bool
bdamages_compute(const uint8_t *old, uint32_t old_len, const uint8_t *new_doc, uint32_t new_len, bdamages_t *out)
{
	diff_ctx_t x = {.old = old, .new_doc = new_doc, .out = out};

	bdamages_reset(out);
	if (old_len < 5 || new_len < 5 || le32(old) != old_len || le32(new_doc) != new_len)
		return false;
	return diff_doc(&x, 0, 0, 0);
}

bool
bdamages_diff_at(const uint8_t *old, uint32_t old_pos, const uint8_t *new_doc, uint32_t new_pos, bdamages_t *dm)
{
	diff_ctx_t x = {.old = old, .new_doc = new_doc, .out = dm};

	return diff_doc(&x, old_pos, new_pos, 0);
}

size_t
bdamages_bytes(const bdamages_t *dm)
{
	size_t n = 0;

	for (int i = 0; i < dm->n; i++)
		n += dm->d[i].new_len;
	return n;
}

uint8_t *
bdamages_apply(const uint8_t *old, uint32_t old_len, const uint8_t *new_doc, uint32_t new_len,
               const bdamages_t *dm, uint32_t *out_len)
{
	size_t len = old_len, cap = old_len;
	uint8_t *buf;

	for (int i = 0; i < dm->n; i++)
		cap += dm->d[i].new_len;
	buf = bson_malloc(cap + 1);
	memcpy(buf, old, old_len);
	for (int i = 0; i < dm->n; i++) {
		const bdamage_t *d = &dm->d[i];
		if ((size_t)d->offset + d->old_len > len || (size_t)d->offset + d->new_len > new_len) {
			bson_free(buf);
			return NULL;
		}
		memmove(buf + d->offset + d->new_len, buf + d->offset + d->old_len, len - d->offset - d->old_len);
		memcpy(buf + d->offset, new_doc + d->offset, d->new_len);
		len = len - d->old_len + d->new_len;
	}
	*out_len = (uint32_t)len;
	return buf;
}

void
bdamages_destroy(bdamages_t *dm)
{
	bson_free(dm->d);
	dm->d = NULL;
	dm->n = dm->cap = 0;
}
