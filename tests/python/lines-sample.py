# SPDX-License-Identifier: GPL-2.0-only
# Compiled, never run, by gen-lines.py: code whose line tables have what the formats must
# handle: jumps back (loops), lines that go back, gaps of more than 127 lines, long
# functions (address steps past 255), instructions without a line, nested and generator
# code, expressions over several lines.
import os


def loop(n):
    total = 0
    for i in range(n):
        if i % 3 == 0:
            continue
        while total < i:
            total += 1
    return total


def backwards(x):
    return (
        x
        +
        1
    ) if x else [
        y for y in range(3)
    ]


def handler(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        return str(e)
    finally:
        pass


def generator(items):
    for item in items:
        yield item * 2
    yield from range(3)


class Model:
    def forward(self, x):
        def inner(y):
            return y + 1
        return inner(x)

    @staticmethod
    def step(a, b, c):
        return a * b + c























































































































































    def far_below(self):
        return os.getpid()


def long_function(a):
    a = a + 1; a = a + 2; a = a + 3; a = a + 4; a = a + 5; a = a + 6; a = a + 7; a = a + 8
    a = a + 1; a = a + 2; a = a + 3; a = a + 4; a = a + 5; a = a + 6; a = a + 7; a = a + 8
    a = a + 1; a = a + 2; a = a + 3; a = a + 4; a = a + 5; a = a + 6; a = a + 7; a = a + 8
    a = a + 1; a = a + 2; a = a + 3; a = a + 4; a = a + 5; a = a + 6; a = a + 7; a = a + 8
    a = a + 1; a = a + 2; a = a + 3; a = a + 4; a = a + 5; a = a + 6; a = a + 7; a = a + 8
    a = a + 1; a = a + 2; a = a + 3; a = a + 4; a = a + 5; a = a + 6; a = a + 7; a = a + 8
    a = a + 1; a = a + 2; a = a + 3; a = a + 4; a = a + 5; a = a + 6; a = a + 7; a = a + 8
    a = a + 1; a = a + 2; a = a + 3; a = a + 4; a = a + 5; a = a + 6; a = a + 7; a = a + 8
    a = [a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a,
         a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a]
    return a


async def coroutine(q):
    async for item in q:
        await item
    return lambda z: z * 2
