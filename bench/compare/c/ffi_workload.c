/* The C-API side of bench/compare's front-end table: EVENTS events with one
 * u64 field through RINGTRACE_EVENT into a discard session (4 x 1 MiB
 * sub-buffers per CPU, no context: as the Rust macro's row) written to OUTDIR; prints the loop's wall time and
 * the session's counts.
 * usage: ffi_workload EVENTS OUTDIR */
#include <inttypes.h>
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
	char spec[4096];
	struct ringtrace_counts c;
	ringtrace_session *s;
	uint64_t n, i, t0, elapsed;

	if (argc != 3) {
		fprintf(stderr, "usage: %s EVENTS OUTDIR\n", argv[0]);
		return 2;
	}
	n = strtoull(argv[1], NULL, 10);
	snprintf(spec, sizeof spec, "%s,discard,per-cpu,subbuf=1m,count=4,context=none,cbench:*", argv[2]);
	s = ringtrace_session_create("compare-c", spec);
	if (s == NULL) {
		fprintf(stderr, "ffi_workload: %s\n", ringtrace_last_error());
		return 1;
	}
	ringtrace_session_start(s);
	t0 = now_ns();
	for (i = 0; i < n; i++)
		RINGTRACE_EVENT(cbench, u64, RT_U64(v, i));
	elapsed = now_ns() - t0;
	if (ringtrace_session_stop(s) != 0 || ringtrace_session_counts(s, &c) != 0) {
		fprintf(stderr, "ffi_workload: %s\n", ringtrace_last_error());
		return 1;
	}
	printf("elapsed_ns=%" PRIu64 " events=%" PRIu64 " lost=%" PRIu64 " bytes=%" PRIu64 "\n",
	       elapsed, n, c.lost, c.bytes_written);
	return ringtrace_session_destroy(s) == 0 ? 0 : 1;
}
