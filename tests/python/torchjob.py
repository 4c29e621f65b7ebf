# SPDX-License-Identifier: GPL-2.0-only
# The python suite's PyTorch job (Debian's python3-torch): a small model trained on CPU from
# a DataLoader with worker processes, in the known chain main -> train -> train_step, for
# LIFETIME seconds (argv[1], default 20). Prints its ground truth as one JSON line once the
# loop runs: its pid, the training thread's tid, and the line of train_step's call of the
# model's forward and backward.
import inspect
import json
import os
import sys
import threading
import time

import torch
from torch.utils.data import DataLoader, Dataset

lifetime = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
torch.set_num_threads(1)


class Noise(Dataset):
    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(256, generator=g), torch.randint(0, 10, (), generator=g)


model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
lines = {}


def train_step(x, y):
    opt.zero_grad()
    lines["forward"] = inspect.currentframe().f_lineno + 1
    loss = torch.nn.functional.cross_entropy(model(x), y)
    lines["backward"] = inspect.currentframe().f_lineno + 1
    loss.backward()
    opt.step()


def train():
    deadline = time.monotonic() + lifetime
    told = False
    loader = DataLoader(Noise(), batch_size=64, num_workers=2)
    for x, y in loader:
        lines["train"] = inspect.currentframe().f_lineno + 1
        train_step(x, y)
        if not told:
            print(json.dumps({"pid": os.getpid(), "tid": threading.get_native_id(),
                              "file": __file__, "lines": lines}), flush=True)
            told = True
        if time.monotonic() > deadline:
            break


train()
