/*
 * text_spec.c -- text index specs (mongod's FTSSpec, textIndexVersion 2 and 3):
 * validation and normalization at createIndexes, the compiled form keygen
 * and the $text executor read, and the per-document term scores
 * (FTSElementIterator + _scoreStringV2), weights and language overrides
 * included, quirks kept: under "$**" a field without a weight of its own
 * takes the weight of the next weighted path in name order, as mongod's
 * lower_bound lookup does.
 */
#include "text/text_private.h"

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "bson/value.h"
#include "common/mem.h"

#define MAX_WORD_WEIGHT 100000   /* mongod's MAX_WEIGHT / 10000 */

typedef struct weight {
	char *path;
	double w;
} weight_t;

struct text_spec {
	weight_t *weights;            /* sorted by path (bytes), "$**" left out */
	int nweights;
	bool wildcard;
	const text_lang_t *lang;
	char *override;
	int version;
	char **prefix, **suffix;
	int nprefix, nsuffix;
};

bool
text_key_is_text(const bson_t *key)
{
	bson_iter_t it;

	if (key == NULL || !bson_iter_init(&it, key))
		return false;
	while (bson_iter_next(&it))
		if (strcmp(bson_iter_key(&it), "_fts") == 0 ||
		    (BSON_ITER_HOLDS_UTF8(&it) && strcmp(bson_iter_utf8(&it, NULL), "text") == 0))
			return true;
	return false;
}

/* ---- fixSpec ------------------------------------------------------------- */

typedef struct wentry {
	char *name;
	int w;
	int seq;      /* order given: a later weight for the same name wins */
} wentry_t;

typedef struct wmap {
	wentry_t *e;
	int n, cap;
} wmap_t;

/* std::map<string, int> m; m[name] = w -- appended here, sorted and
 * deduplicated once (wmap_finish), so a spec with many weights stays
 * n log n. */
static void
wmap_set(wmap_t *m, const char *name, int w)
{
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 8;
		m->e = bson_realloc(m->e, sizeof(wentry_t) * (size_t)m->cap);
	}
	m->e[m->n].name = bson_strdup(name);
	m->e[m->n].w = w;
	m->e[m->n].seq = m->n;
	m->n++;
}

static int
wentry_cmp(const void *a, const void *b)
{
	const wentry_t *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c != 0 ? c : x->seq - y->seq;
}

static void
wmap_finish(wmap_t *m)
{
	int i, j;

	if (m->n < 2)
		return;
	qsort(m->e, (size_t)m->n, sizeof(wentry_t), wentry_cmp);
	for (i = 1, j = 0; i < m->n; i++) {
		if (strcmp(m->e[i].name, m->e[j].name) == 0) {
			bson_free(m->e[j].name);
			m->e[j] = m->e[i];
		} else {
			m->e[++j] = m->e[i];
		}
	}
	m->n = j + 1;
}

static void
wmap_free(wmap_t *m)
{
	for (int i = 0; i < m->n; i++)
		bson_free(m->e[i].name);
	bson_free(m->e);
}

/* BSONElement::numberInt of a number (doubles truncated, saturating). */
static int
number_int(const bson_iter_t *it)
{
	bson_value_t v = *bson_iter_value((bson_iter_t *)it);
	double d;

	if (v.value_type == BSON_TYPE_INT32)
		return v.value.v_int32;
	if (v.value_type == BSON_TYPE_INT64)
		return (int)v.value.v_int64;
	if (!bv_is_number(&v))
		return 0;
	d = bv_as_double(&v);
	if (isnan(d))
		return 0;
	if (d >= 2147483647.0)
		return 2147483647;
	if (d <= -2147483648.0)
		return (-2147483647 - 1);
	return (int)d;
}

static bool
is_text_value(const bson_iter_t *it)
{
	return BSON_ITER_HOLDS_UTF8(it) && strcmp(bson_iter_utf8(it, NULL), "text") == 0;
}

static int
check_key_format(const bson_t *key, terr_t *err)
{
	bson_iter_t it;
	bool more;

	bson_iter_init(&it, key);
	more = bson_iter_next(&it);
	/* extraBefore fields */
	while (more && !BSON_ITER_HOLDS_UTF8(&it)) {
		if (!strcmp(bson_iter_key(&it), "_fts") || !strcmp(bson_iter_key(&it), "_ftsx"))
			return terr_set(err, TERR_CANNOT_CREATE_INDEX, "text index with reserved fields _fts/_ftsx not allowed");
		if (!(more = bson_iter_next(&it)))
			return terr_set(err, TERR_CANNOT_CREATE_INDEX, "expected additional fields in text index key pattern");
	}
	if (!more)
		return 0;
	if (strcmp(bson_iter_key(&it), "_fts") == 0) {
		if (!bson_iter_next(&it) || strcmp(bson_iter_key(&it), "_ftsx") != 0)
			return terr_set(err, TERR_CANNOT_CREATE_INDEX, "expected _ftsx after _fts");
		more = bson_iter_next(&it);
	} else {
		do {
			if (!strcmp(bson_iter_key(&it), "_fts") || !strcmp(bson_iter_key(&it), "_ftsx"))
				return terr_set(err, TERR_CANNOT_CREATE_INDEX,
				    "text index with reserved fields _fts/_ftsx not allowed");
			more = bson_iter_next(&it);
		} while (more && BSON_ITER_HOLDS_UTF8(&it));
	}
	while (more) {
		if (BSON_ITER_HOLDS_UTF8(&it))
			return terr_set(err, TERR_CANNOT_CREATE_INDEX, "'text' fields in index must all be adjacent");
		if (!strcmp(bson_iter_key(&it), "_fts") || !strcmp(bson_iter_key(&it), "_ftsx"))
			return terr_set(err, TERR_CANNOT_CREATE_INDEX, "text index with reserved fields _fts/_ftsx not allowed");
		more = bson_iter_next(&it);
	}
	return 0;
}

static int
check_weight_path(const char *p, terr_t *err)
{
	if (strcmp(p, "$**") == 0)
		return 0;
	if (*p == '\0')
		return terr_set(err, TERR_CANNOT_CREATE_INDEX, "weight cannot be on an empty field");
	for (;;) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);
		if (n == 0)
			return terr_set(err, TERR_CANNOT_CREATE_INDEX, "weight cannot have empty path component");
		if (*p == '$')
			return terr_set(err, TERR_CANNOT_CREATE_INDEX, "weight cannot have path component with $ prefix");
		if (dot == NULL)
			return 0;
		p = dot + 1;
	}
}

static bool
override_valid(const char *s)
{
	return *s != '\0' && *s != '$' && strchr(s, '.') == NULL;
}

int
text_spec_fix(const bson_t *spec, bson_t *out, terr_t *err)
{
	bson_iter_t it, k;
	bson_t key, newkey, weights;
	wmap_t m = {0};
	const char *dl = "english", *lo = "language";
	bool added = false, have_v = false;
	int version = 3, v = 0, ret = 0, i;

	bson_init(out);
	bson_init(&newkey);
	bson_init(&weights);
	if (!bson_iter_init_find(&it, spec, "key") || !BSON_ITER_HOLDS_DOCUMENT(&it))
		ERR(terr_set(err, TERR_CANNOT_CREATE_INDEX, "text index requires a key pattern"));
	{
		const uint8_t *d;
		uint32_t l;
		bson_iter_document(&it, &l, &d);
		bson_init_static(&key, d, l);
	}
	/* textIndexVersion first: versions 1 and 2 tokenize differently */
	if (bson_iter_init_find(&it, spec, "textIndexVersion")) {
		if (!BSON_ITER_HOLDS_NUMBER(&it))
			ERR(terr_set(err, TERR_CANNOT_CREATE_INDEX, "text index option 'textIndexVersion' must be a number"));
		version = number_int(&it);
		if (version == 1)
			ERR(terr_set(err, TERR_NOT_IMPLEMENTED,
			    "textIndexVersion 1 is not supported by Tamga (versions 2 and 3 are)"));
		if (version != 2 && version != 3)
			ERR(terr_set(err, TERR_CANNOT_CREATE_INDEX, "bad textIndexVersion: %d", version));
	}
	bson_iter_init(&k, &key);
	while (bson_iter_next(&k)) {
		const char *f = bson_iter_key(&k);
		if (strcmp(f, "_fts") == 0) {
			if (!is_text_value(&k))
				ERR(terr_set(err, TERR_CANNOT_CREATE_INDEX, "expecting _fts:\"text\""));
			added = true;
			bson_append_iter(&newkey, f, -1, &k);
		} else if (strcmp(f, "_ftsx") == 0) {
			if (number_int(&k) != 1)
				ERR(terr_set(err, TERR_CANNOT_CREATE_INDEX, "expecting _ftsx:1"));
			bson_append_iter(&newkey, f, -1, &k);
		} else if (is_text_value(&k)) {
			if (!added) {
				BSON_APPEND_UTF8(&newkey, "_fts", "text");
				BSON_APPEND_INT32(&newkey, "_ftsx", 1);
				added = true;
			}
			wmap_set(&m, f, 1);
		} else {
			int n = BSON_ITER_HOLDS_NUMBER(&k) ? number_int(&k) : 0;
			if (n != 1 && n != -1)
				ERR(terr_set(err, TERR_CANNOT_CREATE_INDEX,
				    "expected value 1 or -1 for non-text key in compound index"));
			bson_append_iter(&newkey, f, -1, &k);
		}
	}
	ERR(check_key_format(&key, err));
	if (bson_iter_init_find(&it, spec, "weights")) {
		if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
			bson_iter_t w;
			bson_iter_recurse(&it, &w);
			while (bson_iter_next(&w)) {
				if (!BSON_ITER_HOLDS_NUMBER(&w))
					ERR(terr_set(err, TERR_CANNOT_CREATE_INDEX, "weight for text index needs numeric type"));
				wmap_set(&m, bson_iter_key(&w), number_int(&w));
			}
		} else if (BSON_ITER_HOLDS_UTF8(&it) && strcmp(bson_iter_utf8(&it, NULL), "$**") == 0) {
			wmap_set(&m, "$**", 1);
		} else {
			ERR(terr_set(err, TERR_CANNOT_CREATE_INDEX, "text index option 'weights' must be an object"));
		}
	}
	if (m.n == 0)
		ERR(terr_set(err, TERR_CANNOT_CREATE_INDEX, "text index option 'weights' must specify fields or the wildcard"));
	/* std::map order: by name */
	wmap_finish(&m);
	for (i = 0; i < m.n; i++) {
		if (m.e[i].w <= 0 || m.e[i].w >= MAX_WORD_WEIGHT)
			ERR(terr_set(err, TERR_CANNOT_CREATE_INDEX,
			    "text index weight must be in the exclusive interval (0,%d) but found: %d", MAX_WORD_WEIGHT,
			    m.e[i].w));
		ERR(check_weight_path(m.e[i].name, err));
		BSON_APPEND_INT32(&weights, m.e[i].name, m.e[i].w);
	}
	if (bson_iter_init_find(&it, spec, "default_language")) {
		if (!BSON_ITER_HOLDS_UTF8(&it))
			ERR(terr_set(err, TERR_CANNOT_CREATE_INDEX, "default_language needs a string type"));
		dl = bson_iter_utf8(&it, NULL);
	}
	if (text_lang_find(dl) == NULL)
		ERR(terr_set(err, TERR_CANNOT_CREATE_INDEX, "default_language is not valid"));
	if (bson_iter_init_find(&it, spec, "language_override")) {
		if (!BSON_ITER_HOLDS_UTF8(&it))
			ERR(terr_set(err, TERR_CANNOT_CREATE_INDEX, "language_override must be a string"));
		lo = bson_iter_utf8(&it, NULL);
		if (!override_valid(lo))
			ERR(terr_set(err, TERR_CANNOT_CREATE_INDEX, "language_override is not valid"));
	}
	/* the spec as given, key/weights/languages replaced in place, the
	 * missing ones appended, then v and textIndexVersion */
	bson_iter_init(&it, spec);
	{
		bool w_done = false, dl_done = false, lo_done = false;
		while (bson_iter_next(&it)) {
			const char *f = bson_iter_key(&it);
			if (!strcmp(f, "key")) {
				BSON_APPEND_DOCUMENT(out, "key", &newkey);
			} else if (!strcmp(f, "weights")) {
				BSON_APPEND_DOCUMENT(out, "weights", &weights);
				w_done = true;
			} else if (!strcmp(f, "default_language")) {
				BSON_APPEND_UTF8(out, "default_language", dl);
				dl_done = true;
			} else if (!strcmp(f, "language_override")) {
				BSON_APPEND_UTF8(out, "language_override", lo);
				lo_done = true;
			} else if (!strcmp(f, "v")) {
				have_v = true;
				v = number_int(&it);
			} else if (strcmp(f, "textIndexVersion") != 0) {
				bson_append_iter(out, f, -1, &it);
			}
		}
		if (!w_done)
			BSON_APPEND_DOCUMENT(out, "weights", &weights);
		if (!dl_done)
			BSON_APPEND_UTF8(out, "default_language", dl);
		if (!lo_done)
			BSON_APPEND_UTF8(out, "language_override", lo);
		if (have_v)
			BSON_APPEND_INT32(out, "v", v);
		BSON_APPEND_INT32(out, "textIndexVersion", version);
	}
err:
	wmap_free(&m);
	bson_destroy(&newkey);
	bson_destroy(&weights);
	return ret;
}

/* ---- compiled specs ------------------------------------------------------- */

typedef struct spec_entry {
	struct spec_entry *next;
	uint8_t *bytes;
	uint32_t len;
	text_spec_t *spec;
} spec_entry_t;

static spec_entry_t *spec_cache;
static pthread_mutex_t spec_mu = PTHREAD_MUTEX_INITIALIZER;

static int
weight_cmp(const void *a, const void *b)
{
	return strcmp(((const weight_t *)a)->path, ((const weight_t *)b)->path);
}

static text_spec_t *
spec_compile(const bson_t *stored, terr_t *err)
{
	text_spec_t *s = tm_malloc0(sizeof(*s));
	bson_iter_t it, w;
	bool passed = false;
	int n;

	s->version = 3;
	s->lang = text_lang_find("english");
	s->override = bson_strdup("language");
	if (bson_iter_init_find(&it, stored, "textIndexVersion") && BSON_ITER_HOLDS_NUMBER(&it))
		s->version = number_int(&it);
	if (bson_iter_init_find(&it, stored, "default_language") && BSON_ITER_HOLDS_UTF8(&it)) {
		s->lang = text_lang_find(bson_iter_utf8(&it, NULL));
		if (s->lang == NULL) {
			terr_set(err, 28682, "Unrecognized language %s found for text index. Verify mongod was started with the correct options.",
			    bson_iter_utf8(&it, NULL));
			goto bad;
		}
	}
	if (bson_iter_init_find(&it, stored, "language_override") && BSON_ITER_HOLDS_UTF8(&it)) {
		bson_free(s->override);
		s->override = bson_strdup(bson_iter_utf8(&it, NULL));
	}
	if (!bson_iter_init_find(&it, stored, "weights") || !BSON_ITER_HOLDS_DOCUMENT(&it)) {
		terr_set(err, 16739, "found invalid spec for text index");
		goto bad;
	}
	bson_iter_recurse(&it, &w);
	n = 0;
	while (bson_iter_next(&w))
		n++;
	s->weights = tm_malloc0(sizeof(weight_t) * (size_t)(n + 1));
	bson_iter_recurse(&it, &w);
	while (bson_iter_next(&w)) {
		if (strcmp(bson_iter_key(&w), "$**") == 0) {
			s->wildcard = true;
			continue;
		}
		s->weights[s->nweights].path = bson_strdup(bson_iter_key(&w));
		s->weights[s->nweights++].w = bson_iter_as_double(&w);
	}
	qsort(s->weights, (size_t)s->nweights, sizeof(weight_t), weight_cmp);
	if (!bson_iter_init_find(&it, stored, "key") || !BSON_ITER_HOLDS_DOCUMENT(&it)) {
		terr_set(err, 16739, "found invalid spec for text index");
		goto bad;
	}
	bson_iter_recurse(&it, &w);
	n = 0;
	while (bson_iter_next(&w))
		n++;
	s->prefix = tm_malloc0(sizeof(char *) * (size_t)(n + 1));
	s->suffix = tm_malloc0(sizeof(char *) * (size_t)(n + 1));
	bson_iter_recurse(&it, &w);
	while (bson_iter_next(&w)) {
		const char *f = bson_iter_key(&w);
		if (!strcmp(f, "_fts") || !strcmp(f, "_ftsx")) {
			passed = true;
			continue;
		}
		if (passed)
			s->suffix[s->nsuffix++] = bson_strdup(f);
		else
			s->prefix[s->nprefix++] = bson_strdup(f);
	}
	return s;
bad:
	for (int i = 0; i < s->nweights; i++)
		bson_free(s->weights[i].path);
	bson_free(s->weights);
	bson_free(s->override);
	bson_free(s);
	return NULL;
}

const text_spec_t *
text_spec_get(const bson_t *stored, terr_t *err)
{
	spec_entry_t *e;
	text_spec_t *s;
	const uint8_t *data = bson_get_data(stored);

	pthread_mutex_lock(&spec_mu);
	for (e = spec_cache; e != NULL; e = e->next)
		if (e->len == stored->len && memcmp(e->bytes, data, stored->len) == 0)
			break;
	pthread_mutex_unlock(&spec_mu);
	if (e != NULL)
		return e->spec;
	if ((s = spec_compile(stored, err)) == NULL)
		return NULL;
	e = tm_malloc0(sizeof(*e));
	e->bytes = bson_malloc(stored->len);
	memcpy(e->bytes, data, stored->len);
	e->len = stored->len;
	e->spec = s;
	pthread_mutex_lock(&spec_mu);
	e->next = spec_cache;
	spec_cache = e;
	pthread_mutex_unlock(&spec_mu);
	return s;
}

const text_lang_t *text_spec_default_lang(const text_spec_t *s) { return s->lang; }
int text_spec_version(const text_spec_t *s) { return s->version; }
int text_spec_nprefix(const text_spec_t *s) { return s->nprefix; }
const char *text_spec_prefix(const text_spec_t *s, int i) { return s->prefix[i]; }
int text_spec_nsuffix(const text_spec_t *s) { return s->nsuffix; }
const char *text_spec_suffix(const text_spec_t *s, int i) { return s->suffix[i]; }

/* ---- the indexed strings (FTSElementIterator) -------------------------------- */


/* The first weight whose path is >= key (lower_bound), or NULL. */
static const weight_t *
lower_bound(const text_spec_t *s, const char *key)
{
	int lo = 0, hi = s->nweights;

	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (strcmp(s->weights[mid].path, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->nweights ? &s->weights[lo] : NULL;
}

static bool
match_prefix(const char *dotted, const char *weight)
{
	size_t n = strlen(dotted);

	return strcmp(weight, dotted) == 0 || (strncmp(weight, dotted, n) == 0 && weight[n] == '.');
}

/* The language of a (sub)document: its override field, else the parent's. */
static int
frame_language(const text_spec_t *s, const uint8_t *data, uint32_t len, const text_lang_t **lang, terr_t *err)
{
	bson_iter_t it;
	const text_lang_t *l;

	if (!bson_iter_init_from_data(&it, data, len) || !bson_iter_find(&it, s->override))
		return 0;
	if (!BSON_ITER_HOLDS_UTF8(&it))
		return terr_set(err, 17261, "found language override field in document with non-string type");
	if ((l = text_lang_find(bson_iter_utf8(&it, NULL))) == NULL)
		return terr_set(err, 17262, "language override unsupported: %s", bson_iter_utf8(&it, NULL));
	*lang = l;
	return 0;
}

static int
walk(const text_spec_t *s, const uint8_t *data, uint32_t len, const char *parent, bool is_array,
     const text_lang_t *lang, int depth, text_value_fn fn, void *ctx, terr_t *err)
{
	bson_iter_t it;
	tbuf_t dotted = {0};
	int ret = 0;

	if (depth > 200)
		return 0;
	RET(frame_language(s, data, len, &lang, err));
	if (!bson_iter_init_from_data(&it, data, len))
		return 0;
	while (bson_iter_next(&it)) {
		const char *f = bson_iter_key(&it);
		bson_type_t t = bson_iter_type(&it);
		const weight_t *lb;
		bool possible, exact;
		double weight;
		if (s->wildcard && strcmp(f, s->override) == 0)
			continue;
		dotted.len = 0;
		if (*parent == '\0') {
			tbuf_put(&dotted, f, strlen(f));
		} else if (is_array) {
			tbuf_put(&dotted, parent, strlen(parent));
		} else {
			tbuf_put(&dotted, parent, strlen(parent));
			tbuf_put(&dotted, ".", 1);
			tbuf_put(&dotted, f, strlen(f));
		}
		if (t == BSON_TYPE_DOCUMENT) {
			tbuf_put(&dotted, ".", 1);
			lb = lower_bound(s, dotted.p);
			dotted.p[--dotted.len] = '\0';
		} else {
			lb = lower_bound(s, dotted.p);
		}
		possible = lb != NULL;
		if (!s->wildcard && (!possible || !match_prefix(dotted.p, lb->path)))
			continue;
		exact = possible && strcmp(lb->path, dotted.p) == 0;
		weight = possible ? lb->w : 1.0;
		if (t == BSON_TYPE_UTF8) {
			if (exact || s->wildcard) {
				uint32_t l;
				const char *str = bson_iter_utf8(&it, &l);
				ERR(fn(ctx, lang, str, l, weight, err));
			}
		} else if (t == BSON_TYPE_DOCUMENT || t == BSON_TYPE_ARRAY) {
			const uint8_t *d;
			uint32_t l;
			if (t == BSON_TYPE_DOCUMENT && exact && !s->wildcard)
				continue;
			if (t == BSON_TYPE_ARRAY && is_array && !s->wildcard)
				continue;
			if (t == BSON_TYPE_DOCUMENT)
				bson_iter_document(&it, &l, &d);
			else
				bson_iter_array(&it, &l, &d);
			ERR(walk(s, d, l, dotted.p, t == BSON_TYPE_ARRAY, lang, depth + 1, fn, ctx, err));
		}
	}
err:
	bson_free(dotted.p);
	return ret;
}

/* ---- scores ------------------------------------------------------------------- */

/* term -> numbers, open addressing; keys in one arena buffer */
typedef struct tslot {
	size_t off, len;   /* in keys; len 0 = empty (terms are never empty) */
	double a, b, c;    /* scoring: freq, count, exp -- or the document score in a */
} tslot_t;

typedef struct tmap {
	tslot_t *slot;
	size_t cap, n;
	tbuf_t keys;
} tmap_t;

static uint64_t
fnv(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
	return h;
}

static tslot_t *
tmap_get(tmap_t *m, const char *k, size_t n)
{
	size_t i;

	if ((m->n + 1) * 2 > m->cap) {
		tmap_t g = {0};
		g.cap = m->cap ? m->cap * 2 : 32;
		g.slot = tm_malloc0(sizeof(tslot_t) * g.cap);
		g.keys = m->keys;
		for (i = 0; i < m->cap; i++)
			if (m->slot[i].len != 0) {
				size_t j = fnv(m->keys.p + m->slot[i].off, m->slot[i].len) & (g.cap - 1);
				while (g.slot[j].len != 0)
					j = (j + 1) & (g.cap - 1);
				g.slot[j] = m->slot[i];
				g.n++;
			}
		bson_free(m->slot);
		*m = g;
	}
	for (i = fnv(k, n) & (m->cap - 1); m->slot[i].len != 0; i = (i + 1) & (m->cap - 1))
		if (m->slot[i].len == n && memcmp(m->keys.p + m->slot[i].off, k, n) == 0)
			return &m->slot[i];
	m->slot[i].off = m->keys.len;
	m->slot[i].len = n;
	m->slot[i].a = m->slot[i].b = m->slot[i].c = 0;
	tbuf_put(&m->keys, k, n);
	m->n++;
	return &m->slot[i];
}

static void
tmap_free(tmap_t *m)
{
	bson_free(m->slot);
	bson_free(m->keys.p);
}

typedef struct score_ctx {
	tmap_t doc;        /* term -> score */
	tmap_t str;        /* one string's terms */
	unsigned ntokens;
	int opts;          /* TEXT_TOK_BASIC for textIndexVersion 2 */
} score_ctx_t;

static void
score_token(void *ctx, const char *tok, size_t len)
{
	score_ctx_t *c = ctx;
	tslot_t *d;

	if (len == 0)
		return;
	d = tmap_get(&c->str, tok, len);
	d->c = d->c != 0 ? d->c * 2 : 1;   /* exp */
	d->b += 1;                         /* count */
	d->a += 1 / d->c;                  /* freq */
	c->ntokens++;
}

static bool
equal_case_insensitive(const char *a, size_t an, const char *b, size_t bn)
{
	if (an != bn)
		return false;
	for (size_t i = 0; i < an; i++)
		if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i]))
			return false;
	return true;
}

static int
score_string(void *ctx, const text_lang_t *l, const char *s, size_t len, double weight, terr_t *err)
{
	score_ctx_t *c = ctx;

	(void)err;
	c->ntokens = 0;
	c->str.n = 0;
	c->str.keys.len = 0;
	if (c->str.slot != NULL)
		memset(c->str.slot, 0, sizeof(tslot_t) * c->str.cap);
	text_tokenize(l, s, len, TEXT_TOK_STOP_WORDS | c->opts, score_token, c);
	for (size_t i = 0; i < c->str.cap; i++) {
		const tslot_t *t = &c->str.slot[i];
		const char *term;
		double coeff, adj = 1;
		if (t->len == 0)
			continue;
		term = c->str.keys.p + t->off;
		coeff = (0.5 * t->b / c->ntokens) + 0.5;
		if (equal_case_insensitive(s, len, term, t->len))
			adj += 0.1;
		tmap_get(&c->doc, term, t->len)->a += weight * t->a * coeff * adj;
	}
	return 0;
}

int
text_score_document(const text_spec_t *s, const bson_t *doc, text_term_fn fn, void *ctx, terr_t *err)
{
	score_ctx_t c;
	int ret;

	memset(&c, 0, sizeof(c));
	c.opts = s->version == 2 ? TEXT_TOK_BASIC : 0;
	ret = walk(s, bson_get_data(doc), doc->len, "", false, s->lang, 0, score_string, &c, err);
	if (ret == 0)
		for (size_t i = 0; i < c.doc.cap; i++)
			if (c.doc.slot[i].len != 0)
				fn(ctx, c.doc.keys.p + c.doc.slot[i].off, c.doc.slot[i].len, c.doc.slot[i].a);
	tmap_free(&c.doc);
	tmap_free(&c.str);
	return ret;
}

/* ---- for the matcher (text_query.c) -------------------------------------------- */

int
text_spec_walk(const text_spec_t *s, const bson_t *doc, text_value_fn fn, void *ctx, terr_t *err)
{
	return walk(s, bson_get_data(doc), doc->len, "", false, s->lang, 0, fn, ctx, err);
}
