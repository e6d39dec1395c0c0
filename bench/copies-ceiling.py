#!/usr/bin/env python3
"""What a machine gives N independent single-threaded runs of one command at once: the
throughput ceiling that a `-j N` run of the same work can be held against.

    bench/copies-ceiling.py [--rounds R] [--copies 1,2,4,8,16] -- COMMAND...

e.g. `bench/copies-ceiling.py -- target/release/tracelens stats -j 1 /dev/shm/synth-96m`.
For each N, R rounds start N copies of COMMAND at the same moment (standard output to a
write-only /dev/null) and take the lowest batch wall time (until the last copy is done).
Prints a markdown table: N, the batch wall, the copies' mean wall, the throughput speed-up N x alone / batch (alone: the lowest
wall of the first N given, normally 1) and that per copy. On an ideal machine the speed-up is
N; shared caches, memory bandwidth and frequency limits keep it lower, whatever the program,
so a `-j N` speed-up is only as far from N as it is from this one. Needs only python3.
"""
import argparse
import importlib.util
import os
import shutil
import sys

# The timing of commands started together is jobs-ceiling.py's.
_spec = importlib.util.spec_from_file_location("jobs_ceiling", os.path.join(os.path.dirname(os.path.abspath(__file__)), "jobs-ceiling.py"))
jobs_ceiling = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(jobs_ceiling)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--rounds', type=int, default=2, help='rounds per number of copies (default 2)')
    p.add_argument('--copies', default='1,2,4,8,16', help='numbers of copies at once, comma-separated; the first is the base (default 1,2,4,8,16)')
    p.add_argument('command', nargs=argparse.REMAINDER, help='the command (after --)')
    a = p.parse_args()
    cmd = a.command[1:] if a.command[:1] == ['--'] else a.command
    if not cmd:
        p.error('no command given (put it after --)')
    if a.rounds < 1:
        p.error('--rounds must be at least 1')
    try:
        ns = [int(x) for x in a.copies.split(',')]
    except ValueError:
        p.error(f'--copies: not a comma-separated list of numbers: {a.copies!r}')
    if not ns or min(ns) < 1:
        p.error('--copies: each number must be at least 1')
    exe = shutil.which(cmd[0])
    if exe is None:
        sys.exit(f'copies-ceiling: cannot run {cmd[0]}: not an executable')
    argv = [exe, *cmd[1:]]
    best = {}
    for _ in range(a.rounds):
        for n in ns:
            ends = jobs_ceiling.ends(*[argv] * n, stderr=True)
            batch = max(ends)
            if n not in best or batch < best[n][0]:
                best[n] = (batch, sum(ends) / n)
    alone = best[ns[0]][0] / ns[0]
    print(f'`{" ".join(cmd)}`, best of {a.rounds}')
    print()
    print('| copies at once | batch wall s | mean copy wall s | throughput speed-up | per copy |')
    print('|---|---|---|---|---|')
    for n in ns:
        batch, mean = best[n]
        print(f'| {n} | {batch:.3f} | {mean:.3f} | {n * alone / batch:.2f}× | {alone / batch:.2f} |')


if __name__ == '__main__':
    main()
