#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""bench/torchtrain.py SECONDS [WARMUP_SECONDS]: a real PyTorch training job for bench/run.

A small CNN (two convolutions, a linear layer) trained with SGD on synthetic 28x28 images
that a DataLoader makes in two worker processes. It prints "ready PID" and waits for a
line on stdin (the bench watches it in between, so the workers it forks are followed),
trains WARMUP_SECONDS (default 3) unmeasured, then SECONDS measured, and prints
"steps=N seconds=S steps_per_s=R cpu_s=C" (C: the CPU time of the job and its workers over
the measured steps).
"""
import os
import resource
import sys
import time

import torch
import torch.nn as nn
import torch.utils.data as tud


class Synthetic(tud.Dataset):
    """Images made on the fly: the workers do real work per batch, as a decoder would."""

    def __len__(self):
        return 1 << 30

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(1, 28, 28, generator=g), i % 10


def children_cpu_s():
    """utime+stime of the live children (the DataLoader's workers), from /proc: getrusage
    counts a child only once it is reaped, and then with the whole of its life."""
    me, tick, total = os.getpid(), os.sysconf("SC_CLK_TCK"), 0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # after the name: state ppid ... utime (14th field of the line) stime (15th)
        if int(fields[1]) == me:
            total += int(fields[11]) + int(fields[12])
    return total / tick


def cpu_s():
    """The job's CPU: its own (all its threads) and its live workers'."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime + children_cpu_s()


def main():
    seconds = float(sys.argv[1])
    warmup = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    loader = tud.DataLoader(Synthetic(), batch_size=64, num_workers=2, prefetch_factor=4)
    print("ready", os.getpid(), flush=True)
    sys.stdin.readline()
    steps, t0, c0, measuring = 0, time.monotonic(), 0.0, False
    start = t0
    for x, y in loader:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
        now = time.monotonic()
        if not measuring and now - start >= warmup:
            measuring, steps, t0, c0 = True, 0, now, cpu_s()
            continue
        steps += 1
        if measuring and now - t0 >= seconds:
            break
    # the workers are alive at both reads: the CPU of the measured steps only
    used, c1 = time.monotonic() - t0, cpu_s()
    del loader
    print(f"steps={steps} seconds={used:.3f} steps_per_s={steps / used:.3f} cpu_s={c1 - c0:.3f}", flush=True)


if __name__ == "__main__":
    main()
