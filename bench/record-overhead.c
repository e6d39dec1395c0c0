/* Workloads of bench/record-overhead.sh, each timing itself (CLOCK_MONOTONIC around its loop)
 * and writing the elapsed ns to OUT (not stdout: some recorders write there).
 *
 *   record-overhead getpid N OUT     N getpid system calls (syscall(SYS_getpid), never cached)
 *   record-overhead pingpong N OUT   two threads passing a byte through two pipes, N round trips
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int ab[2], ba[2];
static long n;

static void *echo(void *arg) {
    (void)arg;
    char c;
    for (long i = 0; i < n; i++)
        if (read(ab[0], &c, 1) != 1 || write(ba[1], &c, 1) != 1) exit(1);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s getpid|pingpong N OUT\n", argv[0]);
        return 2;
    }
    n = atol(argv[2]);
    long long t0, t1;
    if (!strcmp(argv[1], "getpid")) {
        t0 = now_ns();
        for (long i = 0; i < n; i++) syscall(SYS_getpid);
        t1 = now_ns();
    } else if (!strcmp(argv[1], "pingpong")) {
        pthread_t t;
        if (pipe(ab) || pipe(ba) || pthread_create(&t, 0, echo, 0)) return 1;
        char c = 'x';
        t0 = now_ns();
        for (long i = 0; i < n; i++)
            if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1) return 1;
        t1 = now_ns();
        pthread_join(t, 0);
    } else {
        return 2;
    }
    FILE *f = fopen(argv[3], "w");
    if (!f) return 1;
    fprintf(f, "%lld\n", t1 - t0);
    return fclose(f) ? 1 : 0;
}
