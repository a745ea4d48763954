/* bit-packed fields of 1 to 33 bits, arrays of nibbles and of 5-bit
 * signed integers, a 3-bit enumeration, then a byte-aligned word. */
#define DST default
#define SET_CLOCK(cbs, f) ((cbs).default_clock_get_value = (f))
#include "platform.h"

int main(void)
{
	struct stream s;
	unsigned i;

	stream_open(&s, "stream");
	for (i = 0; i < 40; i++) {
		uint8_t nib[5] = {i & 15, (i + 1) & 15, 15, 0, (i * 7) & 15};
		int8_t bits[4] = {-16, 15, (int8_t)(i % 32) - 16, -1};
		barectf_trace_packed(&s.ctx, i & 1, (int8_t)(i % 8) - 4, (uint16_t)(i * 97 & 0xfff),
				     (1ull << 32) + i * 12345, nib, (uint8_t)(i % 8), i % 5, bits,
				     (uint16_t)(60000 + i));
	}
	stream_close(&s);
	return 0;
}
