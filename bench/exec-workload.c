/* A file server's request loop, for `bench/executions-build.sh`: WORKERS threads serve
 * requests back to back for SECONDS. A request (`handle_request`) parses (30 µs of work),
 * reads a 64 KiB file region in 4 KiB preads from a 64 MiB file in the page cache, checksums
 * it, writes a log line to /dev/null; one in 30 also takes a lock shared by the workers for
 * 300 µs of work, one in 50 sleeps 1 ms.
 *
 * Usage: exec-workload DIR WORKERS SECONDS
 * Build: cc -O2 -g -fno-omit-frame-pointer -pthread -o exec-workload exec-workload.c
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FILE_BYTES (64 << 20)
static int data_fd, null_fd;
static volatile int stop;
static volatile unsigned long sink;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long units_per_us = 100;

__attribute__((noinline)) static void work_units(unsigned long n) {
    unsigned long x = sink;
    for (unsigned long i = 0; i < n; i++)
        x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink = x;
}

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

__attribute__((noinline)) static void parse_request(void) { work_units(30 * units_per_us); }

__attribute__((noinline)) static unsigned long read_region(unsigned long id, char *buf) {
    off_t base = (off_t)((id * 2654435761u) % (FILE_BYTES / 65536)) * 65536;
    unsigned long sum = 0;
    for (int k = 0; k < 16; k++) {
        if (pread(data_fd, buf, 4096, base + k * 4096) != 4096)
            return 0;
        for (int j = 0; j < 4096; j += 64)
            sum += (unsigned char)buf[j];
    }
    return sum;
}

__attribute__((noinline)) static void update_stats(void) {
    pthread_mutex_lock(&lock);
    work_units(300 * units_per_us);
    pthread_mutex_unlock(&lock);
}

__attribute__((noinline)) static void log_line(unsigned long id, unsigned long sum) {
    char line[128];
    int n = snprintf(line, sizeof line, "request %lu sum %lu\n", id, sum);
    if (write(null_fd, line, (size_t)n) < 0)
        sink++;
}

__attribute__((noinline)) void handle_request(unsigned long id, char *buf) {
    parse_request();
    unsigned long sum = read_region(id, buf);
    if (id % 30 == 7)
        update_stats();
    if (id % 50 == 11)
        usleep(1000);
    log_line(id, sum);
}

static void *worker(void *arg) {
    unsigned long id = (unsigned long)arg;
    char *buf = malloc(4096);
    while (!stop) {
        handle_request(id, buf);
        id += 64;
    }
    free(buf);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s DIR WORKERS SECONDS\n", argv[0]);
        return 2;
    }
    long long t0 = now_ns();
    work_units(10000000);
    units_per_us = (unsigned long)(10000000.0 / ((now_ns() - t0) / 1e3));
    char path[4096];
    snprintf(path, sizeof path, "%s/exec-workload.data", argv[1]);
    data_fd = open(path, O_RDWR | O_CREAT, 0644);
    static char block[1 << 20];
    memset(block, 'w', sizeof block);
    for (int i = 0; i < FILE_BYTES >> 20; i++)
        if (pwrite(data_fd, block, sizeof block, (off_t)i << 20) < 0)
            return 1;
    null_fd = open("/dev/null", O_WRONLY);
    int workers = atoi(argv[2]);
    pthread_t t[64];
    for (int i = 0; i < workers && i < 64; i++)
        pthread_create(&t[i], NULL, worker, (void *)(unsigned long)i);
    sleep((unsigned)atoi(argv[3]));
    stop = 1;
    for (int i = 0; i < workers && i < 64; i++)
        pthread_join(t[i], NULL);
    return 0;
}
