#!/bin/bash
# How long `tracelens record` takes to finish once the workload has ended, and how large its
# spool grows, for workloads of several seconds; several tracelens binaries (or options) in
# one run, interleaved, so that background load spreads over all of them.
#
#   bench/record-finish.sh [REPS] [FIND_ROUNDS] [GETPID_CALLS]
#
# Workloads (default event groups, `tracelens record -q -o DIR $ARGS -- sh -c WORKLOAD`):
#   find     FIND_ROUNDS times `find /usr > /dev/null`
#   getpid   GETPID_CALLS syscall(SYS_getpid) (bench/record-overhead.c)
# Recorders: RECORDERS="NAME=BINARY[,ARG...] ..." (default: new=target/release/tracelens);
#   e.g. RECORDERS="old=/tmp/old/tracelens new=target/release/tracelens busy=target/release/tracelens,--idle-backlog,0"
# For each run: the workload's wall time (date +%s%N around it, inside the recorded shell),
# the time from the workload's end to the recorder's exit (the finishing step), the peak size
# of DIR/.tracelens-spool (du -sb every 20 ms while recording), the trace's size and the
# events lost. Prints the median of REPS runs per workload and recorder as a markdown table.
#
# Needs root and cc.
set -eu
REPS=${1:-3}
ROUNDS=${2:-10}
NGETPID=${3:-5000000}
cd "$(dirname "$0")/.."
RECORDERS=${RECORDERS:-new=$PWD/target/release/tracelens}
W=${W:-/tmp/tracelens-record-finish}
rm -rf "$W" && mkdir -p "$W"
cc -O2 -pthread -o "$W/wl" bench/record-overhead.c

# run NAME BINARY[,ARG...] WORKLOAD: one run; appends
# "workload_ms finish_ms peak_spool_mb trace_mb lost" to $W/NAME.WORKLOAD.
run() {
    name=$1 wl=$3
    IFS=, read -r -a cmd <<<"$2"
    [ -x "${cmd[0]}" ] || { echo "$0: ${cmd[0]}: no such binary (cargo build --release)" >&2; exit 1; }
    rm -rf "$W/rec" "$W/t"
    case $wl in
        find) body="for i in \$(seq $ROUNDS); do find /usr >/dev/null; done" ;;
        getpid) body="$W/wl getpid $NGETPID $W/ns" ;;
    esac
    "${cmd[0]}" record -q -o "$W/rec" "${cmd[@]:1}" -- sh -c "s=\$(date +%s%N); $body; e=\$(date +%s%N); echo \$s \$e >$W/t" 2>"$W/log" &
    rec=$!
    peak=0
    while kill -0 "$rec" 2>/dev/null; do
        s=$(du -sb "$W/rec/.tracelens-spool" 2>/dev/null | cut -f1)
        [ -n "$s" ] && [ "$s" -gt "$peak" ] && peak=$s
        sleep 0.02
    done
    wait "$rec" || { cat "$W/log" >&2; exit 1; }
    end=$(date +%s%N)
    read -r s e <"$W/t"
    trace=$(du -sb "$W/rec/kernel" | cut -f1)
    lost=$(sed -n 's/.* events (\([0-9,]*\) lost.*/\1/p' "$W/log" | tr -d ,)
    awk -v s="$s" -v e="$e" -v x="$end" -v p="$peak" -v t="$trace" -v l="${lost:-?}" \
        'BEGIN { printf "%.0f %.0f %.1f %.1f %s\n", (e - s) / 1e6, (x - e) / 1e6, p / 1e6, t / 1e6, l }' >>"$W/$name.$wl"
}

for i in $(seq "$REPS"); do
    for wl in find getpid; do
        for r in $RECORDERS; do run "${r%%=*}" "${r#*=}" "$wl"; done
    done
    echo "rep $i of $REPS done (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
done

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo
echo "Median of $REPS: find = $ROUNDS x find /usr, getpid = $NGETPID calls; load $(cut -d' ' -f1-3 /proc/loadavg) at the end"
echo
echo "| workload | recorder | workload wall (ms) | workload end to exit (ms) | peak spool (MB) | trace (MB) | lost events |"
echo "|---|---|---|---|---|---|---|"
for wl in find getpid; do
    for r in $RECORDERS; do
        name=${r%%=*}
        row="| $wl | $name"
        for col in 1 2 3 4 5; do row="$row | $(cut -d' ' -f$col "$W/$name.$wl" | median)"; done
        echo "$row |"
    done
done
echo
echo "All runs (workload_ms finish_ms peak_spool_mb trace_mb lost):"
for wl in find getpid; do for r in $RECORDERS; do echo "${r%%=*} $wl:"; cat "$W/${r%%=*}.$wl"; done; done
