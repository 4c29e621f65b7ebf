#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# make-initramfs.sh OUT.cpio LIBDIRS [DEST=SRC]...: the guests' root file system, an
# uncompressed newc cpio archive. Each DEST=SRC copies SRC to DEST (an absolute path in
# the guest); an ELF file brings along, recursively, the shared libraries it needs
# (readelf's NEEDED entries, looked up in LIBDIRS, a colon-separated list searched in
# order, and copied to the first of them, seen from the guest as /lib/<triplet>) and its
# program interpreter. No ldd: it runs the binary, and an arm64 one cannot run here.
#
# The archive is remade only when its inputs changed: OUT.key holds the list of what went
# in, with the size and time of each file.
set -euo pipefail

die() { echo "make-initramfs: $*" >&2; exit 1; }
[ $# -ge 2 ] || die "usage: make-initramfs.sh OUT.cpio LIBDIRS [DEST=SRC]..."
out=$1 libdirs=$2
shift 2
IFS=: read -r -a dirs <<<"$libdirs"
triplet_dir=/lib/$(basename "${dirs[0]}")

declare -A want=() # guest path -> host path
declare -A seen=() # sonames resolved
queue=()

is_elf() { [ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" = '177ELF' ]; }

add() {
	local dest=$1 src=$2
	[ -e "$src" ] || die "$src (for $dest) does not exist"
	want[$dest]=$src
	if is_elf "$src"; then queue+=("$src"); fi
}

resolve() {
	local elf=$1 lib d interp found
	interp=$(readelf -lW "$elf" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
	if [ -n "$interp" ] && [ -z "${want[$interp]:-}" ]; then
		found=
		for d in "${dirs[@]}"; do
			[ -e "$d/$(basename "$interp")" ] && { found=$d/$(basename "$interp"); break; }
		done
		[ -n "$found" ] || found=$interp
		[ -e "$found" ] || die "$elf: no interpreter $interp in $libdirs"
		want[$interp]=$found
	fi
	for lib in $(readelf -dW "$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		[ -z "${seen[$lib]:-}" ] || continue
		seen[$lib]=1
		found=
		for d in "${dirs[@]}"; do
			[ -e "$d/$lib" ] && { found=$d/$lib; break; }
		done
		[ -n "$found" ] || die "$elf needs $lib: not in $libdirs"
		want[$triplet_dir/$lib]=$found
		queue+=("$found")
	done
}

for a in "$@"; do
	add "${a%%=*}" "${a#*=}"
done
while [ ${#queue[@]} -gt 0 ]; do
	e=${queue[0]}
	queue=("${queue[@]:1}")
	resolve "$e"
done

key=$(for d in "${!want[@]}"; do
	printf '%s %s %s\n' "$d" "${want[$d]}" "$(stat -L -c '%s %Y' "${want[$d]}")"
done | sort)
if [ -f "$out" ] && [ -f "$out.key" ] && [ "$(cat "$out.key")" = "$key" ]; then
	exit 0
fi

stage=$(mktemp -d "${out%/*}/initramfs.XXXXXX")
trap 'rm -rf "$stage"' EXIT
for d in "${!want[@]}"; do
	mkdir -p "$stage$(dirname "$d")"
	cp -L "${want[$d]}" "$stage$d"
done
mkdir -p "$stage"/{proc,sys,dev,tmp,run,root,etc,var/tmp,var/lib}
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$stage/etc/passwd"
printf 'root:x:0:\n' >"$stage/etc/group"
(cd "$stage" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --owner=0:0 --quiet) >"$out.tmp"
mv "$out.tmp" "$out"
printf '%s\n' "$key" >"$out.key"
