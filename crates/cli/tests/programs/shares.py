# The 2015 paper's accuracy design (Table 1): ten functions doing the same work per unit
# (the same small-integer arithmetic per iteration), called in rounds with 50, 20, 15, 5, 5,
# 1, 1, 1, 1, 1 units each, so that they take those shares of the CPU. The program measures
# its own CPU time in each function (time.thread_time_ns around each call) and prints it as
# JSON: the oracle profilers are compared with.
#
#   python3 shares.py SECONDS [UNIT_ITERATIONS [ROUNDS]] > oracle.json
#
# With ROUNDS, exactly that many rounds run (a fixed amount of work, to time), whatever
# SECONDS says.
import json
import sys
import time

SHARES = [50, 20, 15, 5, 5, 1, 1, 1, 1, 1]


def f0(n):
    x = 1
    for _ in range(n):
        x = (x * 31 + 7) & 0xFFFF
    return x


def f1(n):
    x = 1
    for _ in range(n):
        x = (x * 31 + 7) & 0xFFFF
    return x


def f2(n):
    x = 1
    for _ in range(n):
        x = (x * 31 + 7) & 0xFFFF
    return x


def f3(n):
    x = 1
    for _ in range(n):
        x = (x * 31 + 7) & 0xFFFF
    return x


def f4(n):
    x = 1
    for _ in range(n):
        x = (x * 31 + 7) & 0xFFFF
    return x


def f5(n):
    x = 1
    for _ in range(n):
        x = (x * 31 + 7) & 0xFFFF
    return x


def f6(n):
    x = 1
    for _ in range(n):
        x = (x * 31 + 7) & 0xFFFF
    return x


def f7(n):
    x = 1
    for _ in range(n):
        x = (x * 31 + 7) & 0xFFFF
    return x


def f8(n):
    x = 1
    for _ in range(n):
        x = (x * 31 + 7) & 0xFFFF
    return x


def f9(n):
    x = 1
    for _ in range(n):
        x = (x * 31 + 7) & 0xFFFF
    return x


FUNCS = [globals()["f%d" % k] for k in range(len(SHARES))]


def main(seconds, unit, fixed):
    spent = [0] * len(FUNCS)
    clock = time.thread_time_ns
    start = time.monotonic_ns()
    end = time.monotonic() + seconds
    rounds = 0
    while (rounds < fixed) if fixed else (time.monotonic() < end):
        for k, f in enumerate(FUNCS):
            a = clock()
            f(SHARES[k] * unit)
            spent[k] += clock() - a
        rounds += 1
    total = sum(spent)
    print(json.dumps({
        "rounds": rounds,
        "elapsed_ns": time.monotonic_ns() - start,
        "process_cpu_ns": time.process_time_ns(),
        "cpu_ns": {f.__name__: n for f, n in zip(FUNCS, spent)},
        "expected_pct": {f.__name__: 100.0 * s / sum(SHARES) for f, s in zip(FUNCS, SHARES)},
        "measured_pct": {f.__name__: 100.0 * n / total for f, n in zip(FUNCS, spent)},
    }))


main(float(sys.argv[1]) if len(sys.argv) > 1 else 3.0, int(sys.argv[2]) if len(sys.argv) > 2 else 2000, int(sys.argv[3]) if len(sys.argv) > 3 else 0)
