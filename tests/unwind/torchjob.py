#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""tests/unwind/torchjob.py SECONDS: a small PyTorch training job for the unwinder's bench.

A CNN (two convolutions, a linear layer) trained with SGD on images a DataLoader makes in
two worker processes, for SECONDS. Prints "ready PID" once it trains (the main thread is the
training thread, named "train" then: the threads torch started before keep their name),
"done STEPS" at the end.
"""
import ctypes
import os
import sys
import time

import torch
import torch.nn as nn
import torch.utils.data as tud


class Images(tud.Dataset):
    def __len__(self):
        return 1 << 30

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(1, 28, 28, generator=g), i % 10


def main():
    seconds = float(sys.argv[1])
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    loader = tud.DataLoader(Images(), batch_size=64, num_workers=2, prefetch_factor=4)
    steps, start = 0, time.monotonic()
    for x, y in loader:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
        steps += 1
        if steps == 3:
            ctypes.CDLL(None).prctl(15, b"train", 0, 0, 0)  # PR_SET_NAME
            print("ready", os.getpid(), flush=True)
        if time.monotonic() - start >= seconds:
            break
    print("done", steps, flush=True)


if __name__ == "__main__":
    main()
