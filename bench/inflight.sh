#!/usr/bin/env bash
# bench/inflight.sh — what in-flight streams cost surge in memory (issue 15).
#
# Starts bench/sseserver with slow answers (10 tokens: the first after
# ANSWER/10, then one every ANSWER/10; 10 s per answer by default) and,
# for each N, runs the real
# `surge run` binary against it at N/SEND arrivals/s for SEND seconds, so
# that all N streams are open together from t = SEND s until the first
# answer ends (t ≈ ANSWER s). Meanwhile it reads VmRSS of the surge process
# (never the server's) from /proc/PID/status every 100 ms. Constant
# arrivals, 128-token prompts, no warmup, no calibration.
#
# Per N it prints: the most streams open at once (the server's GET /streams,
# read with each sample), surge's largest VmRSS while that many were open,
# VmHWM at the end (the whole process's peak, post-run analysis and reports
# included) and
#   KB per stream = (VmRSS all open − idle VmRSS) ÷ streams open
# (1 KB = 1,000 bytes)
# where idle is the same command with N = IDLE_N (a handful of streams).
#
# Environment (defaults in brackets):
#   NS        the numbers of concurrent streams   ["1000 10000 18000"]
#   SEND      seconds over which they are sent    [5]
#   ANSWER    length of each answer, seconds      [10]
#   IDLE_N    streams of the idle reference run   [10]
#   SURGE     the surge binary                    [built from this tree]
#   ADDR      server address (loopback)           [127.0.0.1:18090]
#   ARGS      extra flags of every surge run      [none; e.g. "--http-client go"]
#   GOGC, GOMEMLIMIT etc. pass through to surge.
#
# File descriptors: each stream is one connection, so surge and the server
# each need N + a few descriptors; `ulimit -n` bounds N (20,000 on the
# project's machines, where it cannot be raised: 18,000 is the largest N).
set -euo pipefail

NS=${NS:-"1000 10000 18000"}
SEND=${SEND:-5}
ANSWER=${ANSWER:-10}
IDLE_N=${IDLE_N:-10}
ADDR=${ADDR:-127.0.0.1:18090}

case "$ADDR" in
127.0.0.1:* | localhost:*) ;;
*) echo "inflight.sh: ADDR must be a loopback address, not $ADDR" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
tmp=$(mktemp -d /tmp/surge-inflight.XXXXXX)
server_pid=""
cleanup() {
	if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

(cd "$root" && go build -o "$tmp/" ./bench/sseserver)
if [[ -z "${SURGE:-}" ]]; then
	(cd "$root" && go build -o "$tmp/" ./cmd/surge)
	SURGE=$tmp/surge
fi

step=$(awk -v a="$ANSWER" 'BEGIN { if (a + 0 <= 0) exit 1; printf "%gs", a / 10 }') ||
	{ echo "inflight.sh: ANSWER must be a number of seconds, not $ANSWER" >&2; exit 2; }
"$tmp/sseserver" --addr "$ADDR" --tokens 10 --ttft "$step" --gap "$step" 2>"$tmp/server.log" &
server_pid=$!
wait_health "$ADDR" "$tmp/server.log"

kib() { awk -v k="$1" '$1 == k":" { print $2 }' "/proc/$2/status" 2>/dev/null || true; }

# wait_ports waits (up to 70 s) until no connection to the server is in
# TIME_WAIT: the previous run's closed connections hold ephemeral ports
# (32768–60999, one range per destination), and 18,000 new ones need them.
wait_ports() {
	local port=${ADDR##*:} i
	for i in $(seq 70); do
		(($(ss -Htan state time-wait "( dport = :$port )" | wc -l) == 0)) && return 0
		sleep 1
	done
}

# measure N prints "open-streams VmRSS-KiB VmHWM-KiB ok-count": the most
# streams the server had open at once (GET /streams) and surge's largest
# VmRSS while that many were open.
measure() {
	local n=$1 rate timeout out pid open=0 peak=0 hwm=0 v h st rc=0
	rate=$(awk -v n="$n" -v s="$SEND" 'BEGIN { printf "%.6g", n / s }')
	timeout=$(awk -v a="$ANSWER" 'BEGIN { printf "%ds", 2 * a + 30 }')
	out=$tmp/run-$n
	"$SURGE" run --target "http://$ADDR/v1" --model bench --arrival constant --rate "$rate" --duration "${SEND}s" \
		--warmup 0s --prompt-tokens 128 --output-tokens 10 --prompt-calibration off --max-in-flight $((n + 100)) \
		--ttft-deadline 5s --timeout "$timeout" --quiet -o "$out" --force ${ARGS:-} >"$tmp/surge-$n.log" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		st=$(curl -sf "http://$ADDR/streams" || echo 0)
		v=$(kib VmRSS "$pid")
		h=$(kib VmHWM "$pid")
		[[ -n "$h" ]] && hwm=$h
		if [[ -n "$v" ]]; then
			if ((st > open)); then
				open=$st peak=$v
			elif ((st == open && v > peak)); then
				peak=$v
			fi
		fi
		sleep 0.1
	done
	wait "$pid" || rc=$?
	if ((rc > 1)); then # 1: an SLO failed, which says nothing about memory
		echo "surge run failed (N=$n, exit $rc):" >&2
		tail -20 "$tmp/surge-$n.log" >&2
	fi
	ok=$(grep -c '"outcome":"ok"' "$out/requests.jsonl" 2>/dev/null || echo 0)
	others=$(grep -o '"outcome":"[a-z_]*"' "$out/requests.jsonl" 2>/dev/null | grep -v '"ok"' | sort | uniq -c |
		awk '{ sub(/.*:"/, "", $2); sub(/"/, "", $2); printf "%s%s %d", (NR > 1 ? ", " : ""), $2, $1 }')
	echo "$open $peak $hwm $ok ${others:--}"
}

echo "surge in-flight memory${ARGS:+ ($ARGS)}: $(go version | cut -d' ' -f3), $(nproc) CPUs, ulimit -n $(ulimit -n), answers ${ANSWER}s, sent over ${SEND}s; $(uptime)"
wait_ports
read -r idle_open idle idle_hwm idle_ok _ <<<"$(measure "$IDLE_N")"
echo "idle (N=$IDLE_N): VmRSS $idle KiB with $idle_open streams open, VmHWM $idle_hwm KiB, ok $idle_ok"
echo
echo "| streams | open at once | ok | other outcomes | VmRSS, all open | VmHWM (whole run) | KB per stream |"
echo "|---|---|---|---|---|---|---|"
for n in $NS; do
	wait_ports
	read -r open peak hwm ok others <<<"$(measure "$n")"
	awk -v n="$n" -v o="$open" -v ok="$ok" -v x="$others" -v p="$peak" -v h="$hwm" -v i="$idle" 'BEGIN {
		printf "| %d | %d | %d | %s | %.1f MiB | %.1f MiB | %.1f |\n", n, o, ok, x, p / 1024, h / 1024, (p - i) * 1.024 / o }'
done
