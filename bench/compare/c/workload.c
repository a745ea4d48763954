/* The LTTng-UST side of bench/compare: THREADS threads each emit
 * EVENTS/THREADS events (u64, str16, or every: every field kind) as fast as they can, or at RATE
 * events per second per thread (paced every 256 events, sleeping when
 * ahead); prints the wall time of the slowest thread's loop in
 * nanoseconds.
 * usage: workload EVENTS THREADS u64|str16|every [RATE] */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tp.h"

static uint64_t per_thread;
static uint64_t rate;
static int use_str, use_every;
static pthread_barrier_t start;

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void *run(void *arg)
{
	uint64_t *elapsed = arg, i, t0;
	const char *s = "0123456789abcde";

	pthread_barrier_wait(&start);
	t0 = now_ns();
	if (rate) {
		for (i = 0; i < per_thread; i++) {
			tracepoint(bench, u64, i);
			if ((i & 255) == 255) {
				uint64_t due = t0 + (i + 1) * 1000000000u / rate, now = now_ns();
				if (now < due) {
					struct timespec d = {(time_t)((due - now) / 1000000000u),
							     (long)((due - now) % 1000000000u)};
					nanosleep(&d, NULL);
				}
			}
		}
	} else if (use_every) {
		const int32_t xs[3] = {1, -2, 3};
		for (i = 0; i < per_thread; i++)
			tracepoint(bench, every, i, s, xs, 1 + (size_t)(i % 3));
	} else if (use_str)
		for (i = 0; i < per_thread; i++)
			tracepoint(bench, str16, s);
	else
		for (i = 0; i < per_thread; i++)
			tracepoint(bench, u64, i);
	*elapsed = now_ns() - t0;
	return NULL;
}

int main(int argc, char **argv)
{
	uint64_t events, worst = 0, elapsed[64];
	pthread_t th[64];
	int threads, k;

	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: %s EVENTS THREADS u64|str16|every [RATE]\n", argv[0]);
		return 2;
	}
	rate = argc == 5 ? strtoull(argv[4], NULL, 10) : 0;
	events = strtoull(argv[1], NULL, 10);
	threads = atoi(argv[2]);
	use_str = strcmp(argv[3], "str16") == 0;
	use_every = strcmp(argv[3], "every") == 0;
	if (threads < 1 || threads > 64 || events == 0) {
		fprintf(stderr, "bad arguments\n");
		return 2;
	}
	per_thread = events / threads;
	pthread_barrier_init(&start, NULL, threads);
	for (k = 0; k < threads; k++)
		pthread_create(&th[k], NULL, run, &elapsed[k]);
	for (k = 0; k < threads; k++) {
		pthread_join(th[k], NULL);
		if (elapsed[k] > worst)
			worst = elapsed[k];
	}
	printf("elapsed_ns=%llu events=%llu\n", (unsigned long long)worst,
	       (unsigned long long)(per_thread * threads));
	return 0;
}
