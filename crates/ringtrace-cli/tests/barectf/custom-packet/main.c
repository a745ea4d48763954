/* A packet header without magic (a uuid and an 8-bit stream id), a packet
 * context with extra members (node_id, cpu_id) and without an end time,
 * a 16-bit timestamp in event headers (wrapping: the reader extends it),
 * a common event context and an event's own context. */
#define DST node
#define SET_CLOCK(cbs, f) ((cbs).default_clock_get_value = (f))
#define OPEN_ARGS , 7, 1
#define STEP 9000
#define CLOCK_T uint32_t
#define PACKET 256
#include "platform.h"

int main(void)
{
	struct stream s;
	unsigned i;

	stream_open(&s, "stream");
	for (i = 0; i < 50; i++)
		barectf_trace_msg(&s.ctx, (int32_t)(1000 + i % 4), (uint8_t)(i % 5), i,
				  i % 7 ? "hello" : "a longer message that fills the packet sooner");
	stream_close(&s);
	return 0;
}
