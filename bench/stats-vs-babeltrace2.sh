#!/usr/bin/env bash
# Decoding throughput: `tracelens stats -j 1` (and -j 2) against `babeltrace2 -o dummy` on the
# same traces, in one run, with wall time, user time and peak RSS from GNU time.
#
#   bench/stats-vs-babeltrace2.sh UST_TRACE_DIR SYNTH_DIR [RUNS]
#
# UST_TRACE_DIR: the LTTng-UST trace from bench/record-ust.sh (the directory with `metadata`).
# SYNTH_DIR: created with `tracelens synth` if missing (≥ 1 GB kernel-layout trace).
set -euo pipefail
ust=${1:?UST trace dir}; syn=${2:?synth dir}; runs=${3:-3}
tl=${TRACELENS:-target/release/tracelens}
[ -x "$tl" ] || cargo build --release --quiet
if [ ! -f "$syn/metadata" ]; then
  "$tl" synth -o "$syn" --cpus 4 --threads 32 --events 48000000 --seed 1
fi
measure() { # label, command...: best of $runs by wall time
  local label=$1; shift
  local best=""
  for _ in $(seq "$runs"); do
    local tf; tf=$(mktemp)
    /usr/bin/time -o "$tf" -f '%e %U %M' "$@" >/dev/null 2>&1
    local out; out=$(tail -1 "$tf"); rm -f "$tf"
    if [ -z "$best" ] || awk -v a="${out%% *}" -v b="${best%% *}" 'BEGIN{exit !(a<b)}'; then best=$out; fi
  done
  echo "$label wall_s user_s maxrss_kb: $best"
}
for t in "$ust" "$syn"; do
  ev=$("$tl" stats --json -j 2 "$t" | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])')
  bytes=$(du -sb --exclude=index "$t" | cut -f1)
  echo "# $t: $ev events, $bytes bytes"
  measure "babeltrace2" babeltrace2 "$t" -o dummy
  measure "tracelens-j1" "$tl" stats -j 1 "$t"
  measure "tracelens-j2" "$tl" stats -j 2 "$t"
done
