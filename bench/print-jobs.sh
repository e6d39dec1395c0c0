#!/usr/bin/env bash
# print-jobs.sh OLD_TRACELENS NEW_TRACELENS TRACE... ; ROUNDS=3 by default
#
# `tracelens print -j 1` and `-j 2`, text and --format json, to /dev/null, of two binaries,
# alternated ROUNDS times on each TRACE. Prints per trace, binary and format the lowest wall
# time, the lowest CPU time (user + sys) and the highest peak RSS (GNU time's maximum resident
# set) at -j 1 and -j 2, and the -j 2 wall speed-up; then the load average.
set -euo pipefail
[[ $# -ge 3 ]] || { echo "usage: [ROUNDS=3] $0 OLD_TRACELENS NEW_TRACELENS TRACE..." >&2; exit 2; }
BIN_old=$1 BIN_new=$2
shift 2
ROUNDS=${ROUNDS:-3}
TIMES=$(mktemp)
trap 'rm -f "$TIMES"' EXIT
declare -A W C M
for ((r = 0; r < ROUNDS; r++)); do
    for t in "$@"; do
        for f in text json; do for j in 1 2; do for b in old new; do
            k="$t $b $f $j"
            bin=BIN_$b
            /usr/bin/time -o "$TIMES" -f "%e %U %S %M" "${!bin}" print -j "$j" --format "$f" "$t" > /dev/null 2>&1
            read -r e u s m < "$TIMES"
            c=$(echo "$u + $s" | bc)
            if [[ -z ${W[$k]:-} ]] || (( $(echo "$e < ${W[$k]}" | bc) )); then W[$k]=$e; fi
            if [[ -z ${C[$k]:-} ]] || (( $(echo "$c < ${C[$k]}" | bc) )); then C[$k]=$c; fi
            if [[ -z ${M[$k]:-} ]] || (( m > ${M[$k]} )); then M[$k]=$m; fi
        done; done; done
    done
done
printf '| trace | binary | format | -j 1 wall s | -j 1 CPU s | -j 1 RSS MB | -j 2 wall s | -j 2 CPU s | -j 2 RSS MB | speed-up |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
for t in "$@"; do for f in text json; do for b in old new; do
    k1="$t $b $f 1" k2="$t $b $f 2"
    printf '| %s | %s | %s | %s | %s | %d | %s | %s | %d | %.2f× |\n' "$t" "$b" "$f" "${W[$k1]}" "${C[$k1]}" $((M[$k1] / 1024)) \
        "${W[$k2]}" "${C[$k2]}" $((M[$k2] / 1024)) "$(echo "${W[$k1]} / ${W[$k2]}" | bc -l)"
done; done; done
uptime
