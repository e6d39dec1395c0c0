#!/usr/bin/env bash
# The parallel curve of the analyses: each one at every thread count given, in one run.
#
#   bench/analyses-scaling.sh TRACE [ROUNDS] [THREADS...]
#
# TRACE: a kernel trace of at least 1 GB, e.g. made by
#   tracelens synth -o /tmp/synth-1g --cpus 4 --threads 32 --events 48000000 --seed 1
# (on a many-core machine, in /dev/shm: --cpus 32 --threads 800 --events 96000000 --seed 3).
# THREADS: the `-j` values (default `1 2`; e.g. `1 2 4 8 16`); the first one is the base of
# the speed-ups (put 1 first). ANALYSES (environment, default `stats cpu irq syscalls sched threads
# io`): which to run. TRACELENS: the binary (default target/release/tracelens).
#
# For every analysis, ROUNDS rounds (default 3) run it once at each thread count in turn, the
# trace's files read once before each round (so that every run finds them in the page cache),
# with `--timings`. Prints a markdown table, one row per analysis and thread count: the lowest
# wall time and the lowest CPU time (user + sys) over the rounds; the speed-up
# wall(base) / wall(-j N) and the efficiency speed-up / N (N / base); the serial fraction of
# the run with the lowest wall time (`--timings`: serial_ns / (serial_ns + parallel_cpu_ns),
# serial_ns being the wall time of the phases one thread does alone) and the same from CPU
# times (serial_cpu_ns instead of serial_ns: steadier on a loaded machine); the highest peak
# resident set (GNU time's %M, or getrusage where GNU time is missing) over the rounds. At the base the serial fraction bounds the
# speed-up on n threads (Amdahl): 1 / (s + (1 - s) / n).
set -euo pipefail
trace=${1:?kernel trace dir}; rounds=${2:-3}; shift $(( $# >= 2 ? 2 : $# ))
threads=("$@"); [ ${#threads[@]} -gt 0 ] || threads=(1 2)
analyses=${ANALYSES:-stats cpu irq syscalls sched threads io}
tl=${TRACELENS:-target/release/tracelens}
[ -x "$tl" ] || { echo "$0: build tracelens first (cargo build --release)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "$0: python3 is needed to read --timings" >&2; exit 1; }
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
# run ANALYSIS J ROUND: one run; its GNU time line and its --timings line kept in $dir.
run() {
    "$(dirname "$0")/gnu-time.sh" "$dir/time" "$tl" "$1" -j "$2" --timings "$trace" >/dev/null 2>"$dir/err" ||
        { echo "$0: $tl $1 -j $2 failed:" >&2; cat "$dir/err" >&2; exit 1; }
    echo "$1 $2 $(cat "$dir/time") $(grep '^{' "$dir/err" | tail -1)" >>"$dir/runs"
}
for a in $analyses; do
    for _ in $(seq "$rounds"); do
        find "$trace" -type f -exec cat {} + >/dev/null
        for j in "${threads[@]}"; do run "$a" "$j"; done
    done
done
# RUNS_OUT (environment): a file to append every run's line to (analysis, -j, wall, user,
# sys, max RSS kB, the --timings JSON), for a closer look afterwards.
if [ -n "${RUNS_OUT:-}" ]; then cat "$dir/runs" >>"$RUNS_OUT"; fi
python3 - "$dir/runs" <<'EOF'
import json, sys
runs = {}
for line in open(sys.argv[1]):
    a, j, wall, user, sys_, rss, t = line.split(' ', 6)
    runs.setdefault(a, {}).setdefault(int(j), []).append(
        dict(wall=float(wall), cpu=float(user) + float(sys_), rss=int(rss), t=json.loads(t)))
print('| analysis | -j | wall s | CPU s | speed-up | efficiency | serial fraction (wall) | serial fraction (CPU) | peak RSS MB |')
print('|---|---|---|---|---|---|---|---|---|')
for a, by_j in runs.items():
    base_j = next(iter(by_j))
    base = min(r['wall'] for r in by_j[base_j])
    for j, rs in by_j.items():
        best = min(rs, key=lambda r: r['wall'])
        t = best['t']
        sw = t['serial_fraction']
        sc = t['serial_cpu_ns'] / max(1, t['serial_cpu_ns'] + t['parallel_cpu_ns'])
        up = base / best['wall']
        print(f"| `{a}` | {j} | {best['wall']:.2f} | {min(r['cpu'] for r in rs):.2f} | {up:.2f}× | "
              f"{up * base_j / j:.2f} | {100 * sw:.2f}% | {100 * sc:.2f}% | {max(r['rss'] for r in rs) / 1000:.0f} |")
EOF
