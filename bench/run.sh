#!/usr/bin/env bash
# bench/run.sh — benchmark surge's client side against bench/sseserver.
#
# Builds bench/sseserver and bench/loadgen, starts the server pinned to CPU 1,
# runs the generator pinned to CPU 0 at each rate (constant arrivals, 64-token
# streams: TTFT 50 ms, 5 ms between tokens) and prints a markdown table.
# Loopback only; the server is stopped on exit.
#
# Environment (defaults in brackets):
#   RATES       arrival rates, arrivals/s            ["500 1000 2000"]
#   DURATION    schedule length per run               [25s]
#   REPEAT      runs per rate                         [1]
#   ADDR        server address                        [127.0.0.1:18080]
#   TOKENS TTFT GAP  server response shape            [64 50ms 5ms]
#   SERVER_CPU GEN_CPU  CPUs to pin to                [1 0]
#   QUIET       before each run, wait up to this many seconds for a second in
#               which both CPUs are under QUIET_PCT % busy (other work on the
#               machine distorts lag and CPU figures; the table's "others"
#               column shows what else ran during each run)  [120; 0 = do not wait]
#   QUIET_PCT                                         [10]
#   LOG         the generators' human summaries       [a temporary file, printed at the end]
# Extra arguments are passed to every loadgen run, e.g. `bench/run.sh --spin 1ms`
# or `bench/run.sh --cpuprofile /tmp/gen.pprof` (the last run's profile wins).
set -euo pipefail

RATES=${RATES:-"500 1000 2000"}
DURATION=${DURATION:-25s}
REPEAT=${REPEAT:-1}
ADDR=${ADDR:-127.0.0.1:18080}
TOKENS=${TOKENS:-64}
TTFT=${TTFT:-50ms}
GAP=${GAP:-5ms}
SERVER_CPU=${SERVER_CPU:-1}
GEN_CPU=${GEN_CPU:-0}
QUIET=${QUIET:-120}
QUIET_PCT=${QUIET_PCT:-10}

case "$ADDR" in
127.0.0.1:* | localhost:* | "[::1]:"*) ;;
*) echo "run.sh: ADDR must be a loopback address, not $ADDR" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
tmp=$(mktemp -d /tmp/surge-bench.XXXXXX)
LOG=${LOG:-$tmp/loadgen.log}
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

(cd "$root" && go build -o "$tmp/" ./bench/sseserver ./bench/loadgen)

taskset -c "$SERVER_CPU" "$tmp/sseserver" --addr "$ADDR" --tokens "$TOKENS" --ttft "$TTFT" --gap "$GAP" 2>"$tmp/server.log" &
server_pid=$!
wait_health "$ADDR" "$tmp/server.log"

echo "surge client benchmark: $(go version | cut -d' ' -f3), $(nproc) CPUs, server on CPU $SERVER_CPU, generator on CPU $GEN_CPU"
echo "response: role chunk + $TOKENS content chunks, TTFT $TTFT, gap $GAP; constant arrivals for $DURATION per run; extra flags: ${*:-none}"
echo "uptime before: $(uptime)"
echo
"$tmp/loadgen" --md-header
for rate in $RATES; do
	for r in $(seq "$REPEAT"); do
		sleep 2 # let the previous run's connections close
		echo "== rate $rate run $r" >>"$LOG"
		wait_quiet
		[[ $quiet != "waited out"* ]] || echo "   (machine not quiet after ${QUIET}s; measuring anyway)" >>"$LOG"
		taskset -c "$GEN_CPU" "$tmp/loadgen" --url "http://$ADDR/v1" --rate "$rate" --duration "$DURATION" \
			--server-pid "$server_pid" --gen-cpu "$GEN_CPU" --server-cpu "$SERVER_CPU" --md --label "$rate" "$@" 2>>"$LOG"
	done
done
echo
echo "uptime after: $(uptime)"
if [[ "$LOG" == "$tmp/"* ]]; then
	echo
	echo "generator summaries:"
	cat "$LOG"
fi
