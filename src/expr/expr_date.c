/*
 * expr_date.c -- date operators: $year $month $dayOfMonth $hour $minute
 * $second $millisecond $dayOfWeek $dayOfYear $week $isoWeek $isoWeekYear
 * $isoDayOfWeek $dateToString, and the ISO-8601 parsing $toDate uses.
 *
 * Time zones: UTC and fixed offsets ("+03:00", "-0500", "+03").  Olson names
 * other than UTC/GMT, and $dateFromString $dateTrunc $dateAdd $dateSubtract
 * $dateDiff $dateFromParts $dateToParts, answer 238 NotImplemented for now.
 */
#include "expr/expr_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bson/value.h"

int expr_date_from_string(const char *s, size_t len, int64_t *ms);

/* days since 1970-01-01 for a civil date (proleptic Gregorian) */
static int64_t
days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static void
civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	unsigned doe = (unsigned)(z - era * 146097);
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t yy = (int64_t)yoe + era * 400;
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	unsigned mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = yy + (*m <= 2);
}

typedef struct parts {
	int64_t year;
	int month, day, hour, minute, second, millis;
	int dow;      /* 1 = Sunday .. 7 */
	int doy;      /* 1..366 */
	int iso_dow;  /* 1 = Monday .. 7 */
	int iso_week, iso_year, week;
} parts_t;

static bool
is_leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static void
date_parts(int64_t ms, parts_t *p)
{
	int64_t days = ms >= 0 ? ms / 86400000 : -((-ms + 86399999) / 86400000);
	int64_t rem = ms - days * 86400000;
	unsigned m, d;

	civil_from_days(days, &p->year, &m, &d);
	p->month = (int)m;
	p->day = (int)d;
	p->hour = (int)(rem / 3600000);
	p->minute = (int)(rem / 60000 % 60);
	p->second = (int)(rem / 1000 % 60);
	p->millis = (int)(rem % 1000);
	int64_t w = (days + 4) % 7; /* 1970-01-01 was a Thursday; 0 = Sunday */
	if (w < 0)
		w += 7;
	p->dow = (int)w + 1;
	p->iso_dow = w == 0 ? 7 : (int)w;
	p->doy = (int)(days - days_from_civil(p->year, 1, 1)) + 1;
	/* %U: weeks starting Sunday, days before the first Sunday are week 0 */
	p->week = (p->doy + 6 - (int)w) / 7;
	/* ISO week */
	int wk = (p->doy - p->iso_dow + 10) / 7;
	p->iso_year = (int)p->year;
	if (wk < 1) {
		int64_t py = p->year - 1;
		int pdoy = (is_leap(py) ? 366 : 365) + p->doy;
		wk = (pdoy - p->iso_dow + 10) / 7;
		p->iso_year = (int)py;
	} else if (wk == 53) {
		int ylen = is_leap(p->year) ? 366 : 365;
		if (p->doy - p->iso_dow + 4 > ylen) { /* Thursday of this week is next year */
			wk = 1;
			p->iso_year = (int)p->year + 1;
		}
	}
	p->iso_week = wk;
}

/* "+03:00", "-0500", "+03", "UTC", "GMT", "Z" -> offset in ms */
static int
tz_offset(const bson_value_t *tz, int64_t *off, terr_t *err)
{
	*off = 0;
	if (tz->value_type != BSON_TYPE_UTF8)
		return terr_set(err, 40517, "timezone must evaluate to a string, found %s", expr_type_name(tz));
	const char *s = tz->value.v_utf8.str;
	size_t n = tz->value.v_utf8.len;
	if (strcmp(s, "UTC") == 0 || strcmp(s, "GMT") == 0 || strcmp(s, "Z") == 0 || strcmp(s, "Etc/UTC") == 0 ||
	    strcmp(s, "Etc/GMT") == 0)
		return 0;
	if (n >= 3 && (s[0] == '+' || s[0] == '-')) {
		int h = 0, m = 0;
		bool ok = false;
		if (n == 3 && sscanf(s + 1, "%2d", &h) == 1)
			ok = true;
		else if (n == 5 && sscanf(s + 1, "%2d%2d", &h, &m) == 2)
			ok = true;
		else if (n == 6 && s[3] == ':' && sscanf(s + 1, "%2d:%2d", &h, &m) == 2)
			ok = true;
		for (size_t i = 1; ok && i < n; i++) {
			if (s[i] != ':' && (s[i] < '0' || s[i] > '9'))
				ok = false;
		}
		if (ok) {
			*off = ((int64_t)h * 60 + m) * 60000 * (s[0] == '-' ? -1 : 1);
			return 0;
		}
		return terr_set(err, 40485, "unrecognized time zone identifier: \"%s\"", s);
	}
	if (strchr(s, '/') != NULL)
		return terr_set(err, TERR_NOT_IMPLEMENTED, "Olson time zone identifiers are not implemented yet: \"%s\"", s);
	return terr_set(err, 40485, "unrecognized time zone identifier: \"%s\"", s);
}

static int
to_date_ms(const bson_value_t *v, int64_t *ms, terr_t *err)
{
	switch (v->value_type) {
	case BSON_TYPE_DATE_TIME:
		*ms = v->value.v_datetime;
		return 0;
	case BSON_TYPE_TIMESTAMP:
		*ms = (int64_t)v->value.v_timestamp.timestamp * 1000;
		return 0;
	case BSON_TYPE_OID:
		*ms = (int64_t)bson_oid_get_time_t(&v->value.v_oid) * 1000;
		return 0;
	default:
		return terr_set(err, 16006, "can't convert from BSON type %s to Date", expr_type_name(v));
	}
}

/* Date-part operators take a date, [date], or {date, timezone}.
 * args[0] date, args[1] timezone|NULL. */
static int
parse_date_part(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	expr_t *parts[2] = {NULL, NULL};
	int ret = 0;
	bson_iter_t it;

	if (arg->value_type == BSON_TYPE_DOCUMENT && expr_iter_init(&it, arg) && bson_iter_next(&it) &&
	    bson_iter_key(&it)[0] != '$') {
		expr_iter_init(&it, arg);
		while (bson_iter_next(&it)) {
			const char *k = bson_iter_key(&it);
			int idx = strcmp(k, "date") == 0 ? 0 : strcmp(k, "timezone") == 0 ? 1 : -1;
			if (idx < 0) {
				ret = terr_set(err, 40535, "unrecognized option to %s: \"%s\". Options must be one of: "
				               "\"date\" or \"timezone\"", e->op->name, k);
				goto err;
			}
			expr_destroy(parts[idx]);
			parts[idx] = NULL;
			ERR(expr_parse_sub(bson_iter_value(&it), scope, &parts[idx], err));
		}
		if (parts[0] == NULL) {
			ret = terr_set(err, 40539, "missing 'date' argument to %s, provided: %s", e->op->name, "{...}");
			goto err;
		}
	} else if (arg->value_type == BSON_TYPE_ARRAY) {
		if (expr_array_len(arg) != 1)
			return terr_set(err, 40536, "%s accepts exactly one argument if given an array, but was given %u",
			                e->op->name, expr_array_len(arg));
		expr_iter_init(&it, arg);
		bson_iter_next(&it);
		ERR(expr_parse_sub(bson_iter_value(&it), scope, &parts[0], err));
	} else {
		ERR(expr_parse_sub(arg, scope, &parts[0], err));
	}
	e->args = bson_malloc(2 * sizeof(*e->args));
	e->args[0] = parts[0];
	e->args[1] = parts[1];
	e->nargs = 2;
	return 0;
err:
	expr_destroy(parts[0]);
	expr_destroy(parts[1]);
	return ret;
}

/* 1 = null result set; 0 = parts filled */
static int
eval_parts(const expr_t *e, expr_env_t *env, parts_t *p, bson_value_t *out, terr_t *err)
{
	bson_value_t d, tz;
	int64_t ms, off = 0;

	RET(expr_eval(e->args[0], env, &d, err));
	if (e->args[1] != NULL) {
		RET(expr_eval(e->args[1], env, &tz, err));
		if (expr_is_nullish(&tz)) {
			expr_set_null(out);
			return 1;
		}
		RET(tz_offset(&tz, &off, err));
	}
	if (expr_is_nullish(&d)) {
		expr_set_null(out);
		return 1;
	}
	RET(to_date_ms(&d, &ms, err));
	date_parts(ms + off, p);
	return 0;
}

static const char *const part_ops[] = {"$year", "$month", "$dayOfMonth", "$hour", "$minute", "$second",
	"$millisecond", "$dayOfWeek", "$dayOfYear", "$week", "$isoWeek", "$isoWeekYear", "$isoDayOfWeek"};

static int
eval_date_part(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	parts_t p;
	int r = eval_parts(e, env, &p, out, err);
	int which = 0;

	if (r != 0)
		return r > 0 ? 0 : -1;
	for (int i = 0; i < (int)(sizeof(part_ops) / sizeof(part_ops[0])); i++) {
		if (strcmp(part_ops[i], e->op->name) == 0)
			which = i;
	}
	int64_t vals[] = {p.year, p.month, p.day, p.hour, p.minute, p.second, p.millis, p.dow, p.doy, p.week,
	                  p.iso_week, p.iso_year, p.iso_dow};
	if (which == 11)
		expr_set_int64(out, vals[which]);
	else
		expr_set_int32(out, (int32_t)vals[which]);
	return 0;
}

/* ---- $dateToString: args date, format|NULL, timezone|NULL, onNull|NULL --- */

static int
parse_date_to_string(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	static const char *names[] = {"date", "format", "timezone", "onNull"};
	expr_t *parts[4] = {NULL, NULL, NULL, NULL};
	bson_iter_t it;
	int ret = 0;

	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 18629, "$dateToString only supports an object as its argument");
	expr_iter_init(&it, arg);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		int idx = -1;
		for (int i = 0; i < 4; i++) {
			if (strcmp(k, names[i]) == 0)
				idx = i;
		}
		if (idx < 0) {
			ret = terr_set(err, 18534, "Unrecognized parameter to $dateToString: %s", k);
			goto err;
		}
		expr_destroy(parts[idx]);
		parts[idx] = NULL;
		ERR(expr_parse_sub(bson_iter_value(&it), scope, &parts[idx], err));
	}
	if (parts[0] == NULL) {
		ret = terr_set(err, 18628, "Missing 'date' parameter to $dateToString");
		goto err;
	}
	e->args = bson_malloc(4 * sizeof(*e->args));
	memcpy(e->args, parts, sizeof(parts));
	e->nargs = 4;
	return 0;
err:
	for (int i = 0; i < 4; i++)
		expr_destroy(parts[i]);
	return ret;
}

static const char *const month_abbr[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct",
	"Nov", "Dec"};
static const char *const month_full[] = {"January", "February", "March", "April", "May", "June", "July",
	"August", "September", "October", "November", "December"};

static int
eval_date_to_string(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t d, f, tz;
	const char *fmt = "%Y-%m-%dT%H:%M:%S.%LZ";
	size_t flen = strlen(fmt);
	int64_t ms, off = 0;
	bool have_tz = false;

	RET(expr_eval(e->args[0], env, &d, err));
	if (e->args[1] != NULL) {
		RET(expr_eval(e->args[1], env, &f, err));
		if (expr_is_nullish(&f)) {
			expr_set_null(out);
			return 0;
		}
		if (f.value_type != BSON_TYPE_UTF8)
			return terr_set(err, 18533, "$dateToString requires that 'format' be a string, found: %s with "
			                "value %s", expr_type_name(&f), "...");
		fmt = f.value.v_utf8.str;
		flen = f.value.v_utf8.len;
	}
	if (e->args[2] != NULL) {
		RET(expr_eval(e->args[2], env, &tz, err));
		if (expr_is_nullish(&tz)) {
			expr_set_null(out);
			return 0;
		}
		RET(tz_offset(&tz, &off, err));
		have_tz = true;
	}
	(void)have_tz;
	/* validate format */
	for (size_t i = 0; i < flen; i++) {
		if (fmt[i] != '%')
			continue;
		if (i + 1 >= flen)
			return terr_set(err, 18535, "Unmatched '%%' at end of format string");
		if (!strchr("YmdHMSLjwuUVGZzbB%", fmt[i + 1]))
			return terr_set(err, 18536, "Invalid format character '%%%c' in format string", fmt[i + 1]);
		i++;
	}
	if (expr_is_nullish(&d)) {
		if (e->args[3] != NULL)
			return expr_eval(e->args[3], env, out, err);
		expr_set_null(out);
		return 0;
	}
	RET(to_date_ms(&d, &ms, err));
	parts_t p;
	date_parts(ms + off, &p);
	bson_string_t *s = bson_string_new(NULL);
	for (size_t i = 0; i < flen; i++) {
		if (fmt[i] != '%') {
			bson_string_append_c(s, fmt[i]);
			continue;
		}
		char c = fmt[++i];
		switch (c) {
		case 'Y':
			if (p.year < 0 || p.year > 9999) {
				bson_string_free(s, true);
				return terr_set(err, 18537, "Could not convert date to string: date component was outside the "
				                "supported range of 0-9999: %lld", (long long)p.year);
			}
			bson_string_append_printf(s, "%04lld", (long long)p.year);
			break;
		case 'm': bson_string_append_printf(s, "%02d", p.month); break;
		case 'd': bson_string_append_printf(s, "%02d", p.day); break;
		case 'H': bson_string_append_printf(s, "%02d", p.hour); break;
		case 'M': bson_string_append_printf(s, "%02d", p.minute); break;
		case 'S': bson_string_append_printf(s, "%02d", p.second); break;
		case 'L': bson_string_append_printf(s, "%03d", p.millis); break;
		case 'j': bson_string_append_printf(s, "%03d", p.doy); break;
		case 'w': bson_string_append_printf(s, "%d", p.dow); break;
		case 'u': bson_string_append_printf(s, "%d", p.iso_dow); break;
		case 'U': bson_string_append_printf(s, "%02d", p.week); break;
		case 'V': bson_string_append_printf(s, "%02d", p.iso_week); break;
		case 'G': bson_string_append_printf(s, "%04d", p.iso_year); break;
		case 'b': bson_string_append(s, month_abbr[p.month - 1]); break;
		case 'B': bson_string_append(s, month_full[p.month - 1]); break;
		case 'Z': bson_string_append_printf(s, "%lld", (long long)(off / 60000)); break;
		case 'z': {
			int64_t mins = off / 60000, am = mins < 0 ? -mins : mins;
			bson_string_append_printf(s, "%c%02lld%02lld", mins < 0 ? '-' : '+', (long long)(am / 60),
			                          (long long)(am % 60));
			break;
		}
		default: bson_string_append_c(s, '%'); break;
		}
	}
	expr_set_string(env, out, s->str, s->len);
	bson_string_free(s, true);
	return 0;
}

/* ---- ISO-8601 parsing ---------------------------------------------------- */

static bool
digits(const char *s, size_t n, int *out)
{
	int v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return true;
}

int
expr_date_from_string(const char *s, size_t len, int64_t *ms)
{
	int y, mo, d, h = 0, mi = 0, se = 0, milli = 0;
	size_t i = 10;
	int64_t off = 0;

	if (len < 10 || s[4] != '-' || s[7] != '-' || !digits(s, 4, &y) || !digits(s + 5, 2, &mo) ||
	    !digits(s + 8, 2, &d))
		return -1;
	if (mo < 1 || mo > 12 || d < 1 || d > 31)
		return -1;
	if (i < len && (s[i] == 'T' || s[i] == ' ')) {
		i++;
		if (len < i + 5 || s[i + 2] != ':' || !digits(s + i, 2, &h) || !digits(s + i + 3, 2, &mi))
			return -1;
		i += 5;
		if (i < len && s[i] == ':') {
			if (len < i + 3 || !digits(s + i + 1, 2, &se))
				return -1;
			i += 3;
			if (i < len && s[i] == '.') {
				size_t st = ++i, nd = 0;
				int frac = 0;
				while (i < len && s[i] >= '0' && s[i] <= '9') {
					if (nd < 3)
						frac = frac * 10 + (s[i] - '0');
					nd++;
					i++;
				}
				if (i == st)
					return -1;
				while (nd < 3) {
					frac *= 10;
					nd++;
				}
				milli = frac;
			}
		}
		if (h > 23 || mi > 59 || se > 60)
			return -1;
	}
	if (i < len) {
		if (s[i] == 'Z' && i + 1 == len) {
			i++;
		} else if (s[i] == '+' || s[i] == '-') {
			int oh = 0, om = 0;
			size_t rest = len - i - 1;
			const char *t = s + i + 1;
			if (rest == 2 && digits(t, 2, &oh))
				;
			else if (rest == 4 && digits(t, 2, &oh) && digits(t + 2, 2, &om))
				;
			else if (rest == 5 && t[2] == ':' && digits(t, 2, &oh) && digits(t + 3, 2, &om))
				;
			else
				return -1;
			off = ((int64_t)oh * 60 + om) * 60000 * (s[i] == '-' ? -1 : 1);
			i = len;
		} else {
			return -1;
		}
	}
	if (i != len)
		return -1;
	*ms = days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400000 + (int64_t)h * 3600000 + (int64_t)mi * 60000 +
	      (int64_t)se * 1000 + milli - off;
	return 0;
}

static int
not_implemented(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	return terr_set(err, TERR_NOT_IMPLEMENTED, "%s is not implemented yet", e->op->name);
}

static int
eval_never(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	return terr_set(err, TERR_NOT_IMPLEMENTED, "%s is not implemented yet", e->op->name);
}

const expr_op_t expr_ops_date[] = {
	{"$year", 0, -1, parse_date_part, eval_date_part, 0},
	{"$month", 0, -1, parse_date_part, eval_date_part, 0},
	{"$dayOfMonth", 0, -1, parse_date_part, eval_date_part, 0},
	{"$hour", 0, -1, parse_date_part, eval_date_part, 0},
	{"$minute", 0, -1, parse_date_part, eval_date_part, 0},
	{"$second", 0, -1, parse_date_part, eval_date_part, 0},
	{"$millisecond", 0, -1, parse_date_part, eval_date_part, 0},
	{"$dayOfWeek", 0, -1, parse_date_part, eval_date_part, 0},
	{"$dayOfYear", 0, -1, parse_date_part, eval_date_part, 0},
	{"$week", 0, -1, parse_date_part, eval_date_part, 0},
	{"$isoWeek", 0, -1, parse_date_part, eval_date_part, 0},
	{"$isoWeekYear", 0, -1, parse_date_part, eval_date_part, 0},
	{"$isoDayOfWeek", 0, -1, parse_date_part, eval_date_part, 0},
	{"$dateToString", 0, -1, parse_date_to_string, eval_date_to_string, 0},
	{"$dateFromString", 0, -1, not_implemented, eval_never, 0},
	{"$dateTrunc", 0, -1, not_implemented, eval_never, 0},
	{"$dateAdd", 0, -1, not_implemented, eval_never, 0},
	{"$dateSubtract", 0, -1, not_implemented, eval_never, 0},
	{"$dateDiff", 0, -1, not_implemented, eval_never, 0},
	{"$dateFromParts", 0, -1, not_implemented, eval_never, 0},
	{"$dateToParts", 0, -1, not_implemented, eval_never, 0},
	{NULL, 0, 0, NULL, NULL, 0},
};
