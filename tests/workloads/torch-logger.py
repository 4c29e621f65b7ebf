#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A small PyTorch training loop on the CPU whose main thread dispatches the steps, beside a
"logger" thread that formats statistics in pure Python every so often and so holds the GIL:
the README's real first line comes from hostprofd watching this by --pid (no thread is
named acl_thread: the report takes the thread that ran the most).

    torch-logger.py [SECONDS]     (default 8)
"""
import ctypes
import json
import sys
import threading
import time

import torch

libc = ctypes.CDLL(None, use_errno=True)


def name_thread(name):
    """The kernel's name of the calling thread (PR_SET_NAME), as hostprofd sees it."""
    libc.prctl(15, name.encode(), 0, 0, 0)


seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 8.0
torch.set_num_threads(1)
stats = {"step": 0, "loss": 0.0, "history": []}
stop = threading.Event()


def flush_stats():
    # pure Python: holds the GIL the whole time
    rows = [{"step": i, "loss": stats["loss"] * i, "tag": "x" * (i % 17)} for i in range(20000)]
    return len(json.dumps(rows))


def logger():
    name_thread("logger")
    while not stop.is_set():
        flush_stats()
        time.sleep(0.05)


model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(64, 256)
y = torch.randint(0, 10, (64,))
log = threading.Thread(target=logger, name="logger")
log.start()
print(f"ready pid={threading.get_native_id()}", flush=True)
end = time.time() + seconds
while time.time() < end:
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    stats["step"] += 1
    stats["loss"] = float(loss)
stop.set()
log.join()
print(f"steps={stats['step']}", flush=True)
