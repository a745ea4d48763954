/* The shared library of the symbol test: one instrumented function. */
#include "tp.h"

__attribute__((noinline)) void work_step(uint64_t i) {
    tracepoint(symtest, hit, 300 + i);
}
