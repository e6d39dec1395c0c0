/*
 * Cost of one probe event: THREADS threads each emit BATCHES batches of BATCH events
 * (`value` = the loop index), timing each batch with the thread's CPU clock (time off the CPU
 * does not count), and pausing PAUSE_US microseconds between batches so that the consumer
 * keeps up (no event is lost). Prints the median, 10th and 90th percentile of ns per event
 * over every batch of every thread.
 *
 * Built several ways (see ../probe-cost.sh): -DTL (TL_PROBE_U64 from tracelens/probe.h),
 * -DLTTNG (an LTTng-UST tracepoint with one uint64 field, tp.h), and the parts of a probe's
 * cost: -DRDTSC (reading the time-stamp counter), -DCLOCK (clock_gettime(CLOCK_MONOTONIC)),
 * none of these (the bare loop).
 *
 * usage: probe_cost THREADS BATCHES BATCH PAUSE_US
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#if defined(TL)
#include <tracelens/probe.h>
#define PROBE(i) TL_PROBE_U64(ev, i)
#elif defined(LTTNG)
#define LTTNG_UST_TRACEPOINT_DEFINE
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#include "tp.h"
#define PROBE(i) lttng_ust_tracepoint(tlbench, ev, i)
#elif defined(RDTSC)
#include <x86intrin.h>
#define PROBE(i) __asm__ volatile("" ::"r"(__rdtsc()))
#elif defined(CLOCK)
#define PROBE(i)                                                     \
	do {                                                         \
		struct timespec ts_;                                 \
		clock_gettime(CLOCK_MONOTONIC, &ts_);                \
		__asm__ volatile("" ::"r"(ts_.tv_nsec), "r"(i));     \
	} while (0)
#else
#define PROBE(i) __asm__ volatile("" ::"r"(i))
#endif

static long batches, batch, pause_us;

static uint64_t cpu_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void *run(void *arg)
{
	double *out = arg;
	for (long b = 0; b < batches; b++) {
		uint64_t t0 = cpu_ns();
		for (uint64_t i = 0; i < (uint64_t)batch; i++)
			PROBE(i);
		uint64_t t1 = cpu_ns();
		out[b] = (double)(t1 - t0) / (double)batch;
		if (pause_us)
			usleep(pause_us);
	}
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: %s THREADS BATCHES BATCH PAUSE_US\n", argv[0]);
		return 2;
	}
	long threads = atol(argv[1]);
	batches = atol(argv[2]);
	batch = atol(argv[3]);
	pause_us = atol(argv[4]);
	double *ns = calloc((size_t)(threads * batches), sizeof *ns);
	pthread_t *t = calloc((size_t)threads, sizeof *t);
	for (long k = 0; k < threads; k++)
		pthread_create(&t[k], NULL, run, ns + k * batches);
	for (long k = 0; k < threads; k++)
		pthread_join(t[k], NULL);
	long n = threads * batches;
	qsort(ns, (size_t)n, sizeof *ns, cmp);
	printf("%.2f %.2f %.2f\n", ns[n / 2], ns[n / 10], ns[n * 9 / 10]);
	return 0;
}
