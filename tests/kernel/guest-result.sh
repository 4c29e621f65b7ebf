#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# guest-result.sh CONFIG NAME: the result of guest test NAME (tests/kernel/guest-tests.txt)
# in the boot of CONFIG that tests/kernel/run-guest.sh made: its output, and
#   exit 0     it passed in the guest
#   exit 77    the boot was skipped (no qemu, no package: the reason is printed), or the test
#              skipped itself inside the guest (its own SKIP line says why)
#   exit 1     it failed in the guest, or the guest never finished it (the boot failed, the
#              guest crashed or hung), or the guest gave no result for it
# The CONFIG-boot test runs first (priority) and makes the results. Where they are missing
# or older than what went into the guest (a test run alone, a rebuild since), this boots
# the guest itself, under run-guest.sh's lock.
set -euo pipefail

config=${1:?usage: guest-result.sh CONFIG NAME}
name=${2:?}
here=$(cd "$(dirname "$0")" && pwd)
res=$BUILDDIR/kernel/results/$config

stale() {
	local f
	[ -f "$res/stamp" ] || return 0
	for f in "$TEST_CAPTURE" "$STALL" "$HOSTPROFD" "$HOSTPROFCTL" "$HOOKCOST" "$here"/*; do
		[ "$f" -nt "$res/stamp" ] && return 0
	done
	return 1
}
if stale; then
	echo "no results of $config newer than its inputs: booting it (tests/kernel/run-guest.sh $config)"
	"$here/run-guest.sh" "$config" >"$BUILDDIR/kernel/run-guest-$config.log" 2>&1 || true
fi
status=$(cat "$res/status" 2>/dev/null || echo "fail: run-guest.sh left no status")
case $status in
skip*) echo "SKIP: ${status#skip: }"; exit 77 ;;
esac
if [ -f "$res/$name.rc" ]; then
	rc=$(cat "$res/$name.rc")
	cat "$res/$name.log" 2>/dev/null || true
	case $rc in
	0) exit 0 ;;
	77) echo "(skipped inside the $config guest)"; exit 77 ;;
	137) echo "FAIL: killed at its time limit in the $config guest (guest-tests.txt)"; exit 1 ;;
	*) echo "FAIL: exit $rc in the $config guest"; exit 1 ;;
	esac
fi
# no result: say why, with what the guest printed of it
[ -f "$res/$name.log" ] && { echo "--- what the guest printed of $name:"; cat "$res/$name.log"; }
case $status in
ok) echo "FAIL: the $config guest ran to its end without a result for $name (not in guest-tests.txt?)" ;;
*) echo "FAIL: the $config guest never finished $name: ${status#fail: } ($res/console.log)" ;;
esac
exit 1
