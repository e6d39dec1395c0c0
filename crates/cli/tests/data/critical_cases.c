/* Programs with known critical paths, for crates/cli/tests/critical_path.rs.
 *
 *   critical_cases CASE OUT
 *
 * runs CASE and writes to OUT one `key value` line per fact the test needs: thread ids
 * (gettid), CLOCK_MONOTONIC times in ns (the clock `tracelens record` traces with, before its
 * offset), and CLOCK_THREAD_CPUTIME_ID times in ns. A thread's computing is a *phase*: `X_t0`
 * and `X_t1` (CLOCK_MONOTONIC) around it and `X_cpu`, the CPU time it used in between (read
 * inside [X_t0, X_t1]). No case relies on time passing: a thread that must be blocked before
 * another goes on is waited for (its flag set just before the blocking call, then its state in
 * /proc `S`).
 *
 *   sleep    the main thread sleeps 50 ms (nanosleep): `begin`, `end`, `tid`.
 *   pipes    A reads a pipe B writes, B reads a pipe C writes; once both are blocked, C
 *            computes 30 ms of CPU time (phase `c`) then writes, B computes 20 ms (phase `b`)
 *            then writes: `a`, `b`, `c`, A's `begin`/`end` around its read.
 *   futex    H holds a mutex; once W is blocked on it, H computes 40 ms (phase `h`) and
 *            unlocks: `h`, `w`, W's `begin`/`end` around pthread_mutex_lock.
 *   preempt  Y and a busy loop X, both pinned to CPU 0; once X spins, Y computes 100 ms of
 *            CPU time: `y`, `x`, Y's `begin`/`end` and `cpu_ns` (its CPU time in between).
 *   fsync    writes 8 MiB to DIR/data (OUT's directory) then fsyncs it: `tid`, `begin`/`end`
 *            around fsync.
 *   tcp      a server process and a client process over 127.0.0.1; once the server is
 *            blocked in recv(), the client sends a request, and the server computes 20 ms
 *            (phase `server`) before it answers: `client`, `server`, the client's
 *            `begin`/`end` around send + recv.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static FILE *out;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static long tid(void) { return (long)syscall(SYS_gettid); }

static int64_t now(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void put(const char *key, int64_t v) {
    pthread_mutex_lock(&out_lock);
    fprintf(out, "%s %lld\n", key, (long long)v);
    fflush(out);
    pthread_mutex_unlock(&out_lock);
}

/* Burns `ns` of this thread's CPU time. */
static void compute(int64_t ns) {
    int64_t until = now(CLOCK_THREAD_CPUTIME_ID) + ns;
    volatile uint64_t x = 1;
    while (now(CLOCK_THREAD_CPUTIME_ID) < until)
        for (int i = 0; i < 1000; i++) x = x * 6364136223846793005ULL + 1;
}

static void die(const char *what) { perror(what); exit(2); }

/* Computes `ns` of CPU time as phase `name`: `name_t0`, `name_t1`, `name_cpu`. */
static void phase(const char *name, int64_t ns) {
    char k[64];
    int64_t t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_THREAD_CPUTIME_ID);
    compute(ns);
    int64_t c1 = now(CLOCK_THREAD_CPUTIME_ID), t1 = now(CLOCK_MONOTONIC);
    snprintf(k, sizeof k, "%s_t0", name);
    put(k, t0);
    snprintf(k, sizeof k, "%s_t1", name);
    put(k, t1);
    snprintf(k, sizeof k, "%s_cpu", name);
    put(k, c1 - c0);
}

/* The state letter of thread `tid` of process `pid` (R, S, D...), from /proc. */
static char state(long pid, long tid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/task/%ld/stat", pid, tid);
    FILE *f = fopen(path, "r");
    if (!f) die(path);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* after the name, which may hold anything */
    return p && p[1] == ' ' ? p[2] : '?';
}

/* Waits until thread `tid` of `pid` has set `*ready` (just before a blocking call) and sleeps. */
static void wait_blocked(long pid, volatile long *tid, volatile int *ready) {
    struct timespec ms = {0, 1000000};
    while (!*ready || state(pid, *tid) != 'S') nanosleep(&ms, NULL);
}

/* ---- sleep ---- */
static int case_sleep(void) {
    struct timespec ts = {0, 50000000};
    put("tid", tid());
    put("begin", now(CLOCK_MONOTONIC));
    nanosleep(&ts, NULL);
    put("end", now(CLOCK_MONOTONIC));
    return 0;
}

/* ---- pipes ---- */
static int ab[2], bc[2];
static volatile long a_tid, b_tid;
static volatile int a_ready, b_ready;

static void *pipe_a(void *arg) {
    char c;
    (void)arg;
    a_tid = tid();
    put("a", a_tid);
    put("begin", now(CLOCK_MONOTONIC));
    a_ready = 1;
    if (read(ab[0], &c, 1) != 1) die("read");
    put("end", now(CLOCK_MONOTONIC));
    return NULL;
}

static void *pipe_b(void *arg) {
    char c;
    (void)arg;
    b_tid = tid();
    put("b", b_tid);
    b_ready = 1;
    if (read(bc[0], &c, 1) != 1) die("read");
    phase("b", 20000000);
    if (write(ab[1], "x", 1) != 1) die("write");
    return NULL;
}

static void *pipe_c(void *arg) {
    (void)arg;
    put("c", tid());
    phase("c", 30000000);
    if (write(bc[1], "x", 1) != 1) die("write");
    return NULL;
}

static int case_pipes(void) {
    pthread_t a, b, c;
    if (pipe(ab) || pipe(bc)) die("pipe");
    pthread_create(&a, NULL, pipe_a, NULL);
    pthread_create(&b, NULL, pipe_b, NULL);
    wait_blocked(getpid(), &a_tid, &a_ready); /* A and B block in read() */
    wait_blocked(getpid(), &b_tid, &b_ready);
    pthread_create(&c, NULL, pipe_c, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_join(c, NULL);
    return 0;
}

/* ---- futex ---- */
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t barrier;
static volatile long w_tid;
static volatile int w_ready;

static void *futex_h(void *arg) {
    (void)arg;
    put("h", tid());
    pthread_mutex_lock(&m);
    pthread_barrier_wait(&barrier);
    wait_blocked(getpid(), &w_tid, &w_ready); /* W blocks on the mutex */
    phase("h", 40000000);
    pthread_mutex_unlock(&m);
    return NULL;
}

static void *futex_w(void *arg) {
    (void)arg;
    w_tid = tid();
    put("w", w_tid);
    pthread_barrier_wait(&barrier);
    put("begin", now(CLOCK_MONOTONIC));
    w_ready = 1;
    pthread_mutex_lock(&m);
    put("end", now(CLOCK_MONOTONIC));
    pthread_mutex_unlock(&m);
    return NULL;
}

static int case_futex(void) {
    pthread_t h, w;
    pthread_barrier_init(&barrier, NULL, 2);
    pthread_create(&h, NULL, futex_h, NULL);
    pthread_create(&w, NULL, futex_w, NULL);
    pthread_join(h, NULL);
    pthread_join(w, NULL);
    return 0;
}

/* ---- preempt ---- */
static volatile int stop, spinning;

static void pin0(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    if (sched_setaffinity(0, sizeof set, &set)) die("sched_setaffinity");
}

static void *busy_x(void *arg) {
    volatile uint64_t x = 1;
    (void)arg;
    pin0();
    put("x", tid());
    spinning = 1;
    while (!stop) x = x * 6364136223846793005ULL + 1;
    return NULL;
}

static void *worker_y(void *arg) {
    struct timespec ms = {0, 1000000};
    (void)arg;
    pin0();
    put("y", tid());
    while (!spinning) nanosleep(&ms, NULL);
    int64_t begin = now(CLOCK_MONOTONIC), c0 = now(CLOCK_THREAD_CPUTIME_ID);
    compute(100000000);
    int64_t c1 = now(CLOCK_THREAD_CPUTIME_ID), end = now(CLOCK_MONOTONIC);
    put("begin", begin);
    put("end", end);
    put("cpu_ns", c1 - c0);
    return NULL;
}

static int case_preempt(void) {
    pthread_t x, y;
    pthread_create(&x, NULL, busy_x, NULL);
    pthread_create(&y, NULL, worker_y, NULL);
    pthread_join(y, NULL);
    stop = 1;
    pthread_join(x, NULL);
    return 0;
}

/* ---- fsync ---- */
static int case_fsync(const char *dir) {
    char path[4200];
    size_t size = 8 << 20;
    char *buf = malloc(size);
    uint64_t r = 88172645463325252ULL;
    if (!buf) die("malloc");
    for (size_t i = 0; i < size; i++) { r ^= r << 13; r ^= r >> 7; r ^= r << 17; buf[i] = (char)r; }
    snprintf(path, sizeof path, "%s/data", dir);
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    if (fd < 0) die("open");
    for (size_t off = 0; off < size;) {
        ssize_t n = write(fd, buf + off, size - off);
        if (n <= 0) die("write");
        off += (size_t)n;
    }
    put("tid", tid());
    put("begin", now(CLOCK_MONOTONIC));
    if (fsync(fd)) die("fsync");
    put("end", now(CLOCK_MONOTONIC));
    close(fd);
    unlink(path);
    free(buf);
    return 0;
}

/* ---- tcp ---- */
static void full(int fd, char *buf, size_t n, int sending) {
    for (size_t off = 0; off < n;) {
        ssize_t k = sending ? send(fd, buf + off, n - off, 0) : recv(fd, buf + off, n - off, 0);
        if (k <= 0) die(sending ? "send" : "recv");
        off += (size_t)k;
    }
}

static int case_tcp(void) {
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    socklen_t len = sizeof a;
    char buf[64];
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    /* The server's thread id and whether it is about to recv(), shared with the client. */
    volatile long *shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) die("mmap");
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 1) || getsockname(ls, (struct sockaddr *)&a, &len)) die("listen");
    pid_t pid = fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
        /* The server. */
        int s = accept(ls, NULL, NULL);
        if (s < 0) die("accept");
        shared[0] = tid();
        put("server", shared[0]);
        ((volatile int *)&shared[1])[0] = 1;
        full(s, buf, sizeof buf, 0);
        phase("server", 20000000);
        full(s, buf, sizeof buf, 1);
        close(s);
        _exit(0);
    }
    close(ls);
    int c = socket(AF_INET, SOCK_STREAM, 0);
    if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a)) die("connect");
    wait_blocked(pid, &shared[0], (volatile int *)&shared[1]); /* the server is blocked in recv() */
    memset(buf, 'q', sizeof buf);
    put("client", tid());
    put("begin", now(CLOCK_MONOTONIC));
    full(c, buf, sizeof buf, 1);
    full(c, buf, sizeof buf, 0);
    put("end", now(CLOCK_MONOTONIC));
    close(c);
    waitpid(pid, NULL, 0);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s sleep|pipes|futex|preempt|fsync|tcp OUT\n", argv[0]);
        return 2;
    }
    out = fopen(argv[2], "w");
    if (!out) die(argv[2]);
    const char *c = argv[1];
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", argv[2]);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0; else strcpy(dir, ".");
    int rc = !strcmp(c, "sleep") ? case_sleep()
           : !strcmp(c, "pipes") ? case_pipes()
           : !strcmp(c, "futex") ? case_futex()
           : !strcmp(c, "preempt") ? case_preempt()
           : !strcmp(c, "fsync") ? case_fsync(dir)
           : !strcmp(c, "tcp") ? case_tcp()
           : 2;
    fclose(out);
    return rc;
}
