/*
 * Requests with known times, for `tracelens threads` and `tracelens latency` tests: REQUESTS
 * times, `req_begin` (value: the request), about 1 ms of computing, a 2 ms sleep, `req_end`;
 * each request's duration measured by the program itself (CLOCK_MONOTONIC, read next to the
 * probes), after a first probe that makes the thread's buffer. Prints `cpu_ns=N main_cpu_ns=N
 * slept_ns=N` (this thread's CPU time at the end: since its creation, and since main began;
 * the sleep asked for in all), then one `request=I ns=N` line per request.
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <tracelens/probe.h>

#define REQUESTS 20

static uint64_t now(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int main(void)
{
	uint64_t took[REQUESTS];
	uint64_t main_cpu0 = now(CLOCK_THREAD_CPUTIME_ID);
	volatile uint64_t sink = 0;
	TL_PROBE(start); /* this thread's buffer is made at its first probe */
	for (int r = 0; r < REQUESTS; r++) {
		uint64_t t0 = now(CLOCK_MONOTONIC);
		TL_PROBE_U64(req_begin, r);
		uint64_t c0 = now(CLOCK_THREAD_CPUTIME_ID);
		while (now(CLOCK_THREAD_CPUTIME_ID) - c0 < 1000000)
			sink += 1;
		struct timespec ts = { 0, 2000000 };
		nanosleep(&ts, NULL);
		TL_PROBE_U64(req_end, r);
		took[r] = now(CLOCK_MONOTONIC) - t0;
	}
	uint64_t cpu = now(CLOCK_THREAD_CPUTIME_ID);
	printf("cpu_ns=%llu main_cpu_ns=%llu slept_ns=%llu\n", (unsigned long long)cpu, (unsigned long long)(cpu - main_cpu0),
	       (unsigned long long)REQUESTS * 2000000ull);
	for (int r = 0; r < REQUESTS; r++)
		printf("request=%d ns=%llu\n", r, (unsigned long long)took[r]);
	return (int)(sink & 0);
}
