# The 2015 paper's accuracy design (Table 1): ten functions doing the same work per unit,
# called in rounds with 50, 20, 15, 5, 5, 1, 1, 1, 1, 1 units each, so that they take those
# shares of the CPU. The program measures its own CPU time in each function
# (time.thread_time_ns around each call) and prints it as JSON: the oracle profilers are
# compared with.
#
#   python3 shares.py SECONDS [UNIT_ITERATIONS] > oracle.json
import json
import sys
import time

SHARES = [50, 20, 15, 5, 5, 1, 1, 1, 1, 1]


def f0(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s


def f1(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s


def f2(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s


def f3(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s


def f4(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s


def f5(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s


def f6(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s


def f7(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s


def f8(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s


def f9(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s


FUNCS = [globals()["f%d" % k] for k in range(len(SHARES))]


def main(seconds, unit):
    spent = [0] * len(FUNCS)
    clock = time.thread_time_ns
    end = time.monotonic() + seconds
    rounds = 0
    while time.monotonic() < end:
        for k, f in enumerate(FUNCS):
            a = clock()
            f(SHARES[k] * unit)
            spent[k] += clock() - a
        rounds += 1
    total = sum(spent)
    print(json.dumps({
        "rounds": rounds,
        "cpu_ns": {f.__name__: n for f, n in zip(FUNCS, spent)},
        "expected_pct": {f.__name__: 100.0 * s / sum(SHARES) for f, s in zip(FUNCS, SHARES)},
        "measured_pct": {f.__name__: 100.0 * n / total for f, n in zip(FUNCS, spent)},
    }))


main(float(sys.argv[1]) if len(sys.argv) > 1 else 3.0, int(sys.argv[2]) if len(sys.argv) > 2 else 200)
