#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The man pages render without a groff warning, and each documents what its program
# has: hostprofd(8) every flag of `hostprofd --help`, hostprofd.conf(5) every key of
# daemon/settings.c's keys[] and of a [trigger] section, hostprofctl(1) every command,
# option, format and exit status of `hostprofctl --help`.
. "$SRCDIR/tests/e2e/lib.sh"
command -v man >/dev/null || skip "no man (apt-get install man-db)"

# render PAGE: the page as text in $tmp/PAGE.txt, warnings fail
render() {
	local page=$SRCDIR/docs/$1 warn
	warn=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" 2>&1 >"$tmp/$1.txt")
	if [ -n "$warn" ]; then
		fail "$1: $warn"
	elif ! grep -q '^NAME' "$tmp/$1.txt" || [ "$(wc -l <"$tmp/$1.txt")" -lt 40 ]; then
		fail "$1 does not render: $(head -5 "$tmp/$1.txt")"
	else
		ok "$1 renders ($(wc -l <"$tmp/$1.txt") lines at 80 columns), no warning"
	fi
}

# documents PAGE WHAT WORD...: each WORD appears in the rendered PAGE
documents() {
	local page=$1 what=$2 missing='' w
	shift 2
	for w in "$@"; do grep -qF -- "$w" "$tmp/$page.txt" || missing+=" $w"; done
	[ -z "$missing" ] && ok "$page: every $what ($#)" || fail "$page lacks$missing"
}

render hostprofd.8
render hostprofd.conf.5
render hostprofctl.1

mapfile -t flags < <("$HOSTPROFD" --help | grep -oE -- '(^|[ [])--?[a-z][a-z-]*' | sed 's/^[ [ ]*//' | sort -u)
documents hostprofd.8 "flag of hostprofd --help" "${flags[@]}"
documents hostprofd.8 "section" SIGNALS "EXIT STATUS" TRIGGERS "ONE-SHOT MODE" FILES SIGHUP SIGTERM

mapfile -t keys < <(sed -nE 's/^[[:space:]]*\{ "([a-z_]+)", "[a-z-]+", OPT_.*/\1 =/p' "$SRCDIR/daemon/settings.c")
[ ${#keys[@]} -ge 17 ] || fail "cannot read the keys from daemon/settings.c"
documents hostprofd.conf.5 "key of keys[]" "${keys[@]}"
documents hostprofd.conf.5 "trigger key" "[trigger NAME]" "kind =" "threads =" "threshold =" "before =" "after =" "cooldown ="

mapfile -t commands < <("$HOSTPROFCTL" --help | sed -nE 's/^  ([a-z]+)( .*|$)/\1/p')
[ ${#commands[@]} -ge 8 ] || fail "cannot read the commands of hostprofctl --help: ${commands[*]}"
documents hostprofctl.1 "command" "${commands[@]}"
mapfile -t opts < <("$HOSTPROFCTL" --help | grep -oE -- '(^|[ [])--?[a-z][a-z-]*' | sed 's/^[ [ ]*//' | sort -u)
documents hostprofctl.1 "option of hostprofctl --help" "${opts[@]}"
documents hostprofctl.1 "format and file" perfetto .pftrace json .json folded .oncpu.folded .offcpu.folded \
	pprof .pb.gz svg .oncpu.svg .offcpu.svg report .txt report-json .report.json hps .hps all
documents hostprofctl.1 "exit status" "EXIT STATUS" "       0 " "       1 " "       2 " "       3 " "       4 " HOSTPROF_SOCKET
finish
