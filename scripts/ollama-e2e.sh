#!/usr/bin/env bash
# ollama-e2e.sh: a real inference engine for surge's end-to-end tests.
#
# Builds Ollama from the Go module proxy (cgo, CPU backend) into a cache
# directory, generates a tiny random-weight llama model with
# cmd/surge-tinymodel, starts Ollama on a free loopback port with a throwaway
# HOME, creates the model, waits until a real one-token completion succeeds,
# and then either runs a command against it or serves until Ctrl-C. Everything
# it started is stopped and its temporary directory removed on exit.
#
# Usage:
#   scripts/ollama-e2e.sh -- COMMAND [ARG...]   run COMMAND against Ollama
#   scripts/ollama-e2e.sh --serve               serve until Ctrl-C
#   scripts/ollama-e2e.sh --build-only          install headers, build, exit
#
# COMMAND runs with these variables exported (they are also printed):
#   OLLAMA_BASE_URL  http://127.0.0.1:PORT/v1 (OpenAI-compatible API)
#   OLLAMA_MODEL     model name to put in requests
#   OLLAMA_LOG       Ollama's log file (INFO level: no prompt text). Each
#                    request adds one GIN access line when its handler
#                    returns, time in UTC to the second, duration from the
#                    request's arrival (so including queue wait) to its end:
#   [GIN] 2026/01/02 - 15:04:05 | 200 |  1.234567891s |       127.0.0.1 | POST     "/v1/chat/completions"
#   OLLAMA_NUM_PARALLEL, OLLAMA_NUM_CTX, OLLAMA_NUM_PREDICT, OLLAMA_NUM_THREAD
#                    as configured
#   OLLAMA_BIN, OLLAMA_MODELS_DIR
#                    the ollama binary and the models directory holding
#                    OLLAMA_MODEL, for a test that starts its own
#                    `ollama serve` (surge coldstart --start-cmd)
# The script exits with COMMAND's status.
#
# Environment (all optional):
#   SURGE_CACHE               cache root (default $HOME/.cache/surge); the
#                             binary goes to $SURGE_CACHE/ollama-0.17.4/bin
#   OLLAMA_NUM_PARALLEL       slots decoded together (default 2)
#   OLLAMA_NUM_CTX            context tokens per slot (default 2048)
#   OLLAMA_NUM_PREDICT        tokens generated when a request sets no
#                             max_tokens (default 256)
#   OLLAMA_NUM_THREAD         CPU threads per decode step (default 1; 0 means
#                             Ollama's own default, one per physical core).
#                             On a 2-core machine one thread decodes one
#                             stream faster (~280 vs ~200 tokens/s) and stays
#                             steady when other processes (surge itself) take
#                             CPU, where two threads stall for up to a second.
#   SURGE_OLLAMA_MODEL        model name (default surge-tiny)
#   SURGE_OLLAMA_SEED         weight seed for the generated model (default 1)
#   SURGE_OLLAMA_LOG          log file to write and keep (default: inside the
#                             temporary directory, removed on exit)
#   SURGE_OLLAMA_READY_SECS   readiness timeout in seconds (default 180)
#
# Facts this relies on (checked with Ollama v0.17.4, see issue 6): the module
# zip drops llama.cpp's vendor/ directory, so nlohmann/json and stb come from
# Debian and miniaudio from a stub written here (only multimodal audio input
# uses it); -march=x86-64-v3 gives the CPU backend AVX2/FMA (measured 6-7x
# faster decoding: ~30 tokens/s without it), so the binary needs an x86-64-v3
# CPU; versions from 0.30 on (per issue 6) fetch llama.cpp at build time and
# cannot be built offline. The script never pulls models and never uses cloud
# models.
set -euo pipefail

OLLAMA_VERSION=0.17.4
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${SURGE_CACHE:-$HOME/.cache/surge}
PREFIX=$CACHE/ollama-$OLLAMA_VERSION
OLLAMA=$PREFIX/bin/ollama
NUM_PARALLEL=${OLLAMA_NUM_PARALLEL:-2}
NUM_CTX=${OLLAMA_NUM_CTX:-2048}
NUM_PREDICT=${OLLAMA_NUM_PREDICT:-256}
NUM_THREAD=${OLLAMA_NUM_THREAD:-1}
MODEL=${SURGE_OLLAMA_MODEL:-surge-tiny}
SEED=${SURGE_OLLAMA_SEED:-1}
READY_SECS=${SURGE_OLLAMA_READY_SECS:-180}
CGO_OPT="-O3 -march=x86-64-v3"
LDFLAGS="-X=github.com/ollama/ollama/version.Version=$OLLAMA_VERSION -X=github.com/ollama/ollama/server.mode=release"

ENGINE=ollama ENGINE_NAME="ollama serve" STOP_TENTHS=50 TAIL_LINES=20
# shellcheck source=scripts/lib/engine.sh
. "$ROOT/scripts/lib/engine.sh"

uint OLLAMA_NUM_PARALLEL "$NUM_PARALLEL"
uint OLLAMA_NUM_CTX "$NUM_CTX"
uint OLLAMA_NUM_PREDICT "$NUM_PREDICT"
uint OLLAMA_NUM_THREAD "$NUM_THREAD"
uint SURGE_OLLAMA_SEED "$SEED"
uint SURGE_OLLAMA_READY_SECS "$READY_SECS"
[[ $MODEL =~ ^[a-z0-9][a-z0-9._-]*$ ]] || die "SURGE_OLLAMA_MODEL '$MODEL' is not a plain local model name"

mode=
case ${1:-} in
--serve) mode=serve ;;
--build-only) mode=build ;;
--) mode=run; shift; [ $# -gt 0 ] || usage ;;
*) usage ;;
esac

# --- build ------------------------------------------------------------------

# install_packages installs the Debian packages the build needs and lacks:
# the two header libraries the module zip drops, a C++ compiler and curl.
install_packages() {
	local pkgs=()
	[ -f /usr/include/nlohmann/json.hpp ] || pkgs+=(nlohmann-json3-dev)
	[ -f /usr/include/stb/stb_image.h ] || pkgs+=(libstb-dev)
	command -v g++ >/dev/null || pkgs+=(g++)
	command -v curl >/dev/null || pkgs+=(curl)
	[ ${#pkgs[@]} -eq 0 ] && return 0
	command -v apt-get >/dev/null || die "need Debian packages ${pkgs[*]} (no apt-get here)"
	local sudo=
	[ "$(id -u)" = 0 ] || sudo=sudo
	log "installing ${pkgs[*]}"
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get install -y -qq "${pkgs[@]}" >/dev/null 2>&1 ||
		{ $sudo apt-get update -qq && $sudo apt-get install -y -qq "${pkgs[@]}" >/dev/null; } ||
		die "apt-get install ${pkgs[*]} failed"
}

# write_miniaudio_stub writes the subset of miniaudio's API that llama.cpp's
# mtmd-helper.cpp uses; every decoder call fails, so audio input is rejected.
write_miniaudio_stub() {
	mkdir -p "$PREFIX/include/miniaudio"
	cat >"$PREFIX/include/miniaudio/miniaudio.h.tmp" <<'EOF'
/* Stub miniaudio.h for building Ollama without llama.cpp's vendor/ directory
 * (written for surge's scripts/ollama-e2e.sh). Only multimodal audio input
 * uses miniaudio; every ma_decoder_* call here fails with MA_ERROR. */
#ifndef SURGE_MINIAUDIO_STUB_H
#define SURGE_MINIAUDIO_STUB_H
#include <stddef.h>
#include <stdint.h>
#ifndef MA_API
#define MA_API
#endif
typedef int ma_result;
typedef uint32_t ma_uint32;
typedef uint64_t ma_uint64;
#define MA_SUCCESS 0
#define MA_ERROR (-1)
typedef enum { ma_format_unknown = 0, ma_format_f32 = 5 } ma_format;
typedef struct { ma_format format; ma_uint32 channels; ma_uint32 sampleRate; } ma_decoder_config;
typedef struct { int unused; } ma_decoder;
MA_API ma_decoder_config ma_decoder_config_init(ma_format f, ma_uint32 channels, ma_uint32 rate) {
	ma_decoder_config c; c.format = f; c.channels = channels; c.sampleRate = rate; return c;
}
MA_API ma_result ma_decoder_init_memory(const void *data, size_t size, const ma_decoder_config *cfg, ma_decoder *d) {
	(void)data; (void)size; (void)cfg; (void)d; return MA_ERROR;
}
MA_API ma_result ma_decoder_get_length_in_pcm_frames(ma_decoder *d, ma_uint64 *n) {
	(void)d; if (n) *n = 0; return MA_ERROR;
}
MA_API ma_result ma_decoder_read_pcm_frames(ma_decoder *d, void *out, ma_uint64 n, ma_uint64 *read) {
	(void)d; (void)out; (void)n; if (read) *read = 0; return MA_ERROR;
}
MA_API ma_result ma_decoder_uninit(ma_decoder *d) { (void)d; return MA_SUCCESS; }
#endif
EOF
	mv "$PREFIX/include/miniaudio/miniaudio.h.tmp" "$PREFIX/include/miniaudio/miniaudio.h"
}

build_ollama() {
	install_packages
	mkdir -p "$PREFIX/bin"
	local stamp goversion
	goversion=$(go env GOVERSION) || die "go not found"
	stamp="version=$OLLAMA_VERSION cgo=$CGO_OPT ldflags=$LDFLAGS go=$goversion"
	exec 9>"$PREFIX/.lock"
	flock 9 # one build at a time per cache directory
	if [ -x "$OLLAMA" ] && [ "$(cat "$PREFIX/build.stamp" 2>/dev/null)" = "$stamp" ]; then
		exec 9>&-
		return 0
	fi
	write_miniaudio_stub
	log "building ollama v$OLLAMA_VERSION into $PREFIX/bin (cold: minutes; warm cache: seconds)"
	local t0=$EPOCHREALTIME
	rm -f "$PREFIX/build.stamp"
	# The C/C++ compilers print hundreds of warnings; keep them in a file.
	if ! (cd "$PREFIX" &&
		GOBIN="$PREFIX/bin" GOTOOLCHAIN=local CGO_ENABLED=1 \
			CGO_CPPFLAGS="-I$PREFIX/include" CGO_CFLAGS="$CGO_OPT" CGO_CXXFLAGS="$CGO_OPT" \
			go install -ldflags="$LDFLAGS" "github.com/ollama/ollama@v$OLLAMA_VERSION") >"$PREFIX/build.log" 2>&1; then
		grep -E 'error|cannot|fatal' "$PREFIX/build.log" | tail -n 20 >&2 || tail -n 20 "$PREFIX/build.log" >&2
		die "go install github.com/ollama/ollama@v$OLLAMA_VERSION failed; full log in $PREFIX/build.log"
	fi
	printf '%s\n' "$stamp" >"$PREFIX/build.stamp"
	log "built in $(elapsed "$t0")s"
	exec 9>&-
}

build_ollama
[ "$mode" = build ] && { echo "$OLLAMA"; exit 0; }

# --- run --------------------------------------------------------------------

TMP=$(mktemp -d "${TMPDIR:-/tmp}/surge-ollama.XXXXXX")
LOG=${SURGE_OLLAMA_LOG:-$TMP/ollama.log}
PID=

engine_trap

start_ollama() {
	mkdir -p "$TMP/home" "$TMP/models"
	for _ in 1 2 3; do
		PORT=$(free_port)
		: >"$LOG"
		TZ=UTC HOME="$TMP/home" OLLAMA_MODELS="$TMP/models" OLLAMA_HOST="127.0.0.1:$PORT" \
			OLLAMA_NUM_PARALLEL="$NUM_PARALLEL" OLLAMA_MAX_LOADED_MODELS=1 \
			OLLAMA_KEEP_ALIVE=-1 OLLAMA_NO_CLOUD=1 OLLAMA_CONTEXT_LENGTH="$NUM_CTX" \
			setsid "$OLLAMA" serve >>"$LOG" 2>&1 </dev/null &
		PID=$!
		for _ in $(seq 300); do
			if curl -fsS -o /dev/null "http://127.0.0.1:$PORT/api/version" 2>/dev/null; then
				return 0
			fi
			kill -0 "$PID" 2>/dev/null || break
			sleep 0.1
		done
		if grep -q 'address already in use' "$LOG"; then
			wait "$PID" 2>/dev/null || true
			PID=
			continue
		fi
		die "ollama serve did not come up; see $LOG"
	done
	die "could not bind a loopback port"
}

create_model() {
	local t0=$EPOCHREALTIME
	(cd "$ROOT" && go run ./cmd/surge-tinymodel -o "$TMP/model.gguf" -seed "$SEED") ||
		die "generating the model failed"
	cat >"$TMP/Modelfile" <<EOF
FROM $TMP/model.gguf
TEMPLATE """{{- if .Messages }}{{ range .Messages }}<|im_start|>{{ .Role }}
{{ .Content }}<|im_end|>
{{ end }}<|im_start|>assistant
{{ else }}{{ if .System }}<|im_start|>system
{{ .System }}<|im_end|>
{{ end }}{{ if .Prompt }}<|im_start|>user
{{ .Prompt }}<|im_end|>
{{ end }}<|im_start|>assistant
{{ end }}"""
PARAMETER num_ctx $NUM_CTX
PARAMETER num_predict $NUM_PREDICT
EOF
	[ "$NUM_THREAD" = 0 ] || echo "PARAMETER num_thread $NUM_THREAD" >>"$TMP/Modelfile"
	if ! HOME="$TMP/home" OLLAMA_HOST="127.0.0.1:$PORT" "$OLLAMA" create "$MODEL" -f "$TMP/Modelfile" >"$TMP/create.log" 2>&1; then
		tail -n 5 "$TMP/create.log" >&2
		die "ollama create failed"
	fi
	log "model $MODEL generated and created in $(elapsed "$t0")s"
}

start_ollama
create_model
t0=$EPOCHREALTIME
wait_ready
log "model loaded and answering after $(elapsed "$t0")s"

export OLLAMA_BASE_URL="http://127.0.0.1:$PORT/v1"
export OLLAMA_MODEL="$MODEL"
export OLLAMA_LOG="$LOG"
export OLLAMA_BIN="$OLLAMA" OLLAMA_MODELS_DIR="$TMP/models"
export OLLAMA_NUM_PARALLEL="$NUM_PARALLEL" OLLAMA_NUM_CTX="$NUM_CTX" OLLAMA_NUM_PREDICT="$NUM_PREDICT" OLLAMA_NUM_THREAD="$NUM_THREAD"
echo "OLLAMA_BASE_URL=$OLLAMA_BASE_URL"
echo "OLLAMA_MODEL=$OLLAMA_MODEL"
echo "OLLAMA_LOG=$OLLAMA_LOG"

run_or_serve "$@"
