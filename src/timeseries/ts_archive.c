/*
 * ts_archive.c -- the archived buckets of a time-series collection's meta
 * value, as mongod's bucket catalog keeps them (its `archivedBuckets`: a
 * bucket closed by a measurement older than its start stays known by _id and
 * start, and a later measurement whose time falls in its span reopens it).
 * Pure bookkeeping on a sorted array; the catalog and the reopening itself
 * (fetch, query) are in commands/cmd_timeseries.c.
 */
#include "timeseries/timeseries.h"

#include <string.h>

int
ts_archive_add(ts_archived_t **arch, int *n, int *cap, int max, const bson_oid_t *id, int64_t start_ms)
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
	if (lo < *n && (*arch)[lo].start_ms == start_ms)
		return 0;
	if (*n == max) {
		/* full: the oldest start goes (it may be the new one) */
		if (lo == 0)
			return 0;
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
	(*n)++;
	return 1;
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
