#!/usr/bin/env python3
"""jobs-ceiling.py [--rounds N] [--run 'SUBCOMMAND [ARGS]'] TRACELENS TRACE...

A tracelens subcommand's speed-up at `-j 2` over `-j 1` (by default `print`; `--run 'print
--format json'`, `--run threads`, `--run 'io --top 5'`...), next to what this machine allows two
threads: the speed-up of two independent `-j 1` processes run at once (2 x the lone run's
wall time over the pair's). On a shared virtual machine the second one is well under 2: the two
vCPUs slow each other down (shared caches, memory, the host's other tenants), whatever the
program does. `-j 2`'s share of that ceiling, under 1, is what the program itself loses to
splitting the work (over 1: its two threads do better than two processes).

Each round runs, on each trace, `-j 1` alone, `-j 2` alone and two `-j 1` at once (standard
output and error to /dev/null), in an order that alternates from round to round, and takes
the ratios *within the round*: on a host whose speed drifts by tens of percent from one
second to the next, a ratio of runs a second apart varies far less than the best or median
of each side taken apart.
Prints the median and quartiles of each ratio, the lowest wall time of each run kind, and the
speed-up and ceiling from those lowest times (how the issues' "best of N" tables measure: the
run the host disturbed least, of each kind).
Needs only python3 (3.8+).
"""
import argparse
import os
import shlex
import statistics
import sys
import time


def spawn(argv, stderr=False):
    """Starts argv with its standard output (and error, unless `stderr`) on /dev/null."""
    pid = os.fork()
    if pid == 0:
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            if not stderr:
                os.dup2(null, 2)
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    return pid


def wait_ok(pid, argv):
    _, status = os.waitpid(pid, 0)
    if status != 0:
        sys.exit(f"{os.path.basename(sys.argv[0])}: {' '.join(argv)} failed (status {status})")


def ends(*argvs, stderr=False):
    """Wall seconds from starting the given commands together to the end of each (also used by
    copies-ceiling.py)."""
    t0 = time.perf_counter()
    pids = [spawn(a, stderr) for a in argvs]
    out = []
    for pid, a in zip(pids, argvs):
        wait_ok(pid, a)
        out.append(time.perf_counter() - t0)
    return out


def timed(*argvs):
    """Wall seconds for the given commands, started together, to all end."""
    return max(ends(*argvs))


def quartiles(xs):
    return statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=20, help="rounds per trace (default 20)")
    ap.add_argument("--run", default="print", help="the subcommand and its options, without -j and the trace (default: print)")
    ap.add_argument("tracelens", help="the tracelens binary")
    ap.add_argument("traces", nargs="+", help="trace directories, each measured in turn")
    a = ap.parse_args()
    if a.rounds < 1:
        ap.error("--rounds must be at least 1")
    tl = os.path.abspath(a.tracelens)
    if not os.access(tl, os.X_OK):
        sys.exit(f"jobs-ceiling: {a.tracelens} is not an executable")
    run = shlex.split(a.run)
    print(f"| trace | command | rounds | `-j 1` best wall s | `-j 2` best wall s | `-j 2` speed-up: median (quartiles) | two `-j 1` at once: speed-up | `-j 2` / ceiling | best: speed-up, ceiling |")
    print("|---|---|---|---|---|---|---|---|---|")
    for trace in a.traces:
        j1 = [tl, *run, "-j", "1", trace]
        j2 = [tl, *run, "-j", "2", trace]
        kinds = [("j1", lambda: timed(j1)), ("j2", lambda: timed(j2)), ("pair", lambda: timed(j1, j1))]
        walls = {k: [] for k, _ in kinds}
        speedup, ceiling, share = [], [], []
        for r in range(a.rounds):
            order = kinds if r % 2 == 0 else kinds[::-1]
            got = {k: f() for k, f in order}
            for k, w in got.items():
                walls[k].append(w)
            speedup.append(got["j1"] / got["j2"])
            ceiling.append(2 * got["j1"] / got["pair"])
            share.append(speedup[-1] / ceiling[-1])
        s, c, f = quartiles(speedup), quartiles(ceiling), quartiles(share)
        print(f"| {trace} | `{a.run}` | {a.rounds} | {min(walls['j1']):.3f} | {min(walls['j2']):.3f} | {s[1]:.2f}× ({s[0]:.2f}–{s[2]:.2f}) | {c[1]:.2f}× ({c[0]:.2f}–{c[2]:.2f}) | {f[1]:.2f} ({f[0]:.2f}–{f[2]:.2f}) | {min(walls['j1']) / min(walls['j2']):.2f}×, {2 * min(walls['j1']) / min(walls['pair']):.2f}× |")
        sys.stdout.flush()
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
