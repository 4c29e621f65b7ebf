#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# cross-build.sh SRCDIR OUTDIR KERNEL_IMAGE: the daemon, the client, the BPF object and the
# tests' binaries for arm64, in OUTDIR/build, with Debian's cross toolchain
# (gcc-aarch64-linux-gnu) and the :arm64 -dev libraries (scripts/dev deps installs both).
#
# The BPF object is built with -D__TARGET_ARCH_arm64 (bpf/meson.build, from the host
# machine's CPU family) against an arm64 vmlinux.h made from the BTF of KERNEL_IMAGE, the
# arm64 kernel the tests boot (extract-btf.py: an arm64 Image is no ELF file), and given to
# meson as -Dvmlinux_h. Syscall names come from the arm64 headers (scripts/gen-syscall-names
# runs the cross compiler). Incremental: a second run rebuilds only what changed.
set -euo pipefail

src=${1:?usage: cross-build.sh SRCDIR OUTDIR KERNEL_IMAGE}
out=$(realpath -m "${2:?}")
image=${3:?}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"

# vmlinux.h, rewritten only when it changes (its time stamp drives meson's rebuild)
"$here/extract-btf.py" "$image" "$out/vmlinux.btf"
bpftool btf dump file "$out/vmlinux.btf" format c >"$out/vmlinux.h.new"
if cmp -s "$out/vmlinux.h.new" "$out/vmlinux.h"; then
	rm "$out/vmlinux.h.new"
else
	mv "$out/vmlinux.h.new" "$out/vmlinux.h"
fi

cat >"$out/cross-arm64.ini.new" <<'EOF'
# written by tests/kernel/cross-build.sh
[binaries]
c = 'aarch64-linux-gnu-gcc'
ar = 'aarch64-linux-gnu-ar'
strip = 'aarch64-linux-gnu-strip'
pkgconfig = 'pkg-config'

[properties]
pkg_config_libdir = ['/usr/lib/aarch64-linux-gnu/pkgconfig', '/usr/share/pkgconfig']

[host_machine]
system = 'linux'
cpu_family = 'aarch64'
cpu = 'aarch64'
endian = 'little'
EOF
if cmp -s "$out/cross-arm64.ini.new" "$out/cross-arm64.ini"; then
	rm "$out/cross-arm64.ini.new"
else
	mv "$out/cross-arm64.ini.new" "$out/cross-arm64.ini"
	rm -rf "$out/build"
fi

if [ ! -f "$out/build/build.ninja" ]; then
	meson setup "$out/build" "$src" --cross-file "$out/cross-arm64.ini" --buildtype=debugoptimized \
		-Dwerror=true -Dvmlinux_h="$out/vmlinux.h"
fi
ninja -C "$out/build" daemon/hostprofd client/hostprofctl tests/test-capture tests/stall tests/hookcost tests/perfetto-sched
file=$(readelf -h "$out/build/daemon/hostprofd" | sed -n 's/^ *Machine: *//p')
[ "$file" = AArch64 ] || { echo "cross-build: hostprofd is built for $file, not AArch64" >&2; exit 1; }
