# SPDX-License-Identifier: GPL-2.0-only
# The python suite's garbage-collection workload: builds cycles and collects generation 0
# (and every tenth time generation 2) for LIFETIME seconds (argv[1]); counts its own
# collections through gc.callbacks, and prints them as one JSON line when it exits, with
# the collections per second it managed (the cost of the GC probes shows there).
import gc
import json
import sys
import time

lifetime = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
counts = [0, 0, 0]


def on_gc(phase, info):
    if phase == "start":
        counts[info["generation"]] += 1


gc.callbacks.append(on_gc)
print("ready", flush=True)
start = time.monotonic()
n = 0
while time.monotonic() - start < lifetime:
    xs = [[i] for i in range(2000)]
    for a, b in zip(xs, xs[1:]):
        a.append(b)
        b.append(a)
    del xs
    gc.collect(2 if n % 10 == 9 else 0)
    n += 1
elapsed = time.monotonic() - start
print(json.dumps({"collections": counts, "per_sec": sum(counts) / elapsed}), flush=True)
