#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# e2e-metrics: the metrics as a cluster reads them, through Debian's own
# prometheus-node-exporter (only its textfile collector, reading the test's metrics_dir)
# and a prometheus server scraping it every second, both on loopback ports of their own:
#  - the file is written atomically (no temporary left), mode 0644, and promtool, an
#    independent parser, accepts it and `hostprofctl metrics` alike;
#  - a stall workload with RANK and SLURM_JOB_ID in its environment and RT preemptions
#    planted with SCHED_FIFO (tests/workloads/stall.c): Prometheus has its series with
#    those labels, its dispatch thread's preemptions and time lost to the RT task agree
#    with the workload's own count and clocks, and its events with `hostprofctl status`;
#  - hostile values (a newline, a quote, a backslash, an invalid UTF-8 byte, 10 KiB) in a
#    process's environment and name come out escaped and cut, as Prometheus reads them back;
#  - an exited process's series go when its history does.
. "$(dirname "$0")/lib.sh"
require_root
for t in prometheus prometheus-node-exporter promtool python3 curl; do
	command -v "$t" >/dev/null || skip "$t not found (Debian: prometheus, prometheus-node-exporter)"
done

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# prom_query EXPR: the instant vector as JSON lines, {"labels": {...}, "value": "..."}
prom_query() {
	python3 - "$prom_port" "$1" <<'EOF'
import json, sys, urllib.parse, urllib.request
url = "http://127.0.0.1:%s/api/v1/query?query=%s" % (sys.argv[1], urllib.parse.quote(sys.argv[2]))
with urllib.request.urlopen(url, timeout=5) as r:
    d = json.load(r)
assert d["status"] == "success", d
for s in d["data"]["result"]:
    print(json.dumps({"labels": s["metric"], "value": s["value"][1]}))
EOF
}

# prom_value EXPR: the value of its only sample, "" when it has none
prom_value() {
	prom_query "$1" | python3 -c 'import json, sys; v = [json.loads(l)["value"] for l in sys.stdin]; print(v[0] if len(v) == 1 else "")'
}

textdir=$tmp/textfile
mkdir -m 0755 "$textdir"
ne_port=$(free_port)
prom_port=$(free_port)
while [ "$prom_port" = "$ne_port" ]; do prom_port=$(free_port); done

# --- node_exporter and prometheus, as the test's own ---
prometheus-node-exporter --web.listen-address="127.0.0.1:$ne_port" --collector.disable-defaults \
	--collector.textfile --collector.textfile.directory="$textdir" >"$tmp/ne.log" 2>&1 &
bg_pids+=("$!")
cat >"$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: node
    static_configs:
      - targets: ['127.0.0.1:$ne_port']
EOF
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb" \
	--web.listen-address="127.0.0.1:$prom_port" >"$tmp/prom.log" 2>&1 &
bg_pids+=("$!")
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$prom_port/-/ready" >/dev/null && curl -sf "http://127.0.0.1:$ne_port/metrics" >/dev/null && break
	sleep 0.1
done
curl -sf "http://127.0.0.1:$prom_port/-/ready" >/dev/null || { fail "prometheus did not start: $(tail -5 "$tmp/prom.log")"; finish; }
curl -sf "http://127.0.0.1:$ne_port/metrics" >/dev/null || { fail "node_exporter did not start: $(tail -5 "$tmp/ne.log")"; finish; }
ok "node_exporter on 127.0.0.1:$ne_port, prometheus on 127.0.0.1:$prom_port"

# --- hostprofd writing into the textfile directory ---
mkdir -m 0700 "$tmp/snaps"
start_daemon --metrics-dir "$textdir" --metrics-interval 1s --window 15s --watch-thread none \
	--snapshot-dir "$tmp/snaps" --trigger 'rt:preempt:acl_thread:5ms'

# the stall workload: an RT hog takes acl_thread's CPU for 20 ms every 250 ms
RANK=2 LOCAL_RANK=0 WORLD_SIZE=8 SLURM_JOB_ID=4711 run_stall --cpu 1 --duration 3 --period-ms 250 --burst-ms 20 \
	--start-delay-ms 600
expect_rc 0 "watch the stall workload" -- ctl watch --pid "$trainer"

# a hostile process: its name and environment hold a newline, a quote, a backslash, an
# invalid UTF-8 byte, and a job id of 10 KiB
long_job='j"'$'\n'$(head -c 10237 /dev/zero | tr '\0' 'A')
RANK=$'7\n"\\\xff' SLURM_JOB_ID="$long_job" perl -e 'open(my $f, ">", "/proc/self/comm") or die;
	syswrite($f, "ev\"\n\\x"); close($f); sleep 300' &
hostile=$!
bg_pids+=("$hostile")
for _ in $(seq 50); do grep -q '^ev' "/proc/$hostile/comm" 2>/dev/null && break; sleep 0.05; done
# in a cgroup named as docker names a container's, where cgroup v2 lets the test make one
cid=4e1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5061728394a5b6c7d8e9f
cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
cg=
if [ -n "$cg2" ] && mkdir -p "$cg2/hostprof-e2e-$$/docker-$cid.scope" 2>/dev/null &&
	echo "$hostile" >"$cg2/hostprof-e2e-$$/docker-$cid.scope/cgroup.procs" 2>/dev/null; then
	cg=$cg2/hostprof-e2e-$$
else
	echo "note: no cgroup v2 to put the hostile process in: its container label is not checked"
	rmdir "$cg2/hostprof-e2e-$$/docker-$cid.scope" "$cg2/hostprof-e2e-$$" 2>/dev/null
fi
cleanup_cgroup() { [ -n "$cg" ] && rmdir "$cg/docker-$cid.scope" "$cg" 2>/dev/null; true; }
trap 'cleanup; cleanup_cgroup' EXIT
expect_rc 0 "watch the hostile process" -- ctl watch --pid "$hostile"

wait "$stall_pid" && rc=0 || rc=$?
[ $rc = 77 ] && skip "$(cat "$tmp/stall.err")"
[ $rc = 0 ] || fail "stall exited $rc: $(cat "$tmp/stall.err")"

# --- the file ---
sleep 2.5
# the trainer's whole history as the report sees it, and the counters, both final now
expect_rc 0 "snapshot of the trainer's history, as a JSON report" -- \
	ctl snapshot --pid "$trainer" --format report-json -o "$tmp/trainer.report.json"
ctl metrics >"$tmp/final.prom"
f=$textdir/hostprofd.prom
[ -f "$f" ] && ok "hostprofd.prom is there" || { fail "no $f: $(ls -la "$textdir"; cat "$tmp/daemon.log")"; finish; }
[ "$(stat -c %a "$f")" = 644 ] && ok "mode 0644, readable by node_exporter's user" || fail "mode $(stat -c %a "$f")"
ls "$textdir" | grep -qv '^hostprofd\.prom$' && fail "something else left: $(ls "$textdir")" || ok "no temporary file left"
out=$(promtool check metrics <"$f" 2>&1) && ok "promtool accepts the file" || fail "promtool: $out"
ctl metrics >"$tmp/ctl.prom" && ok "hostprofctl metrics answers" || fail "hostprofctl metrics failed"
out=$(promtool check metrics <"$tmp/ctl.prom" 2>&1) && ok "promtool accepts hostprofctl metrics" || fail "promtool: $out"
diff <(grep -v '^#' "$f" | sed 's/[{ ].*//' | sort -u) <(grep -v '^#' "$tmp/ctl.prom" | sed 's/[{ ].*//' | sort -u) >/dev/null \
	&& ok "hostprofctl metrics has the file's metric names" || fail "names differ from the file's"
grep -q 'cause="gil"' "$f" && fail "a GIL series without a GIL measure" || ok "no GIL series (not measured yet)"
grep -q 'cause="fault"' "$f" && fail "a fault-time series, not measured live" || ok "no unmeasured fault-time series"

# --- what Prometheus has ---
sel="rank=\"2\",job_id=\"4711\",local_rank=\"0\",world_size=\"8\",pid=\"$trainer\",comm=\"trainer\""
th="$sel,tid=\"$acl\",thread=\"acl_thread\""
# first `hostprofctl status`, then Prometheus, until they agree: the trainer has exited,
# its counts are final once the last file with them is scraped
agree=
for _ in $(seq 40); do
	st=$(ctl status --json)
	want=$(jq -r --arg p "$trainer" '.processes[] | select(.pid == ($p | tonumber)) | "\(.events) \(.rank) \(.job) \(.exited)"' <<<"$st")
	got="$(prom_value "hostprof_process_events_total{$sel}") 2 4711 true"
	[ "$want" = "$got" ] && { agree=1; break; }
	sleep 0.2
done
[ -n "$agree" ] && ok "Prometheus has the trainer with its labels, and agrees with status: events, rank, job ($got)" \
	|| fail "status '$want', Prometheus '$got': $(prom_query 'hostprof_process_events_total')"
fired=$(jq -r '.triggers[] | select(.name == "rt") | .fired' <<<"$st")

# every value the checks need, in one go (the process's series go with its history)
python3 - "$prom_port" "$sel" "$th" >"$tmp/q.txt" <<'EOF2'
import json, sys, urllib.parse, urllib.request
port, sel, th = sys.argv[1:]
def q(expr):
    url = "http://127.0.0.1:%s/api/v1/query?query=%s" % (port, urllib.parse.quote(expr))
    d = json.load(urllib.request.urlopen(url, timeout=5))
    return d["data"]["result"]
def one(expr):
    r = q(expr)
    return r[0]["value"][1] if len(r) == 1 else ""
out = {
    "preempt": one("hostprof_thread_preemptions_total{%s}" % th),
    "rt": one('hostprof_thread_lost_seconds_total{%s,cause="rt"}' % th),
    "causes": str(len(q("hostprof_thread_lost_seconds_total{%s}" % th))),
    "rq": one("hostprof_thread_runqueue_latency_seconds_count{%s}" % th),
    "rqinf": one('hostprof_thread_runqueue_latency_seconds_bucket{%s,le="+Inf"}' % th),
    "p95": one("histogram_quantile(0.95, hostprof_thread_runqueue_latency_seconds_bucket{%s})" % th),
    "psum": one("sum(hostprof_thread_preemptions_total{%s})" % sel),
    "pproc": one("hostprof_process_preemptions_total{%s}" % sel),
    "lost_thread": one("sum(hostprof_thread_lost_seconds_total{%s})" % th),
    "fired": one('hostprof_trigger_fired_total{trigger="rt",kind="preempt"}'),
    "exported": str(sum(1 for s in q('{__name__=~"hostprof_.*"}') for k in s["metric"] if k.startswith("exported_"))),
}
for m in ["hostprof_daemon_cpu_seconds_total", "hostprof_daemon_resident_bytes", "hostprof_drops_total",
          "hostprof_recorder_bytes", "hostprof_snapshots_saved_total", "hostprof_metrics_write_cpu_seconds_total"]:
    out["has_" + m] = str(len(q(m)))
for k, v in out.items():
    print("%s=%s" % (k, v))
EOF2
cat "$tmp/q.txt"
v() { sed -n "s/^$1=//p" "$tmp/q.txt"; }
[ "$(v exported)" = 0 ] && ok "no label clashes with Prometheus' own (job, instance)" || fail "$(v exported) labels exported_*"
bursts=$(grep -c '^burst ' "$tmp/stall.out")
burst_s=$(awk '/^burst /{s += $3 - $2} END {printf "%.6f", s / 1e9}' "$tmp/stall.out")
gap_s=$(awk '/^gap /{s += $3 - $2} END {printf "%.6f", s / 1e9}' "$tmp/stall.out")
preempt=$(v preempt)
rt=$(v rt)
echo "workload: $bursts bursts, $burst_s s of them, acl_thread saw $gap_s s of gaps; metrics: $preempt preemptions, $rt s lost to RT"
[ -n "$preempt" ] && [ "$preempt" -ge "$bursts" ] && ok "acl_thread's preemptions ($preempt) cover the $bursts bursts" \
	|| fail "preemptions '$preempt' < bursts $bursts"
python3 -c "import sys; rt, b, g = map(float, sys.argv[1:]); sys.exit(not (0.7 * b <= rt <= g + 0.05))" "${rt:-0}" "$burst_s" "$gap_s" \
	&& ok "time lost to RT ($rt s) is the hog's bursts ($burst_s s), within what acl_thread saw ($gap_s s)" \
	|| fail "time lost to RT '$rt' s against bursts $burst_s s, gaps $gap_s s"
[ "$(v causes)" -ge 7 ] && ok "acl_thread has $(v causes) causes" || fail "acl_thread has $(v causes) cause series"
[ -n "$(v rq)" ] && [ "$(v rq)" = "$(v rqinf)" ] && [ "$(v rq)" -ge "$bursts" ] && ok "runqueue latency histogram: $(v rq) switch-ins" \
	|| fail "runqueue histogram: count '$(v rq)', +Inf '$(v rqinf)'"
[ -n "$(v p95)" ] && ok "histogram_quantile works on it: p95 $(v p95) s" || fail "no quantile"
[ -n "$fired" ] && [ "$fired" = "$(v fired)" ] && [ "$fired" -ge 1 ] && ok "trigger rt fired $fired times, in both" \
	|| fail "trigger fired: status '$fired', Prometheus '$(v fired)'"
python3 -c "import sys; sys.exit(not float(sys.argv[1]) <= float(sys.argv[2]))" "$(v psum)" "$(v pproc)" \
	&& ok "the process's preemptions ($(v pproc)) include its dispatch thread's ($(v psum))" || fail "process $(v pproc) < thread $(v psum)"
# the causes do not overlap: what acl_thread lost is no more than the time it lived
spun_s=$(awk '/^acl_thread spun /{printf "%.6f", ($4 - $3) / 1e9}' "$tmp/stall.out")
python3 -c "import sys; sys.exit(not 0 < float(sys.argv[1]) <= float(sys.argv[2]) + 0.1)" "$(v lost_thread)" "${spun_s:-0}" \
	&& ok "acl_thread lost $(v lost_thread) s in all, of the $spun_s s it ran its loop" \
	|| fail "acl_thread lost '$(v lost_thread)' s, more than the $spun_s s it lived"
for m in hostprof_daemon_cpu_seconds_total hostprof_daemon_resident_bytes hostprof_drops_total hostprof_recorder_bytes \
	hostprof_snapshots_saved_total hostprof_metrics_write_cpu_seconds_total; do
	[ "$(v "has_$m")" -ge 1 ] && ok "Prometheus has $m" || fail "no $m"
done

# --- the same records, as the report counts them ---
metric() { # NAME LABELS: its value in the final text
	grep -F "$1{$2" "$tmp/final.prom" | head -1 | awk '{ print $NF }'
}
rep=$(jq -c --argjson t "$acl" '.threads[] | select(.tid == $t) |
	{p: .preemptions.count, s: .runqueue_latency.switch_ins,
	 rt: ([.time.causes[] | select(.cause == "rt") | .time_ns] | add // 0)}' "$tmp/trainer.report.json")
mp=$(metric hostprof_thread_preemptions_total "pid=\"$trainer\"")
ms=$(metric hostprof_thread_runqueue_latency_seconds_count "pid=\"$trainer\"")
mrt=$(grep -F "hostprof_thread_lost_seconds_total{pid=\"$trainer\"" "$tmp/final.prom" | grep -F 'cause="rt"' | awk '{ print $NF }')
echo "report: $rep; counters: preemptions $mp, switch-ins $ms, rt $mrt s"
echo "acl_thread's time by cause (ms), the report's and the counters' (they differ where README, Metrics, says):"
jq -r --argjson t "$acl" '.threads[] | select(.tid == $t) | .time.causes[] | "\(.cause) \(.time_ns)"' "$tmp/trainer.report.json" |
	while read -r c ns; do
		m=$(grep -F "hostprof_thread_lost_seconds_total{pid=\"$trainer\"" "$tmp/final.prom" | grep -F "cause=\"$c\"" | awk '{ print $NF }')
		printf '  %-10s %10.3f %10s\n' "$c" "$(awk -v n="$ns" 'BEGIN { print n / 1e6 }')" \
			"$([ -n "$m" ] && awk -v s="$m" 'BEGIN { printf "%.3f", s * 1e3 }' || echo -)"
	done
[ -n "$mp" ] && [ "$(jq -r .p <<<"$rep")" = "$mp" ] && ok "preemptions: the report's count ($mp)" \
	|| fail "preemptions: report $(jq -r .p <<<"$rep"), counters '$mp'"
# one switch-in apart at times on a loaded machine (CI once, 2 runs of 4 beside a CI run):
# not explained yet, said in the README; more is a failure
rs=$(jq -r .s <<<"$rep")
[ -n "$ms" ] && [ $((rs - ms)) -ge -1 ] && [ $((rs - ms)) -le 1 ] \
	&& ok "runqueue latency: the report's switch-ins ($rs), the counters' ($ms)" \
	|| fail "switch-ins: report $rs, counters '$ms'"
python3 -c "import sys; r, m = float(sys.argv[1]) / 1e9, float(sys.argv[2]); sys.exit(not abs(r - m) <= 0.1 * r + 0.005)" \
	"$(jq -r .rt <<<"$rep")" "${mrt:-0}" \
	&& ok "time lost to RT: the report's ($(jq -r .rt <<<"$rep") ns), counted live ($mrt s)" \
	|| fail "time lost to RT: report $(jq -r .rt <<<"$rep") ns, counters '$mrt' s"

# every cause both count: the same records, classified alike (the report's extra causes,
# GIL and fault time, are not counted live; "running" and "unknown" are no loss)
python3 - "$tmp/trainer.report.json" "$tmp/final.prom" "$acl" "$trainer" <<'EOF2' \
	&& ok "every cause of acl_thread within 10% + 5 ms of the report's" || fail "the causes differ from the report's, see above"
import json, re, sys
rep = json.load(open(sys.argv[1]))
t = [x for x in rep["threads"] if x["tid"] == int(sys.argv[3])][0]
want = {c["cause"]: c["time_ns"] / 1e9 for c in t["time"]["causes"] if c["lost"] and c["cause"] not in ("gil", "fault")}
got = {}
for line in open(sys.argv[2]):
    m = re.match(r'hostprof_thread_lost_seconds_total\{pid="%s",.*cause="([a-z]+)"\} (\S+)$' % sys.argv[4], line)
    if m:
        got[m.group(1)] = float(m.group(2))
bad = [(c, want.get(c, 0), got.get(c, 0)) for c in set(want) | set(got)
       if abs(want.get(c, 0) - got.get(c, 0)) > 0.1 * want.get(c, 0) + 0.005]
if bad or not got:
    sys.exit("cause, report s, counters s: %r (counters: %r)" % (bad, got))
EOF2

# --- the hostile process, as Prometheus reads it back ---
python3 - "$prom_port" "$hostile" "${cg:+${cid:0:12}}" <<'EOF' && ok "hostile values: escaped, cut, read back as planted${cg:+; container from its cgroup}" || fail "hostile values, see above"
import json, sys, urllib.parse, urllib.request
q = 'hostprof_process_events_total{pid="%s"}' % sys.argv[2]
url = "http://127.0.0.1:%s/api/v1/query?query=%s" % (sys.argv[1], urllib.parse.quote(q))
res = json.load(urllib.request.urlopen(url, timeout=5))["data"]["result"]
if len(res) != 1:
    sys.exit("want one series of the hostile process, got %r" % res)
l = res[0]["metric"]
want = {
    "comm": 'ev"\n\\x',                    # its name, as it set it
    "rank": '7\n"\\?',                     # RANK: the invalid byte is a '?'
    "job_id": 'j"\n' + "A" * 60,            # 10 KiB cut to 63 bytes (the recorder's field)
}
if sys.argv[3]:
    want["container"] = sys.argv[3]          # docker-<id>.scope: the id's first 12 digits
bad = {k: (l.get(k), v) for k, v in want.items() if l.get(k) != v}
if bad:
    sys.exit("label: (got, want): %r" % bad)
EOF
grep -c "pid=\"$hostile\"" "$f" | grep -qv '^0$' && ok "its series are in the file" || fail "no series of the hostile process"

# --- an exited process's series go with its history (window 15 s) ---
kill "$hostile"
wait "$hostile" 2>/dev/null
cleanup_cgroup
gone=
for _ in $(seq 150); do
	if ! grep -q "pid=\"$hostile\"" "$f" && ! grep -q "pid=\"$trainer\"" "$f"; then gone=1; break; fi
	sleep 0.2
done
[ -n "$gone" ] && ok "the exited processes' series are gone from the file" || fail "series of exited processes remain"
ctl status --json | jq -e --arg p "$trainer" '[.processes[] | select(.pid == ($p | tonumber))] | length == 0' >/dev/null \
	&& ok "and from status" || fail "status still lists the trainer"
cost=$(grep '^hostprof_metrics_write_cpu_seconds_total' "$f" | cut -d' ' -f2)
writes=$(grep '^hostprof_metrics_writes_total' "$f" | cut -d' ' -f2)
echo "daemon cost of the metrics file: $cost s of CPU over $writes writes"
stop_daemon
finish
