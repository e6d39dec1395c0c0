/* Workloads for bench/stacks-cost.sh.
 *   stacks-cost burn N      N iterations of a CPU loop; prints the loop's elapsed ns
 *   stacks-cost pingpong N  N round trips of one byte between two processes over pipes
 *                           (each one blocks in read twice); prints the elapsed ns */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

static long long now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

__attribute__((noinline)) static unsigned long inner(unsigned long i) { return i * i ^ (i >> 3); }

__attribute__((noinline)) static unsigned long burn(unsigned long n) {
    volatile unsigned long x = 0;
    for (unsigned long i = 0; i < n; i++) x += inner(i);
    return x;
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    unsigned long n = strtoul(argv[2], 0, 10);
    long long t0 = now();
    if (strcmp(argv[1], "burn") == 0) {
        burn(n);
    } else {
        int a[2], b[2];
        char c = 'x';
        if (pipe(a) || pipe(b)) return 1;
        pid_t k = fork();
        if (k == 0) {
            for (unsigned long i = 0; i < n; i++) {
                if (read(a[0], &c, 1) != 1 || write(b[1], &c, 1) != 1) _exit(1);
            }
            _exit(0);
        }
        for (unsigned long i = 0; i < n; i++) {
            if (write(a[1], &c, 1) != 1 || read(b[0], &c, 1) != 1) return 1;
        }
        waitpid(k, 0, 0);
    }
    printf("%lld\n", now() - t0);
    return 0;
}
