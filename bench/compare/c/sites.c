/* bench/compare's reading table, symbols row (src/reading.rs): N events
 * with one u64 field from 10,000 call sites (each its own address, the
 * `ip` context), recorded by a per-thread discard session with contexts
 * vpid, vtid and ip into OUTDIR; then "recorded lost" on stdout.
 * Built with -O0 -g (reading.rs): 10,000 inlined sites take gcc minutes
 * to optimize, and the table measures reading, not recording.
 * usage: sites OUTDIR N */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <ringtrace.h>

/* One descriptor (a static of the function), a call of its own at each
 * place the function is inlined: 10,000 addresses. */
static inline __attribute__((always_inline)) void hit(uint64_t r)
{
	RINGTRACE_EVENT(sites, hit, RT_U64(v, r));
}

#define S1 hit(r);
#define S10 S1 S1 S1 S1 S1 S1 S1 S1 S1 S1
#define S100 S10 S10 S10 S10 S10 S10 S10 S10 S10 S10
#define S1000 S100 S100 S100 S100 S100 S100 S100 S100 S100 S100

/* 1,000 call sites per function, ten functions. */
#define SITES(f) static __attribute__((noinline)) void f(uint64_t r) { S1000 }
SITES(f0) SITES(f1) SITES(f2) SITES(f3) SITES(f4)
SITES(f5) SITES(f6) SITES(f7) SITES(f8) SITES(f9)

int main(int argc, char **argv)
{
	char spec[4096];
	struct ringtrace_counts c;
	ringtrace_session *s;
	uint64_t n, r;

	if (argc != 3) {
		fprintf(stderr, "usage: %s OUTDIR N\n", argv[0]);
		return 2;
	}
	n = strtoull(argv[2], NULL, 10);
	snprintf(spec, sizeof spec, "%s,discard,per-thread,subbuf=4m,count=8,context=vpid+vtid+ip,sites:*", argv[1]);
	s = ringtrace_session_create("compare-sites", spec);
	if (s == NULL) {
		fprintf(stderr, "sites: %s\n", ringtrace_last_error());
		return 1;
	}
	ringtrace_session_start(s);
	for (r = 0; r < n / 10000; r++) {
		f0(r); f1(r); f2(r); f3(r); f4(r); f5(r); f6(r); f7(r); f8(r); f9(r);
	}
	if (ringtrace_session_stop(s) != 0 || ringtrace_session_counts(s, &c) != 0) {
		fprintf(stderr, "sites: %s\n", ringtrace_last_error());
		return 1;
	}
	printf("%" PRIu64 " %" PRIu64 "\n", c.recorded, c.lost);
	return 0;
}
