#!/usr/bin/env bash
# Building an executions database from a recording against babeltrace2 merely decoding it,
# in one run; and the database's size against the trace's.
#
#   bench/executions-build.sh REC FUNCTION [ROUNDS] [JOBS]
#
# REC: a recording with stacks and uprobes, e.g. (1.1 GB of kernel trace on this VM):
#   cc -O2 -g -fno-omit-frame-pointer -pthread -o /tmp/exec-workload bench/exec-workload.c
#   sudo tracelens record -o REC --stacks --uprobe /tmp/exec-workload:handle_request -- \
#       /tmp/exec-workload DIR 4 36
# ROUNDS rounds (default 3) alternate `babeltrace2 REC/kernel -o dummy`, `babeltrace2
# REC/stacks -o dummy` (babeltrace2 2.0.4's muxer stops with "Cannot find the youngest
# upstream message iterator wrapper" on the two together, so each is decoded alone and the
# times added) and `tracelens executions REC -o DB --function FUNCTION [-j JOBS]`, the
# trace's files read once before each round so that all find them in the page cache. Prints
# the lowest wall and CPU (user + sys) time of each, the ratios, and the sizes.
set -euo pipefail
rec=${1:?recording dir}; fn=${2:?function}; rounds=${3:-3}; jobs=${4:-}
tl=${TRACELENS:-target/release/tracelens}
[ -x "$tl" ] || { echo "$0: build tracelens first (cargo build --release)" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
run() {
    /usr/bin/time -f '%e %U %S %M' -o "$tmp/time" "$@" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
    awk '{ printf "%s %.2f %s\n", $1, $2 + $3, $4 }' "$tmp/time"
}
min() { awk -v a="$1" -v b="$2" 'BEGIN { print (a == "" || b < a) ? b : a }'; }
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
wb= cb= ws= cs= wt= ct= rb= rt=
for _ in $(seq "$rounds"); do
    find "$rec" -type f -exec cat {} + >/dev/null
    read -r w c r < <(run babeltrace2 "$rec/kernel" -o dummy); wb=$(min "$wb" "$w"); cb=$(min "$cb" "$c"); rb=$r
    read -r w c r < <(run babeltrace2 "$rec/stacks" -o dummy); ws=$(min "$ws" "$w"); cs=$(min "$cs" "$c")
    read -r w c r < <(run "$tl" executions "$rec" -o "$tmp/runs.db" --function "$fn" ${jobs:+-j "$jobs"}); wt=$(min "$wt" "$w"); ct=$(min "$ct" "$c"); rt=$r
done
kernel=$(du -sb "$rec/kernel" | cut -f1); stacks=$(du -sb "$rec/stacks" 2>/dev/null | cut -f1 || echo 0)
db=$(stat -c %s "$tmp/runs.db")
n=$("$tl" executions "$rec" -o "$tmp/runs.db" --function "$fn" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["report"]["executions"])')
printf '| | wall s | CPU s | peak RSS MB |\n|---|---|---|---|\n'
printf '| `babeltrace2 REC/kernel -o dummy` | %.2f | %.2f | %d |\n' "$wb" "$cb" $((rb / 1024))
printf '| `babeltrace2 REC/stacks -o dummy` | %.2f | %.2f | |\n' "$ws" "$cs"
printf '| `tracelens executions REC --function %s` | %.2f | %.2f | %d |\n' "$fn" "$wt" "$ct" $((rt / 1024))
awk -v wb="$wb" -v ws="$ws" -v wt="$wt" -v cb="$cb" -v cs="$cs" -v ct="$ct" 'BEGIN { printf "executions / babeltrace2 (kernel): %.3f wall, %.3f CPU; / babeltrace2 (kernel + stacks): %.3f wall, %.3f CPU\n", wt / wb, ct / cb, wt / (wb + ws), ct / (cb + cs) }'
awk -v k="$kernel" -v s="$stacks" -v d="$db" -v n="$n" 'BEGIN { printf "kernel trace %.1f MB, stacks %.1f MB; %d executions; database %.1f MB = %.2f%% of the kernel trace, %.2f%% of the recording (%.0f bytes per execution)\n", k/1e6, s/1e6, n, d/1e6, 100*d/k, 100*d/(k+s), d/n }'
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
