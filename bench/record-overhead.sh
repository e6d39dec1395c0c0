#!/bin/bash
# What recording costs the recorded workload: tracelens record vs no tracing vs perf record vs
# trace-cmd record, with the same kinds of events (scheduler + system calls), in one run.
#
#   bench/record-overhead.sh [REPS] [GETPID_CALLS] [PINGPONG_ROUND_TRIPS]
#
# Workloads (each timed by itself, so recorder start-up and conversion are not counted):
#   getpid    GETPID_CALLS syscall(SYS_getpid) (bench/record-overhead.c, CLOCK_MONOTONIC around the loop)
#   pingpong  two threads passing a byte through two pipes, PINGPONG_ROUND_TRIPS round trips
#   find      `find /usr > /dev/null`, its total wall time (date +%s%N around it)
# Tools:
#   none       the workload alone
#   tracelens  tracelens record -e sched,syscalls -o DIR -- CMD
#   perf       perf record -e 'sched:*,raw_syscalls:*' -a -o FILE -- CMD
#   trace-cmd  trace-cmd record -e sched -e syscalls -o FILE CMD, in a private mount namespace
#              where the set_ftrace_*/set_graph_* files and /proc/sys/kernel/ftrace_enabled
#              are masked by /dev/null (trace-cmd 3.1 aborts where it cannot read the former or
#              write "1" to the latter, as on this VM, where ftrace_enabled is already 1)
#   trace-cmd-mono  the same with -C mono: the trace clock tracelens uses (CLOCK_MONOTONIC, so
#              that kernel and user-space times compare); trace-cmd's default, `local`, is
#              cheaper to read per event
# Prints a markdown table: the best of REPS runs, in ms, with the ratio to no tracing. Runs are
# interleaved (rep, workload, tool) so that background load spreads over every tool.
#
# Needs root, cc, perf (Debian linux-perf), trace-cmd. The top-level tracing state (set_event,
# events/enable, tracing_on, current_tracer, buffer size, clock, set_event_pid) is saved first,
# checked after every trace-cmd run and restored on exit (a trap, also on Ctrl-C and errors),
# and instances left by a tracelens recorder this script started are removed.
set -eu
REPS=${1:-3}
NGETPID=${2:-1000000}
NPP=${3:-50000}
cd "$(dirname "$0")/.."
TL=${TL:-$PWD/target/release/tracelens}
W=${W:-/tmp/tracelens-record-overhead}
T=/sys/kernel/tracing
[ -d "$T/instances" ] || mount -t tracefs nodev "$T"
for tool in cc perf trace-cmd unshare; do
    command -v "$tool" >/dev/null || { echo "$0: $tool is needed" >&2; exit 1; }
done
[ -x "$TL" ] || { echo "$0: build tracelens first (cargo build --release)" >&2; exit 1; }
rm -rf "$W" && mkdir -p "$W/logs"
cc -O2 -pthread -o "$W/wl" bench/record-overhead.c

STATE_FILES="set_event events/enable tracing_on current_tracer buffer_size_kb trace_clock set_event_pid"
# (buffer_size_kb reads "7 (expanded: 1408)" until a first use expands it to 1408: compare the
# expanded size.)
snapshot() {
    for f in $STATE_FILES; do printf '%s: %s\n' "$f" "$(cat "$T/$f" 2>/dev/null | tr '\n' ' ' | sed 's/^[0-9]* (expanded: \([0-9]*\)) *$/\1 /')"; done
}
snapshot >"$W/state.before"
ls "$T/instances" >"$W/instances.before"

CHILD=
RECORDERS=
cleanup() {
    rc=$?
    trap - EXIT INT TERM
    [ -n "$CHILD" ] && kill "$CHILD" 2>/dev/null && wait "$CHILD" 2>/dev/null
    # Instances of the tracelens recorders started here that are still there.
    for p in $RECORDERS; do
        for d in "$T/instances/tracelens-$p" "$T/instances/tracelens-$p"-*; do
            [ -d "$d" ] || continue
            echo 0 >"$d/tracing_on"; echo >"$d/set_event"
            rmdir "$d" && echo "removed leftover instance $d" >&2
        done
    done
    restore_top
    snapshot >"$W/state.after"
    if ! cmp -s "$W/state.before" "$W/state.after"; then
        echo "tracing state differs from the start:" >&2; diff "$W/state.before" "$W/state.after" >&2; rc=1
    fi
    exit $rc
}
# Puts the top-level files back where they changed.
restore_top() {
    snapshot >"$W/state.now"
    cmp -s "$W/state.before" "$W/state.now" && return 0
    echo "restoring the top-level tracing state:" >&2; diff "$W/state.before" "$W/state.now" >&2 || true
    before() { sed -n "s|^$1: ||p" "$W/state.before"; }
    [ -z "$(before set_event | tr -d ' ')" ] && echo >"$T/set_event"
    [ "$(before events/enable | tr -d ' ')" = 0 ] && echo 0 >"$T/events/enable"
    echo "$(before set_event_pid)" | tr -d ' ' | grep -q . || echo >"$T/set_event_pid"
    echo "$(before current_tracer | tr -d ' ')" >"$T/current_tracer"
    echo "$(before trace_clock | sed 's/.*\[\(.*\)\].*/\1/')" >"$T/trace_clock"
    echo "$(before buffer_size_kb | awk '{print $1}')" >"$T/buffer_size_kb"
    echo "$(before tracing_on | tr -d ' ')" >"$T/tracing_on"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# run TOOL WORKLOAD: one run; appends the workload's ns to $W/TOOL.WORKLOAD.
run() {
    tool=$1 wl=$2
    out=$W/ns
    rm -f "$out"; rm -rf "$W/rec" "$W/perf.data" "$W/trace.dat"
    case $wl in
        getpid) set -- "$W/wl" getpid "$NGETPID" "$out" ;;
        pingpong) set -- "$W/wl" pingpong "$NPP" "$out" ;;
        find) set -- sh -c 's=$(date +%s%N); find /usr >/dev/null; e=$(date +%s%N); echo $((e - s)) >"$1"' sh "$out" ;;
    esac
    log=$W/logs/$tool.$wl
    { case $tool in
        none) "$@" &;;
        tracelens) "$TL" record -q -e sched,syscalls -o "$W/rec" -- "$@" & RECORDERS="$RECORDERS $!";;
        perf) perf record -e 'sched:*,raw_syscalls:*' -a -o "$W/perf.data" -- "$@" &;;
        trace-cmd|trace-cmd-mono)
            clock=; [ "$tool" = trace-cmd-mono ] && clock="-C mono"
            TC_CLOCK=$clock unshare -m sh -c 'for f in /sys/kernel/tracing/set_ftrace_filter /sys/kernel/tracing/set_ftrace_notrace /sys/kernel/tracing/set_ftrace_pid /sys/kernel/tracing/set_ftrace_notrace_pid /sys/kernel/tracing/set_graph_function /sys/kernel/tracing/set_graph_notrace /proc/sys/kernel/ftrace_enabled; do [ -e $f ] && mount --bind /dev/null $f; done; exec trace-cmd record $TC_CLOCK -e sched -e syscalls -o "$0" "$@"' "$W/trace.dat" "$@" &;;
    esac; } >"$log.out" 2>"$log.err"
    CHILD=$!
    wait "$CHILD" || { cat "$log.err" >&2; echo "$tool $wl failed" >&2; exit 1; }
    CHILD=
    [ -s "$out" ] || { echo "$tool $wl: the workload wrote no time" >&2; exit 1; }
    cat "$out" >>"$W/$tool.$wl"
    if [ "${tool%-mono}" = trace-cmd ]; then
        snapshot >"$W/state.now"
        cmp -s "$W/state.before" "$W/state.now" || { echo "trace-cmd left tracing state changed:" >&2; diff "$W/state.before" "$W/state.now" >&2 || true; restore_top; }
    fi
}

TOOLS="none tracelens perf trace-cmd trace-cmd-mono"
WORKLOADS="getpid pingpong find"
# Warm-up, not counted: page cache for find, binaries loaded.
for wl in $WORKLOADS; do run none "$wl"; done
rm -f "$W"/none.*
for i in $(seq "$REPS"); do
    for wl in $WORKLOADS; do
        for tool in $TOOLS; do
            run "$tool" "$wl"
        done
    done
    echo "rep $i of $REPS done" >&2
done

best() { sort -n "$W/$1" | head -n 1; }
echo
echo "Best of $REPS: getpid = $NGETPID calls, pingpong = $NPP round trips; ms (ratio to no tracing)"
echo
echo "| workload | no tracing | tracelens record | perf record | trace-cmd record | trace-cmd record -C mono |"
echo "|---|---|---|---|---|---|"
for wl in $WORKLOADS; do
    base=$(best "none.$wl")
    row="| $wl"
    for tool in $TOOLS; do
        b=$(best "$tool.$wl")
        row="$row | $(awk -v b="$b" -v z="$base" 'BEGIN { printf "%.1f (%.2f×)", b / 1e6, b / z }')"
    done
    echo "$row |"
done
echo
echo "Recorder messages of the last rep (lost events):"
grep -i 'lost\|discard\|overrun' "$W"/logs/*.err 2>/dev/null | sed "s|^$W/logs/||" || true
