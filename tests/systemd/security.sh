#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# `systemd-analyze security --offline=true hostprofd.service`: prints the score and what
# it still flags, and fails above 2.5.
#
# Why 2.5 and not the 2.0 issue 8 aimed at: the unit scores 2.4 (systemd 252; 2.1 before adjtimex, setrlimit and the snapshot jobs' scheduling calls were let through), and the
# header of systemd/hostprofd.service.in gives the reason for each point left: root
# (User=, 0.4; hostprofd refuses another uid), the capabilities it was shown to need
# (CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH, CAP_BPF, CAP_SYSLOG), bpf(2) and perf_event_open(2)
# in the system call filter, the snapshot jobs' setpriority(2), sched_setscheduler(2) and
# sched_setaffinity(2) (the unit gives them back from @resources), and the /proc and
# kernel-log protections that would hide /proc/kallsyms. 2.0 cannot be reached without dropping one of those needs. 2.5 leaves
# room for the weights of another systemd version, and still fails when a broad
# protection goes (without the system call filter or the capability bounding set: 3.4).
# A single narrower one (ProtectSystem=strict, PrivateDevices=: 2.2, 2.3) stays under
# 2.5, so the test also fails on anything flagged that is not in the list below, the
# one the unit's header explains: explain it there and add it here, or fix the unit.
. "$SRCDIR/tests/e2e/lib.sh"
command -v systemd-analyze >/dev/null || skip "no systemd-analyze (apt-get install systemd)"
unit=$BUILDDIR/systemd/hostprofd.service
[ -f "$unit" ] || { fail "no $unit (configured by systemd/meson.build)"; finish; }
limit=2.5

cp "$unit" "$tmp/hostprofd.service"
out=$(cd "$tmp" && LC_ALL=C.UTF-8 SYSTEMD_COLORS=0 systemd-analyze security --offline=true --no-pager ./hostprofd.service 2>&1) && rc=0 || rc=$?
score=$(sed -n 's/.*Overall exposure level for hostprofd\.service: \([0-9.]*\).*/\1/p' <<<"$out")
if [ -z "$score" ]; then
	fail "no score (exit $rc): $out"
	finish
fi
echo "security score: $score (limit $limit); still flagged:"
# flagged lines start with ✗ (or '-' where the locale has no UTF-8)
grep -E '^(✗|-) ' <<<"$out" | sed 's/  */ /g; s/^/  /'
explained=(
	'SystemCallFilter=~@privileged' 'SystemCallFilter=~@debug' 'SystemCallFilter=~@resources'
	'RootDirectory=/RootImage='
	'User=/DynamicUser=' 'ProtectKernelLogs=' 'CapabilityBoundingSet=~CAP_(DAC_*|FOWNER|IPC_OWNER)'
	'CapabilityBoundingSet=~CAP_BPF' 'ProtectKernelTunables=' 'RestrictAddressFamilies=~AF_UNIX'
	'CapabilityBoundingSet=~CAP_SYS_PTRACE' 'ProtectProc=' 'ProcSubset=' 'PrivateUsers='
	'CapabilityBoundingSet=~CAP_SYSLOG' 'DeviceAllow=' 'ProtectClock='
	'SystemCallFilter=~@clock'
)
while read -r name; do
	known=0
	for e in "${explained[@]}"; do [ "$name" = "$e" ] && known=1; done
	[ $known = 1 ] || fail "newly flagged: $name (explain it in the header of systemd/hostprofd.service.in, or fix it)"
done < <(sed -nE 's/^(✗|-) ([^ ]+) .*/\2/p' <<<"$out")
# hostprofd executes nothing, dumps no core, never opens tracing or debug file systems
grep -qx 'NoExecPaths=/' "$unit" && ok "NoExecPaths=/" || fail "no NoExecPaths=/ in $unit"
execpaths=$(sed -n 's/^ExecPaths=//p' "$unit")
for p in "$SBINDIR/hostprofd" /usr/lib; do
	grep -qw -- "$p" <<<"$execpaths" && ok "ExecPaths= has $p" || fail "ExecPaths= lacks $p: $execpaths"
done
reload=$(sed -n 's/^ExecReload=\([^ ]*\).*/\1/p' "$unit")
grep -qw -- "$reload" <<<"$execpaths" && ok "ExecPaths= has ExecReload's $reload" || fail "ExecReload=$reload is not executable under NoExecPaths=/"
grep -qx 'LimitCORE=0' "$unit" && ok "LimitCORE=0" || fail "no LimitCORE=0"
fs=$(sed -n 's/^RestrictFileSystems=~//p' "$unit")
for f in tracefs debugfs; do
	grep -qw "$f" <<<"$fs" && ok "RestrictFileSystems= denies $f" || fail "RestrictFileSystems= does not deny $f: '$fs'"
done
if awk -v s="$score" -v l="$limit" 'BEGIN { exit !(s <= l) }'; then
	ok "exposure $score <= $limit"
else
	fail "exposure $score > $limit"
fi
finish
