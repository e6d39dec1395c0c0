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
    t = time.monotonic()
    while time.monotonic() - t < seconds:
        middle(20000)


outer(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
