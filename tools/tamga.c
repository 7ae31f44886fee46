/*
 * tamga.c -- the command-line tool: import, export and stats on a data
 * folder, through the embedded API (no server needed; the folder must not be
 * open in a running tamgad).
 *
 *   tamga import --dbpath DIR --db D --collection C --file F [--jsonArray] [--drop]
 *   tamga export --dbpath DIR --db D --collection C --out F [--jsonArray]
 *   tamga stats  --dbpath DIR
 *   tamga schema check --dbpath DIR --db D --collection C [--validator JSON|@FILE] [--limit N] [--max-ids N] [--json]
 *   tamga schema infer --dbpath DIR --db D --collection C [--sample N] [--ranges] [--json]
 *   tamga advise --dbpath DIR --db D [--collection C] [--array-max N] [--json]
 *
 * schema check / schema infer / advise run tamgaValidationPreview,
 * tamgaInferSchema and tamgaSchemaAdvice (src/toolbelt/) and print a short
 * report (--json: the whole reply as relaxed Extended JSON).
 *
 * Files are Extended JSON (canonical on export), one document per line by
 * default, so mongoimport/mongoexport files go both ways.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tamga/tamga.h"

typedef struct opts {
	const char *cmd, *sub, *dbpath, *db, *coll, *file, *out;
	bool json_array, drop;
	/* schema check / schema infer / advise */
	const char *validator;
	long long limit, max_ids, sample, array_max;
	bool ranges, json;
} opts_t;

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage:\n"
	    "  tamga import --dbpath DIR --db D --collection C --file F [--jsonArray] [--drop]\n"
	    "  tamga export --dbpath DIR --db D --collection C [--out F] [--jsonArray]\n"
	    "  tamga stats  --dbpath DIR\n"
	    "  tamga schema check --dbpath DIR --db D --collection C [--validator JSON|@FILE] [--limit N] [--max-ids N] [--json]\n"
	    "  tamga schema infer --dbpath DIR --db D --collection C [--sample N] [--ranges] [--json]\n"
	    "  tamga advise --dbpath DIR --db D [--collection C] [--array-max N] [--json]\n"
	    "  tamga --version\n");
}

static int
run(tamga_t *t, const char *db, bson_t *cmd, bson_t *reply)
{
	tamga_error_t e;

	if (tamga_run_command(t, db, cmd, reply, &e) != 0) {
		fprintf(stderr, "tamga: %s (code %d)\n", e.message, e.code);
		return -1;
	}
	return 0;
}

/* Insert the documents gathered so far; report write errors. */
static int
flush_batch(tamga_t *t, const opts_t *o, bson_t *docs, int *ndocs, long long *total, long long *failed)
{
	bson_t cmd = BSON_INITIALIZER, reply;
	bson_iter_t it, we;
	int rc;

	if (*ndocs == 0)
		return 0;
	BSON_APPEND_UTF8(&cmd, "insert", o->coll);
	BSON_APPEND_ARRAY(&cmd, "documents", docs);
	BSON_APPEND_BOOL(&cmd, "ordered", false);
	rc = run(t, o->db, &cmd, &reply);
	if (rc == 0) {
		if (bson_iter_init_find(&it, &reply, "n"))
			*total += bson_iter_as_int64(&it);
		if (bson_iter_init_find(&it, &reply, "writeErrors") && bson_iter_recurse(&it, &we)) {
			while (bson_iter_next(&we)) {
				bson_iter_t f;
				(*failed)++;
				if (bson_iter_recurse(&we, &f) && bson_iter_find(&f, "errmsg"))
					fprintf(stderr, "tamga: import: %s\n", bson_iter_utf8(&f, NULL));
			}
		}
	}
	bson_destroy(&reply);
	bson_destroy(&cmd);
	bson_reinit(docs);
	*ndocs = 0;
	return rc;
}

static int
add_doc(tamga_t *t, const opts_t *o, bson_t *docs, int *ndocs, const bson_t *doc, long long *total,
    long long *failed)
{
	char key[16];

	snprintf(key, sizeof(key), "%d", *ndocs);
	bson_append_document(docs, key, -1, doc);
	(*ndocs)++;
	if (*ndocs >= 1000 || docs->len > 8 * 1024 * 1024) {
		if (flush_batch(t, o, docs, ndocs, total, failed) != 0)
			return -1;
		if ((*total + *failed) % 100000 < 1000)
			fprintf(stderr, "tamga: import: %lld documents\n", *total);
	}
	return 0;
}

static int
do_import(tamga_t *t, const opts_t *o)
{
	bson_t docs = BSON_INITIALIZER;
	int ndocs = 0, rc = 0;
	long long total = 0, failed = 0;
	bson_error_t e;

	if (o->drop) {
		bson_t cmd = BSON_INITIALIZER, reply;
		BSON_APPEND_UTF8(&cmd, "drop", o->coll);
		rc = run(t, o->db, &cmd, &reply);
		bson_destroy(&cmd);
		bson_destroy(&reply);
		if (rc != 0)
			return 1;
	}
	if (o->json_array) {
		/* Wrap the array in a document so libbson parses it in one go. */
		FILE *f = fopen(o->file, "rb");
		char *buf, *wrapped;
		long len;
		bson_t *all;
		bson_iter_t it, arr;
		if (f == NULL) {
			fprintf(stderr, "tamga: %s: %s\n", o->file, strerror(errno));
			return 1;
		}
		fseek(f, 0, SEEK_END);
		len = ftell(f);
		fseek(f, 0, SEEK_SET);
		buf = malloc((size_t)len + 1);
		if (buf == NULL || fread(buf, 1, (size_t)len, f) != (size_t)len) {
			fprintf(stderr, "tamga: %s: read failed\n", o->file);
			fclose(f);
			free(buf);
			return 1;
		}
		buf[len] = '\0';
		fclose(f);
		wrapped = bson_strdup_printf("{\"a\": %s}", buf);
		free(buf);
		all = bson_new_from_json((const uint8_t *)wrapped, -1, &e);
		bson_free(wrapped);
		if (all == NULL || !bson_iter_init_find(&it, all, "a") || !BSON_ITER_HOLDS_ARRAY(&it)) {
			fprintf(stderr, "tamga: %s: not a JSON array of documents%s%s\n", o->file,
			    all ? "" : ": ", all ? "" : e.message);
			if (all)
				bson_destroy(all);
			return 1;
		}
		bson_iter_recurse(&it, &arr);
		while (rc == 0 && bson_iter_next(&arr)) {
			const uint8_t *data;
			uint32_t dlen;
			bson_t d;
			if (!BSON_ITER_HOLDS_DOCUMENT(&arr)) {
				fprintf(stderr, "tamga: %s: array element %s is not a document\n", o->file,
				    bson_iter_key(&arr));
				rc = -1;
				break;
			}
			bson_iter_document(&arr, &dlen, &data);
			bson_init_static(&d, data, dlen);
			rc = add_doc(t, o, &docs, &ndocs, &d, &total, &failed);
		}
		bson_destroy(all);
	} else {
		bson_json_reader_t *r = bson_json_reader_new_from_file(o->file, &e);
		bson_t d = BSON_INITIALIZER;
		int got;
		if (r == NULL) {
			fprintf(stderr, "tamga: %s: %s\n", o->file, e.message);
			return 1;
		}
		while (rc == 0 && (got = bson_json_reader_read(r, &d, &e)) == 1) {
			rc = add_doc(t, o, &docs, &ndocs, &d, &total, &failed);
			bson_reinit(&d);
		}
		if (rc == 0 && got < 0) {
			fprintf(stderr, "tamga: %s: %s\n", o->file, e.message);
			rc = -1;
		}
		bson_destroy(&d);
		bson_json_reader_destroy(r);
	}
	if (rc == 0)
		rc = flush_batch(t, o, &docs, &ndocs, &total, &failed);
	bson_destroy(&docs);
	fprintf(stderr, "tamga: import: %lld document(s) imported successfully. %lld document(s) failed to import.\n",
	    total, failed);
	return rc == 0 && failed == 0 ? 0 : 1;
}

static int
do_export(tamga_t *t, const opts_t *o)
{
	FILE *out = stdout;
	bson_t cmd = BSON_INITIALIZER, reply;
	bson_iter_t it, batch;
	int64_t id;
	long long n = 0;
	bool first = true;
	int rc;

	if (o->out != NULL && strcmp(o->out, "-") != 0 && (out = fopen(o->out, "w")) == NULL) {
		fprintf(stderr, "tamga: %s: %s\n", o->out, strerror(errno));
		return 1;
	}
	if (o->json_array)
		fputs("[", out);
	BSON_APPEND_UTF8(&cmd, "find", o->coll);
	BSON_APPEND_INT32(&cmd, "batchSize", 1000);
	rc = run(t, o->db, &cmd, &reply);
	bson_destroy(&cmd);
	while (rc == 0) {
		bson_iter_t cur;
		if (!bson_iter_init_find(&it, &reply, "cursor") || !bson_iter_recurse(&it, &cur))
			break;
		id = 0;
		while (bson_iter_next(&cur)) {
			const char *k = bson_iter_key(&cur);
			if (strcmp(k, "id") == 0)
				id = bson_iter_as_int64(&cur);
			if ((strcmp(k, "firstBatch") == 0 || strcmp(k, "nextBatch") == 0) &&
			    bson_iter_recurse(&cur, &batch)) {
				while (bson_iter_next(&batch)) {
					const uint8_t *data;
					uint32_t len;
					bson_t d;
					char *j;
					bson_iter_document(&batch, &len, &data);
					bson_init_static(&d, data, len);
					j = bson_as_canonical_extended_json(&d, NULL);
					if (o->json_array && !first)
						fputs(",", out);
					fputs(j, out);
					if (!o->json_array)
						fputs("\n", out);
					bson_free(j);
					first = false;
					n++;
				}
			}
		}
		bson_destroy(&reply);
		if (id == 0)
			break;
		bson_init(&cmd);
		BSON_APPEND_INT64(&cmd, "getMore", id);
		BSON_APPEND_UTF8(&cmd, "collection", o->coll);
		BSON_APPEND_INT32(&cmd, "batchSize", 1000);
		rc = run(t, o->db, &cmd, &reply);
		bson_destroy(&cmd);
		if (n % 100000 < 1000)
			fprintf(stderr, "tamga: export: %lld documents\n", n);
	}
	if (rc != 0)
		bson_destroy(&reply);
	if (o->json_array)
		fputs("]\n", out);
	if (out != stdout)
		fclose(out);
	fprintf(stderr, "tamga: export: exported %lld record(s)\n", n);
	return rc == 0 ? 0 : 1;
}

static int
do_stats(tamga_t *t)
{
	bson_t cmd = BSON_INITIALIZER, reply, creply;
	bson_iter_t it, dbs;
	int rc;

	BSON_APPEND_INT32(&cmd, "listDatabases", 1);
	BSON_APPEND_BOOL(&cmd, "nameOnly", true);
	rc = run(t, "admin", &cmd, &reply);
	bson_destroy(&cmd);
	if (rc != 0) {
		bson_destroy(&reply);
		return 1;
	}
	printf("%-24s %-32s %12s %14s %14s\n", "database", "collection", "count", "dataSize", "storageSize");
	if (bson_iter_init_find(&it, &reply, "databases") && bson_iter_recurse(&it, &dbs)) {
		while (bson_iter_next(&dbs)) {
			bson_iter_t f, cit, batch;
			const char *db;
			if (!bson_iter_recurse(&dbs, &f) || !bson_iter_find(&f, "name"))
				continue;
			db = bson_iter_utf8(&f, NULL);
			bson_init(&cmd);
			BSON_APPEND_INT32(&cmd, "listCollections", 1);
			BSON_APPEND_BOOL(&cmd, "nameOnly", true);
			if (run(t, db, &cmd, &creply) == 0 && bson_iter_init(&cit, &creply) &&
			    bson_iter_find_descendant(&cit, "cursor.firstBatch", &batch) &&
			    bson_iter_recurse(&batch, &batch)) {
				while (bson_iter_next(&batch)) {
					bson_iter_t nf, sf;
					bson_t scmd = BSON_INITIALIZER, sreply;
					if (!bson_iter_recurse(&batch, &nf) || !bson_iter_find(&nf, "name"))
						continue;
					BSON_APPEND_UTF8(&scmd, "collStats", bson_iter_utf8(&nf, NULL));
					if (run(t, db, &scmd, &sreply) == 0) {
						long long cnt = 0, size = 0, stor = 0;
						if (bson_iter_init_find(&sf, &sreply, "count"))
							cnt = bson_iter_as_int64(&sf);
						if (bson_iter_init_find(&sf, &sreply, "size"))
							size = bson_iter_as_int64(&sf);
						if (bson_iter_init_find(&sf, &sreply, "storageSize"))
							stor = bson_iter_as_int64(&sf);
						printf("%-24s %-32s %12lld %14lld %14lld\n", db,
						    bson_iter_utf8(&nf, NULL), cnt, size, stor);
						if (bson_iter_init_find(&sf, &sreply, "timeseries")) {
							/* a time-series collection: count is its buckets' */
							bson_t ccmd = BSON_INITIALIZER, cr;
							bson_iter_t nit;
							long long m = -1;
							BSON_APPEND_UTF8(&ccmd, "count", bson_iter_utf8(&nf, NULL));
							if (run(t, db, &ccmd, &cr) == 0 && bson_iter_init_find(&nit, &cr, "n"))
								m = bson_iter_as_int64(&nit);
							printf("%-24s %-32s %12lld measurements in %lld buckets\n", "", "  (time-series)", m,
							    cnt);
							bson_destroy(&cr);
							bson_destroy(&ccmd);
						}
					}
					bson_destroy(&sreply);
					bson_destroy(&scmd);
				}
			}
			bson_destroy(&creply);
			bson_destroy(&cmd);
		}
	}
	bson_destroy(&reply);
	return 0;
}

/* ---- schema check / schema infer / advise ----------------------------------- */

static void
print_json(const bson_t *b)
{
	char *j = bson_as_relaxed_extended_json(b, NULL);

	printf("%s\n", j != NULL ? j : "{}");
	bson_free(j);
}

static char *
value_text(const bson_iter_t *it)
{
	bson_t d = BSON_INITIALIZER;
	char *j, *v;
	size_t n;

	bson_append_value(&d, "v", 1, bson_iter_value((bson_iter_t *)it));
	j = bson_as_relaxed_extended_json(&d, NULL);
	bson_destroy(&d);
	/* { "v" : X } -> X */
	v = j != NULL && strlen(j) > 9 ? bson_strdup(j + 8) : bson_strdup("?");
	bson_free(j);
	n = strlen(v);
	if (n >= 2)
		v[n - 2] = '\0';
	return v;
}

static int
run_tool(tamga_t *t, const opts_t *o, bson_t *cmd, bson_t *reply)
{
	int rc = run(t, o->db, cmd, reply);

	bson_destroy(cmd);
	return rc;
}

static int
do_schema_check(tamga_t *t, const opts_t *o)
{
	bson_t cmd = BSON_INITIALIZER, reply, v;
	bson_iter_t it, r, f;
	bson_error_t be;

	BSON_APPEND_UTF8(&cmd, "tamgaValidationPreview", o->coll);
	if (o->validator != NULL) {
		char *text = NULL;
		if (o->validator[0] == '@') {
			FILE *f = fopen(o->validator + 1, "r");
			long len;
			if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
				fprintf(stderr, "tamga: cannot read %s: %s\n", o->validator + 1, strerror(errno));
				if (f != NULL)
					fclose(f);
				bson_destroy(&cmd);
				return 1;
			}
			text = bson_malloc0((size_t)len + 1);
			if (fread(text, 1, (size_t)len, f) != (size_t)len)
				len = 0;
			fclose(f);
		}
		if (!bson_init_from_json(&v, text != NULL ? text : o->validator, -1, &be)) {
			fprintf(stderr, "tamga: --validator is not JSON: %s\n", be.message);
			bson_free(text);
			bson_destroy(&cmd);
			return 1;
		}
		bson_free(text);
		BSON_APPEND_DOCUMENT(&cmd, "validator", &v);
		bson_destroy(&v);
	}
	if (o->limit > 0)
		BSON_APPEND_INT64(&cmd, "limit", o->limit);
	if (o->max_ids > 0)
		BSON_APPEND_INT64(&cmd, "maxIds", o->max_ids);
	if (run_tool(t, o, &cmd, &reply) != 0) {
		bson_destroy(&reply);
		return 1;
	}
	if (o->json) {
		print_json(&reply);
		bson_destroy(&reply);
		return 0;
	}
	printf("%s.%s: %lld scanned, %lld passed, %lld failed\n", o->db, o->coll,
	    bson_iter_init_find(&it, &reply, "scanned") ? (long long)bson_iter_as_int64(&it) : 0LL,
	    bson_iter_init_find(&it, &reply, "passed") ? (long long)bson_iter_as_int64(&it) : 0LL,
	    bson_iter_init_find(&it, &reply, "failed") ? (long long)bson_iter_as_int64(&it) : 0LL);
	printf("%-48s %8s  %s\n", "rule", "failed", "first offending _ids");
	if (bson_iter_init_find(&it, &reply, "rules") && bson_iter_recurse(&it, &r))
		while (bson_iter_next(&r)) {
			const char *name = "";
			long long failed = 0;
			bson_iter_t ex, e1, idf;
			if (bson_iter_recurse(&r, &f) && bson_iter_find(&f, "rule"))
				name = bson_iter_utf8(&f, NULL);
			if (bson_iter_recurse(&r, &f) && bson_iter_find(&f, "failed"))
				failed = bson_iter_as_int64(&f);
			printf("%-48s %8lld ", name, failed);
			if (bson_iter_recurse(&r, &f) && bson_iter_find(&f, "examples") && bson_iter_recurse(&f, &ex))
				while (bson_iter_next(&ex))
					if (bson_iter_recurse(&ex, &e1) && bson_iter_find(&e1, "_id")) {
						char *txt = value_text(&e1);
						printf(" %s", txt);
						bson_free(txt);
						(void)idf;
					}
			printf("\n");
		}
	if (bson_iter_init(&it, &reply) && bson_iter_find_descendant(&it, "levels.constraint.upgradeSucceeds", &f))
		printf("constraint: the upgrade %s\n", bson_iter_as_bool(&f) ? "would succeed" : "would fail");
	if (bson_iter_init(&it, &reply) && bson_iter_find_descendant(&it, "levels.moderate.updatesNotChecked", &f))
		printf("moderate: updates of %lld document(s) would not be checked\n", (long long)bson_iter_as_int64(&f));
	bson_destroy(&reply);
	return 0;
}

static int
do_schema_infer(tamga_t *t, const opts_t *o)
{
	bson_t cmd = BSON_INITIALIZER, reply, v;
	bson_iter_t it;

	BSON_APPEND_UTF8(&cmd, "tamgaInferSchema", o->coll);
	if (o->sample > 0)
		BSON_APPEND_INT64(&cmd, "sample", o->sample);
	if (o->ranges)
		BSON_APPEND_BOOL(&cmd, "ranges", true);
	if (run_tool(t, o, &cmd, &reply) != 0) {
		bson_destroy(&reply);
		return 1;
	}
	if (o->json) {
		print_json(&reply);
	} else if (bson_iter_init_find(&it, &reply, "validator") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
		const uint8_t *d;
		uint32_t l;
		bson_iter_document(&it, &l, &d);
		bson_init_static(&v, d, l);
		print_json(&v);
	}
	bson_destroy(&reply);
	return 0;
}

static int
do_advise(tamga_t *t, const opts_t *o)
{
	bson_t cmd = BSON_INITIALIZER, reply;
	bson_iter_t it, fs, f, ev;
	int n = 0;

	if (o->coll != NULL)
		BSON_APPEND_UTF8(&cmd, "tamgaSchemaAdvice", o->coll);
	else
		BSON_APPEND_INT32(&cmd, "tamgaSchemaAdvice", 1);
	if (o->array_max > 0)
		BSON_APPEND_INT64(&cmd, "arrayMax", o->array_max);
	if (run_tool(t, o, &cmd, &reply) != 0) {
		bson_destroy(&reply);
		return 1;
	}
	if (o->json) {
		print_json(&reply);
		bson_destroy(&reply);
		return 0;
	}
	if (bson_iter_init_find(&it, &reply, "findings") && bson_iter_recurse(&it, &fs))
		while (bson_iter_next(&fs)) {
			const char *type = "", *ns = "", *sev = "", *pat = "", *doc = "";
			n++;
			if (bson_iter_recurse(&fs, &f) && bson_iter_find(&f, "type"))
				type = bson_iter_utf8(&f, NULL);
			if (bson_iter_recurse(&fs, &f) && bson_iter_find(&f, "ns"))
				ns = bson_iter_utf8(&f, NULL);
			if (bson_iter_recurse(&fs, &f) && bson_iter_find(&f, "severity"))
				sev = bson_iter_utf8(&f, NULL);
			if (bson_iter_recurse(&fs, &f) && bson_iter_find(&f, "pattern"))
				pat = bson_iter_utf8(&f, NULL);
			if (bson_iter_recurse(&fs, &f) && bson_iter_find(&f, "doc"))
				doc = bson_iter_utf8(&f, NULL);
			printf("[%s] %s %s -> %s (%s)\n", sev, type, ns, pat, doc);
			if (bson_iter_recurse(&fs, &f) && bson_iter_find(&f, "evidence") && bson_iter_recurse(&f, &ev))
				while (bson_iter_next(&ev)) {
					char *txt = value_text(&ev);
					printf("    %s: %s\n", bson_iter_key(&ev), txt);
					bson_free(txt);
				}
		}
	if (n == 0)
		printf("no findings\n");
	bson_destroy(&reply);
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"dbpath", required_argument, NULL, 'p'},
		{"db", required_argument, NULL, 'd'},
		{"collection", required_argument, NULL, 'c'},
		{"file", required_argument, NULL, 'f'},
		{"out", required_argument, NULL, 'o'},
		{"jsonArray", no_argument, NULL, 'a'},
		{"drop", no_argument, NULL, 'x'},
		{"validator", required_argument, NULL, 'V'},
		{"limit", required_argument, NULL, 'l'},
		{"max-ids", required_argument, NULL, 'm'},
		{"sample", required_argument, NULL, 's'},
		{"array-max", required_argument, NULL, 'A'},
		{"ranges", no_argument, NULL, 'r'},
		{"json", no_argument, NULL, 'j'},
		{"version", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	opts_t o = {0};
	tamga_t *t = NULL;
	tamga_error_t e;
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "p:d:c:f:o:axvhV:l:m:s:A:rj", longopts, NULL)) != -1) {
		switch (ch) {
		case 'p': o.dbpath = optarg; break;
		case 'd': o.db = optarg; break;
		case 'c': o.coll = optarg; break;
		case 'f': o.file = optarg; break;
		case 'o': o.out = optarg; break;
		case 'a': o.json_array = true; break;
		case 'x': o.drop = true; break;
		case 'V': o.validator = optarg; break;
		case 'l': o.limit = atoll(optarg); break;
		case 'm': o.max_ids = atoll(optarg); break;
		case 's': o.sample = atoll(optarg); break;
		case 'A': o.array_max = atoll(optarg); break;
		case 'r': o.ranges = true; break;
		case 'j': o.json = true; break;
		case 'v':
			printf("tamga %s (MongoDB %s compatible)\n", tamga_version(), tamga_mongodb_version());
			return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	o.cmd = argv[optind];
	o.sub = optind + 1 < argc ? argv[optind + 1] : NULL;
	if (o.dbpath == NULL) {
		fprintf(stderr, "tamga: --dbpath is required\n");
		return 2;
	}
	if ((strcmp(o.cmd, "import") == 0 || strcmp(o.cmd, "export") == 0) && (o.db == NULL || o.coll == NULL)) {
		fprintf(stderr, "tamga: %s needs --db and --collection\n", o.cmd);
		return 2;
	}
	if (strcmp(o.cmd, "import") == 0 && o.file == NULL) {
		fprintf(stderr, "tamga: import needs --file\n");
		return 2;
	}
	if (strcmp(o.cmd, "schema") == 0 && (o.sub == NULL || (strcmp(o.sub, "check") != 0 && strcmp(o.sub, "infer") != 0))) {
		fprintf(stderr, "tamga: schema needs check or infer\n");
		return 2;
	}
	if ((strcmp(o.cmd, "schema") == 0 && (o.db == NULL || o.coll == NULL)) ||
	    (strcmp(o.cmd, "advise") == 0 && o.db == NULL)) {
		fprintf(stderr, "tamga: %s needs --db%s\n", o.cmd, strcmp(o.cmd, "schema") == 0 ? " and --collection" : "");
		return 2;
	}
	if (strcmp(o.cmd, "import") != 0 && strcmp(o.cmd, "export") != 0 && strcmp(o.cmd, "stats") != 0 &&
	    strcmp(o.cmd, "schema") != 0 && strcmp(o.cmd, "advise") != 0) {
		fprintf(stderr, "tamga: unknown command '%s'\n", o.cmd);
		usage(stderr);
		return 2;
	}
	if (tamga_open(o.dbpath, strcmp(o.cmd, "import") == 0 ? "create" : NULL, &t, &e) != 0) {
		fprintf(stderr, "tamga: cannot open %s: %s (code %d)\n", o.dbpath, e.message, e.code);
		return 1;
	}
	if (strcmp(o.cmd, "import") == 0)
		rc = do_import(t, &o);
	else if (strcmp(o.cmd, "export") == 0)
		rc = do_export(t, &o);
	else if (strcmp(o.cmd, "schema") == 0 && strcmp(o.sub, "check") == 0)
		rc = do_schema_check(t, &o);
	else if (strcmp(o.cmd, "schema") == 0)
		rc = do_schema_infer(t, &o);
	else if (strcmp(o.cmd, "advise") == 0)
		rc = do_advise(t, &o);
	else
		rc = do_stats(t);
	tamga_close(t);
	return rc;
}
