#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# systemd/hostprofd.conf.example documents every key of daemon/settings.c's keys[] table
# and a [trigger NAME] section with every trigger key, and, uncommented, is a config the
# daemon accepts. The settings are the commented "#key = value" lines (a blank after the
# '#' is allowed too) and the "#[trigger NAME]" line. hostprofd reads its config before it
# checks that it runs as root, so run as nobody it must stop with "must run as root"
# (exit 2) and not with an error about the file; a file with one bad key shows that the
# file is indeed read first.
. "$SRCDIR/tests/e2e/lib.sh"
example=$SRCDIR/systemd/hostprofd.conf.example
run_as=()
if [ "$(id -u)" = 0 ]; then
	command -v setpriv >/dev/null || skip "no setpriv (apt-get install util-linux)"
	id nobody >/dev/null 2>&1 || skip "no user nobody"
	run_as=(setpriv --reuid=nobody --regid="$(id -gn nobody)" --clear-groups)
fi

# readable by nobody: the binary and the config in a directory of their own
chmod 711 "$tmp"
mkdir -m 755 "$tmp/pub"
cp "$HOSTPROFD" "$tmp/pub/hostprofd"
conf=$tmp/pub/example.conf
sed -nE 's/^#[[:space:]]?(\[trigger [A-Za-z0-9_-]+\]|[a-z_]+[[:space:]]*=.*)$/\1/p' "$example" >"$conf"
chmod 644 "$conf"
echo "uncommented:"
sed 's/^/  /' "$conf"

keys=$(sed -nE 's/^[[:space:]]*\{ "([a-z_]+)", "[a-z-]+", OPT_.*/\1/p' "$SRCDIR/daemon/settings.c")
[ "$(wc -w <<<"$keys")" -ge 17 ] || { fail "cannot read the keys from daemon/settings.c: $keys"; finish; }
missing=
for k in $keys; do grep -qE "^${k}[[:space:]]*=" "$conf" || missing+=" $k"; done
[ -z "$missing" ] && ok "every key of keys[] ($(wc -w <<<"$keys")) is in the example" || fail "not in the example:$missing"
section=$(sed -n '/^\[trigger /,$p' "$conf")
missing=
for k in kind threads threshold before after cooldown; do grep -qE "^${k}[[:space:]]*=" <<<"$section" || missing+=" $k"; done
[ -n "$section" ] && [ -z "$missing" ] && ok "a [trigger] section with kind, threads, threshold, before, after, cooldown" ||
	fail "trigger section: '${section}', missing:$missing"

out=$("${run_as[@]}" "$tmp/pub/hostprofd" --config "$conf" 2>&1) && rc=0 || rc=$?
who=$(id -un)
[ ${#run_as[@]} -gt 0 ] && who=nobody
[ "$rc" = 2 ] && grep -q "must run as root" <<<"$out" && ok "as $who: exit 2, must run as root" ||
	fail "exit $rc: $out"
grep -q -e "$conf" -e "config" <<<"$out" && fail "a config error: $out" || ok "no complaint about the file"

sed -i '1i bogus_key = 1' "$conf" # before the [trigger] section
out=$("${run_as[@]}" "$tmp/pub/hostprofd" --config "$conf" 2>&1) && rc=0 || rc=$?
[ "$rc" = 2 ] && grep -q "$conf: unknown key 'bogus_key'" <<<"$out" && ok "control: a bad key is reported before the root check" ||
	fail "control: exit $rc: $out"
finish
