# SPDX-License-Identifier: GPL-2.0-only
# check-chain.py TRUTH REPORT [--comm] [--any-gil] [--tidmap FILE]: REPORT's "python" object (pydump --json, or the
# report-json of a snapshot) against chain.py's ground truth TRUTH: each thread of the
# chain found by its tid, with the functions, file and lines chain.py printed for itself,
# innermost first, then threading's run (Thread.run from 3.11: qualified names) or <module>;
# the spinning thread alone holding the GIL (unless --any-gil: another thread was just woken);
# with --comm, the thread names the daemon saw; with --tidmap (a JSON object from the tids of
# chain.py's own pid namespace to the host's), the tids it printed are mapped first.
# Prints "ok: ..." / "FAIL: ..." lines, exits 1 if any failed.
import json
import sys

truth = json.load(open(sys.argv[1]))
report = json.load(open(sys.argv[2]))
want_comm = "--comm" in sys.argv[3:]
any_gil = "--any-gil" in sys.argv[3:]
tidmap = {}
if "--tidmap" in sys.argv[3:]:
    tidmap = {int(k): v for k, v in json.load(open(sys.argv[sys.argv.index("--tidmap") + 1])).items()}
fails = 0


def check(cond, what):
    global fails
    print(("ok: " if cond else "FAIL: ") + what)
    fails += 0 if cond else 1


py = report.get("python")
check(py is not None, "the report has a python section")
if py is None:
    sys.exit(1)
check(py["status"] == "ok", "status ok (%s %s)" % (py["status"], py.get("reason", "")))
check(py["version"] == truth["version"], "version %s (truth %s)" % (py["version"], truth["version"]))
minor = int(truth["version"].split(".")[1])
by_tid = {t["tid"]: t for t in py["threads"]}
n = len(truth["threads"])
check(n <= len(py["threads"]) <= n + 1, "%d thread states (the chain's %d, main, maybe the reporter leaving)" % (len(py["threads"]), n - 1))
names = {"sleep": "sleeper", "spin": "spinner", "lock": "locker", "tick": "ticker"}
for how, t in truth["threads"].items():
    tid = tidmap.get(t["tid"], t["tid"]) if tidmap else t["tid"]
    if tidmap:
        check(t["tid"] in tidmap, "%s: its tid %d in its namespace is the host's %d" % (how, t["tid"], tid))
    th = by_tid.get(tid)
    check(th is not None, "%s: a thread with tid %d" % (how, tid))
    if th is None:
        continue
    frames = th["frames"]
    want = t["frames"]
    got = [[f["function"], f["line"]] for f in frames[:len(want)]]
    if "inner_alt" in t and got and got[0] == ["inner", t["inner_alt"]]:
        got[0][1] = want[0][1]
    check(got == want, "%s: frames %s (truth %s)" % (how, got, want))
    check(all(f["file"] == truth["file"] for f in frames[:len(want)]), "%s: file %s" % (how, truth["file"]))
    nxt = frames[len(want)] if len(frames) > len(want) else None
    if how == "main":
        check(nxt is not None and nxt["function"] == "<module>" and nxt["file"] == truth["file"],
              "main: then <module> (%s)" % (nxt and nxt["function"]))
    else:
        run = "Thread.run" if minor >= 11 else "run"
        check(nxt is not None and nxt["function"] == run and nxt["file"].endswith("/threading.py"),
              "%s: then %s in threading.py (%s %s)" % (how, run, nxt and nxt["function"], nxt and nxt["file"]))
    check(not th["error"] and not th["truncated"], "%s: the whole stack (%s)" % (how, th["error"]))
    if not any_gil:
        check(th["gil"] == (how == "spin"), "%s: %s the GIL" % (how, "holds" if th["gil"] else "does not hold"))
    if want_comm and how in names:
        check(th["comm"] == names[how], "%s: thread name %s" % (how, th["comm"]))
if any_gil:
    holders = [t["tid"] for t in py["threads"] if t["gil"]]
    check(len(holders) <= 1, "at most one thread holds the GIL (%s)" % holders)
sys.exit(1 if fails else 0)
