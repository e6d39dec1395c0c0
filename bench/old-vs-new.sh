#!/usr/bin/env bash
# Two tracelens binaries (say main's and a branch's) on the tracelens commands of
# bench/analyses-vs-lttng-analyses.sh and bench/stats-vs-babeltrace2.sh, alternated run by run
# (old, new, old, new, ...) so that the load of a shared machine falls on both alike. Prints
# the best and the median wall time of each, and new/old of the medians.
#
#   bench/old-vs-new.sh OLD NEW KERNEL_TRACE UST_TRACE SYNTH_TRACE [RUNS]
#
# KERNEL_TRACE: ../shared/traces/tracecompass/many-threads; UST_TRACE: bench/record-ust.sh's;
# SYNTH_TRACE: tracelens synth -o DIR --cpus 4 --threads 32 --events 48000000 --seed 1.
set -euo pipefail
old=${1:?old binary}; new=${2:?new binary}
kernel=${3:?kernel trace}; ust=${4:?UST trace}; synth=${5:?synth trace}; runs=${6:-11}

# Wall time of one run of the command, in ms (bash's microsecond clock).
wall_ms() {
  local s=$EPOCHREALTIME
  "$@" >/dev/null 2>&1
  local e=$EPOCHREALTIME
  echo "($e - $s) * 1000" | bc -l
}
# best and median of numbers on standard input
stats() { sort -g | awk '{ v[NR] = $1 } END { printf "%.1f %.1f\n", v[1], (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

printf '| command | old best ms | old median ms | new best ms | new median ms | new/old (median) |\n|---|---|---|---|---|---|\n'
while read -r shown; do
  [ -z "$shown" ] && continue
  args=${shown//KERNEL/$kernel}; args=${args//UST/$ust}; args=${args//SYNTH/$synth}
  o=(); n=()
  for _ in $(seq "$runs"); do
    # shellcheck disable=SC2086
    o+=("$(wall_ms "$old" $args)")
    # shellcheck disable=SC2086
    n+=("$(wall_ms "$new" $args)")
  done
  read -r ob om < <(printf '%s\n' "${o[@]}" | stats)
  read -r nb nm < <(printf '%s\n' "${n[@]}" | stats)
  printf '| `tracelens %s` | %s | %s | %s | %s | %.3f |\n' "$shown" "$ob" "$om" "$nb" "$nm" "$(echo "$nm / $om" | bc -l)"
done <<'LIST'
cpu -j 1 KERNEL
sched -j 1 KERNEL
io -j 1 KERNEL
syscalls -j 1 KERNEL
irq -j 1 KERNEL
stats -j 1 UST
stats -j 2 UST
stats -j 1 SYNTH
stats -j 2 SYNTH
LIST
