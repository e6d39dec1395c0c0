#!/usr/bin/env bash
# CTF 2 against CTF 1.8 decoding (issue 14): the same stream files under CTF 1.8 TSDL and
# CTF 2 JSON metadata (`tracelens synth --ctf 1|2`), decoded by one binary in one run.
#
#   bench/ctf2-vs-ctf1.sh DIR [ROUNDS]
#
# 1. Writes DIR/ctf1 and DIR/ctf2 (48,000,058 events, 1.08 GB each) if missing and checks that
#    their stream files are the same bytes.
# 2. ROUNDS alternated runs (CTF 1.8, CTF 2, CTF 1.8, ...) of `tracelens stats -j 1 T`, GNU
#    time's wall and user seconds; then one `babeltrace2 DIR/ctf1 -o dummy` (babeltrace2 2.0
#    does not read CTF 2) as the reference peer.
# 3. Instructions per event under callgrind (exact, whatever the load): `stats -j 1` and the
#    `count` example (decoder only) on 300,058- and 600,058-event versions of both (the
#    difference / 300,000 events), and the `ctf2_ints` example's traces of fixed-length,
#    variable-length and optional integers (200,000 and 400,000 events: difference / 200,000).
set -euo pipefail
dir=${1:?output dir}; rounds=${2:-10}
tl=${TRACELENS:-target/release/tracelens}
ex=${EXAMPLES:-target/release/examples}
[ -x "$tl" ] || cargo build --release --quiet -p tracelens
[ -x "$ex/count" ] && [ -x "$ex/ctf2_ints" ] || cargo build --release --quiet -p tracelens-ctf --example count --example ctf2_ints
mkdir -p "$dir"
synth() { # version, dir, events
  [ -f "$2/metadata" ] || "$tl" synth --ctf "$1" -o "$2" --cpus 4 --threads 32 --events "$3" --seed 1 2>/dev/null
}
for v in 1 2; do synth $v "$dir/ctf$v" 48000000; done
for f in "$dir"/ctf1/channel0_* "$dir"/ctf1/index/*; do cmp "$f" "$dir/ctf2/${f#"$dir"/ctf1/}"; done
echo "# stream files identical; metadata: $(head -c 13 "$dir/ctf1/metadata") vs $(head -c 40 "$dir/ctf2/metadata" | tr -d '\036')"
uptime
for r in $(seq "$rounds"); do
  for v in 1 2; do
    tf=$(mktemp)
    /usr/bin/time -o "$tf" -f '%e %U' "$tl" stats -j 1 "$dir/ctf$v" >/dev/null
    echo "round $r ctf$v stats -j 1 wall_s user_s: $(tail -1 "$tf")"; rm -f "$tf"
  done
done
tf=$(mktemp)
/usr/bin/time -o "$tf" -f '%e %U' babeltrace2 "$dir/ctf1" -o dummy >/dev/null 2>&1
echo "babeltrace2 ctf1 wall_s user_s: $(tail -1 "$tf")"; rm -f "$tf"
uptime
ir() { # command...: instructions (callgrind's total)
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null | sed -n 's/.*Collected : *//p'
}
for n in 300000 600000; do for v in 1 2; do synth $v "$dir/small$n-ctf$v" "$n"; done; done
for v in 1 2; do
  for cmd in "$tl stats -j 1" "$ex/count"; do
    a=$(ir $cmd "$dir/small300000-ctf$v"); b=$(ir $cmd "$dir/small600000-ctf$v")
    echo "ctf$v ${cmd##*/}: $a / $b instructions, $(awk -v a="$a" -v b="$b" 'BEGIN{printf "%.2f", (b-a)/300000}') per event"
  done
done
for k in fixed varlen optional; do
  for n in 200000 400000; do [ -f "$dir/ints-$k-$n/metadata" ] || "$ex/ctf2_ints" "$dir/ints-$k-$n" $k $n; done
  a=$(ir "$ex/count" "$dir/ints-$k-200000"); b=$(ir "$ex/count" "$dir/ints-$k-400000")
  echo "ints $k count: $a / $b instructions, $(awk -v a="$a" -v b="$b" 'BEGIN{printf "%.2f", (b-a)/200000}') per event"
done
