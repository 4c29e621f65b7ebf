#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The units as `meson install` installs them pass `systemd-analyze verify`: directives,
# dependencies (Requires=hostprofd.socket, Service=), ExecStart= and the man pages that
# Documentation= names. verify refuses an ExecStart= under a destdir that does not exist
# on this host, so it checks a copy whose ExecStart= is the built hostprofd; the installed
# one must name $SBINDIR/hostprofd. Then the installed sysusers.d and tmpfiles.d files are
# applied to an empty root (as root only: they make root-owned directories).
. "$SRCDIR/tests/e2e/lib.sh"
command -v systemd-analyze >/dev/null || skip "no systemd-analyze (apt-get install systemd)"
command -v meson >/dev/null || skip "no meson in PATH"

dest=$tmp/dest
meson install -C "$BUILDDIR" --destdir "$dest" --no-rebuild --quiet >"$tmp/install.log" 2>&1 ||
	{ fail "meson install: $(cat "$tmp/install.log")"; finish; }
service=$(find "$dest" -name hostprofd.service -type f)
socket=$(find "$dest" -name hostprofd.socket -type f)
[ -f "$service" ] && [ -f "$socket" ] || { fail "units not installed: '$service' '$socket'"; finish; }

grep -qx "ExecStart=$SBINDIR/hostprofd" "$service" && ok "installed ExecStart=$SBINDIR/hostprofd" ||
	fail "installed ExecStart: $(grep ExecStart= "$service")"
grep -q '@[a-z]*@' "$service" && fail "unsubstituted: $(grep '@[a-z]*@' "$service")" || ok "nothing left to substitute"

mkdir "$tmp/units"
sed "s|^ExecStart=.*|ExecStart=$HOSTPROFD|" "$service" >"$tmp/units/hostprofd.service"
cp "$socket" "$tmp/units/hostprofd.socket"
# Documentation=man:...: verify runs man(1); point it at the installed pages
man_opt=()
if command -v man >/dev/null; then
	export MANPATH=$dest$MANDIR
else
	man_opt=(--man=no)
	echo "note: no man(1), Documentation= not checked"
fi
out=$(cd "$tmp/units" && systemd-analyze verify "${man_opt[@]}" ./hostprofd.socket ./hostprofd.service 2>&1) && rc=0 || rc=$?
if [ "$rc" = 0 ] && [ -z "$out" ]; then
	ok "systemd-analyze verify hostprofd.socket hostprofd.service: clean"
else
	fail "systemd-analyze verify (exit $rc): $out"
fi

if [ "$(id -u)" = 0 ]; then
	root=$tmp/root
	mkdir -p "$root/etc"
	sysusers=$(find "$dest" -path '*/sysusers.d/hostprof.conf')
	tmpfiles=$(find "$dest" -path '*/tmpfiles.d/hostprof.conf')
	if systemd-sysusers --root="$root" "$sysusers" >"$tmp/sysusers.log" 2>&1 && grep -q '^hostprof:x:' "$root/etc/group"; then
		ok "systemd-sysusers makes group hostprof"
	else
		fail "systemd-sysusers: $(cat "$tmp/sysusers.log")"
	fi
	if systemd-tmpfiles --root="$root" --create "$tmpfiles" >"$tmp/tmpfiles.log" 2>&1; then
		modes=$(cd "$root" && stat -c '%n %a %U' run/hostprof var/lib/hostprof var/lib/hostprof/snapshots 2>&1 | tr '\n' ';')
		[ "$modes" = "run/hostprof 755 root;var/lib/hostprof 700 root;var/lib/hostprof/snapshots 700 root;" ] &&
			ok "systemd-tmpfiles: $modes" || fail "systemd-tmpfiles made: $modes"
	else
		fail "systemd-tmpfiles: $(cat "$tmp/tmpfiles.log")"
	fi
else
	echo "note: not root, sysusers.d and tmpfiles.d not applied"
fi
finish
