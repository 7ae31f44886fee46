/*
 * expr_date.c -- date operators: $year $month $dayOfMonth $hour $minute
 * $second $millisecond $dayOfWeek $dayOfYear $week $isoWeek $isoWeekYear
 * $isoDayOfWeek $dateToString $dateToParts $dateFromParts $dateAdd
 * $dateSubtract $dateDiff $dateTrunc $dateFromString, and the ISO-8601
 * parsing $toDate uses.
 *
 * Calendar math is proleptic Gregorian on "local wall-clock milliseconds";
 * time zones (UTC, fixed offsets, Olson names) come from expr_tz.c.
 * $dateFromString without a format accepts ISO-8601 forms only (mongod's
 * timelib accepts more free-form text).
 */
#include "expr/expr_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bson/value.h"
#include "common/checked.h"
#include "expr/expr_tz.h"

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

#define MS_PER_DAY 86400000LL

/* The local wall-clock time of the UTC instant ms at offset off (ms, local -
 * UTC) as days since 1970-01-01 and ms into that day.  Never overflows:
 * ms + off is not computed (it does not fit int64 at the ends of the date
 * range, where mongod still answers). */
static void
local_split(int64_t ms, int64_t off, int64_t *days, int64_t *msday)
{
	int64_t d = ms / MS_PER_DAY, r = ms % MS_PER_DAY;

	if (r < 0) {
		r += MS_PER_DAY;
		d--;
	}
	d += off / MS_PER_DAY;
	r += off % MS_PER_DAY;
	if (r < 0) {
		r += MS_PER_DAY;
		d--;
	} else if (r >= MS_PER_DAY) {
		r -= MS_PER_DAY;
		d++;
	}
	*days = d;
	*msday = r;
}

/* days * MS_PER_DAY + msday in *local; false when it does not fit. */
static bool
local_join(int64_t days, int64_t msday, int64_t *local)
{
	return !tm_i64_mul(days, MS_PER_DAY, local) && !tm_i64_add(*local, msday, local);
}

static void
date_parts(int64_t ms, int64_t off, parts_t *p)
{
	int64_t days, rem;
	unsigned m, d;

	local_split(ms, off, &days, &rem);

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

/* Evaluate a timezone argument (NULL = UTC).  Returns 1 when it is nullish
 * (the operator then yields null), 0 with *tz set, -1 on error. */
static int
eval_tz(const expr_t *tzexpr, expr_env_t *env, expr_tz_t *tz, terr_t *err)
{
	bson_value_t v;

	memset(tz, 0, sizeof(*tz));
	if (tzexpr == NULL)
		return 0;
	RET(expr_eval(tzexpr, env, &v, err));
	if (expr_is_nullish(&v))
		return 1;
	if (v.value_type != BSON_TYPE_UTF8)
		return terr_set(err, 40517, "timezone must evaluate to a string, found %s", expr_type_name(&v));
	return expr_tz_parse(v.value.v_utf8.str, v.value.v_utf8.len, tz, err);
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
	static const char *names[] = {"date", "timezone"};
	expr_t *parts[2] = {NULL, NULL};
	int ret = 0;
	bson_iter_t it;

	if (arg->value_type == BSON_TYPE_DOCUMENT && expr_iter_init(&it, arg) && bson_iter_next(&it) &&
	    bson_iter_key(&it)[0] != '$') {
		ERR(expr_parse_named(e, arg, scope, names, 2, parts, 40535, "unrecognized option to %s: \"%s\". "
		                     "Options must be one of: \"date\" or \"timezone\"", err));
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
	expr_args_set(e, parts, 2);
	return 0;
err:
	expr_parts_destroy(parts, 2);
	return ret;
}

/* 1 = null result set; 0 = parts filled */
static int
eval_parts(const expr_t *e, expr_env_t *env, parts_t *p, bson_value_t *out, terr_t *err)
{
	bson_value_t d;
	expr_tz_t tz;
	int64_t ms;
	int r;

	RET(expr_eval(e->args[0], env, &d, err));
	r = eval_tz(e->args[1], env, &tz, err);
	if (r < 0)
		return -1;
	if (r > 0 || expr_is_nullish(&d)) {
		expr_set_null(out);
		return 1;
	}
	RET(to_date_ms(&d, &ms, err));
	date_parts(ms, expr_tz_offset_at(&tz, ms), p);
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
	int ret = 0;

	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 18629, "$dateToString only supports an object as its argument");
	ERR(expr_parse_named(e, arg, scope, names, 4, parts, 18534, "Unrecognized parameter to %s: %s", err));
	if (parts[0] == NULL) {
		ret = terr_set(err, 18628, "Missing 'date' parameter to $dateToString");
		goto err;
	}
	expr_args_set(e, parts, 4);
	return 0;
err:
	expr_parts_destroy(parts, 4);
	return ret;
}

static const char *const month_abbr[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct",
	"Nov", "Dec"};
static const char *const month_full[] = {"January", "February", "March", "April", "May", "June", "July",
	"August", "September", "October", "November", "December"};

/* Check a date format string: every '%' is followed by one of `allowed`. */
static int
check_format(const char *fmt, size_t flen, const char *allowed, terr_t *err)
{
	for (size_t i = 0; i < flen; i++) {
		if (fmt[i] != '%')
			continue;
		if (i + 1 >= flen)
			return terr_set(err, 18535, "Unmatched '%%' at end of format string");
		if (!strchr(allowed, fmt[i + 1]))
			return terr_set(err, 18536, "Invalid format character '%%%c' in format string", fmt[i + 1]);
		i++;
	}
	return 0;
}

static int
check_to_string_format(const char *fmt, size_t flen, terr_t *err)
{
	return check_format(fmt, flen, "YmdHMSLjwuUVGZzbB%", err);
}

/* Format ms (UTC) in tz with a validated format into the arena. */
static int
format_date(expr_env_t *env, const char *fmt, size_t flen, int64_t ms, const expr_tz_t *tz, bson_value_t *out,
            terr_t *err)
{
	int64_t off = expr_tz_offset_at(tz, ms);
	parts_t p;

	date_parts(ms, off, &p);
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

static int
eval_date_to_string(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t d, f;
	const char *fmt = "%Y-%m-%dT%H:%M:%S.%LZ";
	size_t flen = strlen(fmt);
	bool format_null = false;
	expr_tz_t tz;
	int64_t ms;
	int r;

	RET(expr_eval(e->args[0], env, &d, err));
	if (e->args[1] != NULL) {
		RET(expr_eval(e->args[1], env, &f, err));
		if (expr_is_nullish(&f)) {
			format_null = true;
		} else {
			if (f.value_type != BSON_TYPE_UTF8) {
				char *t = bv_to_mongo_string(&f);
				terr_set(err, 18533, "$dateToString requires that 'format' be a string, found: %s with value %s",
				         expr_type_name(&f), t);
				bson_free(t);
				return -1;
			}
			fmt = f.value.v_utf8.str;
			flen = f.value.v_utf8.len;
			RET(check_to_string_format(fmt, flen, err));
		}
	}
	r = eval_tz(e->args[2], env, &tz, err);
	if (r < 0)
		return -1;
	if (expr_is_nullish(&d)) {
		if (e->args[3] != NULL)
			return expr_eval(e->args[3], env, out, err);
		expr_set_null(out);
		return 0;
	}
	if (r > 0 || format_null) {
		expr_set_null(out);
		return 0;
	}
	RET(to_date_ms(&d, &ms, err));
	return format_date(env, fmt, flen, ms, &tz, out, err);
}

/* ---- named-argument parsing shared by the object-form date operators ---- */

typedef struct date_arg {
	const char *name;
	bool required;
	int missing_code;
	const char *missing_msg;
} date_arg_t;

/* Parse {name: expr, ...} into e->args in table order (absent = NULL). */
static int
parse_date_named(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, const date_arg_t *tab, size_t n,
                 int notobj_code, const char *notobj_msg, int unknown_code, const char *unknown_fmt, terr_t *err)
{
	bson_iter_t it;
	int ret = 0;

	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, notobj_code, notobj_msg, expr_type_name(arg));
	e->args = bson_malloc0(n * sizeof(*e->args));
	e->nargs = n;
	expr_iter_init(&it, arg);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		size_t i;
		for (i = 0; i < n; i++) {
			if (strcmp(k, tab[i].name) == 0)
				break;
		}
		if (i == n)
			return terr_set(err, unknown_code, unknown_fmt, k);
		expr_destroy(e->args[i]);
		e->args[i] = NULL;
		ERR(expr_parse_sub(bson_iter_value(&it), scope, &e->args[i], err));
	}
	for (size_t i = 0; i < n; i++) {
		if (tab[i].required && e->args[i] == NULL)
			return terr_set(err, tab[i].missing_code, "%s", tab[i].missing_msg);
	}
err:
	return ret;
}

/* ---- $dateToParts: args date, timezone, iso8601 ------------------------- */

static const date_arg_t to_parts_args[] = {
	{"date", true, 40522, "Missing 'date' parameter to $dateToParts"},
	{"timezone", false, 0, NULL},
	{"iso8601", false, 0, NULL},
};

static int
parse_date_to_parts(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 40524, "$dateToParts only supports an object as its argument");
	return parse_date_named(e, arg, scope, to_parts_args, 3, 40524, "%s", 40520,
	                        "Unrecognized argument to $dateToParts: %s", err);
}

static int
eval_date_to_parts(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t d, iso;
	expr_tz_t tz;
	bool use_iso = false;
	int64_t ms;
	int r;

	RET(expr_eval(e->args[0], env, &d, err));
	r = eval_tz(e->args[1], env, &tz, err);
	if (r < 0)
		return -1;
	if (r > 0) {
		expr_set_null(out);
		return 0;
	}
	if (e->args[2] != NULL) {
		RET(expr_eval(e->args[2], env, &iso, err));
		if (expr_is_nullish(&iso)) {
			expr_set_null(out);
			return 0;
		}
		if (iso.value_type != BSON_TYPE_BOOL)
			return terr_set(err, 40521, "iso8601 must evaluate to a bool, found %s", expr_type_name(&iso));
		use_iso = iso.value.v_bool;
	}
	if (expr_is_nullish(&d)) {
		expr_set_null(out);
		return 0;
	}
	RET(to_date_ms(&d, &ms, err));
	parts_t p;
	date_parts(ms, expr_tz_offset_at(&tz, ms), &p);
	bson_t b;
	bson_init(&b);
	if (use_iso) {
		bson_append_int32(&b, "isoWeekYear", -1, p.iso_year);
		bson_append_int32(&b, "isoWeek", -1, p.iso_week);
		bson_append_int32(&b, "isoDayOfWeek", -1, p.iso_dow);
	} else {
		bson_append_int32(&b, "year", -1, (int32_t)p.year);
		bson_append_int32(&b, "month", -1, p.month);
		bson_append_int32(&b, "day", -1, p.day);
	}
	bson_append_int32(&b, "hour", -1, p.hour);
	bson_append_int32(&b, "minute", -1, p.minute);
	bson_append_int32(&b, "second", -1, p.second);
	bson_append_int32(&b, "millisecond", -1, p.millis);
	expr_set_doc_from(env, out, &b, false);
	return 0;
}

/* ---- $dateFromParts ---------------------------------------------------- */

enum { FP_YEAR, FP_MONTH, FP_DAY, FP_HOUR, FP_MINUTE, FP_SECOND, FP_MS, FP_ISOYEAR, FP_ISOWEEK, FP_ISODOW, FP_TZ, FP_N };

static const date_arg_t from_parts_args[FP_N] = {
	{"year", false, 0, NULL}, {"month", false, 0, NULL}, {"day", false, 0, NULL}, {"hour", false, 0, NULL},
	{"minute", false, 0, NULL}, {"second", false, 0, NULL}, {"millisecond", false, 0, NULL},
	{"isoWeekYear", false, 0, NULL}, {"isoWeek", false, 0, NULL}, {"isoDayOfWeek", false, 0, NULL},
	{"timezone", false, 0, NULL},
};

static int
parse_date_from_parts(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 40519, "$dateFromParts only supports an object as its argument");
	RET(parse_date_named(e, arg, scope, from_parts_args, FP_N, 40519, "%s", 40518,
	                     "Unrecognized argument to $dateFromParts: %s", err));
	bool y = e->args[FP_YEAR] != NULL, iy = e->args[FP_ISOYEAR] != NULL;
	if (!y && !iy)
		return terr_set(err, 40516, "$dateFromParts requires either 'year' or 'isoWeekYear' to be present");
	if (y && (iy || e->args[FP_ISOWEEK] || e->args[FP_ISODOW]))
		return terr_set(err, 40489, "$dateFromParts does not allow mixing natural dates with ISO dates");
	if (iy && (y || e->args[FP_MONTH] || e->args[FP_DAY]))
		return terr_set(err, 40525, "$dateFromParts does not allow mixing ISO dates with natural dates");
	return 0;
}

/* 1 = nullish (result null), 0 = value, -1 = error */
static int
part_value(const expr_t *x, expr_env_t *env, const char *name, int64_t dflt, bool bounded, int64_t *out,
           terr_t *err)
{
	bson_value_t v;

	if (x == NULL) {
		*out = dflt;
		return 0;
	}
	RET(expr_eval(x, env, &v, err));
	if (expr_is_nullish(&v))
		return 1;
	if (!bv_is_number(&v) || !expr_num_to_int64_exact(&v, out)) {
		char *t = bv_to_mongo_string(&v);
		terr_set(err, 40515, "'%s' must evaluate to an integer, found %s with value %s", name, expr_type_name(&v), t);
		bson_free(t);
		return -1;
	}
	if (bounded && (*out < -32768 || *out > 32767))
		return terr_set(err, 31034, "'%s' must evaluate to a value in the range [-32768, 32767]; value %lld is not "
		                "in range", name, (long long)*out);
	return 0;
}

/* days * MS_PER_DAY + h:mi:s.ms in *local; false when it does not fit.
 * h and mi are within +-32768 (31034), s and ms are any int64. */
static bool
local_from_day(int64_t days, int64_t h, int64_t mi, int64_t s, int64_t ms, int64_t *local)
{
	int64_t t;

	return local_join(days, h * 3600000 + mi * 60000, local) && !tm_i64_mul(s, 1000, &t) &&
	       !tm_i64_add(*local, t, local) && !tm_i64_add(*local, ms, local);
}

/* local wall-clock ms for (possibly out-of-range) civil parts, normalised
 * as timelib does (month 13 is January next year, day 0 the last day of
 * the previous month, ...); false when it does not fit */
static bool
local_from_parts(int64_t y, int64_t mo, int64_t d, int64_t h, int64_t mi, int64_t s, int64_t ms, int64_t *local)
{
	int64_t m0 = mo - 1;
	y += m0 >= 0 ? m0 / 12 : -((-m0 + 11) / 12);
	m0 -= (m0 >= 0 ? m0 / 12 : -((-m0 + 11) / 12)) * 12;
	int64_t days = days_from_civil(y, (unsigned)(m0 + 1), 1) + (d - 1);
	return local_from_day(days, h, mi, s, ms, local);
}

/* mongod's Duration cast of an out-of-range date (timelib's seconds to
 * Date_t's milliseconds) */
static int
duration_overflow(terr_t *err)
{
	return terr_set(err, 15, "Overflow casting from a lower-precision duration to a higher-precision duration");
}

static int
eval_date_from_parts(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	int64_t v[FP_N];
	static const char *names[] = {"year", "month", "day", "hour", "minute", "second", "millisecond",
	                              "isoWeekYear", "isoWeek", "isoDayOfWeek"};
	static const int order[] = {FP_HOUR, FP_MINUTE, FP_SECOND, FP_MS};
	expr_tz_t tz;
	int r;

	for (size_t i = 0; i < 4; i++) {
		int k = order[i];
		r = part_value(e->args[k], env, names[k], 0, k == FP_HOUR || k == FP_MINUTE, &v[k], err);
		if (r != 0)
			goto done;
	}
	r = eval_tz(e->args[FP_TZ], env, &tz, err);
	if (r != 0)
		goto done;
	int64_t local;
	if (e->args[FP_YEAR] != NULL) {
		if ((r = part_value(e->args[FP_YEAR], env, "year", 1970, false, &v[FP_YEAR], err)) != 0 ||
		    (r = part_value(e->args[FP_MONTH], env, "month", 1, true, &v[FP_MONTH], err)) != 0 ||
		    (r = part_value(e->args[FP_DAY], env, "day", 1, true, &v[FP_DAY], err)) != 0)
			goto done;
		if (v[FP_YEAR] < 1 || v[FP_YEAR] > 9999)
			return terr_set(err, 40523, "'year' must evaluate to an integer in the range 1 to 9999, found %lld",
			                (long long)v[FP_YEAR]);
		if (!local_from_parts(v[FP_YEAR], v[FP_MONTH], v[FP_DAY], v[FP_HOUR], v[FP_MINUTE], v[FP_SECOND],
		                      v[FP_MS], &local))
			return duration_overflow(err);
	} else {
		if ((r = part_value(e->args[FP_ISOYEAR], env, "isoWeekYear", 1970, false, &v[FP_ISOYEAR], err)) != 0 ||
		    (r = part_value(e->args[FP_ISOWEEK], env, "isoWeek", 1, true, &v[FP_ISOWEEK], err)) != 0 ||
		    (r = part_value(e->args[FP_ISODOW], env, "isoDayOfWeek", 1, true, &v[FP_ISODOW], err)) != 0)
			goto done;
		if (v[FP_ISOYEAR] < 1 || v[FP_ISOYEAR] > 9999)
			return terr_set(err, 31095, "'isoWeekYear' must evaluate to an integer in the range 1 to 9999, found "
			                "%lld", (long long)v[FP_ISOYEAR]);
		/* Monday of ISO week 1: the week holding January 4th */
		int64_t jan4 = days_from_civil(v[FP_ISOYEAR], 1, 4);
		int64_t w = (jan4 + 4) % 7; /* 0 = Sunday */
		if (w < 0)
			w += 7;
		int64_t monday = jan4 - (w == 0 ? 6 : w - 1);
		int64_t days = monday + (v[FP_ISOWEEK] - 1) * 7 + (v[FP_ISODOW] - 1);
		if (!local_from_day(days, v[FP_HOUR], v[FP_MINUTE], v[FP_SECOND], v[FP_MS], &local))
			return duration_overflow(err);
	}
	int64_t utc;
	if (!expr_tz_local_to_utc(&tz, local, &utc))
		return duration_overflow(err);
	expr_set_date(out, utc);
	return 0;
done:
	if (r > 0) {
		expr_set_null(out);
		return 0;
	}
	return -1;
}

/* ---- time units -------------------------------------------------------- */

enum { U_MS, U_SECOND, U_MINUTE, U_HOUR, U_DAY, U_WEEK, U_MONTH, U_QUARTER, U_YEAR };
static const char *const unit_names[] = {"millisecond", "second", "minute", "hour", "day", "week", "month",
                                         "quarter", "year"};
static const int64_t unit_ms[] = {1, 1000, 60000, 3600000, 86400000, 7 * 86400000LL};

static int
unit_lookup(const bson_value_t *v)
{
	for (int i = 0; i < 9; i++) {
		if (v->value_type == BSON_TYPE_UTF8 && strcmp(v->value.v_utf8.str, unit_names[i]) == 0)
			return i;
	}
	return -1;
}

/* $dateDiff/$dateTrunc style unit parsing */
static int
parse_unit(const bson_value_t *v, const char *op, int *unit, terr_t *err)
{
	if (v->value_type != BSON_TYPE_UTF8)
		return terr_set(err, 5439013, "%s requires 'unit' to be a string, but got %s", op, expr_type_name(v));
	*unit = unit_lookup(v);
	if (*unit < 0)
		return terr_set(err, 5439014, "%s parameter 'unit' value cannot be recognized as a time unit: %s", op,
		                v->value.v_utf8.str);
	return 0;
}

/* 0 = Sunday .. 6 = Saturday */
static int
parse_start_of_week(const bson_value_t *v, const char *op, int *dow, terr_t *err)
{
	static const char *full[] = {"sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"};
	if (v->value_type != BSON_TYPE_UTF8)
		return terr_set(err, 5439015, "%s requires 'startOfWeek' to be a string, but got %s", op,
		                expr_type_name(v));
	for (int i = 0; i < 7; i++) {
		if (strcasecmp(v->value.v_utf8.str, full[i]) == 0 ||
		    (v->value.v_utf8.len == 3 && strncasecmp(v->value.v_utf8.str, full[i], 3) == 0)) {
			*dow = i;
			return 0;
		}
	}
	return terr_set(err, 5439016, "%s parameter 'startOfWeek' value cannot be recognized as a day of a week: %s",
	                op, v->value.v_utf8.str);
}

static int64_t
floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	if ((a % b != 0) && ((a < 0) != (b < 0)))
		q--;
	return q;
}


/* ---- $dateAdd / $dateSubtract: args startDate, unit, amount, timezone --- */

static const date_arg_t add_args[] = {
	{"startDate", false, 0, NULL},
	{"unit", false, 0, NULL},
	{"amount", false, 0, NULL},
	{"timezone", false, 0, NULL},
};

static int
parse_date_add(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	char notobj[96], unknown[200], missing[96];

	snprintf(notobj, sizeof(notobj), "%s expects an object as its argument", e->op->name);
	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 5166400, "%s", notobj);
	snprintf(unknown, sizeof(unknown), "Unrecognized argument to %s: %%s. Expected arguments are startDate, unit, "
	         "amount, and optionally timezone.", e->op->name);
	RET(parse_date_named(e, arg, scope, add_args, 4, 5166400, "%s", 5166401, unknown, err));
	snprintf(missing, sizeof(missing), "%s requires startDate, unit, and amount to be present", e->op->name);
	if (e->args[0] == NULL || e->args[1] == NULL || e->args[2] == NULL)
		return terr_set(err, 5166402, "%s", missing);
	return 0;
}

/* Add amount units to a UTC instant in tz.  false on overflow. */
static bool
date_add(int64_t ms, int unit, int64_t amount, const expr_tz_t *tz, int64_t *out)
{
	if (unit <= U_HOUR) {
		int64_t delta;
		if (tm_i64_mul(amount, unit_ms[unit], &delta))
			return false;
		return !tm_i64_add(ms, delta, out);
	}
	int64_t days, msday;
	local_split(ms, expr_tz_offset_at(tz, ms), &days, &msday);
	if (unit == U_DAY || unit == U_WEEK) {
		int64_t nd;
		if (tm_i64_mul(amount, unit == U_WEEK ? 7 : 1, &nd) || tm_i64_add(days, nd, &days) ||
		    days > 106751991167LL || days < -106751991167LL)
			return false;
	} else {
		int64_t months, y;
		unsigned m, d;
		if (tm_i64_mul(amount, unit == U_MONTH ? 1 : unit == U_QUARTER ? 3 : 12, &months))
			return false;
		civil_from_days(days, &y, &m, &d);
		int64_t total;
		if (tm_i64_mul(y, 12, &total) || tm_i64_add(total, (int64_t)m - 1, &total) ||
		    tm_i64_add(total, months, &total) || total > 3000000000LL || total < -3000000000LL)
			return false;
		y = floor_div(total, 12);
		m = (unsigned)(total - y * 12) + 1;
		/* clamp the day to the end of the resulting month */
		static const unsigned mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
		unsigned last = mdays[m - 1] + (m == 2 && is_leap(y) ? 1 : 0);
		if (d > last)
			d = last;
		days = days_from_civil(y, m, d);
	}
	int64_t nlocal;
	return local_join(days, msday, &nlocal) && expr_tz_local_to_utc(tz, nlocal, out);
}

/* mongod's isDateAddAmountValid: for units of a second and longer the
 * amount must roughly fit the date range (|amount| below the units in
 * 2^64 ms), else 5976500 before any arithmetic. */
static bool
date_add_amount_valid(int64_t amount, int unit)
{
	const int64_t max_days = (int64_t)(UINT64_MAX / (uint64_t)MS_PER_DAY) + 1;
	const int64_t max_years = max_days / 365 + 1;
	int64_t max;

	switch (unit) {
	case U_YEAR: max = max_years; break;
	case U_QUARTER: max = max_years * 4; break;
	case U_MONTH: max = max_years * 12; break;
	case U_WEEK: max = max_days / 7; break;
	case U_DAY: max = max_days; break;
	case U_HOUR: max = max_days * 24; break;
	case U_MINUTE: max = max_days * 24 * 60; break;
	case U_SECOND: max = max_days * 24 * 60 * 60; break;
	default: return true;
	}
	return -max < amount && amount < max;
}

static int
eval_date_add(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bool sub = strcmp(e->op->name, "$dateSubtract") == 0;
	const char *op = e->op->name;
	bson_value_t sd, u, amt;
	expr_tz_t tz;
	int64_t ms, n, res;
	int unit, r;

	RET(expr_eval(e->args[0], env, &sd, err));
	if (expr_is_nullish(&sd))
		goto null;
	RET(expr_eval(e->args[1], env, &u, err));
	if (expr_is_nullish(&u))
		goto null;
	RET(expr_eval(e->args[2], env, &amt, err));
	if (expr_is_nullish(&amt))
		goto null;
	r = eval_tz(e->args[3], env, &tz, err);
	if (r < 0)
		return -1;
	if (r > 0)
		goto null;
	if (sd.value_type != BSON_TYPE_DATE_TIME && sd.value_type != BSON_TYPE_TIMESTAMP && sd.value_type != BSON_TYPE_OID)
		return terr_set(err, 5166403, "%s requires startDate to be convertible to a date", op);
	if (u.value_type != BSON_TYPE_UTF8)
		return terr_set(err, 5166404, "%s expects string defining the time unit", op);
	unit = unit_lookup(&u);
	if (unit < 0)
		return terr_set(err, TERR_FAILED_TO_PARSE, "unknown time unit value: %s", u.value.v_utf8.str);
	if (!bv_is_number(&amt) || !expr_num_to_int64_exact(&amt, &n))
		return terr_set(err, 5166405, "%s expects integer amount of time units", op);
	if (sub) {
		if (n == INT64_MIN)
			return terr_set(err, 6045000, "invalid $dateSubtract 'amount' parameter value: %lld", (long long)n);
		n = -n;
	}
	to_date_ms(&sd, &ms, err);
	if (!date_add_amount_valid(n, unit))
		return terr_set(err, 5976500, "invalid dateAdd 'amount' parameter value: %lld %s", (long long)n,
		                unit_names[unit]);
	if (!date_add(ms, unit, n, &tz, &res))
		return terr_set(err, 5166406, "%s overflowed", op);
	expr_set_date(out, res);
	return 0;
null:
	expr_set_null(out);
	return 0;
}

/* ---- $dateDiff: startDate, endDate, unit, timezone, startOfWeek -------- */

static const date_arg_t diff_args[] = {
	{"startDate", true, 5166303, "Missing 'startDate' parameter to $dateDiff"},
	{"endDate", true, 5166304, "Missing 'endDate' parameter to $dateDiff"},
	{"unit", true, 5166305, "Missing 'unit' parameter to $dateDiff"},
	{"timezone", false, 0, NULL},
	{"startOfWeek", false, 0, NULL},
};

static int
parse_date_diff(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 5166301, "$dateDiff only supports an object as its argument");
	return parse_date_named(e, arg, scope, diff_args, 5, 5166301, "%s", 5166302,
	                        "Unrecognized argument to $dateDiff: %s", err);
}

static int
coerce_date_param(const bson_value_t *v, const char *op, const char *pname, int64_t *ms, terr_t *err)
{
	if (v->value_type != BSON_TYPE_DATE_TIME && v->value_type != BSON_TYPE_TIMESTAMP && v->value_type != BSON_TYPE_OID)
		return terr_set(err, 5166307, "%s requires '%s' to be a date, but got %s", op, pname, expr_type_name(v));
	return to_date_ms(v, ms, err);
}

static int
eval_date_diff(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t a, b, u, sw;
	expr_tz_t tz;
	int64_t sa, sb;
	int unit, sow = 0, r;

	RET(expr_eval(e->args[0], env, &a, err));
	if (expr_is_nullish(&a))
		goto null;
	RET(expr_eval(e->args[1], env, &b, err));
	if (expr_is_nullish(&b))
		goto null;
	RET(expr_eval(e->args[2], env, &u, err));
	if (expr_is_nullish(&u))
		goto null;
	bool week = u.value_type == BSON_TYPE_UTF8 && strcmp(u.value.v_utf8.str, "week") == 0;
	if (week && e->args[4] != NULL) {
		RET(expr_eval(e->args[4], env, &sw, err));
		if (expr_is_nullish(&sw))
			goto null;
	}
	r = eval_tz(e->args[3], env, &tz, err);
	if (r < 0) {
		terr_wrap(err, "$dateDiff parameter 'timezone' value parsing failed");
		return -1;
	}
	if (r > 0)
		goto null;
	RET(coerce_date_param(&a, "$dateDiff", "startDate", &sa, err));
	RET(coerce_date_param(&b, "$dateDiff", "endDate", &sb, err));
	RET(parse_unit(&u, "$dateDiff", &unit, err));
	if (week && e->args[4] != NULL)
		RET(parse_start_of_week(&sw, "$dateDiff", &sow, err));
	/* local days and ms into the day: no local instant is formed, so the
	 * whole date range works (mongod answers DMIN -> DMAX in seconds) */
	int64_t da, msa, db, msb, res;
	local_split(sa, expr_tz_offset_at(&tz, sa), &da, &msa);
	local_split(sb, expr_tz_offset_at(&tz, sb), &db, &msb);
	if (unit == U_MS) {
		if (tm_i64_sub(sb, sa, &res))
			return terr_set(err, 5166308, "dateDiff overflowed");
	} else if (unit <= U_DAY) {
		/* boundaries crossed: floor(local / unit) at each end; a day
		 * holds a whole number of each unit, and |days| < 1.1e11 */
		int64_t per_day = MS_PER_DAY / unit_ms[unit];
		res = (db - da) * per_day + (msb / unit_ms[unit] - msa / unit_ms[unit]);
	} else if (unit == U_WEEK) {
		/* weeks start on sow; day 0 (1970-01-01) was a Thursday (4) */
		int64_t shift = (4 - sow + 7) % 7;
		res = floor_div(db + shift, 7) - floor_div(da + shift, 7);
	} else {
		int64_t ya, yb;
		unsigned ma, mb, d;
		civil_from_days(da, &ya, &ma, &d);
		civil_from_days(db, &yb, &mb, &d);
		if (unit == U_YEAR)
			res = yb - ya;
		else if (unit == U_QUARTER)
			res = (yb * 4 + (mb - 1) / 3) - (ya * 4 + (ma - 1) / 3);
		else
			res = (yb * 12 + mb) - (ya * 12 + ma);
	}
	expr_set_int64(out, res);
	return 0;
null:
	expr_set_null(out);
	return 0;
}

/* ---- $dateTrunc: date, unit, binSize, timezone, startOfWeek ------------- */

static const date_arg_t trunc_args[] = {
	{"date", true, 5439009, "Missing 'date' parameter to $dateTrunc"},
	{"unit", true, 5439010, "Missing 'unit' parameter to $dateTrunc"},
	{"binSize", false, 0, NULL},
	{"timezone", false, 0, NULL},
	{"startOfWeek", false, 0, NULL},
};

static int
parse_date_trunc(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 5439007, "$dateTrunc only supports an object as its argument");
	return parse_date_named(e, arg, scope, trunc_args, 5, 5439007, "%s", 5439008,
	                        "Unrecognized argument to $dateTrunc: %s. Expected arguments are date, unit, and "
	                        "optionally, binSize, timezone, startOfWeek", err);
}

static int
eval_date_trunc(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t d, u, bs, sw;
	expr_tz_t tz;
	int64_t ms, bin = 1;
	int unit, sow = 0, r;

	RET(expr_eval(e->args[0], env, &d, err));
	if (expr_is_nullish(&d))
		goto null;
	RET(expr_eval(e->args[1], env, &u, err));
	if (expr_is_nullish(&u))
		goto null;
	if (e->args[2] != NULL) {
		RET(expr_eval(e->args[2], env, &bs, err));
		if (expr_is_nullish(&bs))
			goto null;
	}
	bool week = u.value_type == BSON_TYPE_UTF8 && strcmp(u.value.v_utf8.str, "week") == 0;
	if (week && e->args[4] != NULL) {
		RET(expr_eval(e->args[4], env, &sw, err));
		if (expr_is_nullish(&sw))
			goto null;
	}
	r = eval_tz(e->args[3], env, &tz, err);
	if (r < 0) {
		terr_wrap(err, "$dateTrunc parameter 'timezone' value parsing failed");
		return -1;
	}
	if (r > 0)
		goto null;
	if (d.value_type != BSON_TYPE_DATE_TIME && d.value_type != BSON_TYPE_TIMESTAMP && d.value_type != BSON_TYPE_OID)
		return terr_set(err, 5439012, "$dateTrunc requires 'date' to be a date, but got %s", expr_type_name(&d));
	to_date_ms(&d, &ms, err);
	RET(parse_unit(&u, "$dateTrunc", &unit, err));
	if (e->args[2] != NULL) {
		if (!bv_is_number(&bs) || !expr_num_to_int64_exact(&bs, &bin)) {
			char *t = bv_to_mongo_string(&bs);
			terr_set(err, 5439017, "$dateTrunc requires 'binSize' to be a 64-bit integer, but got value '%s' of "
			         "type %s", t, expr_type_name(&bs));
			bson_free(t);
			return -1;
		}
		if (bin <= 0)
			return terr_set(err, 5439018, "$dateTrunc requires 'binSize' to be greater than 0, but got value %lld",
			                (long long)bin);
	}
	if (week && e->args[4] != NULL)
		RET(parse_start_of_week(&sw, "$dateTrunc", &sow, err));
	/* bins count from 2000-01-01T00:00 local (for weeks: the first
	 * startOfWeek on or after it); every step is checked with mongod's
	 * error for it (date_time_support's truncateDate) */
	const int64_t ref_days = days_from_civil(2000, 1, 1);
	int64_t res;
	if (unit <= U_HOUR) {
		/* sub-day units: bins of binSize units on the UTC timeline from
		 * the reference point's instant */
		int64_t ref = ref_days * MS_PER_DAY, width, shifted, dist;
		ref -= expr_tz_offset_at(&tz, ref);
		if (tm_i64_mul(bin, unit_ms[unit], &width))
			return terr_set(err, 5439002, "dateTrunc overflowed");
		if (tm_i64_sub(ms, ref, &shifted))
			return terr_set(err, 5439000, "dateTrunc overflowed");
		dist = shifted % width;
		if (dist < 0)
			dist += width;
		if (tm_i64_sub(ms, dist, &res))
			return terr_set(err, 5439001, "dateTrunc overflowed");
		expr_set_date(out, res);
		return 0;
	}
	/* the limit up to which mongod's dateAdd handles the result */
	RET(tm_count_cap(bin, 1, 100000000000LL, err, 5439006, "dateTrunc unsupported binSize value"));
	int64_t days, msday, tdays, tlocal;
	local_split(ms, expr_tz_offset_at(&tz, ms), &days, &msday);
	if (unit == U_DAY) {
		tdays = ref_days + floor_div(days - ref_days, bin) * bin;
	} else if (unit == U_WEEK) {
		int64_t w0 = (ref_days + 4) % 7; /* weekday of 2000-01-01 (Saturday = 6) */
		int64_t ref_week = ref_days + ((sow - w0 + 7) % 7);
		int64_t width = bin * 7;
		tdays = ref_week + floor_div(days - ref_week, width) * width;
	} else {
		int64_t y;
		unsigned m, dd;
		civil_from_days(days, &y, &m, &dd);
		int64_t months = (y - 2000) * 12 + (m - 1);
		int64_t width = bin * (unit == U_MONTH ? 1 : unit == U_QUARTER ? 3 : 12);
		int64_t tm = floor_div(months, width) * width;
		int64_t ty = 2000 + floor_div(tm, 12);
		tdays = days_from_civil(ty, (unsigned)(tm - floor_div(tm, 12) * 12) + 1, 1);
	}
	if (!local_join(tdays, 0, &tlocal) || !expr_tz_local_to_utc(&tz, tlocal, &res))
		return terr_set(err, 5166406, "dateAdd overflowed");
	expr_set_date(out, res);
	return 0;
null:
	expr_set_null(out);
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

/* Free-form date strings, the common subset of what timelib reads:
 *   2017-02-08, 2017/02/08, 02/08/2017 (month first), Feb 8 2017,
 *   Feb 8, 2017, 8 Feb 2017, 8-Feb-2017; then optionally [T or space]
 *   HH:MM[:SS[.fff]]; then optionally [space] Z | UTC | GMT | +hh[[:]mm].
 * Returns 0 with the local wall-clock ms, *zone: 0 none, 1 offset/Z,
 * 2 abbreviation (UTC/GMT); -1 when unparsable. */
static int
date_parse_free(const char *s, size_t len, int64_t *local, int *zone, int64_t *off_ms, char abbr[8])
{
	static const char *mon[] = {"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"};
	int y = 0, mo = 0, d = 0, h = 0, mi = 0, se = 0, milli = 0;
	size_t i = 0;

	*zone = 0;
	*off_ms = 0;
	abbr[0] = 0;
#define DIGITS_AT(pos, n, out) ((pos) + (n) <= len && digits(s + (pos), (n), (out)))
	if (DIGITS_AT(0, 4, &y) && len >= 10 && (s[4] == '-' || s[4] == '/') && s[7] == s[4] &&
	    DIGITS_AT(5, 2, &mo) && DIGITS_AT(8, 2, &d)) {
		i = 10;
	} else if (DIGITS_AT(0, 2, &mo) && len >= 10 && s[2] == '/' && s[5] == '/' && DIGITS_AT(3, 2, &d) &&
	           DIGITS_AT(6, 4, &y)) {
		i = 10;
	} else {
		/* month names */
		size_t p = 0;
		int dd = -1, mm = -1, yy = -1;
		for (int part = 0; part < 3 && p < len; part++) {
			while (p < len && (s[p] == ' ' || s[p] == ',' || s[p] == '-'))
				p++;
			if (p < len && s[p] >= '0' && s[p] <= '9') {
				int v = 0, n = 0;
				while (p < len && s[p] >= '0' && s[p] <= '9' && n < 4) {
					v = v * 10 + (s[p++] - '0');
					n++;
				}
				if (n == 4)
					yy = v;
				else if (dd < 0)
					dd = v;
				else
					return -1;
			} else {
				size_t q = p;
				while (q < len && ((s[q] | 0x20) >= 'a' && (s[q] | 0x20) <= 'z'))
					q++;
				if (q - p < 3)
					return -1;
				for (int m = 0; m < 12; m++) {
					if (strncasecmp(s + p, mon[m], 3) == 0)
						mm = m + 1;
				}
				if (mm < 0)
					return -1;
				p = q;
			}
		}
		if (dd < 0 || mm < 0 || yy < 0)
			return -1;
		y = yy;
		mo = mm;
		d = dd;
		i = p;
	}
	if (mo < 1 || mo > 12 || d < 1 || d > 31)
		return -1;
	if (i < len && (s[i] == 'T' || s[i] == ' ') && i + 3 < len && s[i + 1] >= '0' && s[i + 1] <= '9' &&
	    s[i + 3] == ':') {
		i++;
		if (!DIGITS_AT(i, 2, &h) || !DIGITS_AT(i + 3, 2, &mi))
			return -1;
		i += 5;
		/* seconds after ':' or, as mongod's timelib also reads them, after
		 * '.' when exactly two digits follow ("11:56.02", "11:56.02.813") */
		if (i < len && (s[i] == ':' ||
		    (s[i] == '.' && i + 2 < len && s[i + 1] >= '0' && s[i + 1] <= '9' && s[i + 2] >= '0' &&
		     s[i + 2] <= '9' && (i + 3 == len || s[i + 3] < '0' || s[i + 3] > '9')))) {
			if (!DIGITS_AT(i + 1, 2, &se))
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
	if (i < len && s[i] == ' ')
		i++;
	if (i < len) {
		if (s[i] == 'Z' && i + 1 == len) {
			*zone = 1;
			i++;
		} else if (len - i == 3 && (strncmp(s + i, "UTC", 3) == 0 || strncmp(s + i, "GMT", 3) == 0)) {
			*zone = 2;
			memcpy(abbr, s + i, 3);
			abbr[3] = 0;
			i = len;
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
			*off_ms = ((int64_t)oh * 60 + om) * 60000 * (s[i] == '-' ? -1 : 1);
			*zone = 1;
			i = len;
		} else {
			return -1;
		}
	}
#undef DIGITS_AT
	if (i != len)
		return -1;
	*local = days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400000 + (int64_t)h * 3600000 + (int64_t)mi * 60000 +
	         (int64_t)se * 1000 + milli;
	return 0;
}

int
expr_date_from_string(const char *s, size_t len, int64_t *ms)
{
	int64_t local, off;
	int zone;
	char abbr[8];

	if (date_parse_free(s, len, &local, &zone, &off, abbr) != 0)
		return -1;
	*ms = local - off;
	return 0;
}

/* ---- $dateFromString: dateString, format, timezone, onNull, onError ---- */

static const date_arg_t from_string_args[] = {
	{"dateString", true, 40542, "Missing 'dateString' parameter to $dateFromString"},
	{"format", false, 0, NULL},
	{"timezone", false, 0, NULL},
	{"onNull", false, 0, NULL},
	{"onError", false, 0, NULL},
};

static int
parse_date_from_string(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	return parse_date_named(e, arg, scope, from_string_args, 5, 40540,
	                        "$dateFromString only supports an object as an argument, found: %s", 40541,
	                        "Unrecognized argument to $dateFromString: %s", err);
}

static int
read_digits(const char *s, size_t len, size_t *i, int maxd, int64_t *out)
{
	int n = 0;
	int64_t v = 0;
	while (*i < len && n < maxd && s[*i] >= '0' && s[*i] <= '9') {
		v = v * 10 + (s[*i] - '0');
		(*i)++;
		n++;
	}
	*out = v;
	return n;
}

/* Parse s with a dateFromString format.  Fills local parts and, when the
 * string carries an offset, *has_off and *off_ms.  -1 on mismatch. */
static int
parse_with_format(const char *s, size_t len, const char *f, size_t flen, int64_t *local, bool *has_off,
                  int64_t *off_ms)
{
	int64_t y = 1970, mo = 1, d = 1, h = 0, mi = 0, se = 0, ms = 0, v;
	int64_t iy = -1, iw = 1, idow = 1, doy = -1;
	size_t i = 0;

	*has_off = false;
	for (size_t k = 0; k < flen; k++) {
		if (f[k] != '%') {
			if (i >= len || s[i] != f[k])
				return -1;
			i++;
			continue;
		}
		char c = f[++k];
		int nd;
		switch (c) {
		case 'Y': nd = read_digits(s, len, &i, 4, &y); if (nd != 4) return -1; break;
		case 'G': nd = read_digits(s, len, &i, 4, &iy); if (nd != 4) return -1; break;
		case 'm': if (read_digits(s, len, &i, 2, &mo) == 0) return -1; break;
		case 'd': if (read_digits(s, len, &i, 2, &d) == 0) return -1; break;
		case 'H': if (read_digits(s, len, &i, 2, &h) == 0) return -1; break;
		case 'M': if (read_digits(s, len, &i, 2, &mi) == 0) return -1; break;
		case 'S': if (read_digits(s, len, &i, 2, &se) == 0) return -1; break;
		case 'L':
			nd = read_digits(s, len, &i, 3, &ms);
			if (nd == 0)
				return -1;
			while (nd++ < 3)
				ms *= 10;
			break;
		case 'j': if (read_digits(s, len, &i, 3, &doy) == 0) return -1; break;
		case 'V': if (read_digits(s, len, &i, 2, &iw) == 0) return -1; break;
		case 'u': if (read_digits(s, len, &i, 1, &idow) == 0) return -1; break;
		case 'w': if (read_digits(s, len, &i, 1, &v) == 0) return -1; idow = v == 0 ? 7 : v; break;
		case 'z': {
			if (i < len && s[i] == 'Z') {
				i++;
				*has_off = true;
				*off_ms = 0;
				break;
			}
			if (i >= len || (s[i] != '+' && s[i] != '-'))
				return -1;
			int sign = s[i] == '-' ? -1 : 1;
			int64_t oh, om = 0;
			i++;
			if (read_digits(s, len, &i, 2, &oh) != 2)
				return -1;
			if (i < len && s[i] == ':')
				i++;
			read_digits(s, len, &i, 2, &om);
			*has_off = true;
			*off_ms = sign * (oh * 60 + om) * 60000;
			break;
		}
		case 'Z': {
			int sign = 1;
			if (i < len && (s[i] == '+' || s[i] == '-')) {
				sign = s[i] == '-' ? -1 : 1;
				i++;
			}
			if (read_digits(s, len, &i, 4, &v) == 0)
				return -1;
			*has_off = true;
			*off_ms = sign * v * 60000;
			break;
		}
		case '%':
			if (i >= len || s[i] != '%')
				return -1;
			i++;
			break;
		default:
			return -1;
		}
	}
	if (i != len)
		return -1;
	int64_t days;
	if (iy >= 0) {
		int64_t jan4 = days_from_civil(iy, 1, 4), w = (jan4 + 4) % 7;
		if (w < 0)
			w += 7;
		days = jan4 - (w == 0 ? 6 : w - 1) + (iw - 1) * 7 + (idow - 1);
	} else if (doy >= 0) {
		days = days_from_civil(y, 1, 1) + doy - 1;
	} else {
		if (mo < 1 || mo > 12 || d < 1 || d > 31)
			return -1;
		days = days_from_civil(y, (unsigned)mo, (unsigned)d);
	}
	if (h > 23 || mi > 59 || se > 60)
		return -1;
	*local = days * 86400000 + h * 3600000 + mi * 60000 + se * 1000 + ms;
	return 0;
}

static int
check_from_string_format(const char *fmt, size_t flen, terr_t *err)
{
	return check_format(fmt, flen, "dGHjLmMSuVwYzZ%", err);
}

static int
eval_date_from_string(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t ds, f;
	expr_tz_t tz;
	bool have_fmt = false, fmt_null = false;
	int r;

	RET(expr_eval(e->args[0], env, &ds, err));
	if (e->args[1] != NULL) {
		RET(expr_eval(e->args[1], env, &f, err));
		if (expr_is_nullish(&f)) {
			fmt_null = true;
		} else {
			if (f.value_type != BSON_TYPE_UTF8) {
				char *t = bv_to_mongo_string(&f);
				terr_set(err, 40684, "$dateFromString requires that 'format' be a string, found: %s with value %s",
				         expr_type_name(&f), t);
				bson_free(t);
				return -1;
			}
			RET(check_from_string_format(f.value.v_utf8.str, f.value.v_utf8.len, err));
			have_fmt = true;
		}
	}
	r = eval_tz(e->args[2], env, &tz, err);
	if (r < 0)
		return -1;
	if (expr_is_nullish(&ds)) {
		if (e->args[3] != NULL)
			return expr_eval(e->args[3], env, out, err);
		expr_set_null(out);
		return 0;
	}
	if (ds.value_type != BSON_TYPE_UTF8) {
		char *t = bv_to_mongo_string(&ds);
		terr_set(err, 241, "$dateFromString requires that 'dateString' be a string, found: %s "
		         "with value %s", expr_type_name(&ds), t);
		bson_free(t);
		goto conv_err;
	}
	if (r > 0 || fmt_null) {
		expr_set_null(out);
		return 0;
	}
	{
		int64_t local = 0, off = 0;
		bool has_off = false;
		const char *str = ds.value.v_utf8.str;
		size_t len = ds.value.v_utf8.len;
		if (have_fmt) {
			if (parse_with_format(str, len, f.value.v_utf8.str, f.value.v_utf8.len, &local, &has_off, &off) != 0) {
				terr_set(err, 241, "Error parsing date string '%s'", str);
				goto conv_err;
			}
		} else {
			int zone;
			char abbr[8];
			if (date_parse_free(str, len, &local, &zone, &off, abbr) != 0) {
				terr_set(err, 241, "Error parsing date string '%s'", str);
				goto conv_err;
			}
			if (zone == 2 && e->args[2] != NULL)
				return terr_set(err, 40551, "you cannot pass in a date/time string with time zone information "
				                "('%s') together with a timezone argument", abbr);
			has_off = zone != 0;
		}
		if (has_off) {
			if (e->args[2] != NULL)
				return terr_set(err, 40554, "you cannot pass in a date/time string with GMT offset together with a "
				                "timezone argument");
			expr_set_date(out, local - off);
			return 0;
		}
		int64_t utc;
		if (!expr_tz_local_to_utc(&tz, local, &utc))
			return duration_overflow(err);
		expr_set_date(out, utc);
		return 0;
	}
conv_err:
	if (e->args[4] != NULL) {
		terr_clear(err);
		return expr_eval(e->args[4], env, out, err);
	}
	return -1;
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
	{"$dateFromString", 0, -1, parse_date_from_string, eval_date_from_string, 0},
	{"$dateTrunc", 0, -1, parse_date_trunc, eval_date_trunc, 0},
	{"$dateAdd", 0, -1, parse_date_add, eval_date_add, 0},
	{"$dateSubtract", 0, -1, parse_date_add, eval_date_add, 0},
	{"$dateDiff", 0, -1, parse_date_diff, eval_date_diff, 0},
	{"$dateFromParts", 0, -1, parse_date_from_parts, eval_date_from_parts, 0},
	{"$dateToParts", 0, -1, parse_date_to_parts, eval_date_to_parts, 0},
	{NULL, 0, 0, NULL, NULL, 0},
};
