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
#   python.sh stacks PYTHON    the kernel's walk: samples and off-CPU intervals show the
#                              chain with chain.py's lines, merged with the native frames
#   python.sh exit PYTHON      a snapshot after the process exited still names its frames
#   python.sh torch            a PyTorch job: train_step above libtorch's frames
#   python.sh gc               --python-gc: Debian's python3.11's collections, from its USDT probes
#   python.sh offsets          daemon/python/offsets.c against the headers of every
#                              interpreter installed (offsets-probe.c compiled with each)
#   python.sh gil-holder PYTHON  gil.py's GIL found, its holder read as the kernel side
#                              reads it (pygil)
#   python.sh gil PYTHON [MODE]  gil.py watched: its GIL waits attributed to their holder
#                              and its function (check-gil.py); lock, cond: never the GIL
#   python.sh gil-torch        a PyTorch job's logger thread named as the GIL's holder
#   python.sh gil-trigger PYTHON  a trigger of kind gil and its automatic snapshot
#
# Environment (meson): HOSTPROFD, HOSTPROFCTL, PYDUMP, PYGIL, FAKEPYTHON, FAKEPYTHON_PLAIN,
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

# gil-holder PYTHON: gil.py on PYTHON, its GIL found and its holder sampled (pygil) the way
# the kernel side reads it: while held, gil.py's burning thread holds it >= 90% of the time
cmd_gil_holder() {
	local out hold held n
	resolve_python "$1" || skip "$why"
	"$py" "$SRCDIR/tests/python/gil.py" 30 50 nap >"$tmp/gil.out" 2>"$tmp/gil.err" &
	bg_pids+=($!)
	for _ in $(seq 100); do
		[ -s "$tmp/gil.out" ] && break
		sleep 0.05
	done
	hold=$(head -1 "$tmp/gil.out" | jq -r .hold_tid) || { fail "gil.py did not start: $(cat "$tmp/gil.err")"; finish; }
	out=$("$PYGIL" "$(head -1 "$tmp/gil.out" | jq -r .pid)" 1000 1000)
	echo "$out" | sed 's/^/  [pygil] /'
	grep -q '^gil 0x' <<<"$out" && ok "$py: the GIL found" || fail "$py: no GIL found: $out"
	held=$(awk '$1 == "holder" && $2 != 0 { n += $3 } END { print n + 0 }' <<<"$out")
	n=$(awk -v t="$hold" '$1 == "holder" && $2 == t { print $3 }' <<<"$out")
	[ "$held" -ge 500 ] && ok "$py: held in $held of 1000 samples" || fail "$py: held in $held of 1000 samples only"
	[ $((${n:-0} * 100)) -ge $((held * 90)) ] && ok "$py: gil_hold (tid $hold) the holder in ${n:-0} of $held" ||
		fail "$py: gil_hold (tid $hold) the holder in ${n:-0} of $held only"
	finish
}

# gil PYTHON [gil|sleep|lock|cond [exact|blocking]]: gil.py on PYTHON watched by hostprofd (in
# that syscalls mode; the default's without): gil_wait's GIL waits
# attributed to gil_hold for >= 90% of what gil.py measured, hold_burst named
# (check-gil.py); sleep: the same with gil_hold sleeping between its bursts as long as
# they last; lock, cond: its waits on a threading.Lock / Condition never the GIL's
cmd_gil() {
	local mode=${2:-gil} syscalls=${3:-} pid
	require_root
	resolve_python "$1" || skip "$why"
	[ -x "$checker_py" ] || skip "no $checker_py to check with"
	start_daemon ${syscalls:+--syscalls "$syscalls"}
	# 50 ms switch interval, 200 ms bursts: the waits are long beside gil.py's own time around
	# each one, and most end with gil_hold made to drop the GIL, in hold_burst
	# at nice -20 in an autogroup of its own: on a machine loaded by other work, what gil.py
	# measures is then its GIL waits, not its own preemptions
	setsid sh -c 'echo -20 >/proc/self/autogroup 2>/dev/null; exec nice -n -20 "$0" "$@"' \
		"$py" "$SRCDIR/tests/python/gil.py" 5 200 "$mode" 30 50 go >"$tmp/gil.out" 2>"$tmp/gil.err" &
	bg_pids+=($!)
	for _ in $(seq 100); do
		[ -s "$tmp/gil.out" ] && break
		sleep 0.05
	done
	pid=$(head -1 "$tmp/gil.out" | jq -r .pid) || { fail "gil.py did not start: $(cat "$tmp/gil.err")"; finish; }
	bg_pids+=("$pid")
	expect_rc 0 "watch gil.py" -- ctl watch --pid "$pid"
	# its measuring begins once hostprofd watches its GIL (the daemon says so)
	for _ in $(seq 300); do
		grep -q "pid $pid: CPython .*, its GIL watched" "$tmp/daemon.log" && break
		sleep 0.1
	done
	grep -q "pid $pid: CPython .*, its GIL watched" "$tmp/daemon.log" ||
		{ fail "hostprofd does not watch gil.py's GIL: $(tail -3 "$tmp/daemon.log")"; finish; }
	kill -USR1 "$pid"
	for _ in $(seq 200); do
		[ "$(wc -l <"$tmp/gil.out")" -ge 2 ] && break
		sleep 0.1
	done
	[ "$(wc -l <"$tmp/gil.out")" -ge 2 ] || { fail "gil.py did not finish: $(cat "$tmp/gil.err")"; finish; }
	expect_rc 0 "snapshot" -- ctl snapshot --pid "$pid" --format hps,report,report-json,perfetto,json -o "$tmp/snap"
	out=$("$checker_py" "$SRCDIR/tests/python/check-gil.py" "$tmp/gil.out" "$tmp/snap.report.json" \
		$([ "$mode" = gil ] || [ "$mode" = sleep ] || echo --not-gil)) && ok "check-gil.py ($mode)" || fail "check-gil.py ($mode)"
	sed 's/^/  [check-gil] /' <<<"$out"
	if [ "$mode" = gil ]; then
		grep -q '^GIL waits (CPython ' "$tmp/snap.txt" && grep -A12 '^  gil_wait ' "$tmp/snap.txt" | grep -q 'hold_burst (' &&
			ok "the text report's GIL section names hold_burst" ||
			fail "the text report's GIL section: $(sed -n '/^GIL waits/,/^Python threads/p' "$tmp/snap.txt")"
		sed -n '/^GIL waits/,/^Python threads/p' "$tmp/snap.txt" | head -16
		# Perfetto: a "GIL wait" slice per recorded wait, each with a flow that ends at a
		# "held the GIL" instant on the holder's track
		decode_perfetto "$tmp/snap.pftrace" >"$tmp/pf.txt" || fail "the Perfetto trace does not decode"
		local from to rec
		from=$(grep -c '^ *flow_ids:' "$tmp/pf.txt")
		to=$(grep -c '^ *terminating_flow_ids:' "$tmp/pf.txt")
		rec=$(jq "[.gil.threads[] | select(.tid == $(head -1 "$tmp/gil.out" | jq .wait_tid)) | .recorded] | add // 0" "$tmp/snap.report.json")
		grep -q 'name: "GIL wait"' "$tmp/pf.txt" && grep -q 'name: "held the GIL"' "$tmp/pf.txt" &&
			[ "$from" -eq "$to" ] && [ "$from" -ge "$rec" ] && [ "$rec" -gt 0 ] &&
			ok "Perfetto: $from GIL waits flow to their holder's track ($rec of gil_wait's)" ||
			fail "Perfetto: $from flows from GIL waits, $to to holders, $rec recorded waits of gil_wait"
		# the Chrome JSON: the same waits as spans on gil_wait's row, their flows to gil_hold's
		local wt ht jw js jf jh
		wt=$(head -1 "$tmp/gil.out" | jq .wait_tid)
		ht=$(head -1 "$tmp/gil.out" | jq .hold_tid)
		jw=$(jq --argjson t "$wt" '[.traceEvents[] | select(.ph == "X" and .name == "GIL wait" and .tid == $t)] | length' "$tmp/snap.json")
		js=$(jq '[.traceEvents[] | select(.ph == "s" and .name == "GIL")] | length' "$tmp/snap.json")
		jf=$(jq '[.traceEvents[] | select(.ph == "f" and .name == "GIL")] | length' "$tmp/snap.json")
		jh=$(jq --argjson t "$wt" --argjson h "$ht" '[.traceEvents[] | select(.ph == "X" and .name == "GIL wait" and .tid == $t and
			(.args.holder | endswith(":\($h)")) and (.args.holder_function // "" | startswith("hold_burst ")))] | length' "$tmp/snap.json")
		[ "$jw" -eq "$rec" ] && [ "$js" -eq "$from" ] && [ "$jf" -eq "$js" ] && [ "$jh" -gt 0 ] &&
			ok "Chrome JSON: $jw GIL waits of gil_wait ($jh held by gil_hold in hold_burst), $js flows" ||
			fail "Chrome JSON: $jw GIL waits of gil_wait (want $rec), $jh by gil_hold in hold_burst, $js flows out, $jf in (want $from)"
	fi
	kill -0 "$daemon_pid" && ok "hostprofd still runs" || fail "hostprofd died"
	stop_daemon || fail "hostprofd did not exit cleanly"
	finish
}

# gil-torch: tests/workloads/torch-logger.py (a PyTorch training loop, a "logger" thread
# beside it formatting statistics in pure Python) watched by hostprofd: the report's GIL
# section says logger held the GIL the loop waited for, in flush_stats (check-gil-torch.py)
cmd_gil_torch() {
	local pid
	require_root
	"$checker_py" -c 'import torch' 2>/dev/null || skip "no PyTorch for $checker_py (python3-torch)"
	start_daemon
	"$checker_py" "$SRCDIR/tests/workloads/torch-logger.py" 6 >"$tmp/torch.out" 2>"$tmp/torch.err" &
	pid=$!
	bg_pids+=("$pid")
	expect_rc 0 "watch the training job" -- ctl watch --pid "$pid"
	for _ in $(seq 300); do
		grep -q '^steps=' "$tmp/torch.out" && break
		sleep 0.1
	done
	grep -q '^steps=' "$tmp/torch.out" || { fail "torch-logger.py did not finish: $(tail -5 "$tmp/torch.err")"; finish; }
	expect_rc 0 "snapshot" -- ctl snapshot --pid "$pid" --format hps,report,report-json -o "$tmp/snap"
	out=$("$checker_py" "$SRCDIR/tests/python/check-gil-torch.py" "$tmp/snap.report.json" "$pid") &&
		ok "check-gil-torch.py" || fail "check-gil-torch.py"
	sed 's/^/  [check-gil-torch] /' <<<"$out"
	grep -A8 "^  python3 (tid $pid)\|^  python3 (pid $pid)\|^  [^ ]* (tid $pid)" "$tmp/snap.txt" | grep -q 'held by logger' &&
		ok "the text report's GIL section: held by logger" ||
		fail "the text report's GIL section: $(sed -n '/^GIL waits/,/^Python threads/p' "$tmp/snap.txt")"
	sed -n '/^GIL waits/,/^Python threads/p' "$tmp/snap.txt" | head -14
	head -1 "$tmp/snap.txt"
	stop_daemon || fail "hostprofd did not exit cleanly"
	finish
}

# gil-trigger PYTHON: a trigger of kind gil fires on gil.py's waits for the GIL; its
# automatic snapshot has the wait, and its holder, in the GIL section
cmd_gil_trigger() {
	local pid name
	require_root
	resolve_python "$1" || skip "$why"
	start_daemon --snapshot-dir "$tmp/snaps" --snapshot-formats hps,report,report-json \
		--trigger gilwait:gil:gil_wait:15ms
	"$py" "$SRCDIR/tests/python/gil.py" 4 50 gil 30 20 >"$tmp/gil.out" 2>"$tmp/gil.err" &
	bg_pids+=($!)
	for _ in $(seq 100); do
		[ -s "$tmp/gil.out" ] && break
		sleep 0.05
	done
	pid=$(head -1 "$tmp/gil.out" | jq -r .pid) || { fail "gil.py did not start: $(cat "$tmp/gil.err")"; finish; }
	expect_rc 0 "watch gil.py" -- ctl watch --pid "$pid"
	for _ in $(seq 150); do
		name=$(ctl snapshots --json | jq -r '[.snapshots[] | select(.name | test("gilwait"))][0].name // empty')
		[ -n "$name" ] && [ -s "$tmp/snaps/$name.report.json" ] && break
		sleep 0.1
	done
	[ -n "$name" ] && ok "a 20 ms wait for the GIL fired gilwait: $name" || { fail "no automatic snapshot: $(tail -5 "$tmp/daemon.log")"; finish; }
	jq -e --argjson w "$(head -1 "$tmp/gil.out" | jq .wait_tid)" --argjson h "$(head -1 "$tmp/gil.out" | jq .hold_tid)" \
		'[.gil.threads[] | select(.tid == $w) | .holders[] | select(.tid == $h and .ns >= 15000000)] | length > 0' \
		"$tmp/snaps/$name.report.json" >/dev/null &&
		ok "its GIL section: gil_wait waited for gil_hold" ||
		fail "its GIL section: $(jq -c .gil "$tmp/snaps/$name.report.json" | head -c 600)"
	grep -q 'waited .* ms for the GIL, held by gil_hold' "$tmp/daemon.log" && ok "the daemon says why it fired" ||
		fail "no 'waited for the GIL' in the daemon's log: $(grep gilwait "$tmp/daemon.log" | head -3)"
	stop_daemon || fail "hostprofd did not exit cleanly"
	finish
}

# chain_folded HOW: the folded chain outer;middle;inner of thread HOW, with the lines
# chain.py printed ("inner_alt" too for the ticker: the frames between two sleeps)
chain_folded() {
	jq -r --arg h "$1" '.threads[$h].frames | reverse | map("\(.[0]) (chain.py:\(.[1]))") | join(";")' \
		"$tmp/truth.json"
}

# python.sh stacks PYTHON: the kernel's walk (bpf/python.bpf.h) in samples and off-CPU:
# the spinner's samples and the ticker's 100 ms sleeps show outer -> middle -> inner with
# chain.py's own lines, in folded (every line of a Python thread merged), pprof (function,
# file, line) and the snapshot's counts
cmd_stacks() {
	local spin tick n bad
	require_root
	resolve_python "$1" || skip "$why"
	start_chain "$py" ticker
	echo "CPython $(jq -r .version "$tmp/truth.json") at $py, pid $chain_pid"
	start_daemon --sample-hz 199
	expect_rc 0 "watch the interpreter" -- ctl watch --pid "$chain_pid"
	for _ in $(seq 50); do grep -q "pid $chain_pid is CPython" "$tmp/daemon.log" && break; sleep 0.1; done
	grep -q "pid $chain_pid is CPython: its Python stacks are walked" "$tmp/daemon.log" &&
		ok "hostprofd walks its Python stacks in the kernel" || fail "not walked: $(cat "$tmp/daemon.log")"
	sleep 2
	expect_rc 0 "snapshot" -- ctl snapshot --pid "$chain_pid" --format folded,pprof,report-json -o "$tmp/snap"
	# the Python frames alone (3.8-3.10 run each frame in an eval loop of its own: native
	# frames come between them), the thread name first
	for f in oncpu offcpu; do
		awk '{ c = $NF; l = substr($0, 1, length($0) - length(c) - 1); n = split(l, a, ";"); s = a[1]
			for (i = 2; i <= n; i++) if (a[i] ~ / \(.*\.py(:[0-9]+)?\)$/) s = s ";" a[i]; print s " " c }' \
			"$tmp/snap.$f.folded" >"$tmp/snap.$f.py"
		mv "$tmp/snap.$f.py" "$tmp/snap.$f.folded"
	done
	spin=$(chain_folded spin)
	n=$(grep -c "^spinner;.*;$spin\( \|;\)" "$tmp/snap.oncpu.folded" || true)
	[ "$n" -gt 0 ] && ok "on-CPU: $n spinner stacks end in $spin" ||
		fail "on-CPU: no spinner stack with $spin: $(grep '^spinner' "$tmp/snap.oncpu.folded" | head -5)"
	# a spinner sample with Python frames never names another chain's lines
	bad=$(grep '^spinner;.*chain.py' "$tmp/snap.oncpu.folded" | grep -v ";$spin\( \|;\)" | grep -c 'inner (' || true)
	[ "$bad" = 0 ] && ok "on-CPU: no spinner stack with other lines" ||
		fail "on-CPU: $bad spinner stacks with other inner lines: $(grep '^spinner;.*chain.py' "$tmp/snap.oncpu.folded" | grep -v ";$spin" | head -3)"
	tick=$(chain_folded tick)
	n=$(grep -c "^ticker;.*;$tick\( \|;\)" "$tmp/snap.offcpu.folded" || true)
	[ "$n" -gt 0 ] && ok "off-CPU: $n ticker stacks end in $tick" ||
		fail "off-CPU: no ticker stack with $tick: $(grep '^ticker' "$tmp/snap.offcpu.folded" | head -5)"
	n=$(jq '.python_stacks.merged // 0' "$tmp/snap.report.json" 2>/dev/null || echo 0)
	if command -v go >/dev/null; then
		go tool pprof -raw "$tmp/snap.pb.gz" 2>/dev/null >"$tmp/pprof.txt" || true
		grep -qE "inner .*chain.py:$(jq -r '.threads.spin.frames[0][1]' "$tmp/truth.json")" "$tmp/pprof.txt" &&
			ok "pprof: inner in chain.py at its line" || fail "pprof: no inner at chain.py:line: $(grep -m3 inner "$tmp/pprof.txt")"
	fi
	expect_rc 0 "status" -- ctl status --json
	n=$(jq '.python.walks // 0' <<<"$out")
	[ "$(jq '.python.processes // 0' <<<"$out")" -ge 1 ] && [ "$n" -gt 0 ] &&
		ok "status: $n stacks walked, $(jq .python.unreadable <<<"$out") unreadable" ||
		fail "status: no python walks: $(jq -c .python <<<"$out")"
	kill -0 "$daemon_pid" && ok "hostprofd still runs" || fail "hostprofd died"
	stop_daemon || fail "hostprofd did not exit cleanly"
	finish
}

# python.sh exit PYTHON: a process that exits right after its samples: its snapshot, taken
# after the exit, still names its Python frames (read on the worker while it lived)
cmd_exit() {
	local spin n
	require_root
	resolve_python "$1" || skip "$why"
	start_daemon --sample-hz 199
	"$py" "$chain" 3 >"$tmp/truth.json" 2>"$tmp/chain.err" &
	chain_pid=$!
	bg_pids+=("$chain_pid")
	expect_rc 0 "watch the interpreter" -- ctl watch --pid "$chain_pid"
	wait "$chain_pid" || true
	[ -s "$tmp/truth.json" ] || { fail "chain.py did not run: $(cat "$tmp/chain.err")"; finish; }
	kill -0 "$chain_pid" 2>/dev/null && fail "chain.py still runs" || ok "chain.py exited"
	expect_rc 0 "snapshot after the exit" -- ctl snapshot --pid "$chain_pid" --format folded,hps -o "$tmp/snap"
	spin=$(chain_folded spin)
	n=$(grep -c "^spinner;.*;$spin\( \|;\)" "$tmp/snap.oncpu.folded" || true)
	[ "$n" -gt 0 ] && ok "on-CPU after the exit: $n spinner stacks end in $spin" ||
		fail "on-CPU after the exit: no spinner stack with $spin: $(grep '^spinner' "$tmp/snap.oncpu.folded" | head -5)"
	# the snapshot's python_stacks (46): most stacks merged, not unreadable
	tail -c +9 "$tmp/snap.hps" | protoc --decode_raw >"$tmp/raw.txt" 2>/dev/null || true
	merged=$(awk '/^46 \{/ { f = 1 } f && /^  1: / { print $2; exit }' "$tmp/raw.txt")
	unread=$(awk '/^46 \{/ { f = 1 } f && /^  2: / { print $2; exit }' "$tmp/raw.txt")
	[ "${merged:-0}" -gt "${unread:-0}" ] && ok "python_stacks: ${merged:-0} merged, ${unread:-0} unreadable" ||
		fail "python_stacks: ${merged:-0} merged, ${unread:-0} unreadable"
	stop_daemon || fail "hostprofd did not exit cleanly"
	finish
}

# python.sh torch: a PyTorch job (Debian's python3-torch) training from a DataLoader with two
# worker processes: its training thread's samples show train -> train_step, at the lines of
# the forward or the backward, above libtorch's native frames; the workers are walked too
cmd_torch() {
	local tt fw bw n
	require_root
	/usr/bin/python3 -c 'import torch' 2>/dev/null || skip "no PyTorch for /usr/bin/python3 (python3-torch)"
	start_daemon --sample-hz 199
	/usr/bin/python3 "$SRCDIR/tests/python/torchjob.py" 15 >"$tmp/torch.json" 2>"$tmp/torch.err" &
	chain_pid=$!
	bg_pids+=("$chain_pid")
	# watched from its start: its DataLoader workers are forked while it is
	expect_rc 0 "watch the PyTorch job" -- ctl watch --pid "$chain_pid"
	for _ in $(seq 300); do [ -s "$tmp/torch.json" ] && break; sleep 0.1; done
	[ -s "$tmp/torch.json" ] || { fail "torchjob.py did not start: $(cat "$tmp/torch.err")"; finish; }
	sleep 4
	expect_rc 0 "snapshot" -- ctl snapshot --pid "$chain_pid" --format folded,pprof -o "$tmp/torch"
	tt=$(jq -r .lines.train "$tmp/torch.json")
	fw=$(jq -r .lines.forward "$tmp/torch.json")
	bw=$(jq -r .lines.backward "$tmp/torch.json")
	# Python frames, then (deeper) a frame of libtorch: by name (at::, c10::, torch::) or module
	n=$(grep -cE "^python3;.*train \(torchjob\.py:$tt\);train_step \(torchjob\.py:($fw|$bw)\);.*(libtorch|_ZN(K)?[0-9]*(at|c10|torch)[0-9]|at::|c10::)" \
		"$tmp/torch.oncpu.folded" || true)
	[ "$n" -gt 0 ] && ok "training thread: $n stacks with train_step (torchjob.py:$fw|$bw) above libtorch" ||
		fail "training thread: no train_step above libtorch: $(grep -m5 train_step "$tmp/torch.oncpu.folded")"
	expect_rc 0 "status" -- ctl status --json
	n=$(jq '.python.processes // 0' <<<"$out")
	[ "$n" -ge 3 ] && ok "status: $n CPython processes walked (the job and its 2 DataLoader workers)" ||
		fail "status: $n CPython processes walked, want 3: $(jq -c .python <<<"$out")"
	stop_daemon || fail "hostprofd did not exit cleanly"
	finish
}

# python.sh gc: --python-gc on Debian's python3.11 (its USDT probes gc__start/gc__done):
# the snapshot's collections of generations 0 and 2, at most as many as the process counted
# itself (gc.callbacks; generation 2 plus those of its shutdown); without --python-gc, none
cmd_gc() {
	local mode py=/usr/bin/python3.11 own0 own2 got0 got2
	require_root
	[ -x "$py" ] || skip "no $py"
	readelf -n "$py" 2>/dev/null | grep -q gc__start || skip "$py has no gc__start probe"
	for mode in yes no; do
		start_daemon --python-gc "$mode"
		"$py" "$SRCDIR/tests/python/gcchurn.py" 3 >"$tmp/gc.out" 2>"$tmp/gc.err" &
		chain_pid=$!
		bg_pids+=("$chain_pid")
		expect_rc 0 "watch it (--python-gc $mode)" -- ctl watch --pid "$chain_pid"
		wait "$chain_pid" || true
		[ "$(wc -l <"$tmp/gc.out")" = 2 ] || { fail "gcchurn.py: $(cat "$tmp/gc.err")"; continue; }
		expect_rc 0 "snapshot" -- ctl snapshot --pid "$chain_pid" --format report-json,report,perfetto,json -o "$tmp/gc"
		own0=$(tail -1 "$tmp/gc.out" | jq '.collections[0]')
		own2=$(tail -1 "$tmp/gc.out" | jq '.collections[2]')
		got0=$(jq '[.python_gc[]? | select(.generation == 0) | .collections] | add // 0' "$tmp/gc.report.json")
		got2=$(jq '[.python_gc[]? | select(.generation == 2) | .collections] | add // 0' "$tmp/gc.report.json")
		echo "  --python-gc $mode: $(tail -1 "$tmp/gc.out" | jq -c .); the snapshot: gen0 $got0, gen2 $got2"
		if [ "$mode" = yes ]; then
			# the interpreter's shutdown collects too (generation 2), after gcchurn.py counted
			[ "$got0" -gt 0 ] && [ "$got0" -le "$own0" ] && [ "$got2" -gt 0 ] && [ "$got2" -le $((own2 + 8)) ] &&
				ok "collections recorded: gen0 $got0 of $own0, gen2 $got2 of $own2" ||
				fail "collections: gen0 $got0 of $own0, gen2 $got2 of $own2"
			grep -q "^  gc generation 0 " "$tmp/gc.txt" && ok "the report says them" ||
				fail "no gc line in the report: $(sed -n '/^Python/,/^$/p' "$tmp/gc.txt")"
			# one slice per collection in Perfetto and in the Chrome JSON, on the thread's track
			local all pf js
			all=$(jq '[.python_gc[]? | .collections] | add // 0' "$tmp/gc.report.json")
			decode_perfetto "$tmp/gc.pftrace" >"$tmp/gc.pf.txt" || fail "the Perfetto trace does not decode"
			# names are interned per sequence: the iids of "Python GC (gen N)", then the events
			# that use them (a track event's name_iid, 4 spaces in; a debug annotation's is deeper)
			pf=$(awk 'FNR == 1 { pass++ } /trusted_packet_sequence_id:/ { seq = $2 }
				pass == 1 && /^ *iid:/ { iid = $2 }
				pass == 1 && /^ *name: "Python GC \(gen [0-2]\)"/ { gc[seq "," iid] = 1 }
				pass == 2 && /^    name_iid:/ && ((seq "," $2) in gc) { n++ }
				END { print n + 0 }' "$tmp/gc.pf.txt" "$tmp/gc.pf.txt")
			js=$(jq '[.traceEvents[] | select(.ph == "X" and (.name | startswith("Python GC (gen ")))] | length' "$tmp/gc.json")
			[ "$pf" = "$all" ] && [ "$js" = "$all" ] && ok "Perfetto and the Chrome JSON: a slice per collection ($all)" ||
				fail "Perfetto $pf, Chrome JSON $js slices, $all collections recorded"
		else
			[ "$got0" = 0 ] && [ "$got2" = 0 ] && ok "none recorded without --python-gc" ||
				fail "collections recorded without --python-gc: $got0, $got2"
		fi
		stop_daemon || fail "hostprofd did not exit cleanly"
	done
	finish
}

cmd=$1
shift
case $cmd in
version | trigger | namespace | old | fake | offsets | stacks | exit | torch | gc) "cmd_$cmd" "$@" ;;
gil-holder) cmd_gil_holder "$@" ;;
gil) cmd_gil "$@" ;;
gil-torch) cmd_gil_torch "$@" ;;
gil-trigger) cmd_gil_trigger "$@" ;;
*) echo "usage: python.sh version|trigger|namespace|old|fake|offsets|stacks|exit|torch|gc|gil-holder|gil|gil-torch|gil-trigger ..." >&2; exit 2 ;;
esac
