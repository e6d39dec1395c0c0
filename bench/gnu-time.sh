#!/usr/bin/env bash
# gnu-time.sh OUTFILE COMMAND...: run COMMAND and write "wall user sys maxrss_kB" to OUTFILE,
# like `/usr/bin/time -f '%e %U %S %M' -o OUTFILE`. Uses GNU time where it is installed and
# python3's getrusage otherwise (a bare machine, such as a lent 16-core one, may lack GNU time).
set -uo pipefail
out=${1:?outfile}; shift
if [ -x /usr/bin/time ]; then exec /usr/bin/time -f '%e %U %S %M' -o "$out" "$@"; fi
exec python3 -c '
import resource, subprocess, sys, time
out, cmd = sys.argv[1], sys.argv[2:]
t = time.monotonic()
rc = subprocess.call(cmd)
e = time.monotonic() - t
r = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(out, "w") as f:
    f.write(f"{e:.2f} {r.ru_utime:.2f} {r.ru_stime:.2f} {r.ru_maxrss}\n")
sys.exit(rc)' "$out" "$@"
