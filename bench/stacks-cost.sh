#!/bin/sh
# Cost per user-stack sample of `tracelens record --stacks`, against `perf record
# --call-graph dwarf` (the same kind of sample: user registers + a 16 KiB stack copy).
#
#   bench/stacks-cost.sh [REPS] [BURN_ITERATIONS] [PINGPONG_ROUND_TRIPS]
#
# On-CPU: a CPU loop (bench/stacks-cost.c `burn`) timed by itself (CLOCK_MONOTONIC around the
# loop) with no recorder, under `tracelens record -e sched` (kernel events only), under
# `--stacks` at 1 ms and 0.1 ms, and under perf at the same periods. Off-CPU: two processes
# ping-ponging a byte over pipes (`pingpong`: every read blocks, so every round trip makes two
# off-CPU samples). The cost per sample is (median time with samples - median time without) /
# samples. Needs root, cc, and perf (Debian `linux-perf`) for the peer rows.
set -eu
REPS=${1:-5}
BURN=${2:-600000000}
PP=${3:-20000}
TL=${TL:-target/release/tracelens}
W=${W:-/tmp/tracelens-stacks-cost}
rm -rf "$W" && mkdir -p "$W"
cc -O2 -g -o "$W/sc" "$(dirname "$0")/stacks-cost.c"
PERF=$(command -v perf || true)

# run NAME CMD...: the workload's own elapsed ns on stdout is appended to $W/NAME.times, the
# sample count (from the recorder's summary) to $W/NAME.samples.
run() {
    name=$1; shift
    rm -rf "$W/rec" "$W/perf.data"
    "$@" >"$W/out" 2>"$W/err" || { cat "$W/err" >&2; exit 1; }
    tail -n 1 "$W/out" >>"$W/$name.times"
    s=$(sed -n 's/.*wrote \([0-9,]*\) stack samples.*/\1/p; s/.*(\([0-9]*\) samples).*/\1/p' "$W/err" | tr -d , | tail -n 1)
    echo "${s:-0}" >>"$W/$name.samples"
}

median() { sort -n "$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

for i in $(seq "$REPS"); do
    for what in "burn $BURN" "pingpong $PP"; do
        set -- $what
        k=$1
        run "$k-plain" "$W/sc" $what
        run "$k-kernel" "$TL" record -q -o "$W/rec" -e sched -- "$W/sc" $what
        run "$k-stacks-1ms" "$TL" record -q -o "$W/rec" -e sched --stacks --period 1 -- "$W/sc" $what
        if [ "$k" = burn ]; then
            run "$k-stacks-0.1ms" "$TL" record -q -o "$W/rec" -e sched --stacks --period 0.1 -- "$W/sc" $what
            run "$k-stacks-0.1ms-4K" "$TL" record -q -o "$W/rec" -e sched --stacks --period 0.1 --stack-size 4K -- "$W/sc" $what
        fi
        if [ -n "$PERF" ]; then
            if [ "$k" = burn ]; then
                run "$k-perf-1ms" "$PERF" record -e cpu-clock -c 1000000 --call-graph dwarf,16384 -o "$W/perf.data" -- "$W/sc" $what
                run "$k-perf-0.1ms" "$PERF" record -e cpu-clock -c 100000 --call-graph dwarf,16384 -o "$W/perf.data" -- "$W/sc" $what
            else
                run "$k-perf-switch" "$PERF" record -e sched:sched_switch -c 1 --call-graph dwarf,16384 -o "$W/perf.data" -- "$W/sc" $what
            fi
        fi
    done
done

printf '%-20s %14s %10s %16s\n' run "median ms" samples "us per sample"
for k in burn pingpong; do
    base=$(median "$W/$k-plain.times")
    kern=$(median "$W/$k-kernel.times")
    for f in "$W/$k"-*.times; do
        n=$(basename "$f" .times)
        t=$(median "$f")
        s=$(median "$W/$n.samples")
        # tracelens runs are compared with the kernel-only recording, perf runs with no recorder.
        case $n in *stacks*) ref=$kern ;; *) ref=$base ;; esac
        per=$(awk -v t="$t" -v r="$ref" -v s="$s" 'BEGIN { if (s > 0) printf "%.2f", (t - r) / s / 1000; else print "-" }')
        printf '%-20s %14.1f %10s %16s\n' "$n" "$(awk -v t="$t" 'BEGIN{print t/1e6}')" "$s" "$per"
    done
done
