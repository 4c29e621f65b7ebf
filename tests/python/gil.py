# SPDX-License-Identifier: GPL-2.0-only
# The GIL workload, for every CPython 3.8+: a thread "gil_hold" that holds the GIL in
# pure-Python bursts of BURST_MS in hold_burst(), each followed by a short sleep, beside a
# thread "gil_wait" that needs the GIL again and again (time.sleep(0) drops the GIL and
# takes it again, and returns at once: what it takes is the wait for the GIL), and measures
# itself how long each of those waits took. Prints one JSON line once both run: their
# native tids; then, after LIFETIME seconds, a second line: what gil_wait measured
# (waited_ns, the sum; longest_ns; log: [end_ns, took_ns] of each wait, CLOCK_BOOTTIME) and
# the window it measured in (start_ns, end_ns). Then it idles for LINGER seconds (its
# threads gone but the main one, which sleeps) and exits.
#
#   gil.py LIFETIME BURST_MS [gil|sleep|nap|lock|cond [LINGER [SWITCH_MS [go]]]]
#
# go: the LIFETIME seconds it measures begin only at SIGUSR1 (the test sends it once
# hostprofd watches the GIL); the threads run meanwhile.
#
# SWITCH_MS: the interpreter's switch interval (sys.setswitchinterval; CPython's default
# 5 ms), which is how long gil_wait waits each time: what it measures also holds its own
# time around each wait (the sleep(0) call, being preempted on a busy machine: ~0.1-0.5 ms
# a wait on 2 loaded cores), which a longer interval makes a smaller part of it.
#
# sleep: gil_hold sleeps BURST_MS (the GIL dropped) after each burst, not 1 ms: its stack
# read after a wait ended (later) is then often in that sleep, not in what held the GIL.
# What gil_wait measures leaves out its calls that lie wholly in such a sleep (the GIL is
# free then: what they took is gil_wait's own preemptions).
# nap: gil_wait sleeps 1 ms (the GIL dropped) before each time it needs the GIL, so that
# gil_hold holds it most of the time (pygil samples the holder).
# lock: gil_wait waits instead on a threading.Lock that gil_hold holds while it sleeps
# BURST_MS, so its waits are futex waits on that lock (with the GIL dropped, and nobody
# holding it for long): never the GIL's. cond: the same on a threading.Condition that
# gil_hold notifies after each sleep.
import json
import os
import sys
import threading
import time

lifetime = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
burst = float(sys.argv[2]) / 1000 if len(sys.argv) > 2 else 0.05
mode = sys.argv[3] if len(sys.argv) > 3 else "gil"
clock = getattr(time, "CLOCK_BOOTTIME", time.CLOCK_MONOTONIC)
linger = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
if len(sys.argv) > 5:
    sys.setswitchinterval(float(sys.argv[5]) / 1000)
yield_gil = lambda: time.sleep(0)  # drops the GIL, and comes back at once (no yield of the CPU)
log = []
tids = {}
ready = threading.Barrier(3)
stop = threading.Event()
lock = threading.Lock()
cond = threading.Condition()
measured = {"waited_ns": 0, "longest_ns": 0, "waits": 0}
nap_seq = [0]  # sleep: gil_hold's sleeps begun and ended


def name_thread(name):
    try:
        import ctypes

        ctypes.CDLL(None).prctl(15, name.encode(), 0, 0, 0)  # PR_SET_NAME: the comm the report shows
    except Exception:
        pass


def native_tid():
    try:
        return threading.get_native_id()
    except AttributeError:
        import ctypes

        return ctypes.CDLL(None).syscall(186)  # gettid, x86-64 (3.7 has no get_native_id)


def hold_burst(seconds):
    end = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < end:
        n += 1
    return n


def holder():
    name_thread("gil_hold")
    tids["hold"] = native_tid()
    ready.wait()
    while not stop.is_set():
        if mode == "lock":
            with lock:
                time.sleep(burst)
            time.sleep(0.0005)
        elif mode == "cond":
            time.sleep(burst)
            with cond:
                cond.notify()
        elif mode == "sleep":
            hold_burst(burst)
            nap_seq[0] += 1  # odd: asleep
            time.sleep(burst)
            nap_seq[0] += 1
        else:
            hold_burst(burst)
            time.sleep(0.001)


def waiter():
    name_thread("gil_wait")
    tids["wait"] = native_tid()
    ready.wait()
    while not stop.is_set():
        t0 = time.perf_counter_ns()
        if mode == "lock":
            with lock:
                pass
            took = time.perf_counter_ns() - t0
        elif mode == "cond":
            with cond:
                cond.wait(1.0)
            took = time.perf_counter_ns() - t0
        elif mode == "nap":
            time.sleep(0.001)
            took = time.perf_counter_ns() - t0 - 1000000
        else:
            seq = nap_seq[0]
            yield_gil()
            took = time.perf_counter_ns() - t0
            if seq & 1 and nap_seq[0] == seq:
                continue  # wholly while gil_hold slept (sleep): its preemptions, not the GIL
        measured["waited_ns"] += took
        measured["waits"] += 1
        measured["longest_ns"] = max(measured["longest_ns"], took)
        if took >= 100000:
            log.append((time.clock_gettime_ns(clock), took))


threads = [threading.Thread(target=holder), threading.Thread(target=waiter)]
for t in threads:
    t.start()
wait_go = len(sys.argv) > 6 and sys.argv[6] == "go"
go = threading.Event()
if wait_go:
    import signal

    signal.signal(signal.SIGUSR1, lambda *_: go.set())
ready.wait()
print(json.dumps({"pid": os.getpid(), "hold_tid": tids["hold"], "wait_tid": tids["wait"], "mode": mode,
                  "version": "%d.%d" % sys.version_info[:2]}), flush=True)
while wait_go and not go.wait(0.05):
    pass
start = time.clock_gettime_ns(clock)
measured.update(waited_ns=0, longest_ns=0, waits=0)
# the log keeps every wait since the threads began: the checker takes those hostprofd saw
time.sleep(lifetime)
end = time.clock_gettime_ns(clock)
result = dict(measured, start_ns=start, end_ns=end, log=list(log))
stop.set()
for t in threads:
    t.join()
print(json.dumps(result), flush=True)
time.sleep(linger)
