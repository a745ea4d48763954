/* The tracepoint provider, compiled into the workload. */
#define TRACEPOINT_CREATE_PROBES
#define TRACEPOINT_DEFINE
#include "tp.h"
