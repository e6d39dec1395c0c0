/* mallocloop N T: T threads, each doing N iterations of malloc(16..4111) + write + free.
 * Under LD_PRELOAD=liblttng-ust-libc-wrapper.so.1 every iteration emits
 * lttng_ust_libc:malloc and lttng_ust_libc:free (2*N*T events). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static long n_iter;
static volatile unsigned char sink;

static void *worker(void *arg)
{
	unsigned long seed = (unsigned long)arg;
	for (long i = 0; i < n_iter; i++) {
		volatile unsigned char *p = malloc(16 + (size_t)((i * 37 + seed) % 4096));
		if (!p) abort();
		p[0] = (unsigned char)i;          /* touch it so the pair is not elided */
		sink = p[0];
		free((void *)p);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	n_iter = argc > 1 ? atol(argv[1]) : 1000;
	int t = argc > 2 ? atoi(argv[2]) : 1;
	if (n_iter < 0 || t < 1 || t > 1024) { fprintf(stderr, "usage: mallocloop N T\n"); return 2; }
	pthread_t th[1024];
	for (int k = 0; k < t; k++)
		if (pthread_create(&th[k], NULL, worker, (void *)(unsigned long)k)) abort();
	for (int k = 0; k < t; k++)
		pthread_join(th[k], NULL);
	return 0;
}
