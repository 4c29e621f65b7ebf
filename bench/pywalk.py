# SPDX-License-Identifier: GPL-2.0-only
"""bench/pywalk.py SECONDS: the Python load of bench/run's pywalk phase.

One thread computes in pure Python at the bottom of a chain of 12 Python frames (on-CPU
samples with a Python stack to walk); four threads sleep 0.5 ms at a time at the bottom
of such a chain (off-CPU intervals of ~0.6 ms, past hostprofd's 200 us threshold, each
with a Python stack to walk at the switch-out). Prints "ready" once every thread runs,
and at the end the loops each kind made.
"""
import sys
import threading
import time

DEPTH = 12
stop = threading.Event()
counts = {"spin": 0, "sleep": 0}


def chain(depth, leaf):
    if depth == 0:
        return leaf()
    return chain(depth - 1, leaf)


def spin_leaf():
    x = 0
    for i in range(2000):
        x += i
    return x


def sleep_leaf():
    time.sleep(0.0005)


def spinner():
    n = 0
    while not stop.is_set():
        chain(DEPTH, spin_leaf)
        n += 1
    counts["spin"] += n


def sleeper():
    n = 0
    while not stop.is_set():
        chain(DEPTH, sleep_leaf)
        n += 1
    counts["sleep"] += n


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
    threads = [threading.Thread(target=spinner, name="pw-spin")]
    threads += [threading.Thread(target=sleeper, name=f"pw-sleep{i}") for i in range(4)]
    for t in threads:
        t.start()
    print("ready", flush=True)
    stop.wait(seconds)
    stop.set()
    for t in threads:
        t.join()
    print(f"spin={counts['spin']} sleep={counts['sleep']}", flush=True)


if __name__ == "__main__":
    main()
