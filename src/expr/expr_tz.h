/*
 * expr_tz.h -- time zones for date operators (private to src/expr/).
 *
 * A zone is UTC, a fixed offset, or an Olson zone loaded from the system
 * tz database; loaded zones are cached process-wide (thread-safe) and never
 * freed, so an expr_tz_t is a plain value that needs no cleanup.
 */
#ifndef TAMGA_EXPR_TZ_H
#define TAMGA_EXPR_TZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

typedef struct expr_tz {
	int64_t fixed_ms;                   /* UTC / fixed offset */
	const struct expr_tzfile *file;     /* Olson zone, or NULL */
} expr_tz_t;

/* "UTC", "GMT", "+HH", "+HHMM", "+HH:MM" or an Olson name ("Europe/Paris").
 * Unknown: 40485 unrecognized time zone identifier: "<name>". */
int expr_tz_parse(const char *s, size_t len, expr_tz_t *out, terr_t *err);

/* Offset (ms, local - UTC) in force at a UTC instant. */
int64_t expr_tz_offset_at(const expr_tz_t *tz, int64_t utc_ms);

/* The UTC instant of a local wall-clock time (ms since the epoch as if the
 * local time were UTC) in *utc; in DST gaps/overlaps picks as timelib does.
 * false (and *utc unspecified) when the instant is outside the int64 range. */
bool expr_tz_local_to_utc(const expr_tz_t *tz, int64_t local_ms, int64_t *utc);

#endif
