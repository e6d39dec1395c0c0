#!/usr/bin/env bash
# The analyses against lttng-analyses 0.6.1 on the same kernel trace, in one run.
#
#   bench/analyses-vs-lttng-analyses.sh KERNEL_TRACE_DIR [RUNS]
#
# lttng-analyses needs the trace in a folder named `kernel` and Debian's python3-babeltrace;
# install: apt-get install python3-babeltrace python3-pip && pip install lttnganalyses==0.6.1,
# then replace `collections.Mapping` by `collections.abc.Mapping` in its sources (Python 3.10+).
set -euo pipefail
src=${1:?kernel trace dir}; runs=${2:-3}
tl=${TRACELENS:-target/release/tracelens}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$work/kernel"; cp -r "$src"/. "$work/kernel/"
t=$work/kernel
best() { # command...: best wall time of $runs
  local b=""
  for _ in $(seq "$runs"); do
    local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N)
    local d; d=$(echo "$e - $s" | bc -l)
    if [ -z "$b" ] || [ "$(echo "$d < $b" | bc -l)" = 1 ]; then b=$d; fi
  done
  printf '%.3f' "$b"
}
printf '| analysis | lttng-analyses command | lttng-analyses s | tracelens command | tracelens -j 1 s | ratio |\n|---|---|---|---|---|---|\n'
while read -r name peer ours; do
  p=$(best $peer --no-progress "$t")
  o=$(best "$tl" $ours -j 1 "$t")
  printf '| %s | `%s` | %s | `tracelens %s -j 1` | %s | %.0f× |\n' "$name" "$peer" "$p" "$ours" "$o" "$(echo "$p / $o" | bc -l)"
done <<'LIST'
cpu lttng-cputop cpu
sched lttng-schedstats sched
io lttng-iousagetop io
syscalls lttng-syscallstats syscalls
irq lttng-irqstats irq
LIST
