/* The tracepoint of the symbol test (tests/symbols.rs): one event, recorded
 * from three functions in two objects, whose `ip` context must resolve to
 * those functions and their lines. */
#undef TRACEPOINT_PROVIDER
#define TRACEPOINT_PROVIDER symtest

#undef TRACEPOINT_INCLUDE
#define TRACEPOINT_INCLUDE "./tp.h"

#if !defined(SYMTEST_TP_H) || defined(TRACEPOINT_HEADER_MULTI_READ)
#define SYMTEST_TP_H

#include <lttng/tracepoint.h>
#include <stdint.h>

TRACEPOINT_EVENT(symtest, hit,
    TP_ARGS(uint64_t, step),
    TP_FIELDS(ctf_integer(uint64_t, step, step))
)

#endif

#include <lttng/tracepoint-event.h>
