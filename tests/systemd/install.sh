#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# `meson install --destdir` puts every file where it belongs, and nothing outside the
# prefix and sysconfdir. The unit, sysusers.d and tmpfiles.d directories follow
# systemd/meson.build: systemd.pc's for --prefix=/usr, else PREFIX/lib/...; for /usr and
# /usr/local the unit directory must be one systemd searches (systemd-analyze unit-paths).
. "$SRCDIR/tests/e2e/lib.sh"
command -v meson >/dev/null || skip "no meson in PATH"

dest=$tmp/dest
meson install -C "$BUILDDIR" --destdir "$dest" --no-rebuild --quiet >"$tmp/install.log" 2>&1 ||
	{ fail "meson install: $(cat "$tmp/install.log")"; finish; }

unitdir=$PREFIX/lib/systemd/system
sysusersdir=$PREFIX/lib/sysusers.d
tmpfilesdir=$PREFIX/lib/tmpfiles.d
if [ "$PREFIX" = /usr ] && pkg-config --exists systemd 2>/dev/null; then
	unitdir=$(pkg-config --variable=systemdsystemunitdir systemd)
	sysusersdir=$(pkg-config --variable=sysusersdir systemd)
	tmpfilesdir=$(pkg-config --variable=tmpfilesdir systemd)
fi

# expect PATH MODE [SOURCE]: installed at PATH with MODE, and a copy of SOURCE if given
expect() {
	local path=$dest$1 mode=$2 src=${3:-}
	if [ ! -f "$path" ]; then
		fail "not installed: $1 (installed: $(cd "$dest" && find . -type f | sort | tr '\n' ' '))"
		return
	fi
	[ "$(stat -c %a "$path")" = "$mode" ] || { fail "$1: mode $(stat -c %a "$path"), want $mode"; return; }
	[ -z "$src" ] || cmp -s "$src" "$path" || { fail "$1 differs from $src"; return; }
	ok "$1 ($mode)"
}
expect "$SBINDIR/hostprofd" 755
expect "$BINDIR/hostprofctl" 755
expect "$unitdir/hostprofd.service" 644
expect "$unitdir/hostprofd.socket" 644 "$SRCDIR/systemd/hostprofd.socket"
expect "$sysusersdir/hostprof.conf" 644 "$SRCDIR/systemd/hostprof.sysusers"
expect "$tmpfilesdir/hostprof.conf" 644 "$SRCDIR/systemd/hostprof.tmpfiles"
expect "$SYSCONFDIR/hostprof/hostprofd.conf.example" 644 "$SRCDIR/systemd/hostprofd.conf.example"
expect "$MANDIR/man8/hostprofd.8" 644 "$SRCDIR/docs/hostprofd.8"
expect "$MANDIR/man5/hostprofd.conf.5" 644 "$SRCDIR/docs/hostprofd.conf.5"
expect "$MANDIR/man1/hostprofctl.1" 644 "$SRCDIR/docs/hostprofctl.1"
expect "$DATADIR/bash-completion/completions/hostprofctl" 644 "$SRCDIR/docs/hostprofctl.bash-completion"
[ -e "$dest$SYSCONFDIR/hostprof/hostprofd.conf" ] && fail "an installed hostprofd.conf would overwrite the admin's" ||
	ok "no hostprofd.conf installed, only the example"
grep -qx "ExecStart=$SBINDIR/hostprofd" "$dest$unitdir/hostprofd.service" && ok "ExecStart=$SBINDIR/hostprofd" ||
	fail "ExecStart: $(grep ExecStart= "$dest$unitdir/hostprofd.service")"

outside=$(cd "$dest" && find . -type f | sed 's/^\.//' | while read -r f; do
	case $f in "$PREFIX"/* | "$SYSCONFDIR"/* | "$unitdir"/* | "$sysusersdir"/* | "$tmpfilesdir"/*) ;; *) echo "$f" ;; esac
done)
[ -z "$outside" ] && ok "nothing installed outside $PREFIX and $SYSCONFDIR" || fail "installed outside: $outside"

case $PREFIX in
/usr | /usr/local)
	if command -v systemd-analyze >/dev/null; then
		systemd-analyze unit-paths 2>/dev/null | grep -qx "$unitdir" && ok "systemd searches $unitdir" ||
			fail "$unitdir is not on systemd's unit path: $(systemd-analyze unit-paths 2>&1 | tr '\n' ' ')"
	fi
	;;
esac
finish
