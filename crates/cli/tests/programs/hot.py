# A hot function two calls deep, for `record --stacks` of `python -X perf` and `record --python`.
import sys
import time


def leaf(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def middle(n):
    return leaf(n) + 1


def outer(seconds):
    # CPU time, not wall time: a loaded machine gives the profile as many samples as an idle
    # one.
    t = time.process_time()
    while time.process_time() - t < seconds:
        middle(20000)


outer(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
