/*
 * expr_tz.c -- time zones for the date operators: UTC, fixed offsets
 * ("+03:00", "-0500", "+03") and Olson names read from the system's TZif
 * files (/usr/share/zoneinfo), cached for the life of the process.
 *
 * Instants after a zone's last recorded transition follow the TZif footer
 * (a POSIX TZ rule such as "EST5EDT,M3.2.0,M11.1.0").  Not here: date
 * arithmetic (expr_date.c).
 */
#include "expr/expr_tz.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/checked.h"

#define ZONEINFO_DIR "/usr/share/zoneinfo"

struct expr_tzfile {
	char *name;
	int64_t *trans;      /* transition times, seconds UTC */
	uint8_t *trans_type; /* index into offs */
	int32_t *offs;       /* utoff seconds per type */
	size_t ntrans, ntypes;
	int32_t first_off;   /* offset before the first transition */
	/* footer rule: std/dst offsets (seconds east of UTC) and, when DST is
	 * used, the start/end rules "Mm.w.d/time" */
	bool has_rule, has_dst;
	int32_t std_off, dst_off;
	int rule_m[2], rule_w[2], rule_d[2];
	int32_t rule_t[2];
	struct expr_tzfile *next;
};

static pthread_mutex_t tz_lock = PTHREAD_MUTEX_INITIALIZER;
static struct expr_tzfile *tz_cache;

static uint32_t
be32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static int64_t
be64(const uint8_t *p)
{
	return (int64_t)(((uint64_t)be32(p) << 32) | be32(p + 4));
}

/* ---- POSIX TZ rules (the TZif footer) ----------------------------------- */

static const char *
rule_name(const char *p)
{
	if (*p == '<') {
		const char *q = strchr(p, '>');
		return q ? q + 1 : NULL;
	}
	while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z'))
		p++;
	return p;
}

/* [+-]hh[:mm[:ss]] -> seconds; NULL on error */
static const char *
rule_time(const char *p, int32_t *out)
{
	int sign = 1, h = 0, m = 0, sec = 0;

	if (*p == '+' || *p == '-')
		sign = *p++ == '-' ? -1 : 1;
	if (*p < '0' || *p > '9')
		return NULL;
	while (*p >= '0' && *p <= '9')
		h = h * 10 + (*p++ - '0');
	if (*p == ':') {
		p++;
		while (*p >= '0' && *p <= '9')
			m = m * 10 + (*p++ - '0');
		if (*p == ':') {
			p++;
			while (*p >= '0' && *p <= '9')
				sec = sec * 10 + (*p++ - '0');
		}
	}
	*out = sign * (h * 3600 + m * 60 + sec);
	return p;
}

/* ",Mm.w.d[/time]" */
static const char *
rule_date(const char *p, int *m, int *w, int *dd, int32_t *t)
{
	if (*p++ != ',' || *p++ != 'M')
		return NULL;
	*m = (int)strtol(p, (char **)&p, 10);
	if (*p++ != '.')
		return NULL;
	*w = (int)strtol(p, (char **)&p, 10);
	if (*p++ != '.')
		return NULL;
	*dd = (int)strtol(p, (char **)&p, 10);
	*t = 7200;
	if (*p == '/')
		p = rule_time(p + 1, t);
	if (p == NULL || *m < 1 || *m > 12 || *w < 1 || *w > 5 || *dd < 0 || *dd > 6)
		return NULL;
	return p;
}

static void
tz_rule_parse(struct expr_tzfile *z, const char *r)
{
	int32_t std, dst;
	const char *p = rule_name(r);

	if (p == NULL || p == r || (p = rule_time(p, &std)) == NULL)
		return;
	z->std_off = -std;
	z->has_rule = true;
	if (*p == 0)
		return;
	const char *q = rule_name(p);
	if (q == NULL || q == p)
		return;
	p = q;
	dst = std - 3600;
	if (*p != ',' && *p != 0 && (p = rule_time(p, &dst)) == NULL)
		return;
	if ((p = rule_date(p, &z->rule_m[0], &z->rule_w[0], &z->rule_d[0], &z->rule_t[0])) == NULL ||
	    (p = rule_date(p, &z->rule_m[1], &z->rule_w[1], &z->rule_d[1], &z->rule_t[1])) == NULL) {
		z->has_rule = false;
		return;
	}
	z->dst_off = -dst;
	z->has_dst = true;
}

static int64_t
civil_days(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* day number of the w-th (5 = last) weekday d of month m in year y */
static int64_t
rule_day(int64_t y, int m, int w, int d)
{
	static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int len = mdays[m - 1] + (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0));
	int64_t first = civil_days(y, m, 1);
	int64_t wd = (first + 4) % 7; /* 0 = Sunday */
	if (wd < 0)
		wd += 7;
	int64_t day = 1 + (d - wd + 7) % 7 + (int64_t)(w - 1) * 7;
	while (day > len)
		day -= 7;
	return first + day - 1;
}

static int32_t
tz_rule_offset(const struct expr_tzfile *z, int64_t secs)
{
	if (!z->has_dst)
		return z->std_off;
	int64_t days = (secs + z->std_off) / 86400 - ((secs + z->std_off) % 86400 < 0);
	/* civil year of the local standard time */
	int64_t zz = days + 719468, era = (zz >= 0 ? zz : zz - 146096) / 146097;
	int64_t doe = zz - era * 146097, yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
	int64_t y = yoe + era * 400 + ((mp < 10 ? mp + 3 : mp - 9) <= 2);
	/* start: local standard time -> UTC; end: local daylight time -> UTC */
	int64_t start = rule_day(y, z->rule_m[0], z->rule_w[0], z->rule_d[0]) * 86400 + z->rule_t[0] - z->std_off;
	int64_t end = rule_day(y, z->rule_m[1], z->rule_w[1], z->rule_d[1]) * 86400 + z->rule_t[1] - z->dst_off;
	bool in_dst = start < end ? (secs >= start && secs < end) : (secs < end || secs >= start);
	return in_dst ? z->dst_off : z->std_off;
}

/* Parse a TZif buffer (v2+ 64-bit block preferred).  NULL on malformed. */
static struct expr_tzfile *
tzif_parse(const uint8_t *d, size_t n)
{
	struct expr_tzfile *z = NULL;
	const uint8_t *h = d;
	int v64 = 0;

	if (n < 44 || memcmp(d, "TZif", 4) != 0)
		return NULL;
	for (int pass = 0; pass < 2; pass++) {
		if ((size_t)(h - d) + 44 > n)
			return NULL;
		uint32_t isut = be32(h + 20), isstd = be32(h + 24), leap = be32(h + 28);
		uint32_t timecnt = be32(h + 32), typecnt = be32(h + 36), charcnt = be32(h + 40);
		size_t tsz = v64 ? 8 : 4;
		size_t body = timecnt * tsz + timecnt + typecnt * 6 + charcnt + leap * (tsz + 4) + isstd + isut;
		if (timecnt > 100000 || typecnt == 0 || typecnt > 256 || (size_t)(h - d) + 44 + body > n)
			return NULL;
		if (pass == 0 && h[4] >= '2') {
			/* skip the v1 block, read the 64-bit one */
			h += 44 + body;
			v64 = 1;
			continue;
		}
		const uint8_t *p = h + 44;
		z = calloc(1, sizeof(*z));
		z->ntrans = timecnt;
		z->ntypes = typecnt;
		z->trans = calloc(timecnt + 1, sizeof(int64_t));
		z->trans_type = calloc(timecnt + 1, 1);
		z->offs = calloc(typecnt, sizeof(int32_t));
		for (uint32_t i = 0; i < timecnt; i++)
			z->trans[i] = v64 ? be64(p + i * 8) : (int32_t)be32(p + i * 4);
		p += timecnt * tsz;
		for (uint32_t i = 0; i < timecnt; i++) {
			z->trans_type[i] = p[i];
			if (p[i] >= typecnt) {
				free(z->trans);
				free(z->trans_type);
				free(z->offs);
				free(z);
				return NULL;
			}
		}
		p += timecnt;
		for (uint32_t i = 0; i < typecnt; i++)
			z->offs[i] = (int32_t)be32(p + i * 6);
		/* before the first transition: the first non-DST type (RFC 8536 says type 0) */
		z->first_off = z->offs[0];
		if (v64) {
			const uint8_t *f = h + 44 + body, *end = d + n;
			if (f < end && *f == '\n') {
				const uint8_t *nl = memchr(f + 1, '\n', (size_t)(end - f - 1));
				if (nl != NULL && nl - f - 1 < 120) {
					char rule[128];
					memcpy(rule, f + 1, (size_t)(nl - f - 1));
					rule[nl - f - 1] = 0;
					tz_rule_parse(z, rule);
				}
			}
		}
		return z;
	}
	return NULL;
}

static bool
name_ok(const char *s, size_t len)
{
	if (len == 0 || len > 64 || s[0] == '/' || s[0] == '.')
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' ||
		      c == '_' || c == '-' || c == '+'))
			return false;
		if (c == '/' && i + 1 < len && s[i + 1] == '.')
			return false;
	}
	return true;
}

static const struct expr_tzfile *
tz_load(const char *s, size_t len)
{
	struct expr_tzfile *z;
	char path[128];
	uint8_t *buf = NULL;
	size_t n = 0, cap = 0;
	FILE *f;

	if (!name_ok(s, len))
		return NULL;
	pthread_mutex_lock(&tz_lock);
	for (z = tz_cache; z != NULL; z = z->next) {
		if (strlen(z->name) == len && memcmp(z->name, s, len) == 0)
			break;
	}
	if (z != NULL) {
		pthread_mutex_unlock(&tz_lock);
		return z;
	}
	snprintf(path, sizeof(path), "%s/%.*s", ZONEINFO_DIR, (int)len, s);
	f = fopen(path, "rb");
	if (f != NULL) {
		for (;;) {
			if (n == cap) {
				cap = cap ? cap * 2 : 4096;
				if (cap > (1 << 20))
					break;
				buf = realloc(buf, cap);
			}
			size_t r = fread(buf + n, 1, cap - n, f);
			if (r == 0)
				break;
			n += r;
		}
		fclose(f);
		z = tzif_parse(buf, n);
		free(buf);
	}
	if (z != NULL) {
		z->name = strndup(s, len);
		z->next = tz_cache;
		tz_cache = z;
	}
	pthread_mutex_unlock(&tz_lock);
	return z;
}

static bool
parse_offset(const char *s, size_t n, int64_t *ms)
{
	int h = 0, m = 0;

	if (n < 3 || (s[0] != '+' && s[0] != '-'))
		return false;
	for (size_t i = 1; i < n; i++) {
		if (!(s[i] >= '0' && s[i] <= '9') && !(n == 6 && i == 3 && s[i] == ':'))
			return false;
	}
	if (n == 3) {
		h = (s[1] - '0') * 10 + (s[2] - '0');
	} else if (n == 5) {
		h = (s[1] - '0') * 10 + (s[2] - '0');
		m = (s[3] - '0') * 10 + (s[4] - '0');
	} else if (n == 6 && s[3] == ':') {
		h = (s[1] - '0') * 10 + (s[2] - '0');
		m = (s[4] - '0') * 10 + (s[5] - '0');
	} else {
		return false;
	}
	*ms = ((int64_t)h * 60 + m) * 60000 * (s[0] == '-' ? -1 : 1);
	return true;
}

int
expr_tz_parse(const char *s, size_t len, expr_tz_t *out, terr_t *err)
{
	memset(out, 0, sizeof(*out));
	if ((len == 3 && (memcmp(s, "UTC", 3) == 0 || memcmp(s, "GMT", 3) == 0)))
		return 0;
	if (parse_offset(s, len, &out->fixed_ms))
		return 0;
	if (memchr(s, 0, len) == NULL) {
		out->file = tz_load(s, len);
		if (out->file != NULL)
			return 0;
	}
	return terr_set(err, 40485, "unrecognized time zone identifier: \"%.*s\"", (int)len, s);
}

int64_t
expr_tz_offset_at(const expr_tz_t *tz, int64_t utc_ms)
{
	const struct expr_tzfile *z = tz->file;

	if (z == NULL)
		return tz->fixed_ms;
	/* floor(utc_ms / 1000) without negating (INT64_MIN has no opposite) */
	int64_t secs = utc_ms / 1000 - (utc_ms % 1000 < 0);
	if (z->ntrans == 0 || secs < z->trans[0])
		return (int64_t)z->first_off * 1000;
	if (z->has_rule && secs >= z->trans[z->ntrans - 1])
		return (int64_t)tz_rule_offset(z, secs) * 1000;
	size_t lo = 0, hi = z->ntrans;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (z->trans[mid] <= secs)
			lo = mid;
		else
			hi = mid;
	}
	return (int64_t)z->offs[z->trans_type[lo]] * 1000;
}

bool
expr_tz_local_to_utc(const expr_tz_t *tz, int64_t local_ms, int64_t *utc)
{
	int64_t off1, off2, guess, guess2;

	if (tz->file == NULL)
		return !tm_i64_sub(local_ms, tz->fixed_ms, utc);
	off1 = expr_tz_offset_at(tz, local_ms);
	if (tm_i64_sub(local_ms, off1, &guess))
		return false;
	off2 = expr_tz_offset_at(tz, guess);
	if (off2 == off1) {
		*utc = guess;
		return true;
	}
	if (tm_i64_sub(local_ms, off2, &guess2))
		return false;
	/* in a gap neither fits: take the later offset, as timelib does */
	if (expr_tz_offset_at(tz, guess2) == off2) {
		*utc = guess2;
		return true;
	}
	return !tm_i64_sub(local_ms, off1 > off2 ? off1 : off2, utc);
}
