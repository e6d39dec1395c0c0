# Blocks in two known places for times it measures itself (the oracle of off-CPU profiles):
# `sleepy` sleeps, `waiter` waits for a pipe another thread writes to later. Prints
# {"sleepy_ns": ..., "waiter_ns": ...}.
import json
import os
import threading
import time


def sleepy():
    time.sleep(0.03)


def waiter(fd):
    return os.read(fd, 1)


def main():
    t0 = time.monotonic_ns()
    for _ in range(10):
        sleepy()
    t1 = time.monotonic_ns()
    r, w = os.pipe()
    threading.Timer(0.2, lambda: os.write(w, b"x")).start()
    t2 = time.monotonic_ns()
    waiter(r)
    t3 = time.monotonic_ns()
    print(json.dumps({"sleepy_ns": t1 - t0, "waiter_ns": t3 - t2}))


main()
