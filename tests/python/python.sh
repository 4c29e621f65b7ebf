#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The python suite: real interpreters, watched by hostprofd, against their own ground truth.
#
#   python.sh version PYTHON   chain.py on PYTHON (skipped when it is not installed): read
#                              by pydump, then watched by hostprofd and snapshotted; the
#                              report's "Python threads at the instant" (text, JSON, and the
#                              client's report of the .hps) shows each thread's chain with
#                              the right names, files and lines (check-chain.py)
#   python.sh trigger PYTHON   a trigger's automatic snapshot: the stacks read as it fired,
#                              not `after` it when the snapshot is built
#   python.sh namespace PYTHON chain.py in a pid namespace of its own (a container): the tids
#                              it knows its threads by are mapped to the host's
#   python.sh old PYTHON...    interpreters out of range (3.7, 3.6, 2.7): unreadable, and why
#   python.sh fake             C programs that pass for python: unreadable, why, no crash,
#                              their native stacks kept
#   python.sh offsets          daemon/python/offsets.c against the headers of every
#                              interpreter installed (offsets-probe.c compiled with each)
#
# Environment (meson): HOSTPROFD, HOSTPROFCTL, PYDUMP, FAKEPYTHON, FAKEPYTHON_PLAIN,
# OFFSETS_TABLE, SRCDIR, CC.
. "$SRCDIR/tests/e2e/lib.sh"
chain=$SRCDIR/tests/python/chain.py
checker_py=/usr/bin/python3

# start_chain PYTHON [ticker]: chain.py in the background, its ground truth in $tmp/truth.json
start_chain() {
	"$1" "$chain" 60 "${@:2}" >"$tmp/truth.json" 2>"$tmp/chain.err" &
	chain_pid=$!
	bg_pids+=("$chain_pid")
	for _ in $(seq 100); do
		[ -s "$tmp/truth.json" ] && return 0
		kill -0 "$chain_pid" 2>/dev/null || break
		sleep 0.05
	done
	fail "chain.py on $1 did not start: $(cat "$tmp/chain.err")"
	finish
}

check_chain() { # REPORT.json WHAT [--comm]
	local out rc=0
	out=$("$checker_py" "$SRCDIR/tests/python/check-chain.py" "$tmp/truth.json" "$1" "${@:3}") || rc=$?
	sed "s/^/  [$2] /" <<<"$out"
	[ $rc = 0 ] && ok "$2: every thread's chain as chain.py says" || fail "$2: see above"
}

# check_text FILE WHAT: the text report's section, thread by thread
check_text() {
	local how tid line
	grep -q '^Python threads at the instant (CPython ' "$1" && ok "$2: the section is there" ||
		{ fail "$2: no section 'Python threads at the instant' in $(cat "$1")"; return; }
	for how in sleep spin lock; do
		tid=$(jq -r ".threads.$how.tid" "$tmp/truth.json")
		line=$(jq -r ".threads.$how.frames[0][1]" "$tmp/truth.json")
		grep -A1 -E "^  thread $tid( |$)" "$1" | grep -qxF "    inner ($chain:$line)" &&
			ok "$2: thread $tid ($how) starts at inner ($chain:$line)" ||
			fail "$2: thread $tid ($how) does not start at inner ($chain:$line): $(sed -n '/^Python threads/,/^capture/p' "$1")"
	done
}

# resolve_python pyenv:3.N|PATH: $py is the newest 3.N.* under pyenv's root, or PATH;
# else returns 1 with the reason in $why
resolve_python() {
	local root=${PYENV_ROOT:-$HOME/.pyenv} d
	py=
	case $1 in
	pyenv:*)
		for d in "$root"/versions/"${1#pyenv:}".*; do
			[[ "${d##*/}" =~ ^${1#pyenv:}\.[0-9]+$ ]] && [ -x "$d/bin/python" ] && py=$d/bin/python
		done
		why="CPython ${1#pyenv:} is not installed (no $root/versions/${1#pyenv:}.N/bin/python)"
		;;
	*)
		[ -x "$1" ] && py=$1
		why="no interpreter at $1"
		;;
	esac
	[ -n "$py" ]
}

cmd_version() {
	local v
	require_root
	resolve_python "$1" || skip "$why"
	[ -x "$checker_py" ] || skip "no $checker_py to check with"
	v=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	start_chain "$py"
	echo "CPython $(jq -r .version "$tmp/truth.json") at $py, pid $chain_pid"

	# the reader alone
	"$PYDUMP" "$chain_pid" --json >"$tmp/pydump.json" || fail "pydump failed"
	check_chain "$tmp/pydump.json" "pydump"

	# as a user gets it: hostprofd watching, a snapshot
	start_daemon
	expect_rc 0 "watch the interpreter" -- ctl watch --pid "$chain_pid"
	sleep 0.3
	expect_rc 0 "snapshot" -- ctl snapshot --pid "$chain_pid" --format hps,report,report-json -o "$tmp/snap"
	check_chain "$tmp/snap.report.json" "report-json" --comm
	check_text "$tmp/snap.txt" "report"
	expect_rc 0 "the client's report of the .hps" -- ctl report "$tmp/snap.hps"
	printf '%s\n' "$out" >"$tmp/client.txt"
	check_text "$tmp/client.txt" "hostprofctl report"
	grep -q '"sleeper"' "$tmp/snap.txt" && ok "thread names in the text" || fail "no thread name sleeper in the text"
	[ "$v" ] && sed -n '/^Python threads/,/^capture/p' "$tmp/snap.txt" | head -12
	kill -0 "$daemon_pid" && ok "hostprofd still runs" || fail "hostprofd died"
	stop_daemon || fail "hostprofd did not exit cleanly"
	finish
}

cmd_trigger() {
	local name t_read t_end
	require_root
	resolve_python "$1" || skip "$why"
	[ -x "$checker_py" ] || skip "no $checker_py to check with"
	start_daemon --snapshot-dir "$tmp/snaps" --snapshot-formats hps,report,report-json \
		--trigger pyoff:offcpu:ticker:50ms
	start_chain "$py" ticker
	expect_rc 0 "watch the interpreter" -- ctl watch --pid "$chain_pid"
	for _ in $(seq 80); do
		name=$(ctl snapshots --json | jq -r '.snapshots[0].name // empty')
		[ -n "$name" ] && [ -s "$tmp/snaps/$name.report.json" ] && break
		sleep 0.1
	done
	[ -n "$name" ] && ok "the ticker's 100 ms sleep fired pyoff: $name" || { fail "no automatic snapshot"; finish; }
	# the ticker has just woken: it, not the spinner, may hold the GIL then
	check_chain "$tmp/snaps/$name.report.json" "trigger" --comm --any-gil
	check_text "$tmp/snaps/$name.txt" "trigger report"
	# the window ends `after` (1 s) past the firing; the stacks are from the firing
	t_read=$(jq .python.ts "$tmp/snaps/$name.report.json")
	t_end=$(jq '.window.end_ns' "$tmp/snaps/$name.report.json")
	if [ "$t_read" -lt "$t_end" ] && [ $((t_end - t_read)) -ge 500000000 ] && [ $((t_end - t_read)) -le 1500000000 ]; then
		ok "read $(((t_end - t_read) / 1000000)) ms before the window's end: as the trigger fired"
	else
		fail "read at $t_read, the window ends at $t_end: not at the trigger's instant"
	fi
	stop_daemon || fail "hostprofd did not exit cleanly"
	finish
}

cmd_namespace() {
	local hpid tid ns
	require_root
	resolve_python "$1" || skip "$why"
	[ -x "$checker_py" ] || skip "no $checker_py to check with"
	command -v unshare >/dev/null || skip "no unshare"
	unshare --pid --fork "$py" "$chain" 60 >"$tmp/truth.json" 2>"$tmp/chain.err" &
	bg_pids+=($!)
	for _ in $(seq 100); do [ -s "$tmp/truth.json" ] && break; sleep 0.05; done
	hpid=$(pgrep -P $! | head -1)
	[ -s "$tmp/truth.json" ] && [ -n "$hpid" ] || { fail "chain.py in a pid namespace: $(cat "$tmp/chain.err")"; finish; }
	bg_pids+=("$hpid")
	[ "$(jq .pid "$tmp/truth.json")" != "$hpid" ] && ok "chain.py is pid $(jq .pid "$tmp/truth.json") in its namespace, $hpid here" ||
		skip "unshare gave no pid namespace of its own"
	# the host's tid of each of its threads, by their NSpid
	{
		echo "{"
		for tid in /proc/"$hpid"/task/*; do
			ns=$(awk '/^NSpid:/ { print $NF }' "$tid/status")
			echo "\"$ns\": ${tid##*/},"
		done
		echo '"0": 0}'
	} >"$tmp/tidmap.json"
	"$PYDUMP" "$hpid" --json >"$tmp/pydump.json" || fail "pydump failed"
	check_chain "$tmp/pydump.json" "pydump" --tidmap "$tmp/tidmap.json"
	start_daemon
	expect_rc 0 "watch the interpreter" -- ctl watch --pid "$hpid"
	expect_rc 0 "snapshot" -- ctl snapshot --pid "$hpid" --format report-json -o "$tmp/snap.json"
	check_chain "$tmp/snap.json" "report-json" --comm --tidmap "$tmp/tidmap.json"
	stop_daemon || fail "hostprofd did not exit cleanly"
	finish
}

cmd_old() {
	local arg v want ran=0 reason
	for arg in "$@"; do
		resolve_python "$arg" || { echo "$why"; continue; }
		v=$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
		case $v in
		3.7.*) want="CPython $v is not one this hostprofd reads \(3.8-3.13\)" ;;
		*) want="no _PyRuntime in .*not CPython 3.7 or later \(2.7 and 3.6 are not read\)" ;;
		esac
		"$py" -c 'import time; print(1); time.sleep(60)' >"$tmp/old.out" &
		bg_pids+=($!)
		for _ in $(seq 100); do [ -s "$tmp/old.out" ] && break; sleep 0.05; done
		"$PYDUMP" $! --json >"$tmp/old.json" || fail "pydump failed on $v"
		reason=$(jq -r .python.reason "$tmp/old.json")
		[ "$(jq -r .python.status "$tmp/old.json")" = unreadable ] && grep -qE -- "$want" <<<"$reason" &&
			ok "CPython $v: unreadable: $reason" || fail "CPython $v: $(cat "$tmp/old.json"), want /$want/"
		kill $! 2>/dev/null
		ran=$((ran + 1))
	done
	[ $ran -gt 0 ] || skip "none of $* installed"
	finish
}

cmd_fake() {
	local mode want pid
	require_root
	cp "$FAKEPYTHON" "$tmp/python3"
	cp "$FAKEPYTHON_PLAIN" "$tmp/notpy"
	mkdir "$tmp/plain" && cp "$FAKEPYTHON_PLAIN" "$tmp/plain/python3"
	start_daemon
	for mode in plain zero garbage v314; do
		case $mode in
		plain) want="no _PyRuntime in $tmp/plain/python3" ;;
		zero) want="no interpreter: not initialized yet, or finalized" ;;
		garbage) want="does not point back|points nowhere|cannot be read|loop" ;;
		v314) want="CPython 3.14.0 is not one this hostprofd reads" ;;
		esac
		if [ $mode = plain ]; then
			"$tmp/plain/python3" x 30 >"$tmp/fake.out" &
		else
			"$tmp/python3" $mode 30 >"$tmp/fake.out" &
		fi
		pid=$!
		bg_pids+=("$pid")
		for _ in $(seq 100); do [ -s "$tmp/fake.out" ] && break; sleep 0.05; done
		expect_rc 0 "$mode: watch it" -- ctl watch --pid "$pid"
		sleep 0.5
		expect_rc 0 "$mode: snapshot" -- ctl snapshot --pid "$pid" --format report,report-json,folded -o "$tmp/f-$mode"
		[ "$(jq -r .python.status "$tmp/f-$mode.report.json")" = unreadable ] &&
			grep -qE -- "$want" <<<"$(jq -r .python.reason "$tmp/f-$mode.report.json")" &&
			ok "$mode: python stack unreadable: $(jq -r .python.reason "$tmp/f-$mode.report.json")" ||
			fail "$mode: $(jq -c .python "$tmp/f-$mode.report.json"), want /$want/"
		grep -q "status            unreadable: python stack unreadable: " "$tmp/f-$mode.txt" &&
			ok "$mode: the text says so" || fail "$mode: $(sed -n '/^Python threads/,/^capture/p' "$tmp/f-$mode.txt")"
		grep -q 'fake_wait' "$tmp/f-$mode.offcpu.folded" && ok "$mode: its native stack is there (fake_wait off-CPU)" ||
			fail "$mode: no fake_wait in the off-CPU stacks: $(head -5 "$tmp/f-$mode.offcpu.folded")"
		kill "$pid" 2>/dev/null
		kill -0 "$daemon_pid" && ok "$mode: hostprofd still runs" || { fail "$mode: hostprofd died"; finish; }
	done
	# a process that is no Python at all has no section
	"$tmp/notpy" x 30 >"$tmp/fake.out" &
	pid=$!
	bg_pids+=("$pid")
	for _ in $(seq 100); do [ -s "$tmp/fake.out" ] && break; sleep 0.05; done
	expect_rc 0 "not python: watch it" -- ctl watch --pid "$pid"
	expect_rc 0 "not python: snapshot" -- ctl snapshot --pid "$pid" --format report-json -o "$tmp/np.json"
	[ "$(jq -r 'has("python")' "$tmp/np.json")" = false ] && ok "not python: no python section" ||
		fail "not python: $(jq -c .python "$tmp/np.json")"
	stop_daemon || fail "hostprofd did not exit cleanly"
	finish
}

cmd_offsets() {
	local inc v m ran=0
	command -v "$CC" >/dev/null || skip "no C compiler $CC"
	for inc in "$HOME"/.pyenv/versions/3.*/include/python3.* /usr/include/python3.*; do
		[ -f "$inc/Python.h" ] && [ -d "$inc/internal" ] || continue
		m=${inc##*/python3.}
		m=${m%%[!0-9]*}
		[ "$m" -ge 8 ] && [ "$m" -le 13 ] || { echo "$inc: 3.$m, out of the table's range"; continue; }
		if ! "$CC" -w -I "$inc" -I "$inc/internal" "$SRCDIR/tests/python/offsets-probe.c" -o "$tmp/probe" 2>"$tmp/cc.err"; then
			fail "$inc: the probe does not compile: $(head -5 "$tmp/cc.err")"
			continue
		fi
		"$tmp/probe" >"$tmp/headers.txt"
		"$OFFSETS_TABLE" "$m" >"$tmp/table.txt"
		if diff -u "$tmp/headers.txt" "$tmp/table.txt" >"$tmp/diff.txt"; then
			ok "$inc: the table's 3.$m row is what its headers say ($(wc -l <"$tmp/table.txt") fields)"
		else
			fail "$inc: the table's 3.$m row differs from its headers: $(cat "$tmp/diff.txt")"
		fi
		ran=$((ran + 1))
	done
	[ $ran -gt 0 ] || skip "no CPython 3.8-3.13 headers installed (pyenv, python3-dev)"
	finish
}

cmd=$1
shift
case $cmd in
version | trigger | namespace | old | fake | offsets) "cmd_$cmd" "$@" ;;
*) echo "usage: python.sh version|trigger|namespace|old|fake|offsets ..." >&2; exit 2 ;;
esac
