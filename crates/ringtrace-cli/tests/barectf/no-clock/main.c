/* No clock: event headers hold only the id; events carry no time. */
#define DST default
#define SET_CLOCK(cbs, f) ((void)(f))
#include "platform.h"
int main(void)
{
	struct stream s;
	unsigned i;
	stream_open(&s, "stream");
	for (i = 0; i < 30; i++)
		barectf_trace_hello(&s.ctx, i, i % 2 ? "odd" : "even");
	stream_close(&s);
	return 0;
}
