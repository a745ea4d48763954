/* The bodies of lttng_ust__tracef, lttng_ust__vtracef and the tracelog
 * family, the printf-like entry points of liblttng-ust.so.1. C because
 * they are variadic (Rust cannot define one); the exported names are
 * Rust's (src/tracef.rs: each a jump here, so that these see the
 * program's call as their own). Each formats its message and hands it to
 * the Rust side with the caller's address, which the `ip` context
 * records. Formatting allocates (vasprintf), as LTTng-UST's does: these
 * are not for signal handlers. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void ringtrace_lttng_ust_message(int level, const char *file, int line,
                                 const char *func, const char *msg,
                                 unsigned int len, void *ip);

/* level -1: tracef's event. */
static void message(int level, const char *file, int line, const char *func,
                    const char *fmt, va_list ap, void *ip) {
    char *msg;
    int len = vasprintf(&msg, fmt, ap);
    if (len < 0)
        return;
    ringtrace_lttng_ust_message(level, file, line, func, msg, (unsigned int)len, ip);
    free(msg);
}

void ringtrace_c_vtracef(const char *fmt, va_list ap) {
    message(-1, NULL, 0, NULL, fmt, ap, __builtin_return_address(0));
}

void ringtrace_c_tracef(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    message(-1, NULL, 0, NULL, fmt, ap, __builtin_return_address(0));
    va_end(ap);
}

#define TRACELOG(name, level)                                                          \
    void ringtrace_c_vtracelog_##name(                                                  \
        const char *file, int line, const char *func, const char *fmt, va_list ap) {    \
        message(level, file, line, func, fmt, ap, __builtin_return_address(0));         \
    }                                                                                   \
    void ringtrace_c_tracelog_##name(                                                   \
        const char *file, int line, const char *func, const char *fmt, ...) {           \
        va_list ap;                                                                     \
        va_start(ap, fmt);                                                              \
        message(level, file, line, func, fmt, ap, __builtin_return_address(0));         \
        va_end(ap);                                                                     \
    }

TRACELOG(EMERG, 0)
TRACELOG(ALERT, 1)
TRACELOG(CRIT, 2)
TRACELOG(ERR, 3)
TRACELOG(WARNING, 4)
TRACELOG(NOTICE, 5)
TRACELOG(INFO, 6)
TRACELOG(DEBUG_SYSTEM, 7)
TRACELOG(DEBUG_PROGRAM, 8)
TRACELOG(DEBUG_PROCESS, 9)
TRACELOG(DEBUG_MODULE, 10)
TRACELOG(DEBUG_UNIT, 11)
TRACELOG(DEBUG_FUNCTION, 12)
TRACELOG(DEBUG_LINE, 13)
TRACELOG(DEBUG, 14)
