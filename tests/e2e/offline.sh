#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Commands that need no daemon: report and export of a saved snapshot.
. "$(dirname "$0")/lib.sh"
fixture=$SRCDIR/tests/fixtures/stall.hps

expect_rc 0 "report FILE" -- "$HOSTPROFCTL" report "$fixture"
expect_match "^acl_thread lost 89 ms of 1.0 s \(8.9%\): CPU taken by realtime task hog \(pid 200" "the first line names hog"
expect_rc 0 "report --json FILE" -- "$HOSTPROFCTL" --json report "$fixture"
jq -e . >/dev/null <<<"$out" && ok "report --json is JSON" || fail "report --json: $out"
cd "$tmp" || exit 1
cp "$fixture" "$tmp/s.hps"
expect_rc 0 "export --format all" -- "$HOSTPROFCTL" export "$tmp/s.hps" --format all
for ext in pftrace json oncpu.folded offcpu.folded pb.gz oncpu.svg offcpu.svg txt report.json hps; do
	[ -s "$tmp/s.$ext" ] && ok "export wrote s.$ext" || fail "no s.$ext"
done
expect_rc 0 "export --format json -o FILE" -- "$HOSTPROFCTL" export "$tmp/s.hps" --format json -o "$tmp/one.json"
jq -e '.traceEvents | length > 0' "$tmp/one.json" >/dev/null && ok "-o names the one file" || fail "one.json"
expect_rc 0 "export --format folded -o PREFIX makes two files" -- "$HOSTPROFCTL" export "$tmp/s.hps" --format folded -o "$tmp/fl"
[ -s "$tmp/fl.oncpu.folded" ] && [ -s "$tmp/fl.offcpu.folded" ] && ok "prefix with two files" || fail "fl.*"
chmod 555 "$tmp"
if [ "$(id -u)" != 0 ]; then
	expect_rc 1 "export into a directory it cannot write" -- "$HOSTPROFCTL" export "$tmp/s.hps" --format json -o "$tmp/x.json"
fi
chmod 755 "$tmp"
ls "$tmp"/*.tmp* >/dev/null 2>&1 && fail "temporary files left behind"
finish
