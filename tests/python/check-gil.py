# SPDX-License-Identifier: GPL-2.0-only
# check-gil.py WORKLOAD.out REPORT.json [--not-gil]: gil.py's own measurement (its two JSON
# lines) against the report's GIL section. The waits gil_wait measured that lie wholly in
# the time hostprofd watched the GIL (from the table's watched_since to the window's end)
# must be attributed to gil_hold for at least 90% of their time (and not over 110%), and
# hold_burst be the function hostprofd names most for gil_hold. --not-gil (gil.py lock or
# cond): gil_wait's waits on the lock or condition must not be called the GIL: what the
# report says gil_wait waited for the GIL is under 5% of what it measured waiting (while
# hostprofd saw it blocked for at least half of that).
import json
import sys

lines = open(sys.argv[1]).read().splitlines()
head, result = json.loads(lines[0]), json.loads(lines[1])
report = json.load(open(sys.argv[2]))
not_gil = "--not-gil" in sys.argv[3:]
fails = 0


def check(cond, msg):
    global fails
    print(("ok: " if cond else "FAIL: ") + msg)
    if not cond:
        fails += 1


gil = report.get("gil")
if not gil:
    print("FAIL: the report has no GIL section")
    sys.exit(1)
check(gil["status"] == "watched", "the GIL is watched (status %s, %s)" % (gil["status"], gil["reason"]))
since = max(gil["watched_since"], report["window"]["start_ns"])
end = report["window"]["end_ns"]
measured = sum(took for (e, took) in result["log"] if e - took >= since and e <= end)
total = sum(took for (e, took) in result["log"])
print("  gil.py measured %.1f ms of waits, %.1f ms of them in hostprofd's %.3f s" %
      (total / 1e6, measured / 1e6, (end - since) / 1e9))
waiter = next((t for t in gil["threads"] if t["tid"] == head["wait_tid"]), None)
if not_gil:
    seen = waiter["total_ns"] if waiter else 0
    check(measured > 0, "gil_wait waited %.1f ms on the %s" % (measured / 1e6, head["mode"]))
    me = next((t for t in report["threads"] if t["tid"] == head["wait_tid"]), {})
    blocked = sum(c["time_ns"] for c in me.get("time", {}).get("causes", []) if c["cause"] == "blocked")
    check(blocked >= 0.5 * measured, "hostprofd saw gil_wait blocked %.1f ms (the %s's waits)" % (blocked / 1e6, head["mode"]))
    check(seen < 0.05 * measured,
          "gil_wait's GIL waits %.1f ms: under 5%% of its %.1f ms on the %s" % (seen / 1e6, measured / 1e6, head["mode"]))
    sys.exit(1 if fails else 0)
check(waiter is not None, "gil_wait (tid %d) is in the GIL section" % head["wait_tid"])
if not waiter:
    sys.exit(1)
holder = next((h for h in waiter["holders"] if h["tid"] == head["hold_tid"]), None)
got = holder["ns"] if holder else 0
print("  hostprofd: gil_wait waited %.1f ms in all, %.1f ms recorded, %.1f ms held by gil_hold" %
      (waiter["total_ns"] / 1e6, waiter["recorded_ns"] / 1e6, got / 1e6))
check(measured > 0 and 0.9 * measured <= got <= 1.1 * measured,
      "held by gil_hold (tid %d): %.1f ms of the %.1f ms measured (%.1f%%, 90-110%%)" %
      (head["hold_tid"], got / 1e6, measured / 1e6, 100.0 * got / measured if measured else 0))
fns = [f for f in holder["functions"] if f["read"]] if holder else []
top = {}
for f in fns:
    top[f["function"]] = top.get(f["function"], 0) + f["ns"]
name = max(top, key=top.get) if top else None
check(name == "hold_burst", "gil_hold's function, most of the time: %s (%s)" %
      (name, ", ".join("%s %.1f ms" % (k, v / 1e6) for k, v in sorted(top.items(), key=lambda kv: -kv[1]))))
gil = report.get("gil", {})
at, after = gil.get("stacks_at_wait", 0), gil.get("stacks_read_after", 0)
print("  holders' stacks: %d from the holder's own samples inside the wait, %d read after it (up to %.1f ms later), %d missed" %
      (at, after, gil.get("max_stack_lag_ns", 0) / 1e6, gil.get("stacks_missed", 0)))
# gil_hold runs hold_burst while it holds the GIL: its samples inside the waits say so
burst = top.get("hold_burst", 0)
check(got > 0 and burst >= 0.75 * got, "hold_burst named for %.1f ms of gil_hold's %.1f ms (%.1f%%, >= 75%%)" %
      (burst / 1e6, got / 1e6, 100.0 * burst / got if got else 0))
check(at > 0, "some holders' stacks come from samples inside their waits (%d)" % at)
sys.exit(1 if fails else 0)
