# shellcheck shell=bash
# engine.sh: what scripts/*-e2e.sh share — logging, argument checks, a free
# loopback port, readiness polling, stopping the engine's process group on
# exit, and running the command or serving. Source it after setting:
#   ENGINE       the script's short name, for log lines (ollama, vllm)
#   ENGINE_NAME  what the server is called in messages (ollama serve, vLLM)
# and, before calling engine_trap / wait_ready / run_or_serve:
#   TMP, LOG     the temporary directory (removed on exit) and the log file
#   PID          the engine's process id (it leads its own session), or empty
#   PORT, MODEL  where it listens and what it serves
#   STOP_TENTHS  how long to wait for a clean stop, in tenths of a second
#   TAIL_LINES   log lines shown when the script fails
#   READY_SECS   readiness timeout in seconds
# and, before sim_start / sim_stop (surge's simulator as the upstream):
#   ROOT         the repository, SIM_LOG the simulator's log file

# elapsed prints the seconds since $1 (an $EPOCHREALTIME value), to 0.01 s.
elapsed() {
	local now=${EPOCHREALTIME/./} start=${1/./}
	local cs=$(((now - start) / 10000))
	printf '%d.%02d' $((cs / 100)) $((cs % 100))
}
log() { printf '%s-e2e: %s\n' "$ENGINE" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# usage prints the calling script's header comment and exits 2.
usage() {
	sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
	exit 2
}

# uint NAME VALUE dies unless VALUE is a non-negative integer.
uint() { [[ $2 =~ ^[0-9]+$ ]] || die "$1 must be a non-negative integer, got '$2'"; }

# free_port prints a loopback TCP port nobody listens on (a later bind can
# still race; callers retry on another port).
free_port() {
	local port
	for _ in $(seq 100); do
		port=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return 0
		fi
	done
	die "no free loopback port found"
}

# shellcheck disable=SC2317 # called by the EXIT trap
engine_cleanup() {
	local status=$?
	trap - EXIT INT TERM
	if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
		# The server leads its own session: stop it and its workers together.
		kill -TERM -- "-$PID" 2>/dev/null || true
		for _ in $(seq "$STOP_TENTHS"); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL -- "-$PID" 2>/dev/null || true
		wait "$PID" 2>/dev/null || true
	fi
	if [ "$status" -ne 0 ] && [ "$status" -ne 130 ] && [ "$status" -ne 143 ] && [ -f "$LOG" ]; then
		log "exit status $status; last lines of $LOG:"
		tail -n "$TAIL_LINES" "$LOG" >&2 || true
	fi
	rm -rf "$TMP"
	exit "$status"
}

# engine_trap stops the engine and removes TMP on any exit.
engine_trap() {
	trap engine_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

# wait_ready polls until a real one-token completion succeeds (or, with
# READY_PATH and READY_BODY set, another request to the model).
wait_ready() {
	local deadline=$((SECONDS + READY_SECS))
	local body=${READY_BODY:-'{"model":"'"$MODEL"'","prompt":"hello","max_tokens":1,"stream":false}'}
	until curl -fsS -o /dev/null --max-time 60 -H 'Content-Type: application/json' \
		-d "$body" "http://127.0.0.1:$PORT${READY_PATH:-/v1/completions}" 2>/dev/null; do
		kill -0 "$PID" 2>/dev/null || die "$ENGINE_NAME exited; see $LOG"
		[ $SECONDS -lt $deadline ] || die "model not answering after ${READY_SECS}s; see $LOG"
		sleep 0.5
	done
}

# run_or_serve serves until Ctrl-C (mode serve) or runs "$@" and exits with
# its status.
run_or_serve() {
	if [ "$mode" = serve ]; then
		log "serving; Ctrl-C to stop"
		wait "$PID" || die "$ENGINE_NAME exited"
		exit 1
	fi
	local status=0
	"$@" || status=$?
	exit "$status"
}

# sim_start builds surge into $TMP and starts `surge sim` serving $MODEL on
# a free loopback port, in its own session, its output in $SIM_LOG; it sets
# SIM_PORT and SIM_PID once /health answers (another port when the one
# chosen could not be listened on: exit status 2).
sim_start() {
	(cd "$ROOT" && go build -o "$TMP/surge" ./cmd/surge) || die "go build ./cmd/surge failed"
	for _ in 1 2 3; do
		SIM_PORT=$(free_port)
		setsid "$TMP/surge" sim --addr "127.0.0.1:$SIM_PORT" --model "$MODEL" >"$SIM_LOG" 2>&1 </dev/null &
		SIM_PID=$!
		for _ in $(seq 100); do
			curl -fsS -o /dev/null "http://127.0.0.1:$SIM_PORT/health" 2>/dev/null && return 0
			kill -0 "$SIM_PID" 2>/dev/null || break
			sleep 0.1
		done
		if ! kill -0 "$SIM_PID" 2>/dev/null; then
			wait "$SIM_PID" 2>/dev/null || true
			SIM_PID=
			continue
		fi
		die "surge sim did not come up; see $SIM_LOG"
	done
	die "could not bind a loopback port for the simulator"
}

# sim_stop stops the simulator sim_start started, if any, and on a failure
# ($1, the exit status) shows the last lines of its log.
# shellcheck disable=SC2317 # called from EXIT traps
sim_stop() {
	if [ -n "${SIM_PID:-}" ] && kill -0 "$SIM_PID" 2>/dev/null; then
		kill -TERM -- "-$SIM_PID" 2>/dev/null || true
		for _ in $(seq "$STOP_TENTHS"); do kill -0 "$SIM_PID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL -- "-$SIM_PID" 2>/dev/null || true
		wait "$SIM_PID" 2>/dev/null || true
	fi
	if [ "$1" -ne 0 ] && [ "$1" -ne 130 ] && [ "$1" -ne 143 ] && [ -s "${SIM_LOG:-}" ]; then
		log "last lines of the simulator's log:"
		tail -n "$TAIL_LINES" "$SIM_LOG" >&2 || true
	fi
}
