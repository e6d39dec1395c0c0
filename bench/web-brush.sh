#!/usr/bin/env bash
# `tracelens serve` brushed in headless chromium on a synthetic database of many executions
# (default 1,000,000; tracelens_compare::synthetic: 18 histogram metrics, about 300 calling
# contexts): the first view's time from navigation start, and per frame that shows a brush
# move the time from its input event to the frame (its requestAnimationFrame timestamp), to
# the end of that frame and to the redrawn histograms and flame graph, over ROUNDS runs of
# bench/web-brush.mjs (which says more), each on a fresh page. Needs chromium and `npm ci` in
# crates/web/tests/browser.
#
#   bench/web-brush.sh [EXECUTIONS] [MOVES] [ROUNDS]
#   DB=runs.db bench/web-brush.sh ...  (that database instead of a synthetic one)
#   TRACELENS_ASSETS=crates/web/src/assets bench/web-brush.sh ...  (the page's files from
#                                      there: a changed page without a rebuild)
#   EVERY=8 bench/web-brush.sh ...    (a move every 8 ms whatever the page does, as a mouse
#                                      at 125 Hz; by default each once the previous is taken)
#   NICE=-15 bench/web-brush.sh ...   (server and browser at that priority, as root: ahead of
#                                      other work on a shared machine)
set -euo pipefail
run=(); [ -n "${NICE:-}" ] && run=(nice -n "$NICE")
n=${1:-1000000}; moves=${2:-200}; rounds=${3:-3}
tl=${TRACELENS:-target/release/tracelens}
gen=${SYNTHETIC_DB:-target/release/examples/synthetic_db}
[ -x "$tl" ] && [ -x "$gen" ] || { echo "$0: cargo build --release -p tracelens && cargo build --release -p tracelens-compare --example synthetic_db" >&2; exit 1; }
tmp=$(mktemp -d); pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
db=${DB:-$tmp/runs.db}
[ -n "${DB:-}" ] || "$gen" "$db" "$n"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
    "${run[@]}" "$tl" serve "$db" --port 0 > "$tmp/serve.out" &
    pid=$!
    until grep -q http "$tmp/serve.out" 2>/dev/null; do sleep 0.1; done
    url=$(grep -o 'http://[^ ]*' "$tmp/serve.out")
    echo "round $r: serve $(grep -o "ready in [0-9.]* s" "$tmp/serve.out"); $("${run[@]}" node "$(dirname "$0")/web-brush.mjs" "$url" "$moves")"
    kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
