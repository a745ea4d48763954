/* Two data streams, each with its own clock: a 1 GHz one and a 32768 Hz
 * one (half a tick of offset), interleaved in time once both are
 * converted. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "barectf.h"

#define PACKET 256

struct stream {
	void *ctx;
	FILE *f;
	uint64_t clock, step;
	uint8_t buf[PACKET];
};

static struct barectf_cpu_ctx cpu_ctx;
static struct barectf_rtc_ctx rtc_ctx;
static struct stream cpu = {&cpu_ctx}, rtc = {&rtc_ctx};

static uint64_t clock_value(void *d)
{
	struct stream *s = d;
	return s->clock += s->step;
}

static uint32_t slow_clock_value(void *d)
{
	return (uint32_t)clock_value(d);
}

static int backend_full(void *d)
{
	(void)d;
	return 0;
}

static void open_packet(void *d)
{
	struct stream *s = d;
	if (s == &cpu)
		barectf_cpu_open_packet(&cpu_ctx);
	else
		barectf_rtc_open_packet(&rtc_ctx);
}

static void close_packet(void *d)
{
	struct stream *s = d;
	if (s == &cpu)
		barectf_cpu_close_packet(&cpu_ctx);
	else
		barectf_rtc_close_packet(&rtc_ctx);
	if (fwrite(barectf_packet_buf(s->ctx), barectf_packet_buf_size(s->ctx), 1, s->f) != 1) {
		perror("fwrite");
		exit(1);
	}
}

static void start(struct stream *s, const char *path, uint64_t step)
{
	struct barectf_platform_callbacks cbs = {0};
	s->f = fopen(path, "wb");
	if (!s->f) {
		perror(path);
		exit(1);
	}
	s->step = step;
	cbs.fast_clock_get_value = clock_value;
	cbs.slow_clock_get_value = slow_clock_value;
	cbs.is_backend_full = backend_full;
	cbs.open_packet = open_packet;
	cbs.close_packet = close_packet;
	barectf_init(s->ctx, s->buf, PACKET, cbs, s);
	open_packet(s);
}

static void finish(struct stream *s)
{
	if (barectf_packet_is_open(s->ctx) && !barectf_packet_is_empty(s->ctx))
		close_packet(s);
	fclose(s->f);
}

int main(void)
{
	unsigned i;

	start(&cpu, "stream_cpu", 10000000); /* 10 ms */
	start(&rtc, "stream_rtc", 1000);     /* about 30.5 ms */
	for (i = 0; i < 60; i++) {
		barectf_cpu_trace_tick(&cpu_ctx, i);
		if (i % 3 == 0)
			barectf_rtc_trace_alarm(&rtc_ctx, i / 3, i % 2 ? "odd" : "even");
	}
	finish(&cpu);
	finish(&rtc);
	return 0;
}
