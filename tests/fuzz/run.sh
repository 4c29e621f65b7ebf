#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# tests/fuzz/run.sh TARGET SECONDS [BUILDDIR]
#
# Builds the fuzz targets (tests/fuzz/build.sh, into BUILDDIR, default build-fuzz/) and
# runs TARGET (fuzz-request, fuzz-hps, fuzz-config, fuzz-perfmap,
# fuzz-minidebug, fuzz-dwarf, fuzz-cfi, fuzz-learn) for SECONDS over its seed
# corpus tests/fuzz/corpus/TARGET/. New inputs go to BUILDDIR/corpus/TARGET/ (the seeds
# stay as they are), crashes to BUILDDIR/crashes/TARGET/, the log to BUILDDIR/TARGET.log.
#
# Prints one line: "TARGET: N execs in S s, corpus C" and, for a crash, the reason and
# the path of the input. Exits 0 when nothing crashed, 1 when something did or the build
# failed, 77 (skipped) when clang cannot build libFuzzer targets here.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
[ $# -ge 2 ] || { echo "usage: tests/fuzz/run.sh TARGET SECONDS [BUILDDIR]" >&2; exit 2; }
t=$1
secs=$2
B=${3:-$top/build-fuzz}
[ -d "$here/corpus/$t" ] || { echo "run.sh: no seed corpus $here/corpus/$t" >&2; exit 2; }

if ! why=$("$here/build.sh" --probe "$B"); then
	echo "SKIP: $why"
	exit 77
fi
"$here/build.sh" "$B" || exit 1
B=$(cd "$B" && pwd)
mkdir -p "$B/corpus/$t" "$B/crashes/$t"
log=$B/$t.log
# The same sanitizer settings however we are called (scripts/dev test --sanitize sets its
# own, with a log_path that would take the reports out of the log).
unset ASAN_OPTIONS LSAN_OPTIONS
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# -timeout: an input that takes 10 s is a hang; -malloc_limit_mb: one allocation that
# large is a bug (a length or count taken from the input); -rss_limit_mb: so is that much
# memory in all.
"$B/$t" -max_total_time="$secs" -runs=100000000 -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512 \
	-print_final_stats=1 -artifact_prefix="$B/crashes/$t/" "$B/corpus/$t" "$here/corpus/$t" >"$log" 2>&1
rc=$?

execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
corpus=$(ls "$B/corpus/$t" | wc -l)
artifact=$(sed -n 's/.*Test unit written to //p' "$log" | tail -1)
echo "$t: ${execs:-0} execs in $secs s, corpus $corpus (seeds $(ls "$here/corpus/$t" | wc -l)), log $log"
if [ $rc -ne 0 ] || [ -n "$artifact" ]; then
	reason=$(grep -m1 -E '^==[0-9]+==ERROR|runtime error:|check failed|^==[0-9]+== ERROR: libFuzzer' "$log")
	echo "$t: CRASH (exit $rc): ${reason:-see the log}"
	[ -n "$artifact" ] && echo "$t: input $artifact (reproduce: $B/$t $artifact)"
	grep -m12 -E '^ +#[0-9]+ ' "$log" | sed "s/^/$t:   /"
	exit 1
fi
exit 0
