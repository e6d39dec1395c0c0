#!/usr/bin/env bash
# Parallel efficiency of the analyses: each one with -j 1 and with -j N on the same trace, in
# one run.
#
#   bench/analyses-scaling.sh TRACE [ROUNDS] [N]
#
# TRACE: a kernel trace of at least 1 GB, e.g. made by
#   tracelens synth -o /tmp/synth-1g --cpus 4 --threads 32 --events 48000000 --seed 1
# For every analysis, ROUNDS rounds (default 3) alternate `-j 1` and `-j N` (default 2), the
# trace's files read once before each round (so that both find them in the page cache). Prints
# a markdown table: the lowest wall time and the lowest CPU time (user + sys) of each, and the
# efficiency wall(-j 1) / (N × wall(-j N)) — and the same with CPU times, which says how much
# work the threads add (1.0: none).
set -euo pipefail
trace=${1:?kernel trace dir}; rounds=${2:-3}; n=${3:-2}
tl=${TRACELENS:-target/release/tracelens}
[ -x "$tl" ] || { echo "$0: build tracelens first (cargo build --release)" >&2; exit 1; }
tmp=$(mktemp); trap 'rm -f "$tmp"' EXIT
# run ANALYSIS J: prints "wall cpu" in seconds.
run() {
    /usr/bin/time -f '%e %U %S' -o "$tmp" "$tl" "$1" -j "$2" "$trace" >/dev/null
    awk '{ printf "%s %.2f\n", $1, $2 + $3 }' "$tmp"
}
min() { awk -v a="$1" -v b="$2" 'BEGIN { print (a == "" || b < a) ? b : a }'; }
printf '| analysis | -j 1 wall s | -j %s wall s | efficiency (wall) | -j 1 CPU s | -j %s CPU s | efficiency (CPU) |\n|---|---|---|---|---|---|---|\n' "$n" "$n"
for a in cpu sched io syscalls irq; do
    w1= c1= wn= cn=
    for _ in $(seq "$rounds"); do
        find "$trace" -type f -exec cat {} + >/dev/null
        read -r w c < <(run "$a" 1); w1=$(min "$w1" "$w"); c1=$(min "$c1" "$c")
        read -r w c < <(run "$a" "$n"); wn=$(min "$wn" "$w"); cn=$(min "$cn" "$c")
    done
    awk -v a="$a" -v n="$n" -v w1="$w1" -v wn="$wn" -v c1="$c1" -v cn="$cn" \
        'BEGIN { printf "| `tracelens %s` | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", a, w1, wn, w1 / (n * wn), c1, cn, c1 / cn }'
done
