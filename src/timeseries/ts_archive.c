/*
 * ts_archive.c -- the archived buckets of a time-series collection's meta
 * value, as mongod's bucket catalog keeps them (its `archivedBuckets`: a
 * bucket closed by a measurement older than its start stays known by _id and
 * start, and a later measurement whose time falls in its span reopens it).
 * Pure bookkeeping on a sorted array; the catalog and the reopening itself
 * (fetch, query) are in commands/cmd_timeseries.c.
 */
#include "timeseries/ts_compress.h"

#include <string.h>

int
ts_archive_add(ts_archived_t **arch, int *n, int *cap, int max, const bson_oid_t *id, int64_t start_ms,
    ts_colstates_t *cols)
{
	int lo = 0, hi = *n;

	/* binary search for start_ms; an equal start keeps the one already
	 * archived (mongod: the set is keyed by start, the new one is closed) */
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if ((*arch)[mid].start_ms < start_ms)
			lo = mid + 1;
		else
			hi = mid;
	}
	if ((lo < *n && (*arch)[lo].start_ms == start_ms) || (*n == max && lo == 0)) {
		if (cols != NULL)
			ts_colstates_clear(cols);
		return 0;
	}
	if (*n == max) {
		/* full: the oldest start goes */
		ts_colstates_clear(&(*arch)[0].cols);
		memmove(&(*arch)[0], &(*arch)[1], sizeof(**arch) * (size_t)(*n - 1));
		lo--;
		(*n)--;
	} else if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 4;
		*arch = bson_realloc(*arch, sizeof(**arch) * (size_t)*cap);
	}
	memmove(&(*arch)[lo + 1], &(*arch)[lo], sizeof(**arch) * (size_t)(*n - lo));
	(*arch)[lo].id = *id;
	(*arch)[lo].start_ms = start_ms;
	memset(&(*arch)[lo].cols, 0, sizeof((*arch)[lo].cols));
	if (cols != NULL) {
		(*arch)[lo].cols = *cols;
		memset(cols, 0, sizeof(*cols));
	}
	(*n)++;
	return 1;
}

void
ts_archive_take(ts_archived_t *arch, int *n, int i, ts_colstates_t *cols)
{
	if (cols != NULL)
		*cols = arch[i].cols;
	else
		ts_colstates_clear(&arch[i].cols);
	memmove(&arch[i], &arch[i + 1], sizeof(*arch) * (size_t)(*n - i - 1));
	(*n)--;
}

void
ts_archive_free(ts_archived_t **arch, int *n)
{
	for (int i = 0; i < *n; i++)
		ts_colstates_clear(&(*arch)[i].cols);
	bson_free(*arch);
	*arch = NULL;
	*n = 0;
}

int
ts_archive_find(const ts_archived_t *arch, int n, int64_t t_ms, int64_t span_ms)
{
	int lo = 0, hi = n;

	/* the greatest start <= t_ms (mongod's lower_bound on a descending
	 * map), usable when t_ms is inside its span */
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (arch[mid].start_ms <= t_ms)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || t_ms - arch[lo - 1].start_ms >= span_ms)
		return -1;
	return lo - 1;
}
