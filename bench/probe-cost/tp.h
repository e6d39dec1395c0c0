/* The LTTng-UST tracepoint the probe-cost benchmark compares with: one uint64 field, as
 * TL_PROBE_U64. */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER tlbench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./tp.h"

#if !defined(TLBENCH_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define TLBENCH_TP_H

#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(tlbench, ev,
	LTTNG_UST_TP_ARGS(uint64_t, v),
	LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(uint64_t, value, v)))

#endif

#include <lttng/tracepoint-event.h>
