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

TRACEPOINT_ENUM(bench, state,
    TP_ENUM_VALUES(
        ctf_enum_value("idle", 0)
        ctf_enum_value("busy", 1)
        ctf_enum_range("error", 2, 9)))

/* Every field kind of LTTng-UST 2.13 in one event: integers of each size
 * and sign, hexadecimal and network byte order, floats, a string, integer
 * and text arrays and sequences, an enumeration. */
TRACEPOINT_EVENT(bench, every,
    TP_ARGS(uint64_t, i, const char *, s, const int32_t *, xs, size_t, n),
    TP_FIELDS(
        ctf_integer(uint8_t, u8, i)
        ctf_integer(int16_t, s16, -(int16_t)i)
        ctf_integer(uint32_t, u32, i)
        ctf_integer(int64_t, s64, -(int64_t)i)
        ctf_integer_hex(uint64_t, hex, i)
        ctf_integer_network(uint32_t, net, i)
        ctf_float(float, f, i)
        ctf_float(double, d, i)
        ctf_string(s, s)
        ctf_array(int32_t, arr, xs, 3)
        ctf_array_text(char, atext, s, 4)
        ctf_sequence(int32_t, seq, xs, size_t, n)
        ctf_sequence_text(char, stext, s, size_t, n)
        ctf_enum(bench, state, int32_t, st, (int32_t)(i % 11))))

TRACEPOINT_EVENT(bench, str16,
    TP_ARGS(const char *, s),
    TP_FIELDS(ctf_string(s, s)))

#endif

#include <lttng/tracepoint-event.h>
