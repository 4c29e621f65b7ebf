#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# docs/hostprofctl.bash-completion, sourced into this bash and driven as readline would:
# COMP_WORDS/COMP_CWORD set, _hostprofctl called, COMPREPLY read. A stub hostprofctl on
# PATH answers `status --json` and `snapshots --json` and logs its arguments, so no
# daemon is needed; with no jq on PATH, fetch completes to nothing, silently.
. "$SRCDIR/tests/e2e/lib.sh"
# shellcheck source=../../docs/hostprofctl.bash-completion
. "$SRCDIR/docs/hostprofctl.bash-completion"
complete -p hostprofctl | grep -q -- '-F _hostprofctl' && ok "complete -F _hostprofctl hostprofctl" || fail "not registered"
jq=$(command -v jq) || skip "no jq (apt-get install jq)"

mkdir -p "$tmp/bin" "$tmp/nojq" "$tmp/files/sub"
cat >"$tmp/bin/hostprofctl" <<STUB
#!/bin/bash
echo "\$*" >>"$tmp/stub.log"
case "\$*" in
*"snapshots --json") echo '{"dir":"/x","snapshots":[{"name":"20261129T101001Z-4242-acl_preempt"},{"name":"20261129T101500Z-4243-slow_ioctl"}]}' ;;
*"status --json") echo '{"processes":[{"pid":4242},{"pid":4243}]}' ;;
*) exit 3 ;;
esac
STUB
chmod +x "$tmp/bin/hostprofctl"
cp "$tmp/bin/hostprofctl" "$tmp/nojq/hostprofctl"
ln -s "$jq" "$tmp/bin/jq"
touch "$tmp/files/a.hps" "$tmp/files/b.hps" "$tmp/files/notes.txt"

# complete WORDS...: completes the last word (empty string: a new word); sets $got
complete_line() {
	COMP_WORDS=(hostprofctl "$@")
	COMP_CWORD=$#
	COMP_LINE="hostprofctl $*"
	COMP_POINT=${#COMP_LINE}
	COMPREPLY=()
	PATH=$comp_path _hostprofctl 2>"$tmp/stderr"
	[ -s "$tmp/stderr" ] && fail "stderr while completing '$*': $(cat "$tmp/stderr")"
	got=$(printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ')
	got=${got% }
}

# expect_completion WANT WORDS...: the sorted candidates are exactly WANT
expect_completion() {
	local want=$1
	shift
	complete_line "$@"
	[ "$got" = "$want" ] && ok "hostprofctl $*<TAB>: $want" || fail "hostprofctl $*<TAB>: got '$got', want '$want'"
}

formats='all folded hps json perfetto pprof report report-json svg'
comp_path=$tmp/bin:$PATH # the PATH the completion runs with
expect_completion "export fetch merge metrics report snapshot snapshots status unwatch watch" ""
expect_completion "snapshot snapshots" sn
expect_completion "--help --json --socket --version" --
expect_completion "status" --socket /run/x.sock st
expect_completion "--at --format --job --json --output --pid --rank --socket --window" snapshot --
expect_completion "--json --pid --socket --thread" unwatch --
expect_completion "--format" snapshot --pid 1 --window 5s --f
expect_completion "$formats" snapshot --pid 1 --format ""
expect_completion "perfetto,json" snapshot --pid 1 --format perfetto,js
expect_completion "hps,report hps,report-json" export a.hps --format hps,rep
expect_completion "svg" export a.hps --format = sv
expect_completion "4242 4243" snapshot --pid ""
expect_completion "4243" unwatch --pid 4243
complete_line watch --pid ""
grep -qw "$$" <<<"$got" && ok "watch --pid offers every process (this shell, $$, too)" || fail "watch --pid: $got"
expect_completion "20261129T101001Z-4242-acl_preempt 20261129T101500Z-4243-slow_ioctl" fetch ""
expect_completion "20261129T101500Z-4243-slow_ioctl" --socket "$tmp/s" fetch 20261129T1015
tail -1 "$tmp/stub.log" | grep -qx -- "--socket $tmp/s snapshots --json" && ok "fetch asks the daemon on the --socket given" ||
	fail "the stub was run with: $(tail -1 "$tmp/stub.log")"
expect_completion "--format --json --output --socket" fetch 20261129T101001Z-4242-acl_preempt --
expect_completion "" fetch 20261129T101001Z-4242-acl_preempt ""
cd "$tmp/files" || exit 1
expect_completion "a.hps b.hps sub" report ""
expect_completion "a.hps b.hps sub" export ""
expect_completion "notes.txt" export a.hps -o no
expect_completion "a.hps b.hps sub" report a.hps "" # report and merge take many
expect_completion "a.hps b.hps sub" merge a.hps ""
expect_completion "" export a.hps ""

comp_path=$tmp/nojq # the stub, and no jq
: >"$tmp/stub.log"
expect_completion "" fetch ""
tail -1 "$tmp/stub.log" | grep -q snapshots && fail "ran hostprofctl without jq to read it" || ok "without jq, fetch does not ask"
finish
