#!/bin/bash
# How long `tracelens record` takes to finish once the workload has ended, and how large its
# spool grows, for workloads of several seconds.
#
#   bench/record-finish.sh [REPS] [FIND_ROUNDS] [GETPID_CALLS]
#
# Workloads (default event groups, `tracelens record -q -o DIR -- sh -c WORKLOAD`):
#   find     FIND_ROUNDS times `find /usr > /dev/null`
#   getpid   GETPID_CALLS syscall(SYS_getpid) (bench/record-overhead.c)
# For each run: the workload's wall time (date +%s%N around it, inside the recorded shell),
# the time from the workload's end to the recorder's exit (the finishing step), the peak size
# of DIR/.tracelens-spool (du -sb every 20 ms while recording) and the trace's size. Prints the
# median of REPS runs per workload as a markdown table.
#
# Needs root and cc. TL=path/to/tracelens chooses the binary (default target/release).
set -eu
REPS=${1:-3}
ROUNDS=${2:-10}
NGETPID=${3:-5000000}
cd "$(dirname "$0")/.."
TL=${TL:-$PWD/target/release/tracelens}
W=${W:-/tmp/tracelens-record-finish}
[ -x "$TL" ] || { echo "$0: build tracelens first (cargo build --release)" >&2; exit 1; }
rm -rf "$W" && mkdir -p "$W"
cc -O2 -pthread -o "$W/wl" bench/record-overhead.c

# run WORKLOAD: one run; appends "workload_ms finish_ms peak_spool_mb trace_mb" to $W/WORKLOAD.
run() {
    wl=$1
    rm -rf "$W/rec" "$W/t"
    case $wl in
        find) body="for i in \$(seq $ROUNDS); do find /usr >/dev/null; done" ;;
        getpid) body="$W/wl getpid $NGETPID $W/ns" ;;
    esac
    "$TL" record -q -o "$W/rec" -- sh -c "s=\$(date +%s%N); $body; e=\$(date +%s%N); echo \$s \$e >$W/t" &
    rec=$!
    peak=0
    while kill -0 "$rec" 2>/dev/null; do
        s=$(du -sb "$W/rec/.tracelens-spool" 2>/dev/null | cut -f1)
        [ -n "$s" ] && [ "$s" -gt "$peak" ] && peak=$s
        sleep 0.02
    done
    wait "$rec"
    end=$(date +%s%N)
    read -r s e <"$W/t"
    trace=$(du -sb "$W/rec/kernel" | cut -f1)
    awk -v s="$s" -v e="$e" -v x="$end" -v p="$peak" -v t="$trace" \
        'BEGIN { printf "%.0f %.0f %.1f %.1f\n", (e - s) / 1e6, (x - e) / 1e6, p / 1e6, t / 1e6 }' >>"$W/$wl"
}

for i in $(seq "$REPS"); do
    for wl in find getpid; do run "$wl"; done
    echo "rep $i of $REPS done" >&2
done

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo
echo "Median of $REPS: find = $ROUNDS x find /usr, getpid = $NGETPID calls; $TL"
echo
echo "| workload | workload wall (ms) | workload end to exit (ms) | peak spool (MB) | trace (MB) |"
echo "|---|---|---|---|---|"
for wl in find getpid; do
    row="| $wl"
    for col in 1 2 3 4; do row="$row | $(cut -d' ' -f$col "$W/$wl" | median)"; done
    echo "$row |"
done
echo
echo "All runs (workload_ms finish_ms peak_spool_mb trace_mb):"
for wl in find getpid; do echo "$wl:"; cat "$W/$wl"; done
