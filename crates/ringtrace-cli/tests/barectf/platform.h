/* barectf's platform for ringtrace's fixtures: each data stream's packets
 * appended to its own file, a clock that advances STEP per reading from
 * START (the same trace on every run, on every machine).
 *
 * A fixture's program defines DST (its data stream type's name) and
 * SET_CLOCK (which callback reads the clock), and may define OPEN_ARGS
 * (the extra packet-context arguments of its open function), CLOCK_T (the
 * clock's C type), STEP, START and PACKET (bytes per packet); then it
 * includes this file and calls stream_open and stream_close. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "barectf.h"

#ifndef OPEN_ARGS
#define OPEN_ARGS
#endif
#ifndef CLOCK_T
#define CLOCK_T uint64_t
#endif
#ifndef STEP
#define STEP 1000
#endif
#ifndef START
#define START 1000000
#endif
#ifndef PACKET
#define PACKET 512
#endif

#define CAT_(a, b, c) a##b##c
#define CAT(a, b, c) CAT_(a, b, c)
#define CTX struct CAT(barectf_, DST, _ctx)

struct stream {
	CTX ctx;
	FILE *f;
	uint64_t clock;
	uint8_t buf[PACKET];
};

/* The clock's reading, truncated to its C type as a counter register
 * would be. */
static CLOCK_T clock_value(void *d)
{
	struct stream *s = d;
	return (CLOCK_T)(s->clock += STEP);
}

static int backend_full(void *d)
{
	(void)d;
	return 0;
}

static void open_packet(void *d)
{
	struct stream *s = d;
	CAT(barectf_, DST, _open_packet)(&s->ctx OPEN_ARGS);
}

static void close_packet(void *d)
{
	struct stream *s = d;
	CAT(barectf_, DST, _close_packet)(&s->ctx);
	if (fwrite(barectf_packet_buf(&s->ctx), barectf_packet_buf_size(&s->ctx), 1, s->f) != 1) {
		perror("fwrite");
		exit(1);
	}
}

static void stream_open(struct stream *s, const char *path)
{
	struct barectf_platform_callbacks cbs = {0};
	s->f = fopen(path, "wb");
	if (!s->f) {
		perror(path);
		exit(1);
	}
	s->clock = START;
	/* The packets' padding is what the buffer held: zeros, not whatever
	 * the caller's stack held (the program's struct stream is a local). */
	memset(s->buf, 0, sizeof(s->buf));
	cbs.is_backend_full = backend_full;
	cbs.open_packet = open_packet;
	cbs.close_packet = close_packet;
	SET_CLOCK(cbs, clock_value);
	barectf_init(&s->ctx, s->buf, PACKET, cbs, s);
	open_packet(s);
}

static void stream_close(struct stream *s)
{
	if (barectf_packet_is_open(&s->ctx) && !barectf_packet_is_empty(&s->ctx))
		close_packet(s);
	fclose(s->f);
}
