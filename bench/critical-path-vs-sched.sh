#!/usr/bin/env bash
# The critical path of one thread over a whole trace against `tracelens sched` on the same
# trace at the same -j, in one run.
#
#   bench/critical-path-vs-sched.sh TRACE TID [ROUNDS] [JOBS...]
#
# TRACE: a kernel trace, e.g. the 1.08 GB synth trace made by
#   tracelens synth -o /tmp/synth-1g --cpus 4 --threads 32 --events 48000000 --seed 1
# (TID 1000 is its first thread, alive all along). For each -j (default: 1 2), ROUNDS rounds
# (default 3) alternate `tracelens sched -j J TRACE` and `tracelens critical-path -j J TRACE
# --tid TID` (text output to /dev/null), the trace's files read once before each round so that
# both find them in the page cache. Prints a markdown table: the lowest wall and CPU (user +
# sys) time of each, the ratio critical-path / sched, and critical-path's events per second
# (events from `tracelens stats --json`, wall time).
set -euo pipefail
trace=${1:?kernel trace dir}; tid=${2:?thread id}; rounds=${3:-3}; shift $(( $# < 3 ? $# : 3 ))
jobs=("$@"); [ ${#jobs[@]} -gt 0 ] || jobs=(1 2)
tl=${TRACELENS:-target/release/tracelens}
[ -x "$tl" ] || { echo "$0: build tracelens first (cargo build --release)" >&2; exit 1; }
tmp=$(mktemp); trap 'rm -f "$tmp"' EXIT
events=$("$tl" stats --json "$trace" | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])')
# run ARGS...: prints "wall cpu maxrss_kb".
run() {
    /usr/bin/time -f '%e %U %S %M' -o "$tmp" "$tl" "$@" >/dev/null
    awk '{ printf "%s %.2f %s\n", $1, $2 + $3, $4 }' "$tmp"
}
min() { awk -v a="$1" -v b="$2" 'BEGIN { print (a == "" || b < a) ? b : a }'; }
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); $events events"
printf '| -j | sched wall s | critical-path wall s | ratio (wall) | sched CPU s | critical-path CPU s | ratio (CPU) | critical-path events/s | RSS sched / critical-path MB |\n|---|---|---|---|---|---|---|---|---|\n'
for j in "${jobs[@]}"; do
    ws= cs= wc= cc= rs= rc=
    for _ in $(seq "$rounds"); do
        find "$trace" -type f -exec cat {} + >/dev/null
        read -r w c r < <(run sched -j "$j" "$trace"); ws=$(min "$ws" "$w"); cs=$(min "$cs" "$c"); rs=$r
        read -r w c r < <(run critical-path -j "$j" "$trace" --tid "$tid"); wc=$(min "$wc" "$w"); cc=$(min "$cc" "$c"); rc=$r
    done
    awk -v j="$j" -v ws="$ws" -v wc="$wc" -v cs="$cs" -v cc="$cc" -v ev="$events" -v rs="$rs" -v rc="$rc" \
        'BEGIN { printf "| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f M | %d / %d |\n", j, ws, wc, wc / ws, cs, cc, cc / cs, ev / wc / 1e6, rs / 1024, rc / 1024 }'
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
