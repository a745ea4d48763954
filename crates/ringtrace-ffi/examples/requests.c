/* A C program traced with ringtrace: two threads record typed events.
 *
 *   requests OUTDIR     records into OUTDIR through the session API
 *   requests            records only if RINGTRACE_SESSION is set
 *
 * It prints how many events it emitted, then "done".
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <ringtrace.h>

#define PER_THREAD 1000

static const char *const PATHS[] = {"/index", "/api/v1/items", "/health"};

static void *worker(void *arg) {
    uint64_t base = (uint64_t)(uintptr_t)arg;
    for (uint64_t i = 0; i < PER_THREAD; i++) {
        uint64_t id = base + i;
        unsigned char digest[4] = {(unsigned char)id, 0xab, 0xcd, 0xef};
        RINGTRACE_EVENT(capp, request, RT_U64(id, id), RT_I32(delta, -(int32_t)i),
                        RT_STR(path, PATHS[id % 3]), RT_F64(ms, (double)i * 0.5),
                        RT_BOOL(ok, id % 2 == 0), RT_BYTES(digest, digest, sizeof digest),
                        RT_U8(small, i), RT_I64(big, INT64_MIN + (int64_t)i),
                        RT_F32(ratio, 0.25f), RT_U16(port, 8080), RT_I8(tiny, -1),
                        RT_I16(mid, -300), RT_U32(thread, base / 1000000));
    }
    return NULL;
}

int main(int argc, char **argv) {
    ringtrace_session *s = NULL;
    if (argc > 1) {
        /* A bad specification is refused with a message naming the item. */
        if (ringtrace_session_create("bad", "/tmp/x,bogus") != NULL) return 2;
        printf("error: %s\n", ringtrace_last_error());

        char spec[4096];
        snprintf(spec, sizeof spec, "%s,discard,per-cpu,subbuf=256k,count=4,capp:*", argv[1]);
        s = ringtrace_session_create("c-example", spec);
        if (s == NULL) {
            fprintf(stderr, "requests: %s\n", ringtrace_last_error());
            return 1;
        }
        if (ringtrace_session_disable(s, NULL, "capp:debug_only") < 0) return 3;
        ringtrace_session_start(s);
    }
    pthread_t t[2];
    for (uintptr_t k = 0; k < 2; k++)
        pthread_create(&t[k], NULL, worker, (void *)((k + 1) * 1000000));
    for (int k = 0; k < 2; k++) pthread_join(t[k], NULL);
    RINGTRACE_EVENT0(capp, tick);
    RINGTRACE_EVENT_LEVEL(RINGTRACE_LEVEL_WARNING, capp, warn, RT_STR(msg, NULL),
                          RT_BYTES(none, NULL, 0));
    RINGTRACE_EVENT_LEVEL(RINGTRACE_LEVEL_DEBUG, capp, debug_only, RT_U64(x, 1));
    printf("emitted %d\n", 2 * PER_THREAD + 3);
    if (s != NULL) {
        struct ringtrace_counts c;
        if (ringtrace_session_stop(s) != 0 || ringtrace_session_counts(s, &c) != 0) {
            fprintf(stderr, "requests: %s\n", ringtrace_last_error());
            return 1;
        }
        printf("recorded %" PRIu64 " lost %" PRIu64 "\n", c.recorded, c.lost);
        if (ringtrace_session_destroy(s) != 0) {
            fprintf(stderr, "requests: %s\n", ringtrace_last_error());
            return 1;
        }
    }
    printf("done\n");
    return 0;
}
