# SPDX-License-Identifier: GPL-2.0-only
# gen-lines.py: the interpreter that runs it says, for every instruction of every code object
# of a sample module (tests/python/lines-sample.py), which line it is on, by its own means:
# co_lines() from 3.10 (codeobject.c's iterator), dis.findlinestarts() before (Lib/dis.py).
# Printed with each code object's first line and raw line table, for test-python-lines to
# decode with daemon/python/linetable.c and compare. One file per minor version is kept in
# tests/python/fixtures/ (the unit suite); the python suite makes them anew with each
# interpreter installed.
import dis
import os
import sys
import types

here = os.path.dirname(os.path.abspath(__file__))
path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "lines-sample.py")
with open(path) as f:
    top = compile(f.read(), "lines-sample.py", "exec")

minor = sys.version_info[1]
print("version %d.%d.%d" % sys.version_info[:3])


def codes(co):
    yield co
    for c in co.co_consts:
        if isinstance(c, types.CodeType):
            yield from codes(c)


for co in codes(top):
    table = co.co_linetable if minor >= 10 else co.co_lnotab
    n = len(co.co_code)
    lines = {}
    if minor >= 10:
        for start, end, line in co.co_lines():
            for off in range(start, end, 2):
                lines[off] = line or 0
    else:
        starts = list(dis.findlinestarts(co))
        for off in range(0, n, 2):
            line = co.co_firstlineno
            for s, l in starts:
                if s <= off:
                    line = l
            lines[off] = line
    print("code %s %d %s" % (co.co_name, co.co_firstlineno, table.hex() or "-"))
    # the offset a frame holds: bytes before 3.10, 2-byte code units from 3.10
    print(" ".join("%d:%d" % (off if minor < 10 else off // 2, lines[off]) for off in sorted(lines)))
