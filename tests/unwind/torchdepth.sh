#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# tests/unwind/torchdepth.sh [SECONDS]: the user stacks of a real PyTorch training thread
# (Debian's python3-torch, tests/unwind/torchjob.py: a small CNN, a DataLoader with two
# workers) as hostprofd records them, side by side with `perf record --call-graph
# dwarf,8192` of the same job: the training thread's median on-CPU stack depth and the
# share of its samples that reach _start (and off-CPU, where it blocked, weighted by the
# time blocked: perf has no such view to compare). hostprofd runs three ways on one job each:
# --unwind all (CFI, the default), --unwind off (frame pointers), and perf beside none.
# A measurement (meson benchmark unwind-torch-depth), not a test: it prints, and fails
# only when something does not run. Root. Environment (meson): HOSTPROFD, HOSTPROFCTL,
# SRCDIR.
. "$SRCDIR/tests/e2e/lib.sh"
require_root
secs=${1:-8}
py=
for p in /usr/bin/python3.11 /usr/bin/python3; do
	"$p" -c 'import torch' 2>/dev/null && { py=$p; break; }
done
[ -n "$py" ] || skip "no PyTorch (apt-get install python3-torch)"

# job: starts torchjob.py, waits for "ready", sets $job (pid) and $job_comm
job() {
	"$py" "$SRCDIR/tests/unwind/torchjob.py" "$((secs + 6))" >"$tmp/job.out" 2>&1 &
	job=$!
	bg_pids+=("$job")
	for _ in $(seq 600); do grep -q '^ready' "$tmp/job.out" && break; sleep 0.1; done
	grep -q '^ready' "$tmp/job.out" || { fail "torchjob.py did not start: $(tail -3 "$tmp/job.out")"; finish; }
	job_comm=$(cat "/proc/$job/task/$job/comm")
}

# stats: lines "DEPTH REACHES_START COUNT" on stdin -> "median DEPTH, P% to _start, N samples"
stats() {
	sort -n | awk '{ d[NR] = $1; s[NR] = $2; c[NR] = $3; n += $3; st += $2 * $3 }
		END { if (!n) { print "no samples"; exit } half = n / 2; for (i = 1; i <= NR; i++) { acc += c[i]; if (acc >= half) { m = d[i]; break } }
			printf "median %d frames, %.1f%% to _start, %d samples\n", m, 100 * st / n, n }'
}

# folded FILE COMM: the thread COMM's stacks of a folded file as stats lines (user frames only)
folded() {
	awk -v comm="$2" '{ cnt = $NF; sub(/ [0-9]+$/, ""); n = split($0, f, ";"); if (f[1] != comm) next
		d = 0; st = 0; for (i = 2; i <= n; i++) { if (f[i] ~ /_\[[ki]\]$/) continue; d++; if (f[i] == "_start") st = 1 }
		print d, st, cnt }' "$1"
}

for mode in all off; do
	start_daemon --python no --sample-hz 499 --unwind "$mode"
	job
	expect_rc 0 "watch the training job ($mode)" -- ctl watch --pid "$job"
	sleep "$secs"
	expect_rc 0 "snapshot ($mode)" -- ctl snapshot --pid "$job" --format folded,report -o "$tmp/$mode"
	[ "$mode" = all ] && grep -E '^  unwinding ' "$tmp/$mode.txt"
	kill "$job" 2>/dev/null
	wait "$job" 2>/dev/null
	stop_daemon
	printf '%-34s %s\n' "hostprofd --unwind $mode:" "$(folded "$tmp/$mode.oncpu.folded" "$job_comm" | stats)"
	# off-CPU: the same, weighted by the microseconds blocked
	printf '%-34s %s\n' "  off-CPU (by time blocked):" \
		"$(folded "$tmp/$mode.offcpu.folded" "$job_comm" | stats | sed 's/ samples$/ us/')"
done

if command -v perf >/dev/null; then
	job
	perf record -q --call-graph dwarf,8192 -F 499 -t "$job" -o "$tmp/perf.data" -- sleep "$secs" >/dev/null 2>&1
	kill "$job" 2>/dev/null
	wait "$job" 2>/dev/null
	# perf script: a header line per sample, then one line per frame, a blank line after
	perf script -i "$tmp/perf.data" -F ip,sym --no-inline 2>/dev/null |
		awk 'NF == 0 { if (d) print d, st, 1; d = 0; st = 0; next } { d++; if ($2 == "_start") st = 1 }
			END { if (d) print d, st, 1 }' >"$tmp/perf.stats"
	printf '%-34s %s\n' "perf --call-graph dwarf,8192:" "$(stats <"$tmp/perf.stats")"
else
	echo "no perf (apt-get install linux-perf): the comparison is left out"
fi
finish
