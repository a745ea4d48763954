/* A big-endian target's trace (barectf writes the target's byte order):
 * integers of every size and display base, a 1-bit and a 7-bit field,
 * reals, a string, a signed enumeration. */
#define DST be
#define SET_CLOCK(cbs, f) ((cbs).sys_clock_get_value = (f))
#define STEP 1234567
#include "platform.h"

int main(void)
{
	struct stream s;
	int i;

	stream_open(&s, "stream");
	for (i = 0; i < 24; i++) {
		barectf_trace_sample(&s.ctx, (uint8_t)(200 + i), (int16_t)(-300 * i), 70000u * i,
				     -1234567890123ll * i, 0xdeadbeefu - i, (uint16_t)(0755 + i), i & 1,
				     (int8_t)(i * 5 - 60), i / 3.0, -i * 0.25f, i % 3 ? "big" : "endian");
		barectf_trace_mode(&s.ctx, (int16_t)(i * 11 - 120));
	}
	stream_close(&s);
	return 0;
}
