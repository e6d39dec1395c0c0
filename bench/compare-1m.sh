#!/usr/bin/env bash
# `tracelens compare` on a synthetic database of many executions (default 1,000,000; 25
# metrics, about 22 (node, ns) pairs each): wall and CPU time of the text and JSON outputs,
# the database file read once before each round so that it is in the page cache.
#
#   bench/compare-1m.sh [EXECUTIONS] [ROUNDS]
set -euo pipefail
n=${1:-1000000}; rounds=${2:-5}
tl=${TRACELENS:-target/release/tracelens}
gen=${SYNTHETIC_DB:-target/release/examples/synthetic_db}
[ -x "$tl" ] && [ -x "$gen" ] || { echo "$0: cargo build --release -p tracelens -p tracelens-compare --example synthetic_db" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$gen" "$tmp/runs.db" "$n"
echo "database: $(stat -c %s "$tmp/runs.db") bytes; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
run() {
    /usr/bin/time -f '%e %U %S %M' -o "$tmp/time" "$tl" "$@" >/dev/null
    awk '{ printf "%s %.2f %s\n", $1, $2 + $3, $4 }' "$tmp/time"
}
min() { awk -v a="$1" -v b="$2" 'BEGIN { print (a == "" || b < a) ? b : a }'; }
wt= ct= wj= cj= rt=
for _ in $(seq "$rounds"); do
    cat "$tmp/runs.db" >/dev/null
    read -r w c r < <(run compare "$tmp/runs.db" --a 'duration<=p50' --b 'duration>=p90'); wt=$(min "$wt" "$w"); ct=$(min "$ct" "$c"); rt=$r
    read -r w c r < <(run compare "$tmp/runs.db" --a 'tid==1000 && timer_ns<1ms' --b 'duration>=p99' --json); wj=$(min "$wj" "$w"); cj=$(min "$cj" "$c")
done
printf '| | wall s | CPU s |\n|---|---|---|\n'
printf "| \`compare --a 'duration<=p50' --b 'duration>=p90'\` (text) | %.2f | %.2f |\n" "$wt" "$ct"
printf "| \`compare --a 'tid==1000 && timer_ns<1ms' --b 'duration>=p99' --json\` | %.2f | %.2f |\n" "$wj" "$cj"
echo "peak RSS (text): $((rt / 1024)) MB; load after: $(cut -d' ' -f1-3 /proc/loadavg)"
