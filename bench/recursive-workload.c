/* Recursive calls, for `executions --function` on a function that calls itself: WORKERS
 * threads each call `walk(DEPTH)` back to back for SECONDS. A call of `walk` works 20 µs,
 * calls `walk` one level down (the deepest level instead sleeps 300 µs one time in 8, else
 * reads 16 KiB of a file in the page cache), then works 5 µs more: each top call holds
 * DEPTH nested calls, and the executions of one thread nest DEPTH + 1 deep.
 *
 * Usage: recursive-workload FILE WORKERS DEPTH SECONDS
 * Build: cc -O2 -g -fno-omit-frame-pointer -pthread -o recursive-workload recursive-workload.c
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int fd;
static int depth_top;
static volatile int stop;
static volatile unsigned long sink;

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

__attribute__((noinline)) static void work_us(double us) {
    double end = now_us() + us;
    unsigned long x = sink;
    while (now_us() < end)
        for (int i = 0; i < 100; i++)
            x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink = x;
}

__attribute__((noinline)) int walk(int depth, unsigned *seed) {
    int r = 0;
    work_us(20);
    if (depth > 0) {
        r = walk(depth - 1, seed);
    } else if (rand_r(seed) % 8 == 0) {
        usleep(300);
    } else {
        char buf[16384];
        r = (int)pread(fd, buf, sizeof buf, (off_t)(rand_r(seed) % 1024) * 4096);
    }
    work_us(5);
    return r + 1;
}

static void *worker(void *arg) {
    unsigned seed = (unsigned)(unsigned long)arg;
    while (!stop)
        sink += (unsigned long)walk(depth_top, &seed);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s FILE WORKERS DEPTH SECONDS\n", argv[0]);
        return 2;
    }
    fd = open(argv[1], O_RDONLY);
    if (fd < 0) {
        perror(argv[1]);
        return 1;
    }
    int workers = atoi(argv[2]);
    depth_top = atoi(argv[3]);
    pthread_t t[64];
    if (workers < 1 || workers > 64 || depth_top < 0) {
        fprintf(stderr, "%s: WORKERS must be 1 to 64 and DEPTH at least 0\n", argv[0]);
        return 2;
    }
    for (int i = 0; i < workers; i++)
        pthread_create(&t[i], NULL, worker, (void *)(unsigned long)(i + 1));
    sleep((unsigned)atoi(argv[4]));
    stop = 1;
    for (int i = 0; i < workers; i++)
        pthread_join(t[i], NULL);
    return 0;
}
