#!/usr/bin/env bash
# record-ust.sh OUTDIR [N] [T]
#
# Records the LTTng-UST benchmark trace: `mallocloop N T` (T threads x N malloc/write/free)
# traced through liblttng-ust-libc-wrapper, plus the lttng-ust statedump, with the
# vpid/vtid/procname/ip contexts, in a blocking channel (no discarded events).
# Defaults N=1500000 T=2: about 6,000,012 events, about 247 MiB.
#
# Needs (Debian): lttng-tools liblttng-ust-dev babeltrace2, a C compiler (cc).
# Environment knobs: SUBBUF_SIZE (default 4M), NUM_SUBBUF (default 8),
#   EVENTS   (default 'lttng_ust_libc:* lttng_ust_statedump:* lttng_ust_lib:*'),
#   CONTEXTS (default 'vpid vtid procname ip'),
#   CHECK=0 to skip the babeltrace2 verification pass.
# EVENTS='lttng_ust_libc:*' CONTEXTS='vpid vtid procname' gives the leaner 6,000,012-event,
# 247 MiB variant (no statedump, no ip context).
# OUTDIR must not exist or be empty.  Prints the trace directory (the one holding
# `metadata`), its size, the event count and the count of each event type.
set -euo pipefail

usage() { echo "usage: $0 OUTDIR [N=1500000] [T=2]" >&2; exit 2; }
die() { echo "record-ust: error: $*" >&2; exit 1; }
log() { echo "record-ust: $*" >&2; }

[[ $# -ge 1 && $# -le 3 ]] || usage
OUTDIR=$1
N=${2:-1500000}
T=${3:-2}
SUBBUF_SIZE=${SUBBUF_SIZE:-4M}
NUM_SUBBUF=${NUM_SUBBUF:-8}
CHECK=${CHECK:-1}
EVENTS=${EVENTS:-'lttng_ust_libc:* lttng_ust_statedump:* lttng_ust_lib:*'}
CONTEXTS=${CONTEXTS:-'vpid vtid procname ip'}
[[ $N =~ ^[0-9]+$ && $N -ge 1 ]] || die "N must be a positive integer (got '$N')"
[[ $T =~ ^[0-9]+$ && $T -ge 1 && $T -le 1024 ]] || die "T must be an integer in 1..1024 (got '$T')"

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$HERE/mallocloop.c

# --- prerequisites --------------------------------------------------------------------------
for tool in lttng lttng-sessiond cc babeltrace2; do
    command -v "$tool" >/dev/null 2>&1 ||
        die "'$tool' not found (Debian: apt-get install lttng-tools liblttng-ust-dev babeltrace2 gcc)"
done
[[ -f $SRC ]] || die "$SRC not found"
WRAPPER=liblttng-ust-libc-wrapper.so.1
if ! ldconfig -p 2>/dev/null | grep -q "$WRAPPER"; then
    die "$WRAPPER not found by the dynamic loader (Debian: apt-get install liblttng-ust-dev)"
fi

if [[ -e $OUTDIR ]]; then
    [[ -d $OUTDIR ]] || die "$OUTDIR exists and is not a directory"
    [[ -z $(ls -A "$OUTDIR") ]] || die "$OUTDIR is not empty (remove it or pick another)"
fi
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)   # lttng wants an absolute path

# --- cleanup on any exit ----------------------------------------------------------------------
SESSION=tracelens-bench-$$
SESSION_CREATED=0
SESSIOND_PID=
WORK=$(mktemp -d "${TMPDIR:-/tmp}/record-ust.XXXXXX")

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    set +e
    if [[ $SESSION_CREATED == 1 ]]; then
        log "cleaning up: destroying session $SESSION (the trace in $OUTDIR is incomplete)"
        lttng stop "$SESSION" >/dev/null 2>&1
        lttng destroy "$SESSION" >/dev/null 2>&1
    fi
    if [[ -n $SESSIOND_PID ]]; then
        log "stopping the session daemon this script started (pid $SESSIOND_PID)"
        kill -TERM "$SESSIOND_PID" 2>/dev/null
        for _ in $(seq 50); do kill -0 "$SESSIOND_PID" 2>/dev/null || break; sleep 0.2; done
        kill -0 "$SESSIOND_PID" 2>/dev/null && log "warning: session daemon $SESSIOND_PID still running"
    fi
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- build the workload -----------------------------------------------------------------------
cc -O2 -Wall -pthread -o "$WORK/mallocloop" "$SRC"

# --- session daemon -------------------------------------------------------------------------
if lttng list >/dev/null 2>&1; then
    log "using the session daemon already running"
else
    [[ $EUID -eq 0 ]] || log "warning: not root: starting a per-user session daemon"
    log "starting a session daemon (lttng-sessiond --daemonize --no-kernel)"
    lttng-sessiond --daemonize --no-kernel ||
        die "lttng-sessiond failed to start (see 'lttng-sessiond -vvv --no-kernel' for details)"
    if [[ $EUID -eq 0 ]]; then pidfile=/var/run/lttng/lttng-sessiond.pid
    else pidfile=${LTTNG_HOME:-$HOME}/.lttng/lttng-sessiond.pid; fi
    [[ -s $pidfile ]] || die "session daemon started but $pidfile is missing"
    SESSIOND_PID=$(<"$pidfile")
    lttng list >/dev/null 2>&1 || die "session daemon (pid $SESSIOND_PID) does not answer"
fi

# --- record -----------------------------------------------------------------------------------
lttng create "$SESSION" --output="$OUTDIR" >/dev/null
SESSION_CREATED=1
lttng enable-channel -s "$SESSION" -u chan0 --subbuf-size="$SUBBUF_SIZE" \
    --num-subbuf="$NUM_SUBBUF" --blocking-timeout=inf >/dev/null
set -f   # the event patterns hold '*': no globbing while splitting EVENTS
for ev in $EVENTS; do
    lttng enable-event -s "$SESSION" -u -c chan0 "$ev" >/dev/null
done
set +f
if [[ -n ${CONTEXTS// /} ]]; then
    ctx_args=()
    for c in $CONTEXTS; do ctx_args+=(-t "$c"); done
    lttng add-context -s "$SESSION" -u -c chan0 "${ctx_args[@]}" >/dev/null
fi
lttng start "$SESSION" >/dev/null
log "tracing: mallocloop $N $T (channel chan0: $NUM_SUBBUF x $SUBBUF_SIZE sub-buffers, blocking)"
start_s=$(date +%s.%N)
LTTNG_UST_ALLOW_BLOCKING=1 LD_PRELOAD=$WRAPPER "$WORK/mallocloop" "$N" "$T"
end_s=$(date +%s.%N)
lttng stop "$SESSION" >/dev/null
lttng destroy "$SESSION" >/dev/null     # waits until all data is flushed to disk
SESSION_CREATED=0
log "workload ran in $(awk -v a="$start_s" -v b="$end_s" 'BEGIN{printf "%.2f", b-a}') s"

# --- locate and check the trace -----------------------------------------------------------------
mapfile -t dirs < <(find "$OUTDIR" -name metadata -type f -printf '%h\n' | sort)
[[ ${#dirs[@]} -eq 1 ]] || die "expected one trace (metadata file) under $OUTDIR, found ${#dirs[@]}"
TRACE=${dirs[0]}
bytes=$(du -sb "$TRACE" | cut -f1)
echo "trace: $TRACE"
echo "size:  $bytes bytes ($(du -sh "$TRACE" | cut -f1))"

if [[ $CHECK == 0 ]]; then
    log "CHECK=0: skipping the babeltrace2 verification"
    exit 0
fi

log "verifying with babeltrace2 (text pass over the whole trace)..."
set +e
# babeltrace2 2.0 writes its 'WARNING: Tracer discarded ...' lines to stderr; stdout holds one
# line per event: [time] (+delta) host NAME: {...}, so field 4 is the event name.
babeltrace2 "$TRACE" 2>"$WORK/bt2.err" |
    awk '/^WARNING/ { warn++; print > "/dev/stderr"; next }
         { n++; name = $4; sub(/:$/, "", name); c[name]++ }
         END { printf "events: %d\n", n
               for (k in c) printf "  %-32s %d\n", k, c[k] | "sort"
               close("sort")
               if (warn) exit 3 }' >"$WORK/counts"
st=("${PIPESTATUS[@]}")
set -e
cat "$WORK/counts"
[[ ${st[0]} -eq 0 ]] || { cat "$WORK/bt2.err" >&2; die "babeltrace2 failed (exit ${st[0]})"; }
if grep -q 'WARNING' "$WORK/bt2.err" || [[ ${st[1]} -ne 0 ]]; then
    grep 'WARNING' "$WORK/bt2.err" >&2 || true
    die "babeltrace2 reports discarded events or packets"
fi
[[ -s $WORK/bt2.err ]] && { log "babeltrace2 stderr:"; cat "$WORK/bt2.err" >&2; }

mallocs=$(awk '$1 == "lttng_ust_libc:malloc" { print $2 }' "$WORK/counts")
frees=$(awk '$1 == "lttng_ust_libc:free" { print $2 }' "$WORK/counts")
expect=$((N * T))
if [[ " $EVENTS " != *" lttng_ust_libc:* "* ]]; then
    echo "ok: no discarded events"
    exit 0
fi
[[ ${mallocs:-0} -eq $expect ]] || die "expected $expect malloc events, found ${mallocs:-0}"
[[ ${frees:-0} -ge $expect ]] || die "expected at least $expect free events, found ${frees:-0}"
echo "ok: no discarded events; malloc = N*T = $expect"
