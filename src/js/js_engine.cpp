/*
 * js_engine.cpp -- the only C++ in Tamga's JavaScript support: SpiderMonkey
 * (mozjs-102) behind the C API of js.h.
 *
 * One JSContext per thread, created on first use and destroyed by the
 * thread's exit (a pthread key destructor); its global object is replaced
 * only when the caller's key (database + user) changes.  Values handed to C
 * live in a fixed stack of JS::Heap<JS::Value> slots that an extra-roots
 * tracer shows to the GC, so C code never touches rooting.
 *
 * Limits: a watchdog thread calls JS_RequestInterruptCallback every
 * TICK_MS on each context that is inside JavaScript; the interrupt
 * callback reads the thread's operation (tm_interrupt_check_now: maxTimeMS,
 * killOp) and stops the script (uncatchable) when it must end.  The heap is
 * bounded by JSGC_MAX_BYTES; reaching it is reported by the OOM callback.
 *
 * This file knows nothing of BSON or of mongod's types: js_bson.c and
 * js_helpers.c build those from the primitives here.
 */
#include <jsapi.h>
#include <jsfriendapi.h>
#include <js/Array.h>
#include <js/BigInt.h>
#include <js/CallAndConstruct.h>
#include <js/CharacterEncoding.h>
#include <js/CompilationAndEvaluation.h>
#include <js/Conversions.h>
#include <js/Date.h>
#include <js/Initialization.h>
#include <js/MemoryCallbacks.h>
#include <js/Object.h>
#include <js/PropertyAndElement.h>
#include <js/RegExp.h>
#include <js/SourceText.h>
#include <js/String.h>
#include <js/Value.h>
#include <js/ValueArray.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <pthread.h>
#include <string>
#include <cstdio>
#include <unistd.h>

extern "C" {
#include "common/opctx.h"
#include "js/js.h"
}

namespace {

constexpr int STACK_SLOTS = 8192;
constexpr int TICK_MS = 5;

std::atomic<bool> g_enabled{true};
std::atomic<uint32_t> g_heap_mb{1100};
std::atomic<uint64_t> g_created{0};
std::atomic<uint64_t> g_generation{0};
js_global_init_fn g_global_init = nullptr;
void (*g_release_hook)(void) = nullptr;

pthread_once_t g_once = PTHREAD_ONCE_INIT;
bool g_init_ok = false;
pthread_key_t g_key;

}  // namespace

struct js_ctx {
	JSContext *cx = nullptr;
	JS::Heap<JSObject *> global;
	JS::Realm *old_realm = nullptr;
	std::string key;
	uint64_t generation = 0;
	JS::Heap<JS::Value> *stack = nullptr;
	int top = 0;
	JS::Heap<JSObject *> protos[JS_K_MAX];
	JS::Heap<JSObject *> cache;   /* compiled functions; unreachable from scripts */
	std::atomic<int> running{0};
	bool oom = false;
	uint32_t heap_mb = 1100;
	int64_t rss_start = -1;       /* resident bytes when the outermost call began */
	terr_t term = TERR_INIT;      /* why the running script was stopped */
	js_ctx *next = nullptr;       /* the watchdog's list */
};

namespace {

std::mutex g_list_mu;
js_ctx *g_list = nullptr;
bool g_watchdog_started = false;

void *
watchdog_main(void *)
{
	for (;;) {
		struct timespec ts = {0, TICK_MS * 1000000L};
		nanosleep(&ts, nullptr);
		std::lock_guard<std::mutex> lk(g_list_mu);
		for (js_ctx *c = g_list; c != nullptr; c = c->next)
			if (c->running.load(std::memory_order_relaxed) > 0)
				JS_RequestInterruptCallback(c->cx);
	}
	return nullptr;
}

void ctx_destroy(js_ctx *c);

void
key_destructor(void *p)
{
	ctx_destroy(static_cast<js_ctx *>(p));
}

/* At exit: stop the engine's helper threads before static destructors
 * run (their mutexes are otherwise destroyed while in use), when no thread
 * still holds a context. */
void
process_fini()
{
	/* exit() runs on the exiting thread: its own context goes first */
	js_ctx *mine = static_cast<js_ctx *>(pthread_getspecific(g_key));
	if (mine != nullptr) {
		pthread_setspecific(g_key, nullptr);
		ctx_destroy(mine);
	}
	std::lock_guard<std::mutex> lk(g_list_mu);
	if (g_list == nullptr)
		JS_ShutDown();
}

void
process_init()
{
	if (!JS_Init())
		return;
	atexit(process_fini);
	if (pthread_key_create(&g_key, key_destructor) != 0)
		return;
	g_init_ok = true;
}

void
trace_roots(JSTracer *trc, void *data)
{
	js_ctx *c = static_cast<js_ctx *>(data);

	for (int i = 0; i < c->top; i++)
		JS::TraceEdge(trc, &c->stack[i], "tamga js stack");
	for (int k = 0; k < JS_K_MAX; k++)
		if (c->protos[k])
			JS::TraceEdge(trc, &c->protos[k], "tamga js proto");
	if (c->global)
		JS::TraceEdge(trc, &c->global, "tamga js global");
	if (c->cache)
		JS::TraceEdge(trc, &c->cache, "tamga js cache");
}

/* The process's resident bytes (/proc/self/statm), -1 if unknown. */
int64_t
resident_bytes()
{
	char buf[128];
	long long size = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f == nullptr)
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	if (sscanf(buf, "%lld %lld", &size, &res) != 2)
		return -1;
	return static_cast<int64_t>(res) * sysconf(_SC_PAGESIZE);
}

bool
interrupt_cb(JSContext *cx)
{
	js_ctx *c = static_cast<js_ctx *>(JS_GetContextPrivate(cx));

	if (terr_is_set(&c->term))
		return false;
	if (tm_interrupt_check_now(&c->term) != 0)
		return false;
	/* the heap limit: past 80% of it collect (mongod's
	 * kInterruptGCThreshold); still past it after a full collection, the
	 * script's live data has reached the limit: stop it, as mongod does */
	uint64_t limit = static_cast<uint64_t>(c->heap_mb) * 1024 * 1024;
	if (JS_GetGCParameter(cx, JSGC_BYTES) > limit * 8 / 10) {
		JS_GC(cx);
		if (JS_GetGCParameter(cx, JSGC_BYTES) > limit * 8 / 10) {
			c->oom = true;
			return false;
		}
	} else
		JS_MaybeGC(cx);
	/* what the GC heap does not count (the elements of large arrays, big
	 * strings' characters live in malloc'd memory): the process may not
	 * grow by more than the limit while the script runs */
	if (c->rss_start >= 0) {
		int64_t now = resident_bytes();
		if (now >= 0 && now - c->rss_start > static_cast<int64_t>(limit)) {
			JS_GC(cx);
			now = resident_bytes();
			if (now >= 0 && now - c->rss_start > static_cast<int64_t>(limit)) {
				c->oom = true;
				return false;
			}
		}
	}
	return true;
}

void
oom_cb(JSContext *cx, void *data)
{
	static_cast<js_ctx *>(data)->oom = true;
}

const JSClass global_class = {"global", JSCLASS_GLOBAL_FLAGS, &JS::DefaultGlobalClassOps};

int
new_global(js_ctx *c, terr_t *err)
{
	JSContext *cx = c->cx;
	JS::RealmOptions opts;

	if (c->old_realm != nullptr || c->global) {
		JS::LeaveRealm(cx, c->old_realm);
		c->old_realm = nullptr;
		c->global = nullptr;
	}
	for (int k = 0; k < JS_K_MAX; k++)
		c->protos[k] = nullptr;
	c->cache = nullptr;
	JS::RootedObject g(cx, JS_NewGlobalObject(cx, &global_class, nullptr,
	                                          JS::FireOnNewGlobalHook, opts));
	if (!g)
		return terr_set(err, 139, "Failed to create the JavaScript global object");
	c->global = g;
	c->generation = g_generation.fetch_add(1) + 1;
	c->old_realm = JS::EnterRealm(cx, g);
	if (!JS::InitRealmStandardClasses(cx))
		return terr_set(err, 139, "Failed to initialise the JavaScript standard classes");
	c->cache = JS::NewArrayObject(cx, 0);
	if (!c->cache)
		return terr_set(err, 139, "Out of memory");
	/* Reflect.parse, for the function maker's last-expression rule (as
	 * mongod's parse helper) */
	if (!JS_InitReflectParse(cx, g))
		return terr_set(err, 139, "Failed to initialise Reflect.parse");
	/* the standard library only: nothing of the shell's host functions */
	if (g_global_init != nullptr && g_global_init(c, err) != 0)
		return -1;
	return 0;
}

void
ctx_destroy(js_ctx *c)
{
	if (c == nullptr)
		return;
	{
		std::lock_guard<std::mutex> lk(g_list_mu);
		for (js_ctx **pp = &g_list; *pp != nullptr; pp = &(*pp)->next)
			if (*pp == c) {
				*pp = c->next;
				break;
			}
	}
	if (g_release_hook != nullptr)
		g_release_hook();
	if (c->cx != nullptr) {
		c->top = 0;
		if (c->old_realm != nullptr || c->global)
			JS::LeaveRealm(c->cx, c->old_realm);
		c->global = nullptr;
		c->cache = nullptr;
		for (int k = 0; k < JS_K_MAX; k++)
			c->protos[k] = nullptr;
		JS_RemoveExtraGCRootsTracer(c->cx, trace_roots, c);
		JS_DestroyContext(c->cx);
	}
	delete[] c->stack;
	terr_clear(&c->term);
	delete c;
}

/* The stack space below the caller, for the engine's recursion limit. */
size_t
stack_available()
{
	pthread_attr_t attr;
	void *base = nullptr;
	size_t size = 0;
	char here;

	if (pthread_getattr_np(pthread_self(), &attr) != 0)
		return 0;
	pthread_attr_getstack(&attr, &base, &size);
	pthread_attr_destroy(&attr);
	if (base == nullptr || &here <= static_cast<char *>(base))
		return 0;
	return static_cast<size_t>(&here - static_cast<char *>(base));
}

inline JS::HandleValue
H(js_ctx *c, js_ref_t r)
{
	return JS::HandleValue::fromMarkedLocation(c->stack[r].unsafeGet());
}

js_ref_t
push(js_ctx *c, const JS::Value &v)
{
	if (c->top >= STACK_SLOTS)
		return -1;
	c->stack[c->top] = v;
	return c->top++;
}

bool
valid(js_ctx *c, js_ref_t r)
{
	return r >= 0 && r < c->top;
}

bool
get_object(js_ctx *c, js_ref_t r, JS::MutableHandleObject out)
{
	if (!valid(c, r) || !c->stack[r].get().isObject())
		return false;
	out.set(&c->stack[r].get().toObject());
	return true;
}

char *
utf8_of(JSContext *cx, JS::HandleString s, size_t *len)
{
	JSLinearString *lin = JS_EnsureLinearString(cx, s);
	if (lin == nullptr)
		return nullptr;
	size_t n = JS::GetDeflatedUTF8StringLength(lin);
	JS::UniqueChars u = JS_EncodeStringToUTF8(cx, s);
	if (!u)
		return nullptr;
	char *out = static_cast<char *>(malloc(n + 1));
	if (out == nullptr)
		return nullptr;
	memcpy(out, u.get(), n);
	out[n] = '\0';
	if (len != nullptr)
		*len = n;
	return out;
}

/* User functions are compiled by the prelude (new Function / eval), so
 * their frames read "f@tamga:prelude line 240 > Function:3:1": keep what
 * the user wrote ("f@:3:1", mongod's shape for functions it compiles). */
void
strip_prelude_frames(std::string &m)
{
	static const char tag[] = "tamga:prelude line ";
	size_t at;

	while ((at = m.find(tag)) != std::string::npos) {
		size_t p = at + sizeof(tag) - 1;
		while (p < m.size() && m[p] >= '0' && m[p] <= '9')
			p++;
		if (m.compare(p, 11, " > Function") == 0)
			p += 11;
		else if (m.compare(p, 7, " > eval") == 0)
			p += 7;
		else
			break;
		m.erase(at, p - at);
	}
}

/* After a failed call: what stopped it, as mongod reports it. */
int
report_failure(js_ctx *c, terr_t *err)
{
	JSContext *cx = c->cx;

	if (terr_is_set(&c->term)) {
		JS_ClearPendingException(cx);
		terr_move(err, &c->term);
		return -1;
	}
	if (c->oom) {
		c->oom = false;
		JS_ClearPendingException(cx);
		JS_GC(cx);
		return terr_set(err, 139, "Out of memory");
	}
	if (!JS_IsExceptionPending(cx))
		return terr_set(err, 139, "JavaScript execution terminated");
	JS::RootedValue exc(cx);
	if (!JS_GetPendingException(cx, &exc)) {
		JS_ClearPendingException(cx);
		return terr_set(err, 139, "JavaScript execution failed");
	}
	JS_ClearPendingException(cx);
	std::string msg;
	JS::RootedString s(cx, JS::ToString(cx, exc));
	char *m = nullptr;
	if (s)
		m = utf8_of(cx, s, nullptr);
	JS_ClearPendingException(cx);
	msg = m != nullptr ? m : "unknown JavaScript exception";
	free(m);
	if (exc.isObject()) {
		JS::RootedObject eo(cx, &exc.toObject());
		JS::RootedValue stack(cx);
		if (JS_GetProperty(cx, eo, "stack", &stack) && stack.isString()) {
			JS::RootedString ss(cx, stack.toString());
			char *st = utf8_of(cx, ss, nullptr);
			if (st != nullptr && st[0] != '\0') {
				msg += " :\n";
				msg += st;
			}
			free(st);
		}
		JS_ClearPendingException(cx);
	}
	strip_prelude_frames(msg);
	return terr_set(err, 139, "%s", msg.c_str());
}

/* The trampoline every js_define_native function goes through. */
bool
native_trampoline(JSContext *cx, unsigned argc, JS::Value *vp)
{
	JS::CallArgs args = JS::CallArgsFromVp(argc, vp);
	js_ctx *c = static_cast<js_ctx *>(JS_GetContextPrivate(cx));
	JSObject &callee = args.callee();
	JS::Value fnv = js::GetFunctionNativeReserved(&callee, 0);
	js_native_fn fn = reinterpret_cast<js_native_fn>(fnv.toPrivate());
	int mark = c->top;
	js_ref_t argv[16];
	int n = argc > 16 ? 16 : static_cast<int>(argc);
	terr_t err = TERR_INIT;
	js_ref_t ret = -1;

	for (int i = 0; i < n; i++) {
		argv[i] = push(c, args[i]);
		if (argv[i] < 0) {
			c->top = mark;
			JS_ReportErrorASCII(cx, "too many nested calls");
			return false;
		}
	}
	js_ref_t self = push(c, args.thisv());
	int rc = fn(c, n, argv, self, &ret, &err);
	if (rc == 0) {
		if (ret >= 0 && valid(c, ret))
			args.rval().set(c->stack[ret].get());
		else
			args.rval().setUndefined();
		c->top = mark;
		return true;
	}
	c->top = mark;
	if (rc == JS_NATIVE_TERMINATE) {
		terr_move(&c->term, &err);
		return false;
	}
	if (!JS_IsExceptionPending(cx))
		JS_ReportErrorUTF8(cx, "%s", err.msg != nullptr ? err.msg : "error");
	terr_clear(&err);
	return false;
}

struct running_guard {
	js_ctx *c;
	explicit running_guard(js_ctx *c_) : c(c_)
	{
		if (c->running.fetch_add(1) == 0)
			c->rss_start = resident_bytes();
	}
	~running_guard()
	{
		if (c->running.fetch_sub(1) == 1)
			c->rss_start = -1;
	}
};

}  // namespace

extern "C" {

void
js_set_enabled(bool on)
{
	g_enabled.store(on);
}

bool
js_enabled(void)
{
	return g_enabled.load();
}

void
js_set_heap_limit_mb(uint32_t mb)
{
	if (mb == 0)
		mb = 1100;
	if (mb > 65536)
		mb = 65536;
	g_heap_mb.store(mb);
}

uint32_t
js_heap_limit_mb(void)
{
	return g_heap_mb.load();
}

uint64_t
js_contexts_created(void)
{
	return g_created.load();
}

void
js_set_release_hook(void (*fn)(void))
{
	g_release_hook = fn;
}

void
js_set_global_init(js_global_init_fn fn)
{
	g_global_init = fn;
}

int
js_ctx_get(js_ctx_t **out, terr_t *err)
{
	pthread_once(&g_once, process_init);
	if (!g_init_ok)
		return terr_set(err, 139, "Failed to initialize the JavaScript engine");
	js_ctx *c = static_cast<js_ctx *>(pthread_getspecific(g_key));
	if (c != nullptr) {
		*out = c;
		return 0;
	}
	c = new js_ctx();
	c->stack = new JS::Heap<JS::Value>[STACK_SLOTS];
	c->heap_mb = g_heap_mb.load();
	uint64_t heap = static_cast<uint64_t>(c->heap_mb) * 1024 * 1024;
	c->cx = JS_NewContext(heap > 0xffffffffu ? 0xffffffffu : static_cast<uint32_t>(heap));
	if (c->cx == nullptr) {
		delete[] c->stack;
		delete c;
		return terr_set(err, 139, "Failed to initialize JSContext");
	}
	JS_SetContextPrivate(c->cx, c);
	if (!JS::InitSelfHostedCode(c->cx)) {
		JS_DestroyContext(c->cx);
		delete[] c->stack;
		delete c;
		return terr_set(err, 139, "Failed to initialize the JavaScript engine");
	}
	JS_SetGCParameter(c->cx, JSGC_MAX_BYTES,
	                  heap > 0xffffffffu ? 0xffffffffu : static_cast<uint32_t>(heap));
	size_t avail = stack_available();
	if (avail > 256 * 1024)
		JS_SetNativeStackQuota(c->cx, avail / 2);
	JS_AddExtraGCRootsTracer(c->cx, trace_roots, c);
	JS_AddInterruptCallback(c->cx, interrupt_cb);
	JS::SetOutOfMemoryCallback(c->cx, oom_cb, c);
	pthread_setspecific(g_key, c);
	g_created.fetch_add(1);
	{
		std::lock_guard<std::mutex> lk(g_list_mu);
		c->next = g_list;
		g_list = c;
		if (!g_watchdog_started) {
			pthread_t th;
			pthread_attr_t attr;
			pthread_attr_init(&attr);
			pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
			if (pthread_create(&th, &attr, watchdog_main, nullptr) == 0)
				g_watchdog_started = true;
			pthread_attr_destroy(&attr);
		}
	}
	if (new_global(c, err) != 0) {
		pthread_setspecific(g_key, nullptr);
		ctx_destroy(c);
		return -1;
	}
	c->key.clear();
	*out = c;
	return 0;
}

void
js_thread_release(void)
{
	if (!g_init_ok)
		return;
	js_ctx *c = static_cast<js_ctx *>(pthread_getspecific(g_key));
	if (c == nullptr)
		return;
	pthread_setspecific(g_key, nullptr);
	ctx_destroy(c);
}

int
js_ctx_use_global(js_ctx_t *c, const char *key, terr_t *err)
{
	if (c->key == key)
		return 0;
	c->top = 0;
	if (new_global(c, err) != 0) {
		c->key = std::string("\x01invalid");
		return -1;
	}
	c->key = key;
	return 0;
}

uint64_t
js_global_generation(js_ctx_t *c)
{
	return c->generation;
}

int
js_top(js_ctx_t *c)
{
	return c->top;
}

void
js_pop_to(js_ctx_t *c, int mark)
{
	if (mark < 0)
		mark = 0;
	while (c->top > mark)
		c->stack[--c->top] = JS::UndefinedValue();
}

js_ref_t
js_dup(js_ctx_t *c, js_ref_t v)
{
	if (!valid(c, v))
		return -1;
	return push(c, c->stack[v].get());
}

js_ref_t js_push_undefined(js_ctx_t *c) { return push(c, JS::UndefinedValue()); }
js_ref_t js_push_null(js_ctx_t *c) { return push(c, JS::NullValue()); }
js_ref_t js_push_bool(js_ctx_t *c, bool b) { return push(c, JS::BooleanValue(b)); }
js_ref_t js_push_int32(js_ctx_t *c, int32_t i) { return push(c, JS::Int32Value(i)); }
js_ref_t js_push_double(js_ctx_t *c, double d) { return push(c, JS::DoubleValue(JS::CanonicalizeNaN(d))); }

js_ref_t
js_push_string(js_ctx_t *c, const char *s, size_t len)
{
	JSContext *cx = c->cx;
	JS::RootedString str(cx, JS_NewStringCopyUTF8N(cx, JS::UTF8Chars(s, len)));
	if (!str) {
		JS_ClearPendingException(cx);
		str = JS_NewStringCopyN(cx, s, len);
		if (!str)
			return -1;
	}
	return push(c, JS::StringValue(str));
}

js_ref_t
js_push_object(js_ctx_t *c)
{
	JSObject *o = JS_NewPlainObject(c->cx);
	return o == nullptr ? -1 : push(c, JS::ObjectValue(*o));
}

js_ref_t
js_push_array(js_ctx_t *c, uint32_t len)
{
	JSObject *o = JS::NewArrayObject(c->cx, len);
	return o == nullptr ? -1 : push(c, JS::ObjectValue(*o));
}

js_ref_t
js_push_date(js_ctx_t *c, double ms)
{
	JSObject *o = JS::NewDateObject(c->cx, JS::TimeClip(ms));
	return o == nullptr ? -1 : push(c, JS::ObjectValue(*o));
}

js_ref_t
js_push_bigint(js_ctx_t *c, int64_t v)
{
	JS::BigInt *b = JS::NumberToBigInt(c->cx, static_cast<int64_t>(v));
	return b == nullptr ? -1 : push(c, JS::BigIntValue(b));
}

js_ref_t
js_push_kind_object(js_ctx_t *c, int kind)
{
	if (kind < 0 || kind >= JS_K_MAX || !c->protos[kind])
		return -1;
	JS::RootedObject proto(c->cx, c->protos[kind]);
	JSObject *o = JS_NewObjectWithGivenProto(c->cx, nullptr, proto);
	return o == nullptr ? -1 : push(c, JS::ObjectValue(*o));
}

js_ref_t
js_push_global(js_ctx_t *c)
{
	return push(c, JS::ObjectValue(*c->global.get()));
}

js_ref_t
js_push_cache(js_ctx_t *c)
{
	if (!c->cache)
		return -1;
	return push(c, JS::ObjectValue(*c->cache.get()));
}

int
js_set(js_ctx_t *c, js_ref_t obj, const char *name, size_t len, js_ref_t v)
{
	JS::RootedObject o(c->cx);
	if (!get_object(c, obj, &o) || !valid(c, v))
		return -1;
	JS::RootedString s(c->cx, JS_NewStringCopyUTF8N(c->cx, JS::UTF8Chars(name, len)));
	if (!s) {
		JS_ClearPendingException(c->cx);
		s = JS_NewStringCopyN(c->cx, name, len);
		if (!s)
			return -1;
	}
	JS::RootedId id(c->cx);
	if (!JS_StringToId(c->cx, s, &id))
		return -1;
	return JS_DefinePropertyById(c->cx, o, id, H(c, v), JSPROP_ENUMERATE) ? 0 : -1;
}

int
js_set_hidden(js_ctx_t *c, js_ref_t obj, const char *name, js_ref_t v)
{
	JS::RootedObject o(c->cx);
	if (!get_object(c, obj, &o) || !valid(c, v))
		return -1;
	return JS_DefineProperty(c->cx, o, name, H(c, v), JSPROP_READONLY | JSPROP_PERMANENT) ? 0 : -1;
}

int
js_set_index(js_ctx_t *c, js_ref_t arr, uint32_t i, js_ref_t v)
{
	JS::RootedObject o(c->cx);
	if (!get_object(c, arr, &o) || !valid(c, v))
		return -1;
	return JS_DefineElement(c->cx, o, i, H(c, v), JSPROP_ENUMERATE) ? 0 : -1;
}

js_ref_t
js_get(js_ctx_t *c, js_ref_t obj, const char *name)
{
	JS::RootedObject o(c->cx);
	JS::RootedValue v(c->cx);
	if (!get_object(c, obj, &o))
		return -1;
	if (!JS_GetProperty(c->cx, o, name, &v))
		return -1;
	return push(c, v);
}

js_ref_t
js_get_index(js_ctx_t *c, js_ref_t arr, uint32_t i)
{
	JS::RootedObject o(c->cx);
	JS::RootedValue v(c->cx);
	if (!get_object(c, arr, &o))
		return -1;
	if (!JS_GetElement(c->cx, o, i, &v))
		return -1;
	return push(c, v);
}

int
js_array_length(js_ctx_t *c, js_ref_t arr, uint32_t *n)
{
	JS::RootedObject o(c->cx);
	if (!get_object(c, arr, &o))
		return -1;
	return JS::GetArrayLength(c->cx, o, n) ? 0 : -1;
}

js_ref_t
js_keys(js_ctx_t *c, js_ref_t obj)
{
	JSContext *cx = c->cx;
	JS::RootedObject o(cx);
	if (!get_object(c, obj, &o))
		return -1;
	JS::Rooted<JS::IdVector> ids(cx, JS::IdVector(cx));
	if (!JS_Enumerate(cx, o, &ids))
		return -1;
	JS::RootedObject arr(cx, JS::NewArrayObject(cx, 0));
	if (!arr)
		return -1;
	uint32_t n = 0;
	for (size_t i = 0; i < ids.length(); i++) {
		JS::RootedValue k(cx);
		if (ids[i].isSymbol())
			continue;
		if (!JS_IdToValue(cx, ids[i], &k))
			return -1;
		if (!k.isString()) {
			JS::RootedString ks(cx, JS::ToString(cx, k));
			if (!ks)
				return -1;
			k.setString(ks);
		}
		if (!JS_DefineElement(cx, arr, n++, k, JSPROP_ENUMERATE))
			return -1;
	}
	return push(c, JS::ObjectValue(*arr));
}

bool
js_has_own(js_ctx_t *c, js_ref_t obj, const char *name)
{
	JS::RootedObject o(c->cx);
	bool found = false;
	if (!get_object(c, obj, &o))
		return false;
	if (!JS_HasOwnProperty(c->cx, o, name, &found)) {
		JS_ClearPendingException(c->cx);
		return false;
	}
	return found;
}

js_type_t
js_type(js_ctx_t *c, js_ref_t r)
{
	if (!valid(c, r))
		return JS_T_UNDEFINED;
	JS::Value v = c->stack[r].get();
	if (v.isUndefined())
		return JS_T_UNDEFINED;
	if (v.isNull())
		return JS_T_NULL;
	if (v.isBoolean())
		return JS_T_BOOL;
	if (v.isInt32())
		return JS_T_INT32;
	if (v.isDouble())
		return JS_T_DOUBLE;
	if (v.isString())
		return JS_T_STRING;
	if (v.isBigInt())
		return JS_T_BIGINT;
	if (v.isSymbol())
		return JS_T_SYMBOL;
	JS::RootedObject o(c->cx, &v.toObject());
	bool is = false;
	if (JS::IsArrayObject(c->cx, o, &is) && is)
		return JS_T_ARRAY;
	if (JS_ObjectIsFunction(o))
		return JS_T_FUNCTION;
	if (JS::ObjectIsDate(c->cx, o, &is) && is)
		return JS_T_DATE;
	if (JS::ObjectIsRegExp(c->cx, o, &is) && is)
		return JS_T_REGEXP;
	JS_ClearPendingException(c->cx);
	return JS_T_OBJECT;
}

bool
js_truthy(js_ctx_t *c, js_ref_t r)
{
	return valid(c, r) && JS::ToBoolean(H(c, r));
}

int
js_to_number(js_ctx_t *c, js_ref_t r, double *out)
{
	if (!valid(c, r))
		return -1;
	return JS::ToNumber(c->cx, H(c, r), out) ? 0 : -1;
}

int
js_to_string(js_ctx_t *c, js_ref_t r, char **out, size_t *len)
{
	if (!valid(c, r))
		return -1;
	JS::RootedString s(c->cx, JS::ToString(c->cx, H(c, r)));
	if (!s)
		return -1;
	*out = utf8_of(c->cx, s, len);
	return *out == nullptr ? -1 : 0;
}

int
js_bigint_value(js_ctx_t *c, js_ref_t r, int64_t *out)
{
	if (!valid(c, r) || !c->stack[r].get().isBigInt())
		return -1;
	*out = JS::ToBigInt64(c->stack[r].get().toBigInt());
	return 0;
}

int
js_proto_kind(js_ctx_t *c, js_ref_t r)
{
	JS::RootedObject o(c->cx), proto(c->cx);
	if (!get_object(c, r, &o))
		return -1;
	if (!JS_GetPrototype(c->cx, o, &proto)) {
		JS_ClearPendingException(c->cx);
		return -1;
	}
	if (!proto)
		return -1;
	for (int k = 0; k < JS_K_MAX; k++)
		if (c->protos[k] == proto)
			return k;
	return -1;
}

int
js_proto_register(js_ctx_t *c, int kind, js_ref_t ctor)
{
	JS::RootedObject o(c->cx);
	JS::RootedValue p(c->cx);
	if (kind < 0 || kind >= JS_K_MAX || !get_object(c, ctor, &o))
		return -1;
	if (!JS_GetProperty(c->cx, o, "prototype", &p) || !p.isObject())
		return -1;
	c->protos[kind] = &p.toObject();
	return 0;
}

int
js_define_native(js_ctx_t *c, js_ref_t obj, const char *name, js_native_fn fn, unsigned nargs)
{
	JS::RootedObject o(c->cx);
	if (!get_object(c, obj, &o))
		return -1;
	JSFunction *f = js::DefineFunctionWithReserved(c->cx, o, name, native_trampoline, nargs, 0);
	if (f == nullptr)
		return -1;
	js::SetFunctionNativeReserved(JS_GetFunctionObject(f), 0,
	                              JS::PrivateValue(reinterpret_cast<void *>(fn)));
	return 0;
}

js_ref_t
js_eval(js_ctx_t *c, const char *src, size_t len, const char *filename, terr_t *err)
{
	JSContext *cx = c->cx;
	JS::CompileOptions opts(cx);
	JS::SourceText<mozilla::Utf8Unit> text;
	JS::RootedValue rv(cx);

	opts.setFileAndLine(filename != nullptr ? filename : "", 1);
	if (!text.init(cx, src, len, JS::SourceOwnership::Borrowed))
		return report_failure(c, err);
	terr_clear(&c->term);
	c->oom = false;
	bool ok;
	{
		running_guard g(c);
		ok = JS::Evaluate(cx, opts, text, &rv);
	}
	if (!ok)
		return report_failure(c, err);
	js_ref_t r = push(c, rv);
	if (r < 0)
		return terr_set(err, 139, "JavaScript value stack exhausted");
	return r;
}

js_ref_t
js_call(js_ctx_t *c, js_ref_t fn, js_ref_t this_v, int argc, const js_ref_t *argv, terr_t *err)
{
	JSContext *cx = c->cx;
	JS::RootedValueVector args(cx);
	JS::RootedValue rv(cx), self(cx), f(cx);

	if (!valid(c, fn))
		return terr_set(err, 139, "not a function");
	f = c->stack[fn].get();
	if (this_v >= 0 && valid(c, this_v))
		self = c->stack[this_v].get();
	for (int i = 0; i < argc; i++) {
		if (!valid(c, argv[i]) || !args.append(c->stack[argv[i]].get()))
			return terr_set(err, 139, "Out of memory");
	}
	terr_clear(&c->term);
	c->oom = false;
	bool ok;
	{
		running_guard g(c);
		ok = JS::Call(cx, self, f, JS::HandleValueArray(args), &rv);
	}
	if (!ok)
		return report_failure(c, err);
	js_ref_t r = push(c, rv);
	if (r < 0)
		return terr_set(err, 139, "JavaScript value stack exhausted");
	return r;
}

void
js_gc(js_ctx_t *c)
{
	JS_GC(c->cx);
}

}  // extern "C"
