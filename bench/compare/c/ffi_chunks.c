/* The C side of bench/compare's interleaved c-api/rust line
 * (src/c_interleaved.rs): a discard session like ffi_workload's (4 x 1 MiB
 * sub-buffers per CPU, no context) written to OUTDIR; the recording
 * thread pinned to CPU (the consumer thread, started before, is not).
 * Then, for each line "N" read from stdin, N events with one u64 field
 * through RINGTRACE_EVENT, answered by a line with the chunk's wall time
 * in ns; at the end of stdin, the session's counts.
 * usage: ffi_chunks OUTDIR CPU */
#define _GNU_SOURCE
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <ringtrace.h>

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int main(int argc, char **argv)
{
	char spec[4096], line[64];
	struct ringtrace_counts c;
	ringtrace_session *s;
	cpu_set_t set;
	uint64_t n, i, t0;

	if (argc != 3) {
		fprintf(stderr, "usage: %s OUTDIR CPU\n", argv[0]);
		return 2;
	}
	snprintf(spec, sizeof spec, "%s,discard,per-cpu,subbuf=1m,count=4,context=none,cchunk:*", argv[1]);
	s = ringtrace_session_create("compare-c-chunks", spec);
	if (s == NULL) {
		fprintf(stderr, "ffi_chunks: %s\n", ringtrace_last_error());
		return 1;
	}
	ringtrace_session_start(s);
	CPU_ZERO(&set);
	CPU_SET(atoi(argv[2]), &set);
	if (sched_setaffinity(0, sizeof set, &set) != 0) {
		perror("ffi_chunks: sched_setaffinity");
		return 1;
	}
	while (fgets(line, sizeof line, stdin) != NULL) {
		n = strtoull(line, NULL, 10);
		t0 = now_ns();
		for (i = 0; i < n; i++)
			RINGTRACE_EVENT(cchunk, u64, RT_U64(v, i));
		printf("%" PRIu64 "\n", now_ns() - t0);
		fflush(stdout);
	}
	if (ringtrace_session_stop(s) != 0 || ringtrace_session_counts(s, &c) != 0) {
		fprintf(stderr, "ffi_chunks: %s\n", ringtrace_last_error());
		return 1;
	}
	printf("lost=%" PRIu64 "\n", c.lost);
	return ringtrace_session_destroy(s) == 0 ? 0 : 1;
}
