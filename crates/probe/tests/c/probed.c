/*
 * A program with known probe counts (tests of tracelens-probe and `tracelens record
 * --probes`): WORKERS threads each emit ITERATIONS `work` events (value 0, 1, ...) and one
 * `worker_done` string event; then the main thread brackets ROUNDS getpid() system calls
 * with `before_getpid` / `after_getpid` (value: the round), emits one `text` event through
 * TL_PROBE_STRN, and writes its counts as the last line of stdout.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <tracelens/probe.h>

#define WORKERS 4
#define ITERATIONS 5000
#define ROUNDS 100

static void *worker(void *arg)
{
	char text[64];
	long k = (long)arg;
	for (int i = 0; i < ITERATIONS; i++)
		TL_PROBE_U64(work, i);
	snprintf(text, sizeof text, "worker %ld done", k);
	TL_PROBE_STR(worker_done, text);
	return NULL;
}

int main(void)
{
	pthread_t t[WORKERS];
	for (long k = 0; k < WORKERS; k++)
		if (pthread_create(&t[k], NULL, worker, (void *)k) != 0)
			return 1;
	for (int k = 0; k < WORKERS; k++)
		pthread_join(t[k], NULL);
	for (int r = 0; r < ROUNDS; r++) {
		TL_PROBE_U64(before_getpid, r);
		syscall(SYS_getpid);
		TL_PROBE_U64(after_getpid, r);
	}
	TL_PROBE_STRN(text, "abcdef", 3);
	TL_PROBE(main_done);
	printf("enabled=%d work=%d worker_done=%d before_getpid=%d after_getpid=%d text=1 main_done=1\n",
	       tl_probe_enabled(), WORKERS * ITERATIONS, WORKERS, ROUNDS, ROUNDS);
	return 0;
}
