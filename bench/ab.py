#!/usr/bin/env python3
"""ab.py [--rounds N] --run NAME=BINARY[:ENV=VALUE,...] ... -- ARGS...

Two or more tracelens binaries (or one binary under several environments) on the same command,
alternated run by run, so that a shared or drifting machine loads them alike: each round runs
every NAME once, in an order that rotates from round to round, standard output to /dev/null.

    bench/ab.py --rounds 3 --run old=.devbin/old --run new=.devbin/new \\
        --run kept=.devbin/new:TRACELENS_KEEP_PAGES=1 -- threads -j 16 --timings /dev/shm/s24

Prints, per NAME, the median and lowest wall seconds, the median CPU seconds (user + sys) and
system seconds of the process, the highest peak RSS (MiB), and, when the command prints a
`--timings` line on standard error, the medians of its parallel, background and serial parts
(seconds) and of its serial fraction; then each NAME's wall over the first NAME's, as the median
of the ratios within each round (on a noisy host, runs a second apart drift far less than the
rounds do). Needs only python3 (3.8+), so it runs on a bare lent machine.
"""
import argparse
import json
import os
import statistics
import sys
import time


def run(argv, env):
    """Runs argv; returns (wall s, CPU s, system s, peak RSS MiB, the --timings line or None)."""
    r, w = os.pipe()
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(w, 2)
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    os.close(w)
    err = b""
    while True:
        chunk = os.read(r, 1 << 16)
        if not chunk:
            break
        err += chunk
    os.close(r)
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        sys.exit(f"ab.py: {' '.join(argv)} failed (status {status}):\n{err.decode(errors='replace')[-2000:]}")
    timings = None
    for line in err.decode(errors="replace").splitlines():
        if line.startswith("{") and "wall_ns" in line:
            try:
                timings = json.loads(line)
            except ValueError:
                pass
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_stime, ru.ru_maxrss / 1024, timings


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--run", action="append", required=True, metavar="NAME=BINARY[:ENV=VALUE,...]")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    args = a.args[1:] if a.args[:1] == ["--"] else a.args
    if not args:
        ap.error("give the command's arguments after --")
    runs = []
    for spec in a.run:
        name, _, rest = spec.partition("=")
        binary, _, envs = rest.partition(":")
        if not name or not binary:
            ap.error(f"--run {spec}: expected NAME=BINARY[:ENV=VALUE,...]")
        env = dict(os.environ)
        for kv in filter(None, envs.split(",")):
            k, _, v = kv.partition("=")
            env[k] = v
        runs.append((name, os.path.abspath(binary), env))
    got = {name: [] for name, _, _ in runs}
    for r in range(a.rounds):
        k = r % len(runs)
        for name, binary, env in runs[k:] + runs[:k]:
            got[name].append(run([binary] + args, env))
    med = statistics.median
    print(f"`{' '.join(args)}`, {a.rounds} rounds\n")
    print("| run | wall s median | lowest | CPU s | sys s | peak RSS MiB | parallel CPU s | background CPU s | serial s | serial fraction | wall / first's |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    first = runs[0][0]
    for name, _, _ in runs:
        v = got[name]
        t = [x[4] for x in v if x[4]]
        part = lambda key: f"{med(d.get(key, 0) for d in t) / 1e9:.3f}" if t else ""
        frac = f"{med(d.get('serial_fraction', 0) for d in t) * 100:.2f}%" if t else ""
        ratio = med(x[0] / y[0] for x, y in zip(v, got[first]))
        print(f"| {name} | {med(x[0] for x in v):.3f} | {min(x[0] for x in v):.3f} | {med(x[1] for x in v):.2f} | {med(x[2] for x in v):.2f} | {max(x[3] for x in v):.0f} | {part('parallel_cpu_ns')} | {part('background_cpu_ns')} | {part('serial_ns')} | {frac} | {ratio:.3f} |")


if __name__ == "__main__":
    main()
