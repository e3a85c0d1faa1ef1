#!/usr/bin/env bash
# bench/starved.sh — surge's self-accuracy section on a client starved on
# purpose (issue 31): the real `surge run` against bench/sseserver (TTFT
# 50 ms exactly, 64 chunks 5 ms apart), once with surge's core to itself
# and once sharing it with a busy loop, and prints each run's
# self-accuracy line beside its TTFT from send — which, against this
# server, should be 50 ms: the excess is the client's own delay.
#
# The server is pinned to SERVER_CPU, surge and the busy loop to GEN_CPU
# (taskset), so surge gets half a core when starved. Loopback only.
#
# Environment (defaults in brackets):
#   RATE       arrivals/s                         [500]
#   DURATION   schedule length per run            [20s]
#   ADDR       server address                     [127.0.0.1:18082]
#   SERVER_CPU GEN_CPU                            [1 0]
#   MODES      which runs, in order               ["quiet starved"]
set -euo pipefail

RATE=${RATE:-500}
DURATION=${DURATION:-20s}
ADDR=${ADDR:-127.0.0.1:18082}
SERVER_CPU=${SERVER_CPU:-1}
GEN_CPU=${GEN_CPU:-0}
MODES=${MODES:-"quiet starved"}
case "$ADDR" in
127.0.0.1:* | localhost:* | "[::1]:"*) ;;
*) echo "starved.sh: ADDR must be a loopback address, not $ADDR" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
tmp=$(mktemp -d /tmp/surge-starved.XXXXXX)
pids=()
cleanup() {
	for p in ${pids[@]+"${pids[@]}"}; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

(cd "$root" && go build -o "$tmp/" ./bench/sseserver ./cmd/surge)
taskset -c "$SERVER_CPU" "$tmp/sseserver" --addr "$ADDR" --tokens 64 --ttft 50ms --gap 5ms 2>"$tmp/server.log" &
pids+=($!)
wait_health "$ADDR" "$tmp/server.log"

echo "surge self-accuracy, starved on purpose: $(go version | cut -d' ' -f3), $RATE req/s for $DURATION, server on CPU $SERVER_CPU, surge on CPU $GEN_CPU"
for mode in $MODES; do
	busy=''
	if [ "$mode" = starved ]; then
		taskset -c "$GEN_CPU" bash -c 'while :; do :; done' &
		busy=$!
		pids+=("$busy")
	fi
	sleep 2
	out="$tmp/run-$mode"
	taskset -c "$GEN_CPU" "$tmp/surge" run --target "http://$ADDR/v1" --model bench --prompt-calibration off \
		--rate "$RATE" --duration "$DURATION" --arrival constant --prompt-tokens 128 --output-tokens 64 -q -o "$out" >"$tmp/$mode.log" 2>&1 || true
	[ -z "$busy" ] || kill "$busy"
	echo
	echo "== $mode"
	grep -E "self-accuracy" "$tmp/$mode.log" || echo "(no self-accuracy line; see below)"
	grep -E "TTFT from send|schedule lag" "$tmp/$mode.log" || tail -n 20 "$tmp/$mode.log"
done
