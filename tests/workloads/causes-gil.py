#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The GIL scenario of the causes battery (tests/e2e/causes.sh), in CPython: a dispatch
thread that needs the GIL while another Python thread holds it, with the ground truth
measured by the workload itself. It speaks the protocol of tests/workloads/causes.c:

    causes-gil.py gil --name NAME --cpu C --other-cpu O [--duration MS] [--start-delay MS]
                  [--seed N] [--helper NAME] [--switch-ms S] [--burst-ms LO-HI]
                  [--idle-ms LO-HI]

The process, in a session of its own whose autogroup is at nice -20, at nice -20, runs a
dispatch thread named NAME pinned to CPU C and a thread named --helper pinned to O. The
dispatch thread's own work is a loop of SHA-256 over 16 KiB (hashlib drops the GIL while it
hashes: the thread runs C code most of the time and needs the GIL between the calls, as a
thread that launches kernels does). It prints "ready pid=P tid=T" once both threads run,
does its work for --duration MS after --start-delay MS, and then keeps on until SIGTERM or
SIGINT. During the work the helper sleeps a random LO-HI ms (--idle-ms), then holds the GIL
in a pure-Python burst of a random LO-HI ms (--burst-ms) in format_stats(), again and
again; the interpreter's switch interval is S ms (sys.setswitchinterval), so a burst
longer than S is handed back and forth in S ms waits.

What the dispatch thread lost is measured by its own clocks: over each call, its wall time
(CLOCK_BOOTTIME, the clock of the traces) less its thread CPU time, where it is 20 us or
more, is a gap (it was not running: waiting for the GIL, or for its CPU). When the work is
over it prints, one key=value a line, then "done":
    mode=gil start_ns= end_ns=         the work's window
    lost_ns= gaps= max_gap_ns=         all its gaps, whatever caused them
    planted_ns=                        the gaps' overlap with the helper's bursts
    cause_ns= count=                   the bursts, by the helper's clock, and how many
    holder_tid= holder= function=      the helper thread, and the function it held the GIL in
    switch_ms=
Exit 0; 2 on a usage error; 77 when this machine cannot plant the cause (a CPU missing).
"""
import argparse
import ctypes
import hashlib
import os
import random
import signal
import sys
import threading
import time

GAP_NS = 20000
BOOT = getattr(time, "CLOCK_BOOTTIME", time.CLOCK_MONOTONIC)
libc = ctypes.CDLL(None, use_errno=True)


def now_ns():
    return time.clock_gettime_ns(BOOT)


def span(text):
    lo, _, hi = text.partition("-")
    lo, hi = int(lo), int(hi or lo)
    if lo <= 0 or hi < lo:
        raise argparse.ArgumentTypeError("want LO-HI, 0 < LO <= HI: %s" % text)
    return lo, hi


ap = argparse.ArgumentParser(usage=__doc__.split("\n\n")[1])
ap.add_argument("mode", choices=["gil"])
ap.add_argument("--name", default="acl_thread")
ap.add_argument("--helper", default="helper")
ap.add_argument("--cpu", type=int, required=True)
ap.add_argument("--other-cpu", type=int, required=True)
ap.add_argument("--duration", type=int, default=3000)
ap.add_argument("--start-delay", type=int, default=600)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--switch-ms", type=float, default=5.0)
ap.add_argument("--burst-ms", type=span, default=(5, 20))
ap.add_argument("--idle-ms", type=span, default=(10, 40))
opt = ap.parse_args()
if opt.cpu == opt.other_cpu or opt.duration <= 0 or opt.switch_ms <= 0:
    ap.error("the CPUs must differ, the duration and the switch interval be positive")
avail = os.sched_getaffinity(0)
if opt.cpu not in avail or opt.other_cpu not in avail:
    print("causes-gil: skipped: the dispatch CPU or the other CPU is not there", file=sys.stderr)
    sys.exit(77)
rng = random.Random(opt.seed)
sys.setswitchinterval(opt.switch_ms / 1000)
try:
    os.setsid()
except OSError:
    pass
try:
    with open("/proc/self/autogroup", "w") as f:
        f.write("-20\n")
except OSError:
    pass
try:
    os.setpriority(os.PRIO_PROCESS, 0, -20)  # this thread's; the threads below inherit it
except OSError:
    pass

phase = 0  # 0 before the work, 1 during, 2 after
stop = threading.Event()
started = threading.Event()
tids = {}
gaps = []
bursts = []
ready = threading.Barrier(3)


def name_thread(name):
    libc.prctl(15, name.encode()[:15], 0, 0, 0)  # PR_SET_NAME: the comm the report shows


def format_stats(seconds):
    # pure Python: holds the GIL the whole time (but where the switch interval takes it)
    end = time.perf_counter() + seconds
    rows = 0
    while time.perf_counter() < end:
        rows += len("%d:%s" % (rows, "x" * (rows % 7)))
    return rows


def helper():
    name_thread(opt.helper)
    os.sched_setaffinity(0, {opt.other_cpu})
    tids["helper"] = threading.get_native_id()
    ready.wait()
    started.wait()
    while phase == 1:
        time.sleep(rng.randint(*opt.idle_ms) / 1000)
        if phase != 1:
            break
        a = now_ns()
        format_stats(rng.randint(*opt.burst_ms) / 1000)
        bursts.append((a, now_ns()))


def dispatch():
    name_thread(opt.name)
    os.sched_setaffinity(0, {opt.cpu})
    tids["dispatch"] = threading.get_native_id()
    buf = bytes(range(256)) * 64  # 16 KiB: hashlib hashes it with the GIL dropped
    ready.wait()
    while not stop.is_set():
        w0, c0 = now_ns(), time.thread_time_ns()
        hashlib.sha256(buf).digest()
        w1, c1 = now_ns(), time.thread_time_ns()
        lost = (w1 - w0) - (c1 - c0)
        if phase == 1 and lost >= GAP_NS:
            gaps.append((w1 - lost, w1))


def on_signal(*_):
    stop.set()


signal.signal(signal.SIGTERM, on_signal)
signal.signal(signal.SIGINT, on_signal)
threads = [threading.Thread(target=dispatch), threading.Thread(target=helper)]
for t in threads:
    t.start()
ready.wait()
print("ready pid=%d tid=%d" % (os.getpid(), tids["dispatch"]), flush=True)
name_thread("main")
time.sleep(opt.start_delay / 1000)
start = now_ns()
phase = 1
started.set()
time.sleep(opt.duration / 1000)
end = now_ns()
phase = 2
threads[1].join()
work = [(a, b) for (a, b) in gaps if a >= start and b <= end]


def overlap(a, b):
    return sum(max(0, min(b, y) - max(a, x)) for (x, y) in bursts)


print("mode=gil\nstart_ns=%d\nend_ns=%d\nlost_ns=%d\ngaps=%d\nmax_gap_ns=%d\nplanted_ns=%d\ncause_ns=%d\ncount=%d"
      % (start, end, sum(b - a for (a, b) in work), len(work), max((b - a for (a, b) in work), default=0),
         sum(overlap(a, b) for (a, b) in work), sum(b - a for (a, b) in bursts), len(bursts)))
print("holder_tid=%d\nholder=%s\nfunction=format_stats\nswitch_ms=%g\ndone" % (tids["helper"], opt.helper, opt.switch_ms),
      flush=True)
while not stop.wait(0.1):
    pass
threads[0].join()
