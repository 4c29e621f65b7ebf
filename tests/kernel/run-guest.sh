#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# run-guest.sh CONFIG: boots Debian's own kernel of one configuration under qemu (TCG:
# software emulation, no KVM) and runs every test of tests/kernel/guest-tests.txt inside
# the guest, in that one boot. CONFIG:
#   6.1         Debian 12's current 6.1 amd64 kernel, as shipped (PREEMPT_DYNAMIC, voluntary)
#   6.1-full    the same kernel booted with preempt=full
#   6.1-arm64   Debian 12's current 6.1 arm64 kernel on qemu's virt machine (-cpu max), with
#               the daemon, the client, the tests and the BPF object cross-built for arm64
#               (tests/kernel/cross-build.sh)
# The amd64 guests run the binaries of this build, so the BPF object is the one CO-RE
# relocates on the build host's kernel too.
#
# Nothing is installed on this machine: the kernel packages (`apt-get download`, the one
# linux-image-ARCH depends on now), busybox-static and, for arm64, bash and protoc are
# unpacked with dpkg-deb -x under $BUILDDIR/kernel/, cached there with the initramfs.
#
# Results, in $BUILDDIR/kernel/results/CONFIG/: status ("ok", "fail: WHY" or "skip: WHY"),
# console.log (everything the guest's console printed), NAME.log and NAME.rc for each test
# the guest finished, and stamp (when this run ended). tests/kernel/guest-result.sh reads them.
#
# Exit 0 when the guest ran to its end (each test's own result is in its files), 1 when the
# boot failed, crashed or hung (qemu is killed at the time limit) with the console's end
# printed, 77 when qemu, a package, or the arm64 toolchain cannot be had, with the reason.
#
# Environment (tests/meson.build): BUILDDIR SRCDIR SANITIZE TEST_CAPTURE STALL HOSTPROFD
# HOSTPROFCTL HOOKCOST (the amd64 binaries). By hand: HOSTPROF_GUEST_TESTS=FILE runs the
# tests of FILE (guest-tests.txt's format) instead; HOSTPROF_GUEST_LIMIT_S the time limit;
# HOSTPROF_GUEST_RETRY_LIMIT_S that of the boot after a hang mid-run (the same by default).
set -euo pipefail

config=${1:?usage: run-guest.sh CONFIG}
here=$(cd "$(dirname "$0")" && pwd)
kdir=$BUILDDIR/kernel
res=$kdir/results/$config
mkdir -p "$kdir"

case $config in
6.1) arch=amd64 cmdline="" ;;
6.1-full) arch=amd64 cmdline="preempt=full" ;;
6.1-arm64) arch=arm64 cmdline="" ;;
*) echo "run-guest: unknown configuration $config" >&2; exit 2 ;;
esac

# One run at a time: the guests share the caches, and each uses both CPUs.
exec 9>"$kdir/lock"
flock 9

rm -rf "$res"
mkdir -p "$res"
finish() { # STATUS RC MESSAGE
	printf '%s\n' "$1${3:+: $3}" >"$res/status"
	touch "$res/stamp"
	[ -z "${3:-}" ] || echo "$1: $3"
	exit "$2"
}
skip() { finish skip 77 "$*"; }
fail() { finish fail 1 "$*"; }

[ "${SANITIZE:-none}" = none ] ||
	skip "a sanitizer build (b_sanitize=$SANITIZE): the kernel tiers run in the normal build only"

case $arch in
amd64) qemu=qemu-system-x86_64 qpkg=qemu-system-x86 triplet=x86_64-linux-gnu ;;
arm64) qemu=qemu-system-aarch64 qpkg=qemu-system-arm triplet=aarch64-linux-gnu ;;
esac
command -v "$qemu" >/dev/null || skip "$qemu not found (Debian: $qpkg; scripts/dev deps installs it)"
command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || skip "no apt-get/dpkg-deb: not a Debian machine"
if [ "$arch" != "$(dpkg --print-architecture)" ] && ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
	skip "dpkg does not know $arch: no $arch packages (scripts/dev deps adds the architecture)"
fi

# fetch PKG:ARCH...: downloads (once) and unpacks each package into $kdir/root-ARCH
fetch() {
	local p name a deb log
	for p in "$@"; do
		name=${p%%:*} a=${p#*:}
		deb=$(ls "$kdir/debs/${name}_"*"_$a.deb" 2>/dev/null | tail -1 || true)
		if [ -z "$deb" ]; then
			mkdir -p "$kdir/debs"
			log=$(cd "$kdir/debs" && apt-get download "$p" 2>&1) ||
				skip "apt-get download $p failed: $(tail -1 <<<"$log")"
			deb=$(ls "$kdir/debs/${name}_"*"_$a.deb" | tail -1)
		fi
		if [ ! -e "$kdir/root-$a/.unpacked-$(basename "$deb")" ]; then
			mkdir -p "$kdir/root-$a"
			dpkg-deb -x "$deb" "$kdir/root-$a"
			# a kernel's modules: the guests load none (serial console, initramfs)
			[[ $name != linux-image-* ]] || rm -rf "$kdir/root-$a/lib/modules" "$kdir/root-$a/usr/lib/modules"
			touch "$kdir/root-$a/.unpacked-$(basename "$deb")"
		fi
	done
}

# The kernel: the linux-image-6.1.0-N-ARCH that Debian's linux-image-ARCH depends on now.
kpkg=$(apt-cache depends "linux-image-$arch:$arch" 2>/dev/null |
	sed -n "s/^ *Depends: \(linux-image-6\.1\.0-[0-9]*-$arch\)\(:$arch\)\{0,1\}\$/\1/p" | head -1)
[ -n "$kpkg" ] || kpkg=$(apt-cache pkgnames linux-image-6.1.0- 2>/dev/null |
	grep -E "^linux-image-6\.1\.0-[0-9]+-$arch\$" | sort -V | tail -1 || true)
[ -n "$kpkg" ] || skip "apt offers no Debian 6.1 kernel for $arch (linux-image-6.1.0-*-$arch; 'apt-get update'?)"
fetch "$kpkg:$arch"
kver=${kpkg#linux-image-}
vmlinuz=$kdir/root-$arch/boot/vmlinuz-$kver
kconfig=$kdir/root-$arch/boot/config-$kver
[ -f "$vmlinuz" ] || fail "$kpkg holds no /boot/vmlinuz-$kver"

# The preemption model the guest will run: preempt= on the command line, else the default
# the kernel was built with.
model=${cmdline##*preempt=}
if [ "$model" = "$cmdline" ]; then
	if grep -q '^CONFIG_PREEMPT_RT=y' "$kconfig"; then model=rt
	elif grep -q '^CONFIG_PREEMPT=y' "$kconfig"; then model=full
	elif grep -q '^CONFIG_PREEMPT_VOLUNTARY=y' "$kconfig"; then model=voluntary
	else model=none
	fi
fi
model=${model%% *}

# What goes into the guest: this build's binaries (amd64) or the cross build's (arm64),
# with busybox-static, bash and protoc (tests/e2e reads traces with protoc --decode).
if [ "$arch" = amd64 ]; then
	fetch busybox-static:amd64
	bins=(test-capture="$TEST_CAPTURE" stall="$STALL" hostprofd="$HOSTPROFD" hostprofctl="$HOSTPROFCTL"
		hookcost="$HOOKCOST" perfetto-sched="$PERFETTO_SCHED")
	extra=(/bin/bash=/bin/bash /usr/bin/protoc=/usr/bin/protoc)
	libdirs=/lib/$triplet:/usr/lib/$triplet
else
	command -v aarch64-linux-gnu-gcc >/dev/null ||
		skip "aarch64-linux-gnu-gcc not found (Debian: gcc-aarch64-linux-gnu; scripts/dev deps installs it)"
	fetch busybox-static:arm64 bash:arm64 libtinfo6:arm64 protobuf-compiler:arm64 libprotoc32:arm64 \
		libprotobuf32:arm64 libstdc++6:arm64 libgcc-s1:arm64
	echo "cross-building for arm64 (tests/kernel/cross-build.sh)"
	xbuild=$kdir/arm64
	"$here/cross-build.sh" "$SRCDIR" "$xbuild" "$vmlinuz" >"$res/cross-build.log" 2>&1 || {
		tail -40 "$res/cross-build.log"
		fail "the arm64 cross build failed ($res/cross-build.log)"
	}
	b=$xbuild/build
	bins=(test-capture=$b/tests/test-capture stall=$b/tests/stall hostprofd=$b/daemon/hostprofd
		hostprofctl=$b/client/hostprofctl hookcost=$b/tests/hookcost perfetto-sched=$b/tests/perfetto-sched)
	r=$kdir/root-arm64
	extra=(/bin/bash=$r/bin/bash /usr/bin/protoc=$r/usr/bin/protoc)
	libdirs=$r/usr/lib/$triplet:$r/lib/$triplet:/usr/lib/$triplet:/lib/$triplet
fi
files=(/init="$here/guest-init.sh" /bin/busybox="$kdir/root-$arch/bin/busybox"
	/hostprof/guest-tests.txt="${HOSTPROF_GUEST_TESTS:-$here/guest-tests.txt}"
	/hostprof/tests/e2e/lib.sh="$SRCDIR/tests/e2e/lib.sh"
	/hostprof/tests/e2e/snapshot.sh="$SRCDIR/tests/e2e/snapshot.sh"
	/hostprof/tests/unit/perfetto_subset.proto="$SRCDIR/tests/unit/perfetto_subset.proto"
	"${extra[@]}")
for b in "${bins[@]}"; do files+=("/hostprof/bin/$b"); done
initrd=$kdir/initramfs-$arch.cpio
tests_file=${HOSTPROF_GUEST_TESTS:-$here/guest-tests.txt}
"$here/make-initramfs.sh" "$initrd" "$libdirs" "${files[@]}" >"$res/initramfs.log" 2>&1 || {
	cat "$res/initramfs.log"
	fail "the $arch initramfs could not be made"
}

# The boot. Time limits: the guest's per-test limits (guest-tests.txt) stop a test that
# hangs; this one is what the whole boot takes here, with room (TCG on a shared machine),
# and kills a guest whose kernel hangs. A guest that shows no sign of life (its init's first
# line) within boot_limit is killed and booted once more: TCG on a loaded host has been seen
# to hang early in a boot that passes the next time; the first console is kept. A panic or
# an oops reboots at once (panic=-1, oops=panic), which ends qemu (-no-reboot).
limit=${HOSTPROF_GUEST_LIMIT_S:-720}
boot_limit=120
append="panic=-1 oops=panic hostprof.model=$model $cmdline"
if [ "$arch" = amd64 ]; then
	qemu_args=(-accel tcg,thread=multi -cpu max -smp 2 -m 2048 -append "console=ttyS0 $append")
else
	# pauth-impdef: QEMU's own pointer-authentication hash, far cheaper to emulate than QARMA
	qemu_args=(-M virt -accel tcg,thread=multi -cpu max,pauth-impdef=on -smp 2 -m 2048
		-append "console=ttyAMA0 $append")
fi
boot_once() { # CONSOLE: 0 ran to its end or crashed, 2 no sign of life in boot_limit, 137 killed at limit
	local console=$1 pid rc=0 waited=0
	: >"$console"
	timeout -s KILL "$limit" "$qemu" "${qemu_args[@]}" -nodefaults -display none -no-reboot \
		-serial "file:$console" -kernel "$vmlinuz" -initrd "$initrd" </dev/null >>"$res/qemu.log" 2>&1 &
	pid=$!
	while kill -0 $pid 2>/dev/null && ! grep -q '@@hostprof boot' "$console"; do
		if [ $waited -ge $boot_limit ]; then
			kill -KILL $pid 2>/dev/null
			wait $pid 2>/dev/null
			return 2
		fi
		sleep 1
		waited=$((waited + 1))
	done
	wait $pid || rc=$?
	return $rc
}
echo "booting $kpkg ($config: $arch, model $model${cmdline:+, $cmdline}) under $qemu, TCG, limit ${limit}s"
t0=$(date +%s)
qrc=0
boot_once "$res/console.log" || qrc=$?
if [ $qrc = 2 ]; then
	mv "$res/console.log" "$res/console-hung.log"
	echo "no sign of life from the guest in ${boot_limit}s (its console: $res/console-hung.log): booting it once more"
	tail -5 "$res/console-hung.log"
	qrc=0
	boot_once "$res/console.log" || qrc=$?
fi

# The console, cut into each test's log and exit status.
parse_console() {
	tr -d '\r' <"$res/console.log" | awk -v dir="$res" '
	/@@hostprof begin / { sub(/.*@@hostprof begin /, ""); name = $1; next }
	/@@hostprof end / { sub(/.*@@hostprof end /, ""); if ($1 == name) { f = dir "/" name ".rc"; print $2 >f; close(f) }
		name = ""; next }
	/@@hostprof summary/ { sub(/.*@@hostprof summary/, ""); for (i = 1; i <= NF; i++) { split($i, kv, "=");
		f = dir "/" kv[1] ".rc"; if ((getline x <f) <= 0) print kv[2] >f; close(f) } next }
	name != "" { print >(dir "/" name ".log") }'
}
parse_console

# A guest killed at the limit in the middle of its tests is booted once more, with the
# tests that did not end (the one it hung in first): TCG on a shared host has been seen to
# starve a guest's timers until RCU stalls ("rcu_preempt kthread starved", "Possible timer
# handling issue") in a test that passes in the next boot. A second hang in the same test
# fails it as before; the first console is kept (console-hung-midrun.log).
hung=$(tr -d '\r' <"$res/console.log" | awk '/@@hostprof begin / { sub(/.*@@hostprof begin /, ""); n = $1 }
	/@@hostprof end / { n = "" } END { print n }')
if [ $qrc = 137 ] && [ -n "$hung" ]; then
	mv "$res/console.log" "$res/console-hung-midrun.log"
	echo "the guest hung in $hung and was killed at ${limit}s (its console: $res/console-hung-midrun.log):"
	tr -d '\r' <"$res/console-hung-midrun.log" | tail -8
	awk -v dir="$res" '/^#/ || NF == 0 { print; next } { if ((getline x <(dir "/" $1 ".rc")) <= 0) print }' \
		"$tests_file" >"$res/guest-tests-rest.txt"
	echo "booting it once more with the $(grep -cv '^#\|^$' "$res/guest-tests-rest.txt") tests that did not end"
	files2=()
	for f in "${files[@]}"; do
		case $f in /hostprof/guest-tests.txt=*) f=/hostprof/guest-tests.txt=$res/guest-tests-rest.txt ;; esac
		files2+=("$f")
	done
	"$here/make-initramfs.sh" "$initrd" "$libdirs" "${files2[@]}" >>"$res/initramfs.log" 2>&1 || {
		cat "$res/initramfs.log"
		fail "the $arch initramfs could not be made again"
	}
	limit=${HOSTPROF_GUEST_RETRY_LIMIT_S:-$limit}
	qrc=0
	boot_once "$res/console.log" || qrc=$?
	parse_console
fi
secs=$(($(date +%s) - t0))
boot=$(tr -d '\r' <"$res/console.log" | sed -n 's/.*@@hostprof boot //p' | head -1)
if tr -d '\r' <"$res/console.log" | grep -q '@@hostprof done'; then
	echo "the guest ($boot) ran its tests in ${secs}s"
	finish ok 0
fi
echo "--- the end of the guest's console ($res/console.log):"
tr -d '\r' <"$res/console.log" | tail -60
[ -s "$res/qemu.log" ] && { echo "--- qemu:"; cat "$res/qemu.log"; }
if [ $qrc = 2 ]; then
	fail "the guest showed no sign of life in ${boot_limit}s, twice: the kernel hangs at boot here"
fi
if [ $qrc = 137 ]; then
	fail "the guest did not finish in ${limit}s: killed (a hang, or a machine far slower than this one was measured on)"
fi
fail "the guest ended before its last test (qemu exit $qrc after ${secs}s): a crash, an oops or a panic? See the console above"
