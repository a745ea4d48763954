/* LTTng-UST tracepoints of the comparison workload: one u64, or a string
 * of 15 characters (16 bytes with its NUL), as the ringtrace events. */
#undef TRACEPOINT_PROVIDER
#define TRACEPOINT_PROVIDER bench

#undef TRACEPOINT_INCLUDE
#define TRACEPOINT_INCLUDE "./tp.h"

#if !defined(BENCH_TP_H) || defined(TRACEPOINT_HEADER_MULTI_READ)
#define BENCH_TP_H

#include <lttng/tracepoint.h>
#include <stdint.h>

TRACEPOINT_EVENT(bench, u64,
    TP_ARGS(uint64_t, v),
    TP_FIELDS(ctf_integer(uint64_t, v, v)))

TRACEPOINT_EVENT(bench, str16,
    TP_ARGS(const char *, s),
    TP_FIELDS(ctf_string(s, s)))

#endif

#include <lttng/tracepoint-event.h>
