#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# check-deps.sh SRCDIR: every #include "..." in daemon/ and lib/ against the dependency
# rules of docs/ARCHITECTURE.md (its ```deps block). Prints each violation; exits 1 if any.
set -euo pipefail
top=${1:?usage: check-deps.sh SRCDIR}
rules=$top/docs/ARCHITECTURE.md
declare -A allow known
while IFS= read -r line; do
	case "$line" in "#"* | "") continue ;; esac
	mod=${line%%:*}
	allow[$mod]=" ${line#*:} "
	known[$mod]=1
done < <(sed -n '/^```deps$/,/^```$/p' "$rules" | sed '1d;$d')
[ ${#known[@]} -gt 0 ] || { echo "check-deps: no \`\`\`deps block in $rules"; exit 1; }
top_layer=" main reload record daemon "
lib_headers=" $(cd "$top/lib" && ls *.h | sed 's/\.h$//' | tr '\n' ' ') "
bad=0

check() { # file module header
	local f=$1 mod=$2 h=${3##*/} base
	base=${h%.h}
	case "$h" in
	*.pb-c.h | syscall_names.h) return 0 ;;
	esac
	[ "$base" = "$mod" ] && return 0
	[[ "$top_layer" == *" $mod "* ]] && return 0
	if [[ "$lib_headers" == *" $base "* ]]; then
		return 0
	fi
	if [ "$base" = daemon ]; then
		echo "$f: includes daemon.h: only main.c, reload.c and record.c may"
		bad=1
		return 0
	fi
	if [ -z "${known[$mod]:-}" ]; then
		echo "$f: module '$mod' has no line in the deps block of docs/ARCHITECTURE.md"
		bad=1
		return 0
	fi
	if [[ "${allow[$mod]}" != *" $base "* ]]; then
		echo "$f: includes $h, which '$mod' may not (docs/ARCHITECTURE.md: $mod:${allow[$mod]})"
		bad=1
	fi
}

# daemon/NAME.c, daemon/NAME.h and daemon/NAME/*.c are module NAME
while IFS= read -r f; do
	rel=${f#"$top"/}
	case "$rel" in
	daemon/*/*) mod=${rel#daemon/}; mod=${mod%%/*} ;;
	*) mod=$(basename "$rel"); mod=${mod%.*} ;;
	esac
	while IFS= read -r h; do
		# a module's own private headers in its folder
		[ -f "$top/daemon/$mod/$h" ] && continue
		check "$rel" "$mod" "$h"
	done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
done < <(find "$top/daemon" -name '*.[ch]' | sort)

# lib/ is shared by the client: nothing of the daemon, nothing of the BPF side
daemon_headers=" $(cd "$top/daemon" && find . -name '*.h' | sed 's|.*/||; s/\.h$//' | tr '\n' ' ') hostprof hostprof.skel "
while IFS= read -r f; do
	rel=${f#"$top"/}
	while IFS= read -r h; do
		h=${h##*/} # "../bpf/hostprof.h" is hostprof.h
		base=${h%.h}
		[ -f "$top/lib/$h" ] && [ "$h" != hostprof.h ] && continue
		lmod=lib/$(basename "${rel%.*}")
		[[ -n "${allow[$lmod]:-}" && "${allow[$lmod]}" == *" $base "* ]] && continue
		if [[ "$daemon_headers" == *" $base "* ]]; then
			echo "$rel: includes $h: lib/ may include only lib/ and generated headers"
			bad=1
		fi
	done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
done < <(find "$top/lib" -name '*.[ch]' | sort)

[ $bad = 0 ] && echo "check-deps: every include follows docs/ARCHITECTURE.md"
exit $bad
