/* The 2015 paper's accuracy design (Table 1) in C: ten functions doing the same work per unit
 * (the same integer arithmetic per iteration, kept by `volatile`), called in rounds with 50,
 * 20, 15, 5, 5, 1, 1, 1, 1, 1 units each. The program measures its own CPU time in each
 * function (CLOCK_THREAD_CPUTIME_ID around each call) and prints it as JSON, with its elapsed
 * and CPU times: the oracle of profilers and the baseline of their overhead.
 *
 *   cc -O2 -g -fno-omit-frame-pointer -o shares bench/shares.c
 *   ./shares ROUNDS [UNIT_ITERATIONS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static const int SHARES[10] = {50, 20, 15, 5, 5, 1, 1, 1, 1, 1};

#define F(k)                                                   \
    __attribute__((noinline)) unsigned f##k(unsigned long n) { \
        volatile unsigned x = 1;                               \
        for (unsigned long i = 0; i < n; i++)                  \
            x = (x * 31 + 7) & 0xffff;                         \
        return x;                                              \
    }
F(0) F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(9)

static unsigned (*const FUNCS[10])(unsigned long) = {f0, f1, f2, f3, f4, f5, f6, f7, f8, f9};

static long long ns(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv) {
    long rounds = argc > 1 ? atol(argv[1]) : 200;
    unsigned long unit = argc > 2 ? strtoul(argv[2], NULL, 10) : 20000;
    long long spent[10] = {0};
    long long start = ns(CLOCK_MONOTONIC);
    unsigned sink = 0;
    for (long r = 0; r < rounds; r++)
        for (int k = 0; k < 10; k++) {
            long long a = ns(CLOCK_THREAD_CPUTIME_ID);
            sink += FUNCS[k](SHARES[k] * unit);
            spent[k] += ns(CLOCK_THREAD_CPUTIME_ID) - a;
        }
    long long total = 0;
    for (int k = 0; k < 10; k++) total += spent[k];
    printf("{\"rounds\": %ld, \"elapsed_ns\": %lld, \"process_cpu_ns\": %lld, \"sink\": %u, \"measured_pct\": {", rounds, ns(CLOCK_MONOTONIC) - start,
           ns(CLOCK_PROCESS_CPUTIME_ID), sink);
    for (int k = 0; k < 10; k++) printf("%s\"f%d\": %.4f", k ? ", " : "", k, 100.0 * spent[k] / total);
    printf("}}\n");
    return 0;
}
