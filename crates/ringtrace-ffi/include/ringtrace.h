/*
 * ringtrace.h — the C and C++ API of ringtrace.
 *
 * Declare and record an event in one place:
 *
 *     #include <ringtrace.h>
 *
 *     RINGTRACE_EVENT(myapp, request_done,
 *                     RT_U64(id, req->id), RT_STR(path, req->path),
 *                     RT_F64(latency_ms, ms), RT_BYTES(digest, req->sha, 32));
 *     RINGTRACE_EVENT_LEVEL(RINGTRACE_LEVEL_WARNING, myapp, queue_full,
 *                           RT_U32(depth, n));
 *     RINGTRACE_EVENT0(myapp, tick);              (an event with no field)
 *
 * While no session records the event, a call site costs one relaxed byte
 * load and a not-taken branch, and its field values are not evaluated. When
 * it is recorded, the values are passed as an array of typed words and
 * serialized by the library following the event's static field list (no
 * format string is parsed at run time). Recording never allocates, locks,
 * sleeps or makes a system call, so it is safe in signal handlers.
 *
 * Every event of a program or shared library is listed by the linker in the
 * `ringtrace_events` section and registered before main() by a constructor
 * this header defines; sessions (RINGTRACE_SESSION=..., or the functions at
 * the end of this file) see them at once. A shared library that has events
 * must not be unloaded (dlclose) while the process traces.
 *
 * Build (shared):  cc prog.c $(pkg-config --cflags --libs ringtrace)
 * Build (static):  cc prog.c $(pkg-config --cflags ringtrace) \
 *                     $(pkg-config --variable=libdir ringtrace)/libringtrace.a \
 *                     $(pkg-config --libs-only-l --static ringtrace | sed s/-lringtrace//)
 * (scripts/install.sh PREFIX installs the header, both libraries,
 * ringtrace.pc, whose link flags carry a run path to the shared library, and
 * the ringtrace command.)
 *
 * Needs GCC or Clang (section, constructor and __atomic builtins), C99 or
 * C++11 and later.
 */
#ifndef RINGTRACE_H
#define RINGTRACE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Layout version of struct ringtrace_event; the library refuses others. */
#define RINGTRACE_ABI 1

/* Log levels, LTTng-UST's numbering (lower is more severe). */
#define RINGTRACE_LEVEL_EMERGENCY 0
#define RINGTRACE_LEVEL_ALERT 1
#define RINGTRACE_LEVEL_CRITICAL 2
#define RINGTRACE_LEVEL_ERROR 3
#define RINGTRACE_LEVEL_WARNING 4
#define RINGTRACE_LEVEL_NOTICE 5
#define RINGTRACE_LEVEL_INFO 6
/* LTTng's debug levels, most severe first. */
#define RINGTRACE_LEVEL_DEBUG_SYSTEM 7
#define RINGTRACE_LEVEL_DEBUG_PROGRAM 8
#define RINGTRACE_LEVEL_DEBUG_PROCESS 9
#define RINGTRACE_LEVEL_DEBUG_MODULE 10
#define RINGTRACE_LEVEL_DEBUG_UNIT 11
#define RINGTRACE_LEVEL_DEBUG_FUNCTION 12
#define RINGTRACE_LEVEL_DEBUG_LINE 13
#define RINGTRACE_LEVEL_DEBUG 14

/* Field types (enum ringtrace_kind values). */
#define RINGTRACE_KIND_U8 1
#define RINGTRACE_KIND_U16 2
#define RINGTRACE_KIND_U32 3
#define RINGTRACE_KIND_U64 4
#define RINGTRACE_KIND_I8 5
#define RINGTRACE_KIND_I16 6
#define RINGTRACE_KIND_I32 7
#define RINGTRACE_KIND_I64 8
#define RINGTRACE_KIND_F32 9
#define RINGTRACE_KIND_F64 10
#define RINGTRACE_KIND_BOOL 11
#define RINGTRACE_KIND_STR 12
#define RINGTRACE_KIND_BYTES 13

/* Most fields one event can have. */
#define RINGTRACE_MAX_FIELDS 16

/* One field of an event: its name and RINGTRACE_KIND_*. */
struct ringtrace_field {
    const char *name;
    uint32_t kind;
};

/* The static descriptor of a call site (made by RINGTRACE_EVENT). */
struct ringtrace_event {
    uint8_t enabled;         /* 1 while a session records it; written by the library */
    uint8_t reserved[3];
    uint32_t abi;            /* RINGTRACE_ABI */
    const void *handle;      /* the library's descriptor, set at registration */
    const char *provider;
    const char *name;
    const struct ringtrace_field *fields;
    uint32_t nfields;
    int32_t level;
    const char *file;
    uint32_t line;
};

/* One field value as passed to ringtrace_emit: integers (sign-extended),
 * the bits of a float or double, a bool (0/1), or `ptr` to a NUL-terminated
 * string, or `ptr` and `bits` = length of a byte sequence. */
struct ringtrace_arg {
    uint64_t bits;
    const void *ptr;
};

/* Records an enabled event: `args` has one entry per field. */
void ringtrace_emit(const struct ringtrace_event *event, const struct ringtrace_arg *args);

/* Records an enabled event whose fields all have a fixed size, already
 * serialized by the caller: `len` bytes at `payload`, each field
 * little-endian in order (what RINGTRACE_EVENT does inline: the fast path).
 * A length that does not match the event's fields records nothing. */
void ringtrace_emit_packed(const struct ringtrace_event *event, const void *payload, size_t len);
/* The same for payloads of 4, 8 and 16 bytes, passed in registers (what
 * RINGTRACE_EVENT calls for them: no bytes through memory): the payload's
 * bytes are those of `payload` (of `lo` then `hi`) in little-endian order. */
void ringtrace_emit_packed4(const struct ringtrace_event *event, uint32_t payload);
void ringtrace_emit_packed8(const struct ringtrace_event *event, uint64_t payload);
void ringtrace_emit_packed16(const struct ringtrace_event *event, uint64_t lo, uint64_t hi);

/* Registers the descriptors in [start, stop) (called by this header's
 * constructor; calling it again with the same descriptors does nothing). */
void ringtrace_register_events(struct ringtrace_event *const *start,
                               struct ringtrace_event *const *stop);

/* ---- session control ------------------------------------------------ */

typedef struct ringtrace_session ringtrace_session;

/* Creates a (stopped) session named `name` from a specification with the
 * grammar of RINGTRACE_SESSION:
 *   "<dir>[,discard|flight-recorder][,per-cpu|per-thread][,subbuf=64k]
 *    [,count=4][,switch=<ms>][,read=<ms>][,level=<level>][,bufdir=<dir>]
 *    [,context=vpid+vtid+pthread_id+procname+ip|all|none]
 *    [,rseq=auto|rseq|atomics][,io=buffered|auto|direct]
 *    [,relay=net://HOST[:CTRL[:DATA]]][,live=<ms>][,filter=<expr>][,<pattern>...]"
 * Every event carries the chosen contexts (default vpid+vtid: who
 * recorded it) as the CTF stream event context. With relay=, the trace is
 * also streamed to an lttng-relayd (the first item may be the URL instead
 * of <dir>: relayd only; creation then fails if relayd cannot be reached).
 * Returns NULL on error (see ringtrace_last_error). */
ringtrace_session *ringtrace_session_create(const char *name, const char *spec);
/* Enables the events matching `pattern` ('*' wildcards) of `level` or more
 * severe in `channel` (NULL: every channel). Returns how many call sites it
 * enabled now, or -1. */
int ringtrace_session_enable(ringtrace_session *s, const char *channel, const char *pattern,
                             int level);
/* ringtrace_session_enable, recording only the events `filter` accepts
 * (LTTng's filter language: "(i & 1) == 0 && status >= 500",
 * "$ctx.procname == \"worker-*\""), evaluated before a record is reserved.
 * Returns -1 if it does not parse or names a field the events lack. */
int ringtrace_session_enable_filter(ringtrace_session *s, const char *channel, const char *pattern,
                                    int level, const char *filter);
/* Disables the events matching `pattern`. Returns how many, or -1. */
int ringtrace_session_disable(ringtrace_session *s, const char *channel, const char *pattern);
/* Starts recording. Returns 0. */
int ringtrace_session_start(ringtrace_session *s);
/* Stops recording; a discard-mode trace is then complete on disk. 0 or -1. */
int ringtrace_session_stop(ringtrace_session *s);
/* Writes what the buffers hold as a complete trace in `dir` (which must not
 * exist yet). Returns the number of packets written, or -1. */
int64_t ringtrace_session_snapshot(ringtrace_session *s, const char *dir);
/* What a session recorded so far. */
struct ringtrace_counts {
    uint64_t recorded;      /* events in the buffers */
    uint64_t lost;          /* events dropped and counted, every cause */
    uint64_t bytes_written; /* bytes of stream files written */
};
/* Fills `out`. 0 or -1. */
int ringtrace_session_counts(ringtrace_session *s, struct ringtrace_counts *out);
/* Stops the session if needed, completes its trace and frees `s` (also on
 * error). 0 or -1. */
int ringtrace_session_destroy(ringtrace_session *s);
/* The last error of this thread, or NULL; valid until its next call. */
const char *ringtrace_last_error(void);

/* ---- field macros: RT_<TYPE>(name, value) ---------------------------- */

static inline struct ringtrace_arg ringtrace__u(uint64_t v) {
    struct ringtrace_arg a;
    a.bits = v;
    a.ptr = 0;
    return a;
}
static inline struct ringtrace_arg ringtrace__i(int64_t v) { return ringtrace__u((uint64_t)v); }
static inline struct ringtrace_arg ringtrace__f32(float v) {
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    return ringtrace__u(b);
}
static inline struct ringtrace_arg ringtrace__f64(double v) {
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return ringtrace__u(b);
}
static inline struct ringtrace_arg ringtrace__s(const char *s) {
    struct ringtrace_arg a;
    a.bits = 0;
    a.ptr = s;
    return a;
}
static inline struct ringtrace_arg ringtrace__bytes(const void *p, size_t n) {
    struct ringtrace_arg a;
    a.bits = (uint64_t)n;
    a.ptr = p;
    return a;
}

#define RT_U8(name, v) (RINGTRACE_KIND_U8, name, ringtrace__u((uint8_t)(v)))
#define RT_U16(name, v) (RINGTRACE_KIND_U16, name, ringtrace__u((uint16_t)(v)))
#define RT_U32(name, v) (RINGTRACE_KIND_U32, name, ringtrace__u((uint32_t)(v)))
#define RT_U64(name, v) (RINGTRACE_KIND_U64, name, ringtrace__u((uint64_t)(v)))
#define RT_I8(name, v) (RINGTRACE_KIND_I8, name, ringtrace__i((int8_t)(v)))
#define RT_I16(name, v) (RINGTRACE_KIND_I16, name, ringtrace__i((int16_t)(v)))
#define RT_I32(name, v) (RINGTRACE_KIND_I32, name, ringtrace__i((int32_t)(v)))
#define RT_I64(name, v) (RINGTRACE_KIND_I64, name, ringtrace__i((int64_t)(v)))
#define RT_F32(name, v) (RINGTRACE_KIND_F32, name, ringtrace__f32((float)(v)))
#define RT_F64(name, v) (RINGTRACE_KIND_F64, name, ringtrace__f64((double)(v)))
#define RT_BOOL(name, v) (RINGTRACE_KIND_BOOL, name, ringtrace__u((v) ? 1u : 0u))
/* A NUL-terminated string (NULL is recorded as "(null)"). */
#define RT_STR(name, v) (RINGTRACE_KIND_STR, name, ringtrace__s(v))
/* `len` bytes at `p`. */
#define RT_BYTES(name, p, len) (RINGTRACE_KIND_BYTES, name, ringtrace__bytes((p), (len)))

/* ---- event macros ---------------------------------------------------- */

#define RINGTRACE_EVENT(provider, name, ...) \
    RINGTRACE_EVENT_LEVEL(RINGTRACE_LEVEL_INFO, provider, name, __VA_ARGS__)

#define RINGTRACE_EVENT_LEVEL(level, provider, name, ...)                                     \
    do {                                                                                      \
        static const struct ringtrace_field ringtrace__fields[] = {                           \
            RINGTRACE__MAP(RINGTRACE__FIELD, __VA_ARGS__)};                                   \
        static struct ringtrace_event ringtrace__event = {                                    \
            0, {0, 0, 0}, RINGTRACE_ABI, 0, #provider, #name, ringtrace__fields,              \
            RINGTRACE__NARG(__VA_ARGS__), (level), __FILE__, __LINE__};                       \
        RINGTRACE__LIST(ringtrace__event);                                                    \
        if (__builtin_expect(__atomic_load_n(&ringtrace__event.enabled, __ATOMIC_RELAXED), 0)) { \
            static const unsigned char ringtrace__sizes[] = {                                 \
                RINGTRACE__MAP(RINGTRACE__SIZE, __VA_ARGS__)};                                \
            const struct ringtrace_arg ringtrace__args[] = {                                  \
                RINGTRACE__MAP(RINGTRACE__VALUE, __VA_ARGS__)};                               \
            RINGTRACE__SEND(ringtrace__event, ringtrace__sizes, ringtrace__args,              \
                            RINGTRACE__NARG(__VA_ARGS__));                                    \
        }                                                                                     \
    } while (0)

#define RINGTRACE_EVENT0(provider, name) RINGTRACE_EVENT0_LEVEL(RINGTRACE_LEVEL_INFO, provider, name)

#define RINGTRACE_EVENT0_LEVEL(level, provider, name)                                         \
    do {                                                                                      \
        static struct ringtrace_event ringtrace__event = {                                    \
            0, {0, 0, 0}, RINGTRACE_ABI, 0, #provider, #name, 0, 0, (level), __FILE__,        \
            __LINE__};                                                                        \
        RINGTRACE__LIST(ringtrace__event);                                                    \
        if (__builtin_expect(__atomic_load_n(&ringtrace__event.enabled, __ATOMIC_RELAXED), 0)) \
            ringtrace_emit(&ringtrace__event, 0);                                             \
    } while (0)

/* ---- machinery ------------------------------------------------------- */

/* Puts a pointer to the descriptor in the `ringtrace_events` section. */
#define RINGTRACE__LIST(ev)                                                                   \
    static struct ringtrace_event *const ringtrace__entry                                     \
        __attribute__((section("ringtrace_events"), used, aligned(sizeof(void *)))) = &(ev)

/* Bytes a field of `kind` takes in the payload; 0 for strings and byte
 * sequences (variable length). */
#define RINGTRACE__KSIZE(k)                                                                   \
    ((k) == RINGTRACE_KIND_U8 || (k) == RINGTRACE_KIND_I8 || (k) == RINGTRACE_KIND_BOOL   ? 1 \
     : (k) == RINGTRACE_KIND_U16 || (k) == RINGTRACE_KIND_I16                           ? 2 \
     : (k) == RINGTRACE_KIND_U32 || (k) == RINGTRACE_KIND_I32 || (k) == RINGTRACE_KIND_F32 ? 4 \
     : (k) == RINGTRACE_KIND_U64 || (k) == RINGTRACE_KIND_I64 || (k) == RINGTRACE_KIND_F64 ? 8 \
                                                                                          : 0)
#define RINGTRACE__SIZE_(kind, name, value) RINGTRACE__KSIZE(kind)
#define RINGTRACE__SIZE(f) RINGTRACE__SIZE_ f

/* The fast path: an event whose fields all have a fixed size is serialized
 * here, in the caller (the sizes are constants, so the compiler unrolls
 * the loop into plain stores), and handed over as bytes; any other goes
 * field by field through ringtrace_emit. Little-endian targets only (the
 * trace's byte order); others always take ringtrace_emit. */
static inline int ringtrace__fixed(const unsigned char *sizes, unsigned n) {
    unsigned i;
    for (i = 0; i < n; i++)
        if (sizes[i] == 0)
            return 0;
    return 1;
}
static inline size_t ringtrace__pack(unsigned char *out, const unsigned char *sizes,
                                     const struct ringtrace_arg *args, unsigned n) {
    size_t o = 0;
    unsigned i;
    for (i = 0; i < n; i++) {
        memcpy(out + o, &args[i].bits, sizes[i]);
        o += sizes[i];
    }
    return o;
}
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* Payloads of 4, 8 or 16 bytes go in registers (the length is a constant
 * after inlining: one call remains); the call is in the macro itself, so
 * that the `ip` context is the event's own address even at -O0, and an
 * empty volatile asm after it keeps it from becoming a tail call (whose
 * return address, the `ip`, would be the caller's). */
#define RINGTRACE__SEND(ev, sizes, args, n)                                                   \
    do {                                                                                      \
        if (ringtrace__fixed(sizes, n)) {                                                     \
            unsigned char ringtrace__buf[8 * (n)];                                            \
            size_t ringtrace__len = ringtrace__pack(ringtrace__buf, sizes, args, n);          \
            uint64_t ringtrace__w[2] = {0, 0};                                                \
            memcpy(ringtrace__w, ringtrace__buf, ringtrace__len <= 16 ? ringtrace__len : 0);  \
            if (ringtrace__len == 8)                                                          \
                ringtrace_emit_packed8(&(ev), ringtrace__w[0]);                               \
            else if (ringtrace__len == 4)                                                     \
                ringtrace_emit_packed4(&(ev), (uint32_t)ringtrace__w[0]);                     \
            else if (ringtrace__len == 16)                                                    \
                ringtrace_emit_packed16(&(ev), ringtrace__w[0], ringtrace__w[1]);             \
            else                                                                              \
                ringtrace_emit_packed(&(ev), ringtrace__buf, ringtrace__len);                 \
            __asm__ __volatile__("");                                                         \
        } else {                                                                              \
            ringtrace_emit(&(ev), args);                                                      \
        }                                                                                     \
    } while (0)
#else
#define RINGTRACE__SEND(ev, sizes, args, n) ringtrace_emit(&(ev), args)
#endif

#define RINGTRACE__FIELD_(kind, name, value) {#name, kind}
#define RINGTRACE__FIELD(f) RINGTRACE__FIELD_ f
#define RINGTRACE__VALUE_(kind, name, value) value
#define RINGTRACE__VALUE(f) RINGTRACE__VALUE_ f

#define RINGTRACE__CAT_(a, b) a##b
#define RINGTRACE__CAT(a, b) RINGTRACE__CAT_(a, b)
#define RINGTRACE__NARG(...) \
    RINGTRACE__NARG_(__VA_ARGS__, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define RINGTRACE__NARG_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, \
                         a16, n, ...)                                                      \
    n
#define RINGTRACE__MAP(m, ...) RINGTRACE__CAT(RINGTRACE__MAP_, RINGTRACE__NARG(__VA_ARGS__))(m, __VA_ARGS__)
#define RINGTRACE__MAP_1(m, x) m(x)
#define RINGTRACE__MAP_2(m, x, ...) m(x), RINGTRACE__MAP_1(m, __VA_ARGS__)
#define RINGTRACE__MAP_3(m, x, ...) m(x), RINGTRACE__MAP_2(m, __VA_ARGS__)
#define RINGTRACE__MAP_4(m, x, ...) m(x), RINGTRACE__MAP_3(m, __VA_ARGS__)
#define RINGTRACE__MAP_5(m, x, ...) m(x), RINGTRACE__MAP_4(m, __VA_ARGS__)
#define RINGTRACE__MAP_6(m, x, ...) m(x), RINGTRACE__MAP_5(m, __VA_ARGS__)
#define RINGTRACE__MAP_7(m, x, ...) m(x), RINGTRACE__MAP_6(m, __VA_ARGS__)
#define RINGTRACE__MAP_8(m, x, ...) m(x), RINGTRACE__MAP_7(m, __VA_ARGS__)
#define RINGTRACE__MAP_9(m, x, ...) m(x), RINGTRACE__MAP_8(m, __VA_ARGS__)
#define RINGTRACE__MAP_10(m, x, ...) m(x), RINGTRACE__MAP_9(m, __VA_ARGS__)
#define RINGTRACE__MAP_11(m, x, ...) m(x), RINGTRACE__MAP_10(m, __VA_ARGS__)
#define RINGTRACE__MAP_12(m, x, ...) m(x), RINGTRACE__MAP_11(m, __VA_ARGS__)
#define RINGTRACE__MAP_13(m, x, ...) m(x), RINGTRACE__MAP_12(m, __VA_ARGS__)
#define RINGTRACE__MAP_14(m, x, ...) m(x), RINGTRACE__MAP_13(m, __VA_ARGS__)
#define RINGTRACE__MAP_15(m, x, ...) m(x), RINGTRACE__MAP_14(m, __VA_ARGS__)
#define RINGTRACE__MAP_16(m, x, ...) m(x), RINGTRACE__MAP_15(m, __VA_ARGS__)

/* The linker's bounds of this module's `ringtrace_events` section (null
 * when the module declares no event). */
extern struct ringtrace_event *const __start_ringtrace_events[]
    __attribute__((weak, visibility("hidden")));
extern struct ringtrace_event *const __stop_ringtrace_events[]
    __attribute__((weak, visibility("hidden")));

/* Every translation unit that includes this header registers its module's
 * events before main(); the library ignores repeats. */
__attribute__((constructor, used)) static void ringtrace__register_module(void) {
    ringtrace_register_events(__start_ringtrace_events, __stop_ringtrace_events);
}

#ifdef __cplusplus
}
#endif

#endif /* RINGTRACE_H */
