#!/usr/bin/env bash
# probe-cost.sh [BATCHES=200] [BATCH=10000] [PAUSE_US=5000] [ROUNDS=3]
#
# Nanoseconds per probe event: tracelens's TL_PROBE_U64 (crates/probe) against an LTTng-UST
# tracepoint with one uint64 field (probe-cost/tp.h), each
#   on  -- written to a trace (TRACELENS_PROBE_DIR set / an LTTng session enabling the event)
#   off -- compiled in, not tracing (no TRACELENS_PROBE_DIR / no session)
# with 1 and 2 threads, plus the parts of the cost: the bare loop, rdtsc alone,
# clock_gettime(CLOCK_MONOTONIC) alone, and tracelens probes timed with clock_gettime
# (TRACELENS_PROBE_CLOCK=monotonic) instead of the counter; ROUNDS rounds, the tools alternating within each.
# A run is THREADS threads x BATCHES batches of BATCH events, each batch timed with the
# thread's CPU clock, PAUSE_US between batches so that both consumers keep up; the median,
# 10th and 90th percentile are over every batch of every thread (probe-cost/probe_cost.c).
# Every "on" run's trace is read back with babeltrace2: events written and events discarded.
#
# Needs root (an LTTng session daemon), lttng-tools, liblttng-ust-dev, babeltrace2, cc; builds
# libtracelens_probe.so (cargo build --release -p tracelens-probe). Prints one line per run:
#   round threads tool mode median p10 p90 events lost
set -euo pipefail

BATCHES=${1:-200}
BATCH=${2:-10000}
PAUSE_US=${3:-5000}
ROUNDS=${4:-3}

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
log() { echo "probe-cost: $*" >&2; }
die() { echo "probe-cost: error: $*" >&2; exit 1; }
for tool in lttng lttng-sessiond cc babeltrace2 cargo; do
    command -v "$tool" >/dev/null 2>&1 || die "'$tool' not found"
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/probe-cost.XXXXXX")
SESSIOND_PID=
SESSION=
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    set +e
    [[ -n $SESSION ]] && lttng destroy "$SESSION" >/dev/null 2>&1
    if [[ -n $SESSIOND_PID ]]; then
        kill -TERM "$SESSIOND_PID" 2>/dev/null
        for _ in $(seq 50); do kill -0 "$SESSIOND_PID" 2>/dev/null || break; sleep 0.2; done
    fi
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

(cd "$ROOT" && cargo build --release -q -p tracelens-probe)
LIB=$ROOT/target/release
SRC=$HERE/probe-cost/probe_cost.c
cc -O2 -pthread -o "$WORK/none" "$SRC"
cc -O2 -pthread -DRDTSC -o "$WORK/rdtsc" "$SRC"
cc -O2 -pthread -DCLOCK -o "$WORK/clock_gettime" "$SRC"
cc -O2 -pthread -DTL -I "$ROOT/crates/probe/include" -o "$WORK/tl" "$SRC" -L "$LIB" -ltracelens_probe
cc -O2 -pthread -DLTTNG -I "$HERE/probe-cost" -o "$WORK/lttng" "$SRC" -llttng-ust -ldl

if ! lttng list >/dev/null 2>&1; then
    lttng-sessiond --daemonize --no-kernel || die "lttng-sessiond failed to start"
    SESSIOND_PID=$(</var/run/lttng/lttng-sessiond.pid)
    lttng list >/dev/null 2>&1 || die "the session daemon does not answer"
fi

# events written and discarded in a trace, by babeltrace2
readback() {
    local n lost
    n=$(babeltrace2 "$1" 2>/dev/null | wc -l)
    lost=$(babeltrace2 "$1" 2>&1 >/dev/null | grep -o 'discarded [0-9]* events' | awk '{s += $2} END {print s + 0}')
    echo "$n $lost"
}

run() { # round threads tool mode
    local out=$WORK/trace res counts=""
    rm -rf "$out"
    case $3-$4 in
    none- | rdtsc- | clock_gettime-) res=$("$WORK/$3" "$2" "$BATCHES" "$BATCH" "$PAUSE_US") ;;
    tl-monotonic)
        res=$(TRACELENS_PROBE_CLOCK=monotonic TRACELENS_PROBE_DIR=$out TRACELENS_PROBE_BUFFER=4M LD_LIBRARY_PATH=$LIB "$WORK/tl" "$2" "$BATCHES" "$BATCH" "$PAUSE_US")
        counts=$(readback "$out") ;;
    tl-off) res=$(LD_LIBRARY_PATH=$LIB "$WORK/tl" "$2" "$BATCHES" "$BATCH" "$PAUSE_US") ;;
    tl-on)
        res=$(TRACELENS_PROBE_DIR=$out TRACELENS_PROBE_BUFFER=4M LD_LIBRARY_PATH=$LIB "$WORK/tl" "$2" "$BATCHES" "$BATCH" "$PAUSE_US")
        counts=$(readback "$out") ;;
    lttng-off) res=$("$WORK/lttng" "$2" "$BATCHES" "$BATCH" "$PAUSE_US") ;;
    lttng-on)
        SESSION=probe-cost-$$
        lttng create "$SESSION" --output="$out" >/dev/null
        lttng enable-channel -s "$SESSION" -u ch --subbuf-size=4M --num-subbuf=4 >/dev/null
        lttng enable-event -s "$SESSION" -u -c ch 'tlbench:ev' >/dev/null
        lttng start "$SESSION" >/dev/null
        res=$("$WORK/lttng" "$2" "$BATCHES" "$BATCH" "$PAUSE_US")
        lttng stop "$SESSION" >/dev/null
        lttng destroy "$SESSION" >/dev/null
        SESSION=
        counts=$(readback "$out") ;;
    esac
    echo "$1 $2 $3 ${4:--} $res ${counts:-- -}"
}

log "$(uptime)"
log "$(grep -m1 'model name' /proc/cpuinfo), $(nproc) CPUs, clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
echo "round threads tool mode median_ns p10_ns p90_ns events lost"
for round in $(seq "$ROUNDS"); do
    for threads in 1 2; do
        for part in none rdtsc clock_gettime; do run "$round" "$threads" "$part" ""; done
        if ((round % 2)); then order="tl lttng"; else order="lttng tl"; fi
        for mode in off on; do
            for tool in $order; do run "$round" "$threads" "$tool" "$mode"; done
        done
        run "$round" "$threads" tl monotonic
    done
done
log "$(uptime)"
