/*
 * tracelens user-space probes for C and C++.
 *
 *   #include <tracelens/probe.h>
 *
 *   TL_PROBE(request_begin);                 event `request_begin`, no fields
 *   TL_PROBE_U64(bytes_read, n);             event `bytes_read { value = n }` (uint64)
 *   TL_PROBE_STR(route, path);               event `route { value = "..." }` (string)
 *   TL_PROBE_STRN(route, buf, len);          the same from `len` bytes at `buf`
 *
 * `name` is a C identifier; it becomes the event's name. Build with
 *   cc -I crates/probe/include prog.c -L target/release -ltracelens_probe
 * and run with LD_LIBRARY_PATH=target/release (or install libtracelens_probe.so where the
 * loader looks).
 *
 * Probes write only when the environment variable TRACELENS_PROBE_DIR names a directory
 * (`tracelens record --probes -- prog` sets it): a trace PROCNAME-PID is written in it, one
 * CTF stream per thread, read by `tracelens print` and babeltrace2. Otherwise a probe costs a
 * relaxed load and a branch, and its arguments are not evaluated. Each thread writes into a
 * lock-free buffer of its own (TRACELENS_PROBE_BUFFER bytes, default 1M); when it is full,
 * events are dropped and counted as discarded events, and the program never waits. Events
 * are written at exit (atexit) and when a thread ends; call tl_probe_flush() before
 * _exit() or abort() to keep what was probed until then.
 */
#ifndef TRACELENS_PROBE_H
#define TRACELENS_PROBE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One per probe call site (a static made by the macros below). */
struct tl_probe_site {
	const char *name;  /* the event name */
	uint32_t id;       /* set by the library at the site's first event */
	uint32_t reserved;
};

/* 0: not decided yet, 1: off, 2: on. Tested inline by the macros. */
extern int tl_probe_state;

void tl_probe_emit(const struct tl_probe_site *site);
void tl_probe_emit_u64(const struct tl_probe_site *site, uint64_t value);
void tl_probe_emit_str(const struct tl_probe_site *site, const char *text);
void tl_probe_emit_strn(const struct tl_probe_site *site, const char *text, size_t len);
/* 1 when probes write (deciding from the environment on the first call), else 0. */
int tl_probe_enabled(void);
/* Writes every event probed so far to the trace files, and waits until it is done. */
void tl_probe_flush(void);

#define TL_PROBE_MAYBE_ON_() __builtin_expect(__atomic_load_n(&tl_probe_state, __ATOMIC_RELAXED) != 1, 0)

#define TL_PROBE_SITE_(name) static struct tl_probe_site tl_probe_site_ = { #name, 0, 0 }

#define TL_PROBE(name) \
	do { \
		TL_PROBE_SITE_(name); \
		if (TL_PROBE_MAYBE_ON_()) \
			tl_probe_emit(&tl_probe_site_); \
	} while (0)

#define TL_PROBE_U64(name, value) \
	do { \
		TL_PROBE_SITE_(name); \
		if (TL_PROBE_MAYBE_ON_()) \
			tl_probe_emit_u64(&tl_probe_site_, (uint64_t)(value)); \
	} while (0)

#define TL_PROBE_STR(name, text) \
	do { \
		TL_PROBE_SITE_(name); \
		if (TL_PROBE_MAYBE_ON_()) \
			tl_probe_emit_str(&tl_probe_site_, (text)); \
	} while (0)

#define TL_PROBE_STRN(name, text, len) \
	do { \
		TL_PROBE_SITE_(name); \
		if (TL_PROBE_MAYBE_ON_()) \
			tl_probe_emit_strn(&tl_probe_site_, (text), (len)); \
	} while (0)

#ifdef __cplusplus
}
#endif

#endif /* TRACELENS_PROBE_H */
