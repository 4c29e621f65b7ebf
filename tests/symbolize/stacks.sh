#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# tests/symbolize/stacks.sh WHAT: hostprofd and hostprofctl as a user runs them, on a
# workload whose on-CPU stacks are known, watched until it exits; then the snapshot of the
# exited process in every format (the stacks resolve after the exit):
#   cxx     cxxchild spin: c10::intrusive_ptr_release calling at::native::add_kernel,
#           demangled in the folded stacks, the SVG, the report (with its source line) and
#           pprof (the mangled names as system_name, the file and line);
#   inline  inlchild spin (-O2 -g): inl_outer with inl_mid and inl_leaf inlined, as frames
#           of their own (folded "_[i]", pprof Lines, the report's stacks) with their lines;
#   python  Debian's /usr/bin/python3.11 in a loop: its own functions named through
#           python3.11-dbg (skipped, 77, without it), with source files in the report;
#           its stacks unwound from CFI (python3.11 has no frame pointers) down to _start;
#   nofp    tests/unwind/chain.c built without frame pointers: main;middle;leaf from CFI
#           (--unwind all, the default), and not with --unwind off (frame pointers); and
#           off-CPU, main;middle;sleeper blocked in glibc's nanosleep, in both syscall modes;
#           and `chain turns`, blocking by turns from two places (nap: nanosleep, doze:
#           poll): each interval with its own place's stack, each place walked and copied
#           once (syscalls = blocking keeps a thread's last 4 places), not once a block;
#   fpleaf  the same with frame pointers but a frameless leaf: main;middle;leaf from CFI,
#           main;leaf (middle hidden) by frame pointers.
# Environment (meson): HOSTPROFD, HOSTPROFCTL, SRCDIR, CXXCHILD, INLCHILD, CHAIN_NOFP, CHAIN_FPLEAF.
. "$SRCDIR/tests/e2e/lib.sh"
require_root
what=${1:?usage: stacks.sh cxx|inline|python}
command -v protoc >/dev/null || skip "no protoc (apt-get install protobuf-compiler)"

# run_watched NAME CMD...: starts it, waits for "ready", watches it for 2 s of samples, kills it
run_watched() {
	local name=$1 pid
	shift
	"$@" >"$tmp/$name.out" 2>&1 &
	pid=$!
	bg_pids+=("$pid")
	for _ in $(seq 100); do grep -q '^ready' "$tmp/$name.out" && break; sleep 0.05; done
	grep -q '^ready' "$tmp/$name.out" || { fail "$name did not start: $(cat "$tmp/$name.out")"; finish; }
	expect_rc 0 "watch $name" -- ctl watch --pid "$pid"
	sleep 2
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null
	expect_rc 0 "snapshot of the exited $name, every format" -- ctl snapshot --pid "$pid" --format all -o "$tmp/$name"
	watched=$pid
}

# has FILE FIXED-STRING DESCRIPTION
has() {
	if grep -qF -- "$2" "$1"; then ok "$3"; else fail "$3: no '$2' in $1"; fi
}

pprof_raw() { go tool pprof -raw "$1" 2>/dev/null; }
pprof_strings() { gzip -dc "$1" | protoc --decode_raw; }

# offcpu_time FOLDED: all_us, the microseconds off-CPU in it, and chain_us, those under
# main;middle;sleeper
offcpu_time() {
	all_us=$(awk '{ n += $NF } END { print n + 0 }' "$1")
	chain_us=$(grep -E "(^|;)main;middle;sleeper;" "$1" | awk '{ n += $NF } END { print n + 0 }')
}

# chain BINARY: its on-CPU and off-CPU stacks under the default --unwind, then under --unwind off
chain() {
	local bin=$1 name
	name=$(basename "$bin")
	[ -x "$bin" ] || { fail "no $bin"; finish; }
	start_daemon --sample-hz 199
	run_watched "$name" "$bin"
	main_leaf=$(grep -E "(^|;)main;middle;leaf [0-9]+$" "$tmp/$name.oncpu.folded" | awk '{ n += $NF } END { print n + 0 }')
	all=$(awk '{ n += $NF } END { print n + 0 }' "$tmp/$name.oncpu.folded")
	# the first samples may come before the mappings are read (a tick, 100 ms)
	[ "$all" -gt 100 ] && [ $((main_leaf * 100)) -ge $((all * 80)) ] \
		&& ok "unwound from CFI: main;middle;leaf in $main_leaf of $all samples" \
		|| fail "main;middle;leaf in $main_leaf of $all samples: $(sort -t' ' -k2 -n -r "$tmp/$name.oncpu.folded" | head -3)"
	grep -qE "(^|;)_start;.*main;middle;leaf [0-9]+$" "$tmp/$name.oncpu.folded" && ok "down to _start" \
		|| fail "no stack down to _start: $(head -3 "$tmp/$name.oncpu.folded")"
	# each main;middle;leaf is a complete unwind, or one cut after main by the unwinder's
	# own limits (its time, the copy's length: a slow machine's first unwinds)
	status=$(ctl status)
	n=$(sed -n 's/^unwinding: \([0-9]*\) user stacks from CFI, \([0-9]*\) complete.*/\1 \2/p' <<<"$status")
	cut=$(grep '^unwinding:' <<<"$status" | grep -oE '\b(time|stack_copy) [0-9]+' | awk '{ n += $2 } END { print n + 0 }')
	[ "${n% *}" -ge "$all" ] 2>/dev/null && [ $((${n#* } + cut)) -ge "$main_leaf" ] && ok "status: $n (unwound, complete), $cut cut" \
		|| fail "status: '$(grep unwinding <<<"$status")' for $all samples, $main_leaf through main"
	grep -qE '^  unwinding +[0-9]+ user stacks from CFI' "$tmp/$name.txt" && ok "report: the unwinding line" \
		|| fail "report: no unwinding line"
	# off-CPU: blocked in glibc's nanosleep (no frame pointers) under main -> middle -> sleeper
	run_watched "$name-block" "$bin" block
	offcpu_time "$tmp/$name-block.offcpu.folded"
	[ "$all_us" -gt 100000 ] && [ $((chain_us * 100)) -ge $((all_us * 70)) ] \
		&& ok "off-CPU unwound from CFI: main;middle;sleeper in $chain_us of $all_us us blocked" \
		|| fail "off-CPU: main;middle;sleeper in $chain_us of $all_us us: $(head -3 "$tmp/$name-block.offcpu.folded")"
	ctl status | grep -qE '^unwinding: .*off-CPU user stacks [1-9][0-9]* unwound' && ok "status: off-CPU stacks unwound" \
		|| fail "status: $(ctl status | grep unwinding)"
	stop_daemon
	start_daemon --sample-hz 199 --unwind off
	run_watched "$name-fp" "$bin"
	run_watched "$name-fp-block" "$bin" block
	offcpu_time "$tmp/$name-fp-block.offcpu.folded"
	[ "$chain_us" = 0 ] && [ "$all_us" -gt 100000 ] && ok "--unwind off: off-CPU by frame pointers, no main;middle;sleeper" \
		|| fail "--unwind off: main;middle;sleeper in $chain_us of $all_us us off-CPU"
	fp_main_leaf=$(grep -cE "(^|;)main;middle;leaf [0-9]+$" "$tmp/$name-fp.oncpu.folded")
	[ "$fp_main_leaf" = 0 ] && ok "--unwind off: frame pointers, no main;middle;leaf" \
		|| fail "--unwind off: main;middle;leaf in $fp_main_leaf stacks"
	! ctl status | grep -q '^unwinding: [1-9]' && ok "--unwind off: nothing unwound" || fail "--unwind off: $(ctl status | grep unwinding)"
	stop_daemon
}

[ "$what" = nofp ] || [ "$what" = fpleaf ] || start_daemon

case $what in
nofp)
	chain "${CHAIN_NOFP:-}"
	# two places by turns: ~500 blocks a second, each with its place's stack, walked once
	start_daemon
	run_watched chain-turns "$CHAIN_NOFP" turns
	f=$tmp/chain-turns.offcpu.folded
	offcpu_time "$f"
	nap_us=$(grep -E "(^|;)main;middle;turns;nap;.*hrtimer_nanosleep" "$f" | awk '{ n += $NF } END { print n + 0 }')
	doze_us=$(grep -E "(^|;)main;middle;turns;doze;.*do_sys_poll" "$f" | awk '{ n += $NF } END { print n + 0 }')
	[ "$all_us" -gt 100000 ] && [ $((nap_us * 100)) -ge $((all_us * 35)) ] && [ $((doze_us * 100)) -ge $((all_us * 35)) ] \
		&& ok "two places by turns: nap in $nap_us, doze in $doze_us of $all_us us blocked" \
		|| fail "two places by turns: nap $nap_us, doze $doze_us of $all_us us: $(sort -t' ' -k2 -nr "$f" | head -4)"
	swapped=$(grep -cE "(;turns;nap;.*poll|;turns;doze;.*nanosleep)" "$f")
	[ "$swapped" = 0 ] && ok "no interval with the other place's user stack" || fail "$swapped stacks swapped: $(grep -E "(;turns;nap;.*poll|;turns;doze;.*nanosleep)" "$f" | head -2)"
	copies=$(ctl status | sed -n 's/^unwinding: .* \([0-9]*\) stack copies drained.*/\1/p')
	unwound=$(ctl status | sed -n 's/^unwinding: .*off-CPU user stacks \([0-9]*\) unwound.*/\1/p')
	# one walk per place, and one more for each that met its mapping unread (the first tick)
	[ -n "$copies" ] && [ "${unwound:-0}" -gt 400 ] && [ "$copies" -le 8 ] \
		&& ok "walked and copied $copies times for $unwound intervals" \
		|| fail "walked and copied ${copies:-?} times for ${unwound:-?} intervals: $(ctl status | grep unwinding)"
	stop_daemon
	# syscalls = exact: the off-CPU user stack is taken at the syscall's exit, copied there too
	start_daemon --syscalls exact
	run_watched chain-exact "$CHAIN_NOFP" block
	offcpu_time "$tmp/chain-exact.offcpu.folded"
	[ "$all_us" -gt 100000 ] && [ $((chain_us * 100)) -ge $((all_us * 70)) ] \
		&& ok "syscalls = exact: off-CPU main;middle;sleeper in $chain_us of $all_us us blocked" \
		|| fail "syscalls = exact: main;middle;sleeper in $chain_us of $all_us us: $(head -3 "$tmp/chain-exact.offcpu.folded")"
	;;
fpleaf)
	chain "${CHAIN_FPLEAF:-}"
	# the frame-pointer walk from the frameless leaf: its caller's frame is the one it names
	grep -qE "(^|;)main;leaf [0-9]+$" "$tmp/$(basename "$CHAIN_FPLEAF")-fp.oncpu.folded" \
		&& ok "--unwind off: main;leaf, the leaf's caller hidden (what CFI fixes)" \
		|| fail "--unwind off: $(head -3 "$tmp/$(basename "$CHAIN_FPLEAF")-fp.oncpu.folded")"
	;;
cxx)
	[ -x "${CXXCHILD:-}" ] || skip "no cxxchild: meson found no C++ compiler (apt-get install g++)"
	run_watched cxx "$CXXCHILD" spin
	kernel='at::native::add_kernel(at::native::Tensor<long> const&, float)'
	release='c10::intrusive_ptr_release(long)'
	has "$tmp/cxx.oncpu.folded" "$release;$kernel" "folded: demangled, caller then callee"
	has "$tmp/cxx.oncpu.svg" "at::native::add_kernel(at::native::Tensor&lt;long&gt; const&amp;, float)" \
		"svg: demangled (XML-escaped)"
	has "$tmp/cxx.txt" "$kernel (symbolize/cxxchild.cpp:" "report: the top function demangled, with its line"
	strings=$(pprof_strings "$tmp/cxx.pb.gz")
	grep -qF '"_ZN2at6native10add_kernelERKNS0_6TensorIlEEf"' <<<"$strings" && ok "pprof: the mangled name kept (system_name)" \
		|| fail "pprof: no mangled name in the string table"
	if command -v go >/dev/null; then
		raw=$(pprof_raw "$tmp/cxx.pb.gz")
		grep -qE "at::native::add_kernel.* .*/tests/symbolize/cxxchild.cpp:[0-9]+" <<<"$raw" \
			&& ok "go tool pprof: demangled, with file:line" || fail "go tool pprof -raw: $(grep -m3 add_kernel <<<"$raw")"
	fi
	jq -e '[.threads[].oncpu.top_functions[] | select(.function | startswith("at::native::add_kernel"))
		| select(.file | endswith("cxxchild.cpp"))] | length > 0' "$tmp/cxx.report.json" >/dev/null \
		&& ok "report-json: function and file" || fail "report-json: no at::native::add_kernel with its file"
	;;
inline)
	run_watched inl "$INLCHILD" spin
	has "$tmp/inl.oncpu.folded" "main;inl_outer;inl_mid_[i];inl_leaf_[i]" "folded: the inlined functions as frames, _[i]"
	has "$tmp/inl.txt" "inl_outer (symbolize/inlchild.c:" "report: the top function with its line"
	if command -v go >/dev/null; then
		raw=$(pprof_raw "$tmp/inl.pb.gz")
		# a Location with inlined Lines: go tool pprof -raw prints them on lines of their own
		grep -qE "inl_leaf .*inlchild.c:[0-9]+" <<<"$raw" && grep -qE "inl_mid .*inlchild.c:[0-9]+" <<<"$raw" \
			&& ok "go tool pprof: inl_leaf and inl_mid as inlined lines" || fail "go tool pprof -raw: $(grep -m5 inl_ <<<"$raw")"
	fi
	ctl report "$tmp/inl.hps" >/dev/null && ok "report of the saved .hps" || fail "report of $tmp/inl.hps"
	;;
python)
	py=/usr/bin/python3.11
	[ -x $py ] || skip "no $py (apt-get install python3.11)"
	id=$(readelf -n $py | awk '/Build ID/ { print $3 }')
	[ -r "/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug" ] \
		|| skip "no debug file for $py: python3.11-dbg not installed or of another version (apt-get install python3.11-dbg)"
	run_watched py $py -c 'import sys
print("ready", flush=True)
def work(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
while True:
    work(100000)'
	# the hottest functions are python3.11's own; none unresolved
	top=$(sed -n '/^  on-CPU /,/^  [a-z]/p' "$tmp/py.txt" | awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9.]+$/ { print $3; exit }')
	[ -n "$top" ] && ! grep -q 'python3.11+0x' <<<"$top" && ok "report: the top function is named: $top" \
		|| fail "report: top function '$top'"
	grep -qE '\((Python|Objects|Include|Modules)/[^)]*\.[ch]:[0-9]+\)' "$tmp/py.txt" \
		&& ok "report: python3.11's source files and lines" || fail "report: no source line of python3.11's"
	! grep -q 'no symbols .*python3.11' "$tmp/py.txt" && ok "report: no debug package asked for" \
		|| fail "report: asks for a debug package though python3.11-dbg is installed"
	resolved=$(grep -c 'python3.11+0x' "$tmp/py.oncpu.folded")
	total=$(wc -l <"$tmp/py.oncpu.folded")
	[ "$total" -gt 0 ] && ok "folded: $resolved of $total stacks with an unresolved python3.11 frame" || fail "no samples"
	# the unwinder's CFI: read with the mappings (python3.11's, libc's ...), counted in the snapshot
	cfi=$(tail -c +9 "$tmp/py.hps" | protoc --proto_path="$SRCDIR/proto" --decode=hostprof.Snapshot snapshot.proto |
		awk '/^  unwind \{/ { u = 1 } u && /cfi_files:/ { print $2; exit }')
	[ "${cfi:-0}" -ge 2 ] && ok "snapshot: the CFI of $cfi files held for unwinding" || fail "snapshot: symbol_stats.unwind.cfi_files '$cfi'"
	ctl status | grep -qE '^unwinding: [0-9]+ user stacks from CFI' && ok "status: the unwinder's counters" \
		|| fail "status: no unwinding line"
	# no frame pointers in python3.11: by CFI, the samples reach _start
	total=$(awk '{ n += $NF } END { print n + 0 }' "$tmp/py.oncpu.folded")
	start=$(grep -E '(^|;)_start;' "$tmp/py.oncpu.folded" | awk '{ n += $NF } END { print n + 0 }')
	[ $((start * 100)) -ge $((total * 80)) ] && ok "unwound from CFI: $start of $total samples down to _start" \
		|| fail "$start of $total samples down to _start: $(sort -t' ' -k2 -n -r "$tmp/py.oncpu.folded" | head -3)"
	;;
*)
	echo "stacks.sh: unknown $what" >&2
	exit 2
	;;
esac
finish
