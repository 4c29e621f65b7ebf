#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""bench/torchtrain.py SECONDS [WARMUP_SECONDS]: a real PyTorch training job for bench/run.

A small CNN (two convolutions, a linear layer) trained with SGD on synthetic 28x28 images
that a DataLoader makes in two worker processes. It prints "ready PID" and waits for a
line on stdin (the bench watches it in between, so the workers it forks are followed),
trains WARMUP_SECONDS (default 3) unmeasured, then SECONDS measured, and prints
"steps=N seconds=S steps_per_s=R cpu_s=C" (C: the CPU time of the job and its workers).
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


def cpu_s():
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


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
    # the workers' CPU is counted once they have exited
    used = time.monotonic() - t0
    del loader
    print(f"steps={steps} seconds={used:.3f} steps_per_s={steps / used:.3f} cpu_s={cpu_s() - c0:.3f}", flush=True)


if __name__ == "__main__":
    main()
