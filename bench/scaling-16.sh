#!/usr/bin/env bash
# scaling-16.sh [OUTDIR]: the whole many-core measurement of issue 17 in one run, for a lent
# 16-core machine that has nothing installed (bash, coreutils and python3 are enough).
#
#   TRACELENS=path/to/stripped/tracelens bench/scaling-16.sh "$OUT"
#
# Makes the 2.1 GB synth trace in /dev/shm (--cpus 32 --threads 800 --events 96000000 --seed 3,
# the trace the issue measured), then, each result written to OUTDIR as soon as it is known:
#   machine.txt  the machine (nproc, CPU model, memory) and the synth run;
#   curve.md     bench/analyses-scaling.sh's table for every analysis at -j 1 2 4 8 16
#                (ROUNDS rounds, default 2; THREADS overrides the thread counts), and
#   runs.txt     every run's time, CPU, peak RSS and --timings line;
#   experiments.md  with EXPERIMENTS="cpu io ...": those at the top thread count with pages kept
#                mapped and with mimalloc's purging off (what the parallel part loses, and why);
#   print.md     `print` and `print --format json` to /dev/null at the same thread counts
#                (PRINT_ROUNDS rounds, default 1; PRINT_FORMATS, default `text json`): lowest
#                wall, CPU, speed-up, peak RSS;
#   ceiling.md   what the machine gives independent processes: bench/copies-ceiling.py, one
#                `-j 1` copy alone and as many copies at once as the top thread count, for
#                each of CEILING (default `stats io`; empty: skipped), one round.
set -euo pipefail
out=${1:-.}; mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
tl=$(realpath "${TRACELENS:-target/release/tracelens}")
rounds=${ROUNDS:-2}; print_rounds=${PRINT_ROUNDS:-1}
read -r -a threads <<<"${THREADS:-1 2 4 8 16}"
analyses=${ANALYSES:-stats cpu irq syscalls sched threads io}
trace=${TRACE_DIR:-/dev/shm/synth-96m}
{
    echo "nproc: $(nproc)"
    grep -m1 'model name' /proc/cpuinfo || true
    grep -E 'MemTotal|MemAvailable' /proc/meminfo || true
    uname -a
} >"$out/machine.txt"
if [ ! -f "$trace/metadata" ]; then
    rm -rf "$trace"
    "$here/gnu-time.sh" "$out/synth.time" "$tl" synth -o "$trace" --cpus 32 --threads 800 \
        --events 96000000 --seed 3 2>>"$out/machine.txt"
    echo "synth (wall user sys maxrss_kB): $(cat "$out/synth.time")" >>"$out/machine.txt"
fi
du -sh "$trace" >>"$out/machine.txt"
cat "$out/machine.txt"
for a in $analyses; do
    RUNS_OUT=$out/runs.txt ANALYSES=$a TRACELENS=$tl "$here/analyses-scaling.sh" "$trace" "$rounds" "${threads[@]}" |
        { if [ "$a" = "${analyses%% *}" ]; then cat; else tail -n +3; fi; } | tee -a "$out/curve.md"
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo '| print | -j | wall s | CPU s | speed-up | efficiency | peak RSS MB |' | tee "$out/print.md"
echo '|---|---|---|---|---|---|---|' | tee -a "$out/print.md"
for fmt in ${PRINT_FORMATS:-text json}; do
    declare -A wall=() cpu=() rss=()
    for _ in $(seq "$print_rounds"); do
        find "$trace" -type f -exec cat {} + >/dev/null
        for j in "${threads[@]}"; do
            "$here/gnu-time.sh" "$tmp/t" "$tl" print --format "$fmt" -j "$j" "$trace" >/dev/null
            read -r e u s m <"$tmp/t"
            c=$(python3 -c "print(round($u + $s, 2))")
            if [ -z "${wall[$j]:-}" ] || python3 -c "import sys; sys.exit(not $e < ${wall[$j]})"; then wall[$j]=$e; fi
            if [ -z "${cpu[$j]:-}" ] || python3 -c "import sys; sys.exit(not $c < ${cpu[$j]})"; then cpu[$j]=$c; fi
            if [ -z "${rss[$j]:-}" ] || [ "$m" -gt "${rss[$j]}" ]; then rss[$j]=$m; fi
        done
    done
    for j in "${threads[@]}"; do
        python3 -c "
b, w, j, b_j = ${wall[${threads[0]}]}, ${wall[$j]}, $j, ${threads[0]}
print(f'| \`print --format $fmt\` | {j} | {w:.2f} | ${cpu[$j]} | {b / w:.2f}× | {b / w * b_j / j:.2f} | {${rss[$j]} / 1000:.0f} |')
" | tee -a "$out/print.md"
    done
done
top=${threads[${#threads[@]}-1]}
: >"$out/ceiling.md"
for a in ${CEILING-stats io}; do
    python3 "$here/copies-ceiling.py" --rounds 1 --copies "1,$top" -- "$tl" "$a" -j 1 "$trace" | tee -a "$out/ceiling.md"
    echo | tee -a "$out/ceiling.md"
done
# What costs the parallel part its efficiency: EXPERIMENTS analyses (default none) at the top
# thread count, as they are, with the read pages kept mapped (TRACELENS_KEEP_PAGES=1: no
# madvise hand-backs, hence no TLB shoot-downs) and with mimalloc never returning freed
# memory (MIMALLOC_PURGE_DELAY=-1), two rounds alternated.
if [ -n "${EXPERIMENTS:-}" ]; then
    echo "| analysis | -j | setting | wall s | CPU s | peak RSS MB |" | tee "$out/experiments.md"
    echo "|---|---|---|---|---|---|" | tee -a "$out/experiments.md"
    for a in $EXPERIMENTS; do
        for _ in 1 2; do
            for env in TRACELENS_NONE=1 TRACELENS_KEEP_PAGES=1 MIMALLOC_PURGE_DELAY=-1; do
                env "$env" "$here/gnu-time.sh" "$tmp/t" "$tl" "$a" -j "$top" "$trace" >/dev/null
                read -r e u s m <"$tmp/t"
                echo "| $a | $top | $env | $e | $(python3 -c "print(round($u + $s, 2))") | $((m / 1000)) |" | tee -a "$out/experiments.md"
            done
        done
    done
fi
