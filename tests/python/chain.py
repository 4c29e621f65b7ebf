# SPDX-License-Identifier: GPL-2.0-only
# The python suite's workload, for every CPython 3.8+: three threads in the known chain
# outer -> middle -> inner, one blocked in time.sleep, one spinning, one waiting on a lock,
# and the main thread blocked in main -> main_wait. Once all are in place it prints its own
# ground truth, taken with inspect, as one JSON line: for each thread its native tid and,
# innermost first, the (function, line) of each frame of the chain, and the file. Then it
# stays so for LIFETIME seconds (argv[1], default 60) and exits. With "ticker" (argv[2]) a
# fourth thread in the chain sleeps 100 ms at a time, for a trigger on its off-CPU time.
import inspect
import json
import os
import sys
import threading
import time

lifetime = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
roles = ("sleep", "spin", "lock", "tick") if sys.argv[2:3] == ["ticker"] else ("sleep", "spin", "lock")
deadline = time.monotonic() + lifetime
truth = {}
ready = threading.Barrier(len(roles) + 2)  # the chain's threads, main_wait, report
lock = threading.Lock()
lock.acquire()


def name_thread(name):
    try:
        import ctypes

        ctypes.CDLL(None).prctl(15, name.encode(), 0, 0, 0)  # PR_SET_NAME: the comm the report shows
    except Exception:
        pass


def here():
    """The line the caller is at."""
    return inspect.currentframe().f_back.f_lineno


def inner(how):
    t = truth[how]
    if how == "sleep":
        t["inner"] = here() + 1; ready.wait()
        time.sleep(lifetime)
    elif how == "spin":
        t["inner"] = here() + 2; ready.wait()
        n = 0
        while time.monotonic() < deadline: n += 1
    elif how == "lock":
        t["inner"] = here() + 1; ready.wait()
        lock.acquire(timeout=lifetime)
    else:
        t["inner"] = here() + 2; t["inner_alt"] = here() + 1; ready.wait()
        while time.monotonic() < deadline:
            time.sleep(0.1)


def middle(how):
    truth[how]["middle"] = here(); inner(how)


def outer(how):
    name_thread({"sleep": "sleeper", "spin": "spinner", "lock": "locker", "tick": "ticker"}[how])
    truth[how] = {"tid": threading.get_native_id(), "outer": here() + 1}
    middle(how)


def main_wait():
    truth["main"]["main_wait"] = here() + 1; ready.wait()
    time.sleep(lifetime)


def main():
    truth["main"] = {"tid": threading.get_native_id(), "main": here() + 4}
    for how in roles:
        threading.Thread(target=outer, args=(how,), daemon=True).start()
    threading.Thread(target=report, daemon=True).start()
    main_wait()
    os._exit(0)


def report():
    ready.wait()
    time.sleep(0.2)  # each thread goes from ready.wait() to the call on its next line
    out = {"pid": os.getpid(), "version": "%d.%d.%d" % sys.version_info[:3],
           "file": inspect.currentframe().f_code.co_filename, "threads": {}}
    for how, t in truth.items():
        chain = ["main_wait", "main"] if how == "main" else ["inner", "middle", "outer"]
        out["threads"][how] = {"tid": t["tid"], "frames": [[f, t[f]] for f in chain]}
        if "inner_alt" in t:  # between two sleeps it may be at the loop's test
            out["threads"][how]["inner_alt"] = t["inner_alt"]
    print(json.dumps(out), flush=True)


main()
