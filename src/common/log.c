/*
 * log.c -- mongod-format JSON log lines, an in-memory ring for getLog.  The
 * attributes are encoded by log_json.c (mongod's spellings, $uuid...).
 */
#include "common/log.h"
#include "common/log_json.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *log_out;
static bool log_quiet;
static bool log_in_startup = true;
static char *ring[TLOG_RING];
static int ring_next, ring_count;
static char *warn_ring[64];
static int warn_count;
static __thread char log_ctx[64] = "main";

/* Debug verbosity: the global one (logLevel) and each component's
 * (logComponentVerbosity; -1 inherits the global), by mongod's setting
 * name and the name its log lines carry. */
static atomic_int verb_global;
static const struct {
	const char *setting, *line;
} verb_names[] = {
	{"accessControl", "ACCESS"}, {"command", "COMMAND"}, {"control", "CONTROL"}, {"executor", "EXECUTOR"},
	{"geo", "GEO"}, {"index", "INDEX"}, {"network", "NETWORK"}, {"query", "QUERY"},
	{"replication", "REPL"}, {"storage", "STORAGE"}, {"write", "WRITE"}, {"ftdc", "FTDC"},
	{"transaction", "TXN"}, {"assert", "ASSERT"}, {"queryStats", "QUERYSTATS"},
};
#define VERB_N (sizeof verb_names / sizeof verb_names[0])
static atomic_int verb_comp[VERB_N] = {[0 ... VERB_N - 1] = -1};
/* the highest of them: a debug line above it is refused by one load (the
 * usual case, every verbosity 0) */
static atomic_int verb_max;

static void
verb_max_update(void)
{
	int m = atomic_load(&verb_global);

	for (size_t i = 0; i < VERB_N; i++) {
		int c = atomic_load(&verb_comp[i]);
		if (c > m)
			m = c;
	}
	atomic_store(&verb_max, m);
}

void
tlog_set_verbosity(const char *setting, int level)
{
	/* one setter at a time, so verb_max follows the last one */
	static pthread_mutex_t set_lock = PTHREAD_MUTEX_INITIALIZER;

	pthread_mutex_lock(&set_lock);
	if (setting == NULL) {
		atomic_store(&verb_global, level);
	} else {
		for (size_t i = 0; i < VERB_N; i++)
			if (strcmp(verb_names[i].setting, setting) == 0)
				atomic_store(&verb_comp[i], level);
	}
	verb_max_update();
	pthread_mutex_unlock(&set_lock);
}

bool
tlog_debug_on(const char *component, int level)
{
	int v;

	if (atomic_load_explicit(&verb_max, memory_order_relaxed) < level)
		return false;
	v = atomic_load_explicit(&verb_global, memory_order_relaxed);
	for (size_t i = 0; i < VERB_N; i++)
		if (strcmp(verb_names[i].line, component) == 0) {
			int c = atomic_load_explicit(&verb_comp[i], memory_order_relaxed);
			if (c >= 0)
				v = c;
			break;
		}
	return v >= level;
}

int
tlog_open(const char *path, bool append, bool quiet)
{
	FILE *f;

	pthread_mutex_lock(&log_lock);
	log_quiet = quiet;
	if (log_out != NULL && log_out != stdout)
		fclose(log_out);
	log_out = NULL;
	if (path == NULL || strcmp(path, "-") == 0) {
		log_out = stdout;
	} else if (path[0] != '\0') {
		f = fopen(path, append ? "a" : "w");
		if (f == NULL) {
			pthread_mutex_unlock(&log_lock);
			return -1;
		}
		setvbuf(f, NULL, _IOLBF, 0);
		log_out = f;
	}
	pthread_mutex_unlock(&log_lock);
	return 0;
}

void
tlog_close(void)
{
	int i;

	pthread_mutex_lock(&log_lock);
	if (log_out != NULL && log_out != stdout)
		fclose(log_out);
	log_out = NULL;
	for (i = 0; i < TLOG_RING; i++) {
		bson_free(ring[i]);
		ring[i] = NULL;
	}
	for (i = 0; i < warn_count; i++)
		bson_free(warn_ring[i]);
	ring_next = ring_count = warn_count = 0;
	pthread_mutex_unlock(&log_lock);
}

void
tlog_set_ctx(const char *ctx)
{
	bson_strncpy(log_ctx, ctx, sizeof(log_ctx));
}

void
tlog_startup_done(void)
{
	pthread_mutex_lock(&log_lock);
	log_in_startup = false;
	pthread_mutex_unlock(&log_lock);
}

/* the free-text fields we print ourselves, escaped as mongod's */
static void
append_json_str(bson_string_t *s, const char *v)
{
	tlog_json_str(s, v, strlen(v));
}

static void tlog_line(char sev, const char *sevstr, const char *component, int id, const char *msg,
                      const bson_t *attr);

void
tlog(char sev, const char *component, int id, const char *msg, const bson_t *attr)
{
	char sevstr[2] = {sev, 0};

	tlog_line(sev, sevstr, component, id, msg, attr);
}

void
tlog_debug(int level, const char *component, int id, const char *msg, const bson_t *attr)
{
	char sevstr[3] = {'D', (char)('0' + (level < 1 ? 1 : level > 5 ? 5 : level)), 0};

	if (tlog_debug_on(component, level))
		tlog_line('D', sevstr, component, id, msg, attr);
}

static void
tlog_line(char sev, const char *sevstr, const char *component, int id, const char *msg, const bson_t *attr)
{
	struct timeval tv;
	struct tm tm;
	char ts[64];
	bson_string_t *s;
	char *line;

	if (log_quiet && sev == 'D')
		return;
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	s = bson_string_new("{\"t\":{\"$date\":\"");
	bson_string_append_printf(s, "%s.%03d+00:00\"},\"s\":\"%s\",\"c\":", ts,
	    (int)(tv.tv_usec / 1000), sevstr);
	append_json_str(s, component);
	bson_string_append_printf(s, ",\"id\":%d,\"ctx\":", id);
	append_json_str(s, log_ctx);
	bson_string_append(s, ",\"msg\":");
	append_json_str(s, msg);
	if (attr != NULL && !bson_empty(attr)) {
		bson_string_append(s, ",\"attr\":");
		tlog_json_doc(s, attr, false);
	}
	bson_string_append_c(s, '}');
	line = bson_string_free(s, false);

	pthread_mutex_lock(&log_lock);
	if (log_out != NULL) {
		fputs(line, log_out);
		fputc('\n', log_out);
		fflush(log_out);
	}
	if (sev == 'W' && log_in_startup && warn_count < 64)
		warn_ring[warn_count++] = bson_strdup(line);
	bson_free(ring[ring_next]);
	ring[ring_next] = line;
	ring_next = (ring_next + 1) % TLOG_RING;
	if (ring_count < TLOG_RING)
		ring_count++;
	pthread_mutex_unlock(&log_lock);
}

int
tlog_get(const char *which, bson_t *arr)
{
	char key[16];
	const char *k;
	int i, n = 0;

	pthread_mutex_lock(&log_lock);
	if (strcmp(which, "startupWarnings") == 0) {
		for (i = 0; i < warn_count; i++, n++) {
			bson_uint32_to_string((uint32_t)n, &k, key, sizeof(key));
			bson_append_utf8(arr, k, -1, warn_ring[i], -1);
		}
	} else {
		int start = (ring_next - ring_count + TLOG_RING) % TLOG_RING;
		for (i = 0; i < ring_count; i++, n++) {
			bson_uint32_to_string((uint32_t)n, &k, key, sizeof(key));
			bson_append_utf8(arr, k, -1, ring[(start + i) % TLOG_RING], -1);
		}
	}
	pthread_mutex_unlock(&log_lock);
	return n;
}
