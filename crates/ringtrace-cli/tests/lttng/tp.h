/* LTTng-UST tracepoints with every field kind LTTng-UST 2.13 writes, for
 * the interoperability test (tests/lttng_ust.rs): ringtrace must read the
 * traces LTTng records as babeltrace2 does. */
#undef TRACEPOINT_PROVIDER
#define TRACEPOINT_PROVIDER interop

#undef TRACEPOINT_INCLUDE
#define TRACEPOINT_INCLUDE "./tp.h"

#if !defined(INTEROP_TP_H) || defined(TRACEPOINT_HEADER_MULTI_READ)
#define INTEROP_TP_H

#include <lttng/tracepoint.h>
#include <stddef.h>
#include <stdint.h>

TRACEPOINT_ENUM(interop, state,
    TP_ENUM_VALUES(
        ctf_enum_value("idle", 0)
        ctf_enum_value("busy", 1)
        ctf_enum_range("error", 2, 9)
    )
)

TRACEPOINT_EVENT(interop, ints,
    TP_ARGS(uint64_t, i),
    TP_FIELDS(
        ctf_integer(uint8_t, u8, (uint8_t)i)
        ctf_integer(int8_t, s8, -(int8_t)(i % 100))
        ctf_integer(uint16_t, u16, (uint16_t)(i * 7))
        ctf_integer(int16_t, s16, -(int16_t)(i % 1000))
        ctf_integer(uint32_t, u32, (uint32_t)(i * 100003))
        ctf_integer(int32_t, s32, -(int32_t)i)
        ctf_integer(uint64_t, u64, i * 0x100000001ULL)
        ctf_integer(int64_t, s64, -(int64_t)i * 1000000007LL)
        ctf_integer_hex(uint32_t, hex, (uint32_t)(i * 0x1001))
        ctf_integer_network(uint32_t, net, (uint32_t)i)
        ctf_integer_network_hex(uint16_t, nethex, (uint16_t)(i * 3))
    )
)

TRACEPOINT_EVENT(interop, floats,
    TP_ARGS(uint64_t, i),
    TP_FIELDS(
        ctf_float(float, f, (float)i / 8.0f)
        ctf_float(double, d, (double)i / 3.0)
    )
)

TRACEPOINT_EVENT(interop, texts,
    TP_ARGS(uint64_t, i, const char *, s, const int32_t *, xs, size_t, n),
    TP_FIELDS(
        ctf_string(s, s)
        ctf_array(int32_t, arr, xs, 3)
        ctf_array_text(char, atext, s, 4)
        ctf_sequence(int32_t, seq, xs, size_t, n)
        ctf_sequence_text(char, stext, s, size_t, n)
        ctf_sequence_hex(uint8_t, sbytes, s, uint16_t, n)
        ctf_enum(interop, state, int32_t, st, (int32_t)(i % 11))
    )
)

#endif

#include <lttng/tracepoint-event.h>
