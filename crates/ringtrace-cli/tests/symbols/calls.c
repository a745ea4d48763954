/* The call-stack test (tests/symbols.rs): built with
 * -finstrument-functions, every function's entry and exit is an event of
 * LTTng-UST's cyg-profile helper. The call tree, N times:
 *   main -> request -> parse -> token (twice)
 *                   -> reply                          calls N */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) int token(int x) { return x * 7 + 1; }

__attribute__((noinline)) int parse(int x) { return token(x) + token(x + 1); }

__attribute__((noinline)) int reply(int x) { return x ^ 0x55; }

__attribute__((noinline)) int request(int x) { return reply(parse(x)); }

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 2, sum = 0;
    for (int i = 0; i < n; i++)
        sum += request(i);
    printf("sum %d\n", sum);
    return 0;
}
