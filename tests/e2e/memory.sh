#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# --memory-mb holds under sustained load: the recorder stays within it, the oldest data
# goes first (counted as evicted), and the daemon's RSS stays within the limit plus a
# fixed overhead (FIXED_MIB: the program, libbpf, symbol tables, one snapshot in flight)
# and the DWARF opened as the files were read (status .dwarf_bytes: the decompressed
# sections), which stays within its own cap; libdw's own structures come on top of those
# sections (its abbreviation tables and units, read whole for the functions' index:
# measured at about a fifth of them, 29 MiB of RSS for 24 MiB of sections), allowed for
# as a quarter.
. "$(dirname "$0")/lib.sh"
require_root
command -v perf >/dev/null || skip "no perf (linux-perf)"
FIXED_MIB=32

start_daemon --memory-mb 8 --buffer-mb 6 --window 60s --watch-thread none --trigger none
taskset -c 1 perf bench sched pipe -T -l 100000000 >/dev/null 2>&1 & load=$!; bg_pids+=("$load")
sleep 0.3
expect_rc 0 "watch the pipe benchmark" -- ctl watch --pid "$load"
max_mem=0 max_rss=0 dwarf=0
for _ in $(seq 16); do
	sleep 0.5
	st=$(ctl status --json) || continue
	mem=$(jq .memory_bytes <<<"$st")
	rss=$(jq .rss_bytes <<<"$st")
	d=$(jq .dwarf_bytes <<<"$st")
	[ "$mem" -gt "$max_mem" ] && max_mem=$mem
	[ "$rss" -gt "$max_rss" ] && max_rss=$rss
	[ "$d" -gt "$dwarf" ] && dwarf=$d
done
echo "recorder at most $((max_mem >> 10)) KiB, RSS at most $((max_rss >> 10)) KiB, DWARF held $((dwarf >> 10)) KiB, $(jq .events_per_sec <<<"$st") events/s"
[ "$dwarf" -le $((8 << 20)) ] && ok "the DWARF held within its 8 MiB" || fail "DWARF $dwarf bytes"
[ "$max_mem" -le $((8 << 20)) ] && ok "the recorder stays within --memory-mb 8" || fail "recorder $max_mem bytes"
[ "$max_mem" -ge $((5 << 20)) ] && ok "and fills it (the load is enough)" || fail "the recorder held only $max_mem bytes"
if ldd "$HOSTPROFD" | grep -q libasan; then
	echo "note: hostprofd runs under ASan: its RSS says nothing about ours, not checked"
else
	[ "$max_rss" -le $((((8 + FIXED_MIB) << 20) + dwarf * 5 / 4)) ] && ok "RSS within 8 + $FIXED_MIB MiB and the DWARF held" ||
		fail "RSS $max_rss bytes"
fi
expect_rc 0 "snapshot under load" -- ctl snapshot --pid "$load" --format report-json -o "$tmp/r.json"
ev=$(jq '.capture.evicted // .capture_stats.evicted // empty' "$tmp/r.json")
[ -n "$ev" ] && [ "$ev" -gt 0 ] && ok "the oldest data went, counted ($ev records evicted)" || fail "evicted: $(jq -c '.capture // .capture_stats' "$tmp/r.json")"
kill "$load"
finish
