# SPDX-License-Identifier: GPL-2.0-only
# check-gil-torch.py REPORT.json MAIN_TID: tests/workloads/torch-logger.py watched by
# hostprofd: its training loop (the main thread, MAIN_TID) waited for the GIL, and the
# report's GIL section says the logger thread held it, in flush_stats (the function itself
# or one it called, on some of the stacks read after those waits); the report's breakdown of the
# main thread has the GIL as a cause, held by logger.
import json
import sys

report = json.load(open(sys.argv[1]))
main_tid = int(sys.argv[2])
fails = 0


def check(cond, msg):
    global fails
    print(("ok: " if cond else "FAIL: ") + msg)
    if not cond:
        fails += 1


gil = report.get("gil") or {}
check(gil.get("status") == "watched", "the GIL is watched (%s %s)" % (gil.get("status"), gil.get("reason", "")))
main = next((t for t in gil.get("threads", []) if t["tid"] == main_tid), None)
check(main is not None and main["recorded_ns"] > 0, "the training loop (tid %d) waited for the GIL: %.1f ms" %
      (main_tid, main["total_ns"] / 1e6 if main else 0))
if main:
    top = max(main["holders"], key=lambda h: h["ns"]) if main["holders"] else None
    check(top is not None and top["comm"] == "logger", "held most by %s (tid %s): %.1f ms of %.1f ms" %
          (top and top["comm"], top and top["tid"], top["ns"] / 1e6 if top else 0, main["recorded_ns"] / 1e6))
    if top:
        read = [f for f in top["functions"] if f["read"]]
        in_flush = sum(f["ns"] for f in read if any(fr["function"].startswith("flush_stats") for fr in f["stack"]))
        total = sum(f["ns"] for f in read)
        # read as the records drain, after each wait: a logger that dropped the GIL by itself
        # is often seen in its sleep by then (the report says so), so flush_stats is on a
        # part of the stacks, not on all
        check(total > 0 and in_flush >= 0.1 * total, "logger in flush_stats for %.1f ms of the %.1f ms its stack was read" %
              (in_flush / 1e6, total / 1e6))
me = next((t for t in report.get("threads", []) if t.get("tid") == main_tid), {})
cause = next((c for c in me.get("time", {}).get("causes", []) if c["cause"] == "gil"), None)
by = cause["by"][0] if cause and cause["by"] else {}
check(cause is not None and by.get("comm") == "logger",
      "the main thread's breakdown: the GIL %.1f ms, most held by %s" %
      (cause["time_ns"] / 1e6 if cause else 0, by.get("text")))
print("  verdict: %s" % report.get("verdict", {}).get("text"))
sys.exit(1 if fails else 0)
