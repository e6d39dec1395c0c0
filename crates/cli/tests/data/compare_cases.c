/* The four case studies of the TraceCompare thesis (2015, section 4.5), as small programs
 * whose requests are `handle_request` calls, some of them slow for a known reason:
 *
 *   cpu    a periodic higher-priority task ("hog", SCHED_FIFO, 30 Hz, 4 ms of work) on the
 *          request thread's CPU (a real-time task at 100 Hz, 2 ms of work per request);
 *   disk   another thread ("logger") writes 32 MiB to a log and fsyncs it every 250 ms while
 *          requests read 16 KiB with O_DIRECT from a data file (DIR must be on a real disk);
 *   lock   another thread ("journal") holds the mutex requests take while it runs a costly
 *          function (8 ms, every 60 ms);
 *   sleep  every tenth request sleeps 4 ms in maybe_sleep.
 *
 * The request thread (and the lock case's journal) run SCHED_FIFO, so that the other work
 * of a busy machine does not preempt them: each case has one reason for its slow requests.
 *
 * Usage: compare_cases CASE DIR. Prints nothing; exit status 0.
 * Build: cc -O1 -g -fno-omit-frame-pointer -pthread -o compare_cases compare_cases.c
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static volatile int stop;
static unsigned long units_per_ms = 100000;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char dir[4096];
static int data_fd = -1;
static void *buf;

static long long now_ns(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* A fixed amount of CPU work (not of time: preemption makes it last longer). */
__attribute__((noinline)) static void work_units(unsigned long n) {
    unsigned long x = sink;
    for (unsigned long i = 0; i < n; i++)
        x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink = x;
}

static void calibrate(void) {
    unsigned long n = 200000;
    for (;;) {
        long long t0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
        work_units(n);
        long long dt = now_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
        if (dt > 20000000) {
            units_per_ms = (unsigned long)((double)n * 1e6 / (double)dt);
            return;
        }
        n *= 2;
    }
}

static void sleep_until(long long t) {
    struct timespec ts = {t / 1000000000LL, t % 1000000000LL};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
    }
}

static void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    sched_setaffinity(0, sizeof s, &s);
}

static void fifo(int prio) {
    struct sched_param p = {.sched_priority = prio};
    sched_setscheduler(0, SCHED_FIFO, &p);
}

/* --- cpu --- */
__attribute__((noinline)) static void hog_spin(void) { work_units(4 * units_per_ms); }

static void *hog(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "hog");
    pin(0);
    fifo(20);
    long long t = now_ns(CLOCK_MONOTONIC) + 7000000;
    while (!stop) {
        sleep_until(t);
        hog_spin();
        t += 33333333;
    }
    return NULL;
}

__attribute__((noinline)) static void compute_answer(void) { work_units(2 * units_per_ms); }

/* --- disk --- */
__attribute__((noinline)) static void write_log(int fd) {
    static char block[1 << 20];
    memset(block, 'x', sizeof block);
    for (int i = 0; i < 32; i++)
        if (write(fd, block, sizeof block) < 0)
            return;
}

__attribute__((noinline)) static void flush_log(int fd) { fsync(fd); }

static void *logger(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "logger");
    char path[4200];
    snprintf(path, sizeof path, "%s/log", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    long long t = now_ns(CLOCK_MONOTONIC) + 50000000;
    while (!stop && fd >= 0) {
        sleep_until(t);
        write_log(fd);
        flush_log(fd);
        t += 250000000;
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

#define DATA_BYTES (32 << 20)

__attribute__((noinline)) static void read_record(unsigned i) {
    off_t off = (off_t)((i * 2654435761u) % (DATA_BYTES / 16384)) * 16384;
    if (pread(data_fd, buf, 16384, off) < 0)
        sink++;
}

/* --- lock --- */
__attribute__((noinline)) static void costly_journal(void) { work_units(8 * units_per_ms); }

static void *journal(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "journal");
    fifo(5);
    long long t = now_ns(CLOCK_MONOTONIC) + 5000000;
    while (!stop) {
        sleep_until(t);
        pthread_mutex_lock(&lock);
        costly_journal();
        pthread_mutex_unlock(&lock);
        t += 60000000;
    }
    return NULL;
}

__attribute__((noinline)) static void lookup(void) {
    pthread_mutex_lock(&lock);
    work_units(units_per_ms / 4);
    pthread_mutex_unlock(&lock);
}

/* --- sleep --- */
__attribute__((noinline)) static void maybe_sleep(unsigned i) {
    if (i % 10 == 7)
        usleep(4000);
}

static const char *which;

__attribute__((noinline)) void handle_request(unsigned i) {
    if (!strcmp(which, "cpu")) {
        compute_answer();
    } else if (!strcmp(which, "disk")) {
        read_record(i);
    } else if (!strcmp(which, "lock")) {
        lookup();
    } else {
        work_units(units_per_ms);
        maybe_sleep(i);
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s cpu|disk|lock|sleep DIR\n", argv[0]);
        return 2;
    }
    which = argv[1];
    snprintf(dir, sizeof dir, "%s", argv[2]);
    calibrate();
    fifo(10);
    pthread_t helper;
    void *(*start)(void *) = NULL;
    unsigned requests = 200;
    long long period = 5000000;
    if (!strcmp(which, "cpu")) {
        pin(0);
        start = hog;
        requests = 250;
        period = 10000000;
    } else if (!strcmp(which, "disk")) {
        char path[4200];
        snprintf(path, sizeof path, "%s/data", dir);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        static char block[1 << 20];
        memset(block, 'd', sizeof block);
        for (int k = 0; k < DATA_BYTES >> 20; k++)
            if (write(fd, block, sizeof block) < 0)
                return 1;
        fsync(fd);
        close(fd);
        data_fd = open(path, O_RDONLY | O_DIRECT);
        if (data_fd < 0 || posix_memalign(&buf, 4096, 16384) != 0)
            return 1;
        start = logger;
        requests = 300;
    } else if (!strcmp(which, "lock")) {
        start = journal;
        period = 3000000;
        requests = 300;
    } else if (strcmp(which, "sleep") != 0) {
        fprintf(stderr, "unknown case %s\n", which);
        return 2;
    }
    if (start)
        pthread_create(&helper, NULL, start, NULL);
    long long t = now_ns(CLOCK_MONOTONIC) + 20000000;
    for (unsigned i = 0; i < requests; i++) {
        sleep_until(t);
        handle_request(i);
        t += period;
    }
    stop = 1;
    if (start)
        pthread_join(helper, NULL);
    return 0;
}
