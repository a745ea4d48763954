/* Records N rounds of the interop tracepoints (tp.h) from T threads,
 * pausing P microseconds after every 1000 rounds (none by default):
 *   prog N T [P] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tp.h"

static long rounds;
static long pause_us;

static void *run(void *arg) {
    (void)arg;
    /* No empty text: babeltrace2 2.0.4 prints an empty string or text
     * sequence with the text of an earlier event (a stale buffer). */
    static const char *words[] = {"alpha", "be", "gamma-delta", "a \"q\"", "epsilon"};
    for (long r = 0; r < rounds; r++) {
        uint64_t i = (uint64_t)r;
        int32_t xs[3] = {(int32_t)r, -(int32_t)r, 7};
        char s[16] = {0};
        strncpy(s, words[r % 5], sizeof s - 1);
        size_t n = 1 + (size_t)(r % 3);
        tracepoint(interop, ints, i);
        tracepoint(interop, floats, i);
        tracepoint(interop, texts, i, s, xs, n);
        if (pause_us > 0 && r % 1000 == 999)
            usleep((useconds_t)pause_us);
    }
    return NULL;
}

int main(int argc, char **argv) {
    rounds = argc > 1 ? atol(argv[1]) : 1000;
    int threads = argc > 2 ? atoi(argv[2]) : 1;
    pause_us = argc > 3 ? atol(argv[3]) : 0;
    pthread_t t[16];
    for (int k = 0; k < threads && k < 16; k++)
        pthread_create(&t[k], NULL, run, NULL);
    for (int k = 0; k < threads && k < 16; k++)
        pthread_join(t[k], NULL);
    printf("events %ld\n", rounds * 3 * threads);
    return 0;
}
