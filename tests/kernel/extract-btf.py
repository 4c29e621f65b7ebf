#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""extract-btf.py IMAGE OUT: the kernel's own BTF (.BTF, as /sys/kernel/btf/vmlinux holds it),
cut out of a kernel image that is no ELF file (arm64's Image), for
`bpftool btf dump file OUT format c`.

The blob starts with struct btf_header: magic 0xeB9F, version 1, flags 0, hdr_len 24,
type_off, type_len, str_off, str_len (all little-endian here). The kernel's is the one whose
type section comes first, whose string section follows it and opens with the empty string,
and whose first type is named by an offset inside that string section: the largest such
candidate (a few small BTF blobs of modules' test data may match too)."""
import struct
import sys


def candidates(data):
    i = data.find(b'\x9f\xeb\x01\x00')
    while i >= 0:
        if i + 24 <= len(data):
            hdr_len, type_off, type_len, str_off, str_len = struct.unpack_from('<IIIII', data, i + 4)
            end = i + hdr_len + str_off + str_len
            if (hdr_len == 24 and type_off == 0 and str_off == type_len and type_len > 0
                    and str_len > 0 and end <= len(data) and data[i + 24 + str_off] == 0):
                name_off = struct.unpack_from('<I', data, i + 24)[0]
                if name_off < str_len:
                    yield i, end
        i = data.find(b'\x9f\xeb\x01\x00', i + 1)


def main():
    if len(sys.argv) != 3:
        sys.exit('usage: extract-btf.py IMAGE OUT')
    with open(sys.argv[1], 'rb') as f:
        data = f.read()
    if data[:2] == b'\x1f\x8b':
        import gzip
        data = gzip.decompress(data)
    best = max(candidates(data), key=lambda c: c[1] - c[0], default=None)
    if best is None:
        sys.exit('extract-btf.py: no BTF in %s (a kernel without CONFIG_DEBUG_INFO_BTF?)' % sys.argv[1])
    with open(sys.argv[2], 'wb') as f:
        f.write(data[best[0]:best[1]])


main()
