/* The executable of the symbol test: two instrumented functions of its
 * own and one of libwork.so, each called N times:  app N */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "tp.h"

void work_step(uint64_t i);

__attribute__((noinline)) static void parse_header(uint64_t i) {
    tracepoint(symtest, hit, 100 + i);
}

__attribute__((noinline)) void handle_request(uint64_t i) {
    parse_header(i);
    tracepoint(symtest, hit, 200 + i);
    work_step(i);
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 3;
    for (long i = 0; i < n; i++)
        handle_request((uint64_t)i);
    printf("events %ld\n", 3 * n);
    return 0;
}
