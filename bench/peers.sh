#!/usr/bin/env bash
# bench/peers.sh — race surge against its peers (Vegeta, AIPerf, GuideLLM) on
# the same ground-truth server, at fixed rates, and print ONE markdown table.
#
# Setup (once, into a cache dir, never into the project and never in CI):
#   Vegeta    go install github.com/tsenart/vegeta/v12@$VEGETA_VERSION into $CACHE/bin
#   AIPerf    pip install aiperf==$AIPERF_VERSION guidellm==$GUIDELLM_VERSION into
#   GuideLLM  one venv, $CACHE/venv (PyPI only; torch comes along, ~6 GB)
#   tokenizer bench/peers/tokenizer.py trains a byte-level BPE (2,000 tokens) on
#             generated text into $CACHE/tokenizer (tokenizer.json +
#             tokenizer_config.json); the peers load it by path. Nothing is
#             fetched from a model hub: HF_HUB_OFFLINE=1 for GuideLLM; AIPerf
#             0.13 treats a local path as a hub repo id when HF_HUB_OFFLINE is
#             set, so for it HF_ENDPOINT points at a closed loopback port instead
#             (any hub call fails at once) and the path loads as a local folder.
# Then it builds bench/sseserver and bench/loadgen, starts the server pinned to
# SERVER_CPU (one core: TTFT $TTFT, $TOKENS content chunks $GAP apart, as
# bench/run.sh) and runs each tool pinned to GEN_CPU, one after another, for
# each rate. Loopback only. Before each run: a 2 s pause, then a wait (up to
# QUIET s) for a second in which both CPUs are under QUIET_PCT % busy (as
# bench/run.sh; "waited out" in the last column when it gave up).
#
# What each tool is asked (R = rate, D = DURATION in s, N = R·D requests;
# every tool: POST /v1/chat/completions, stream=true, ~128 prompt tokens,
# max_tokens 64, constant arrivals, no warmup):
#   surge     bench/loadgen --rate R --duration D --prompt-tokens 128 --max-tokens 64
#             --out DIR: the `surge run --target` pipeline (run.Prepare +
#             env.Execute of one constant-rate phase), run folder kept
#   vegeta    vegeta attack -rate R/1s -duration Ds -max-body 0 with one fixed
#             body (-max-body 0: the body is read and dropped, not stored in
#             the results); results encoded to CSV after the run, unmeasured
#   aiperf    aiperf profile -m bench --url URL --endpoint-type chat --streaming
#             --request-rate R --arrival-pattern constant --request-count N
#             --benchmark-duration CAP --benchmark-grace-period 10 --isl 128
#             --osl 64 --tokenizer TOK --ui-type none --no-server-metrics
#             --no-gpu-telemetry --random-seed 31 (workers etc. as it chooses)
#   guidellm  guidellm run --backend kind=openai_http,target=URL,model=bench,http2=false
#             --profile kind=constant,rate=R --constraint kind=max_requests,count=N
#             --constraint kind=max_duration,seconds=CAP --tokenizer
#             kind=hf_auto,model=TOK --data kind=synthetic_text,prompt_tokens=128,
#             output_tokens=64 --output kind=json,... --disable-console-interactive
#             (GuideLLM 0.8's CLI; the older --rate-type constant --rate R is gone)
# CAP (PEER_CAP, default 3·D) bounds a peer that cannot hold the rate; the
# whole command is stopped (TERM, KILL 30 s later) after CAP + 300 s.
#
# Columns (per tool; "–" where the tool cannot give it):
#   achieved/s   sent ÷ (last send − origin + 1/R), as bench/loadgen: surge:
#                loadgen's figure (origin = its schedule's start); vegeta: origin =
#                first hit (results.csv timestamps); aiperf: origin = first
#                credit_issued_ns, sends = request_start_ns (profile_export.jsonl);
#                guidellm: origin = first targeted_start, sends = request_start
#                (benchmarks.json, successful + errored + incomplete)
#   sent / ok    requests sent / answered in full
#   send lag     send − scheduled, p50 / p99 (nearest rank): surge: loadgen's
#                SentNs − ScheduledNs; guidellm: request_start − targeted_start
#                (its own schedule); ᵃ vegeta and aiperf record no schedule, so it
#                is rebuilt as constant: the i-th send in time order (aiperf: in
#                credit order) was due at first + i/R
#   CPU-s per 1k req: whole run   user + system CPU of the tool's whole process
#                tree from exec to exit (start-up, data generation and the report
#                after the load included) ÷ requests sent × 1,000
#                (bench/peers/measure.py: rusage of the reaped children, or the
#                sum of each process's last /proc/PID/stat utime + stime if larger)
#   CPU-s per 1k req: load only   the same, only from the first to the last
#                0.2 s sample in which the server had streams open (GET /streams)
#   peak RSS / PSS (procs)   the largest sum over the tree of VmRSS (0.2 s
#                samples) / of Pss (1 s samples), and the most processes at once
#   TTFT (tool)  the tool's own TTFT p50 / p99: surge: summary.json
#                phases[0].latency.ttft_send (first token − send); aiperf:
#                profile_export_aiperf.json time_to_first_token; guidellm:
#                metrics.time_to_first_token_ms.successful.percentiles; vegeta: –
#   TTFT (server)  the server's own GET /truth ttft_ms p50 / p99 over the run (reset
#                before it): first content token written − request fully read
#   TTFT error   tool − server, at p50 and at p99
#   server CPU   the server's CPU over the load window, share of its core
#   quiet?; others gen / server   whether the quiet wait succeeded; CPU that
#                other processes used on the tool's and the server's CPU during
#                the run (/proc/stat busy − tool tree − server − sampler), % of wall
#
# Environment (defaults in brackets):
#   TOOLS        tools to run, in order                 ["surge vegeta aiperf guidellm"]
#   RATES        arrival rates, requests/s              ["200 1000"]
#   DURATION     schedule length, whole seconds         [20s]
#   PEER_CAP     a peer's run stops after this many s   [3 × DURATION]
#   TOKENS TTFT GAP  server response shape              [64 50ms 5ms]
#   ADDR         server address (loopback)              [127.0.0.1:18093]
#   SERVER_CPU GEN_CPU  CPUs to pin to                  [1 0]
#   QUIET QUIET_PCT  quiet wait, as bench/run.sh        [120 10]
#   OUT          keep every run's files here (default: a temporary dir, removed)
#   CACHE        peers' install dir                     [${XDG_CACHE_HOME:-~/.cache}/surge-peers]
#   AIPERF_VERSION GUIDELLM_VERSION VEGETA_VERSION      [0.13.0 0.8.1 v12.13.0]
set -euo pipefail

usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
	cat <<'EOF'
Usage: bench/peers.sh [--help]
Examples:
  bench/peers.sh                                  # all four tools at 200 and 1,000/s, 20 s each
  TOOLS=surge RATES=200 DURATION=5s bench/peers.sh   # a smoke run
  TOOLS="surge aiperf" OUT=/tmp/peers bench/peers.sh # keep every tool's output
EOF
}
case "${1:-}" in
-h | --help) usage; exit 0 ;;
"") ;;
*) echo "peers.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
esac

TOOLS=${TOOLS:-"surge vegeta aiperf guidellm"}
RATES=${RATES:-"200 1000"}
DURATION=${DURATION:-20s}
TOKENS=${TOKENS:-64}
TTFT=${TTFT:-50ms}
GAP=${GAP:-5ms}
ADDR=${ADDR:-127.0.0.1:18093}
SERVER_CPU=${SERVER_CPU:-1}
GEN_CPU=${GEN_CPU:-0}
QUIET=${QUIET:-120}
QUIET_PCT=${QUIET_PCT:-10}
CACHE=${CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/surge-peers}
AIPERF_VERSION=${AIPERF_VERSION:-0.13.0}
GUIDELLM_VERSION=${GUIDELLM_VERSION:-0.8.1}
VEGETA_VERSION=${VEGETA_VERSION:-v12.13.0}
PROMPT_TOKENS=128
MAX_TOKENS=64

case "$ADDR" in
127.0.0.1:* | localhost:* | "[::1]:"*) ;;
*) echo "peers.sh: ADDR must be a loopback address, not $ADDR" >&2; exit 2 ;;
esac
if [[ ! "$DURATION" =~ ^([0-9]+)s?$ ]] || ((BASH_REMATCH[1] == 0)); then
	echo "peers.sh: DURATION must be whole seconds, like 20s, not $DURATION" >&2
	exit 2
fi
D=${BASH_REMATCH[1]}
PEER_CAP=${PEER_CAP:-$((3 * D))}
for t in $TOOLS; do
	case "$t" in
	surge | vegeta | aiperf | guidellm) ;;
	*) echo "peers.sh: unknown tool $t (surge, vegeta, aiperf, guidellm)" >&2; exit 2 ;;
	esac
done
for r in $RATES; do
	[[ "$r" =~ ^[0-9]+$ ]] && ((r > 0)) || { echo "peers.sh: RATES must be whole requests/s, not $r" >&2; exit 2; }
done
command -v python3 >/dev/null || { echo "peers.sh: needs python3" >&2; exit 1; }
command -v taskset >/dev/null || { echo "peers.sh: needs taskset" >&2; exit 1; }

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
helpers=$root/bench/peers
tmp=$(mktemp -d /tmp/surge-peers.XXXXXX)
out=${OUT:-$tmp/runs}
mkdir -p "$out"
server_pid=""
tool_pid=""
stop_pid() { # stop_pid PID: TERM, then KILL after 10 s
	local pid=$1 i
	kill -0 "$pid" 2>/dev/null || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for i in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}
cleanup() {
	# measure.py forwards TERM to the tool's process group.
	[[ -n "$tool_pid" ]] && stop_pid "$tool_pid"
	[[ -n "$server_pid" ]] && stop_pid "$server_pid"
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

has() { [[ " $TOOLS " == *" $1 "* ]]; }

# --- install the peers (cache dir only) -------------------------------------
vegeta=$CACHE/bin/vegeta
if has vegeta && [[ ! -x "$vegeta" || ! -e "$CACHE/bin/.vegeta-$VEGETA_VERSION" ]]; then
	echo "installing vegeta $VEGETA_VERSION into $CACHE/bin" >&2
	mkdir -p "$CACHE/bin"
	GOBIN=$CACHE/bin go install "github.com/tsenart/vegeta/v12@$VEGETA_VERSION"
	touch "$CACHE/bin/.vegeta-$VEGETA_VERSION"
fi
venv=$CACHE/venv
tok=$CACHE/tokenizer
if has aiperf || has guidellm; then
	want="aiperf==$AIPERF_VERSION guidellm==$GUIDELLM_VERSION"
	if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" - "$AIPERF_VERSION" "$GUIDELLM_VERSION" 2>/dev/null <<'EOF'; then
import sys
from importlib.metadata import version
sys.exit(0 if (version("aiperf"), version("guidellm")) == tuple(sys.argv[1:3]) else 1)
EOF
		echo "installing $want into $venv (PyPI; a few minutes the first time)" >&2
		[[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
		"$venv/bin/pip" install -q --disable-pip-version-check $want >&2
	fi
	if [[ ! -e "$tok/tokenizer.json" ]]; then
		"$venv/bin/python" "$helpers/tokenizer.py" "$tok"
	fi
fi

# --- server and surge's driver ------------------------------------------------
(cd "$root" && go build -o "$tmp/" ./bench/sseserver ./bench/loadgen)
taskset -c "$SERVER_CPU" "$tmp/sseserver" --addr "$ADDR" --tokens "$TOKENS" --ttft "$TTFT" --gap "$GAP" 2>"$tmp/server.log" &
server_pid=$!
wait_health "$ADDR" "$tmp/server.log"
truth=yes
if ! curl -sf "http://$ADDR/truth?reset=1" >/dev/null 2>&1; then
	truth=""
	echo "peers.sh: server has no /truth: TTFT error column left blank" >&2
fi

# server_cpu prints the server's CPU-seconds so far.
server_cpu() {
	awk -v t="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) / t }' "/proc/$server_pid/stat"
}

body=$tmp/body.json
python3 - "$PROMPT_TOKENS" "$MAX_TOKENS" >"$body" <<'EOF'
import json, sys
words = ("the load test sends this prompt to the server and reads the stream " * 40).split()
print(json.dumps({"model": "bench", "messages": [{"role": "user", "content": " ".join(words[: int(sys.argv[1])])}],
                  "max_tokens": int(sys.argv[2]), "stream": True, "stream_options": {"include_usage": True}}))
EOF

# tool_cmd TOOL RATE DIR prints the command (NUL-separated) that runs TOOL.
tool_cmd() {
	local t=$1 r=$2 dir=$3 n=$(($2 * D))
	case "$t" in
	surge)
		printf '%s\0' "$tmp/loadgen" --url "http://$ADDR/v1" --rate "$r" --duration "${D}s" \
			--prompt-tokens "$PROMPT_TOKENS" --max-tokens "$MAX_TOKENS" --out "$dir/run" --md --label surge
		;;
	vegeta)
		printf 'POST http://%s/v1/chat/completions\nContent-Type: application/json\n@%s\n' "$ADDR" "$body" >"$dir/targets.txt"
		printf '%s\0' "$vegeta" attack -targets "$dir/targets.txt" -rate "$r/1s" -duration "${D}s" \
			-max-body 0 -output "$dir/results.bin"
		;;
	aiperf)
		printf '%s\0' env -u HF_HUB_OFFLINE -u TRANSFORMERS_OFFLINE HF_ENDPOINT=http://127.0.0.1:9 \
			HF_HOME="$CACHE/hf" HF_HUB_DISABLE_TELEMETRY=1 \
			"$venv/bin/aiperf" profile -m bench --url "http://$ADDR" --endpoint-type chat --streaming \
			--request-rate "$r" --arrival-pattern constant --request-count "$n" \
			--benchmark-duration "$PEER_CAP" --benchmark-grace-period 10 \
			--isl "$PROMPT_TOKENS" --osl "$MAX_TOKENS" --tokenizer "$tok" \
			--output-artifact-dir "$dir/aiperf" --ui-type none --no-server-metrics --no-gpu-telemetry --random-seed 31
		;;
	guidellm)
		printf '%s\0' env HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 HF_HOME="$CACHE/hf" \
			HF_HUB_DISABLE_TELEMETRY=1 \
			"$venv/bin/guidellm" run --backend "kind=openai_http,target=http://$ADDR,model=bench,http2=false" \
			--profile "kind=constant,rate=$r" --constraint "kind=max_requests,count=$n" \
			--constraint "kind=max_duration,seconds=$PEER_CAP" --tokenizer "kind=hf_auto,model=$tok" \
			--data "kind=synthetic_text,prompt_tokens=$PROMPT_TOKENS,output_tokens=$MAX_TOKENS" \
			--output "kind=json,path=$dir/benchmarks.json" --disable-console-interactive
		;;
	esac
}

version() {
	case "$1" in
	surge) echo "surge $(cd "$root" && git describe --always --dirty 2>/dev/null || echo '?')" ;;
	vegeta) echo "Vegeta $VEGETA_VERSION" ;;
	aiperf) echo "AIPerf $AIPERF_VERSION" ;;
	guidellm) echo "GuideLLM $GUIDELLM_VERSION" ;;
	esac
}

table=$tmp/table.md
python3 "$helpers/row.py" --header >"$table"
echo "peers: $(date -u +%F) $(nproc) CPUs, $(go version | cut -d' ' -f3); server on CPU $SERVER_CPU, tools on CPU $GEN_CPU" >&2
up0=$(uptime)
echo "uptime before: $up0" >&2
for rate in $RATES; do
	for t in $TOOLS; do
		dir=$out/$t-$rate
		rm -rf "$dir"
		mkdir -p "$dir"
		mapfile -d '' cmd < <(tool_cmd "$t" "$rate" "$dir")
		sleep 2 # let the previous run's connections close
		wait_quiet
		[[ -n "$truth" ]] && curl -sf "http://$ADDR/truth?reset=1" >/dev/null
		echo "== $t at $rate/s for ${D}s (quiet: $quiet): ${cmd[*]}" >&2
		read -r bg0 bs0 <<<"$(busy)"
		s0=$(server_cpu)
		rc=0
		taskset -c "$SERVER_CPU" python3 "$helpers/measure.py" --out "$dir/measure.json" --cpu "$GEN_CPU" \
			--streams-url "http://$ADDR" --limit $((PEER_CAP + 300)) -- "${cmd[@]}" \
			>"$dir/stdout.txt" 2>"$dir/stderr.txt" &
		tool_pid=$!
		wait "$tool_pid" || rc=$?
		tool_pid=""
		read -r bg1 bs1 <<<"$(busy)"
		s1=$(server_cpu)
		if [[ -n "$truth" ]]; then
			curl -sf "http://$ADDR/truth" >"$dir/truth.json" || echo '{}' >"$dir/truth.json"
		fi
		((rc == 0)) || echo "   $t exited with status $rc; see $dir/stderr.txt" >&2
		case "$t" in
		surge) cp "$dir/stdout.txt" "$dir/loadgen.md" ;;
		vegeta) [[ -e "$dir/results.bin" ]] && "$vegeta" encode -to csv -output "$dir/results.csv" "$dir/results.bin" ;;
		esac
		python3 "$helpers/row.py" --tool "$t" --label "$(version "$t")" --rate "$rate" --dir "$dir" --quiet "$quiet" \
			--busy "$(awk -v a=$((bg1 - bg0)) -v b=$((bs1 - bs0)) -v t="$(getconf CLK_TCK)" 'BEGIN { print a / t, b / t }')" \
			--server-cpu "$(awk -v a="$s0" -v b="$s1" 'BEGIN { print b - a }')" | tee -a "$table" >&2
	done
done
up1=$(uptime)
echo "uptime after: $up1" >&2
echo
echo "Peers against bench/sseserver ($TOKENS tokens, TTFT $TTFT, gap $GAP), ${D} s per run, $(date -u '+%F %H:%M UTC'); $(nproc) CPUs; server on CPU $SERVER_CPU, each tool on CPU $GEN_CPU"
echo "Command: TOOLS=\"$TOOLS\" RATES=\"$RATES\" DURATION=${D}s PEER_CAP=$PEER_CAP QUIET=$QUIET QUIET_PCT=$QUIET_PCT bench/peers.sh"
echo "Load (uptime) before: ${up0##*load average: }; after: ${up1##*load average: }"
echo
cat "$table"
echo
echo "ᵃ Vegeta and AIPerf record when each request was sent but not when it was due: the lag is against a constant schedule rebuilt from the first send (the i-th send was due at first + i/R). surge and GuideLLM report their own schedule. Vegeta measures no TTFT. GuideLLM stamps request_start before it connects: its sent count can exceed what the server saw. \"load only\" = while the server had streams open."
[[ -n "$truth" ]] || echo "The server has no /truth: the server TTFT and TTFT error columns are left blank."
[[ -n "${OUT:-}" ]] && echo "Every run's files: $out"
exit 0
