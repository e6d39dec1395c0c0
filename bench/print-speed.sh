#!/usr/bin/env bash
# print-speed.sh TRACE [ROUNDS=3] [OLD_TRACELENS]
#
# `tracelens print` to /dev/null against `babeltrace2` on TRACE: babeltrace2, then tracelens
# print at -j 1 and -j 2, text and --format json (and, with OLD_TRACELENS, that binary's
# `print` at its default), alternated ROUNDS times. Prints, per command, the lowest CPU time
# (user + sys) and the lowest wall time, the ratio of babeltrace2's CPU time to it, and the
# -j 2 wall speed-up over -j 1; then the load average. tracelens is `tracelens` on PATH or
# $TRACELENS.
set -euo pipefail
[[ $# -ge 1 && $# -le 3 ]] || { echo "usage: $0 TRACE [ROUNDS=3] [OLD_TRACELENS]" >&2; exit 2; }
TRACE=$1
ROUNDS=${2:-3}
OLD=${3:-}
TL=${TRACELENS:-tracelens}
command -v babeltrace2 >/dev/null || { echo "print-speed: babeltrace2 not found" >&2; exit 1; }

names=(babeltrace2 "print -j 1" "print -j 2" "print --format json -j 1" "print --format json -j 2")
cmds=("babeltrace2 $TRACE" "$TL print -j 1 $TRACE" "$TL print -j 2 $TRACE" "$TL print --format json -j 1 $TRACE" "$TL print --format json -j 2 $TRACE")
if [[ -n $OLD ]]; then
    names+=("old print" "old print --format json")
    cmds+=("$OLD print $TRACE" "$OLD print --format json $TRACE")
fi
declare -A cpu wall
TIMES=$(mktemp)
trap 'rm -f "$TIMES"' EXIT
cat "$TRACE"/* "$TRACE"/*/* > /dev/null 2>&1 || true   # into the page cache
for ((r = 0; r < ROUNDS; r++)); do
    for i in "${!cmds[@]}"; do
        /usr/bin/time -o "$TIMES" -f "%e %U %S" ${cmds[$i]} > /dev/null 2> /dev/null
        read -r e u s < "$TIMES"
        c=$(echo "$u + $s" | bc)
        if [[ -z ${cpu[$i]:-} ]] || (( $(echo "$c < ${cpu[$i]}" | bc) )); then cpu[$i]=$c; fi
        if [[ -z ${wall[$i]:-} ]] || (( $(echo "$e < ${wall[$i]}" | bc) )); then wall[$i]=$e; fi
    done
done
printf '| command | CPU s | wall s | vs babeltrace2 (CPU) |\n|---|---|---|---|\n'
for i in "${!cmds[@]}"; do
    printf '| `%s` | %s | %s | %.1f× |\n' "${names[$i]}" "${cpu[$i]}" "${wall[$i]}" "$(echo "${cpu[0]} / ${cpu[$i]}" | bc -l)"
done
printf '\n-j 2 wall speed-up: text %.2f×, JSON %.2f×\n' "$(echo "${wall[1]} / ${wall[2]}" | bc -l)" "$(echo "${wall[3]} / ${wall[4]}" | bc -l)"
uptime
