#!/usr/bin/env bash
# nginx-e2e.sh: a real gateway, nginx, in front of surge's simulator (or of
# an engine already running, NGINX_UPSTREAM), for surge's end-to-end tests
# of --gateway-timing.
#
# Fetches Debian's nginx package without root (apt-get download, unpacked
# with dpkg-deb -x into a cache directory; the libraries it links are
# fetched the same way only if this machine lacks them), builds surge and
# starts `surge sim` on a free loopback port (unless NGINX_UPSTREAM names
# the server to front), starts nginx on another with a configuration
# written to a temporary directory (pid, temp paths and logs all there): a
# request-rate limit that queues excess requests (limit_req with a burst
# and no nodelay, so they wait in nginx itself) and refuses beyond the
# burst with 429, proxying to the upstream without buffering so that SSE
# streams through. It waits until a one-token completion (in front of an
# upstream: GET /v1/models) succeeds through nginx and then either runs a
# command or serves until Ctrl-C. Everything it started is stopped and its
# temporary directory removed on exit; an upstream it did not start is
# left alone.
#
# Usage:
#   scripts/nginx-e2e.sh -- COMMAND [ARG...]   run COMMAND through nginx
#   scripts/nginx-e2e.sh --serve               serve until Ctrl-C
#   scripts/nginx-e2e.sh --install-only        fetch nginx, print its path, exit
#   NGINX_UPSTREAM=http://127.0.0.1:11434 scripts/nginx-e2e.sh -- COMMAND
#                                              nginx in front of that server
#   scripts/ollama-e2e.sh -- bash -c 'NGINX_UPSTREAM=$OLLAMA_BASE_URL scripts/nginx-e2e.sh -- COMMAND'
#                                              nginx in front of Ollama
#
# COMMAND runs with these variables exported (they are also printed):
#   NGINX_BASE_URL     http://127.0.0.1:PORT/v1, nginx in front of the upstream
#   NGINX_UPSTREAM     the server nginx proxies to, http://HOST:PORT (its
#                      root, without /v1): the simulator, or NGINX_UPSTREAM
#                      as given with a /v1 or / at its end removed
#   NGINX_MODEL        the model name the simulator serves (surge-sim); in
#                      front of NGINX_UPSTREAM, left as it was (unset unless
#                      given: the upstream's model is the caller's to name)
#   NGINX_ACCESS_LOG   nginx's access log: one line per request, written when
#                      the request ends, tab separated:
#     X-Request-Id  status  $request_time  $upstream_response_time  $upstream_header_time  $upstream_connect_time  $limit_req_status
#                      times in seconds to the ms; "-" where there is none
#                      (no upstream for a 429); $limit_req_status is PASSED,
#                      DELAYED (waited in the burst queue) or REJECTED
#   NGINX_ERROR_LOG    nginx's error log
#   NGINX_LIMIT_RATE   limit_req rate, requests/s
#   NGINX_LIMIT_BURST  limit_req burst, requests
#   NGINX_CONF, NGINX_BIN  the configuration written and the binary run
#   SIM_BASE_URL       http://127.0.0.1:PORT/v1, the simulator itself (not
#                      set in front of NGINX_UPSTREAM: no simulator runs)
# Every response through nginx carries X-Request-Time ("${request_time}s"
# when nginx sends the headers: the request's time in nginx so far) and
# X-Upstream-Header-Time ("${upstream_header_time}s": from nginx turning to
# the upstream to the upstream's headers), so surge reads nginx's own wait
# with --gateway-timing header:X-Request-Time,X-Upstream-Header-Time.
# The script exits with COMMAND's status.
#
# Environment (all optional):
#   SURGE_CACHE               cache root (default $HOME/.cache/surge); nginx
#                             goes to $SURGE_CACHE/nginx-DEBIAN_VERSION
#   SURGE_NGINX_BIN           an nginx binary to run instead of Debian's
#                             (then nothing is fetched)
#   NGINX_UPSTREAM            the server to put nginx in front of instead of
#                             starting surge sim: http://HOST:PORT, the
#                             server's root; a base URL ending in /v1 (as
#                             OLLAMA_BASE_URL, VLLM_BASE_URL) is accepted and
#                             the /v1 dropped, since nginx passes the path on
#                             unchanged. Plain http only, no other path.
#   NGINX_RATE                limit_req rate, whole requests per second: N or
#                             Nr/s, e.g. 2r/s (default 10r/s)
#   NGINX_BURST               limit_req burst, requests (default 10)
#   SURGE_NGINX_RATE, SURGE_NGINX_BURST
#                             older names of NGINX_RATE and NGINX_BURST (used
#                             when those are unset)
#   SURGE_NGINX_ACCESS_LOG    access log to write and keep (default: inside
#                             the temporary directory, removed on exit)
#   SURGE_NGINX_READY_SECS    readiness timeout in seconds (default 60)
#
# Facts this relies on (checked with Debian 12's nginx 1.22.1-9+deb12u11):
# the package's binary needs only libc, libcrypt, libpcre2-8, libssl3 and
# zlib (nginx-common holds /etc/nginx and systemd files, not needed here);
# it logs to stderr until its configuration is read, and -e, -p and the
# *_temp_path directives keep it away from /var/log/nginx and
# /var/lib/nginx. nginx does not count a request whose limit_req key is
# empty ($server_name is empty here), so the key is a constant. Run as
# root, nginx's workers would switch to nobody, who cannot enter the 0700
# temporary directory; the configuration then says `user root`.
# $request_time reads the wall clock and $upstream_*_time the monotonic
# one, each truncated to the ms, so for a request nginx did not hold the
# two headers can differ by 1 ms either way (upstream above total).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${SURGE_CACHE:-$HOME/.cache/surge}
RATE=${NGINX_RATE:-${SURGE_NGINX_RATE:-10}}
RATE=${RATE%r/s}
BURST=${NGINX_BURST:-${SURGE_NGINX_BURST:-10}}
READY_SECS=${SURGE_NGINX_READY_SECS:-60}
MODEL=surge-sim
UPSTREAM=${NGINX_UPSTREAM:-}

ENGINE=nginx ENGINE_NAME="nginx" STOP_TENTHS=50 TAIL_LINES=20
# shellcheck source=scripts/lib/engine.sh
. "$ROOT/scripts/lib/engine.sh"

[[ $RATE =~ ^[0-9]+$ ]] || die "NGINX_RATE must be whole requests per second, N or Nr/s (e.g. 2r/s), got '${NGINX_RATE:-$SURGE_NGINX_RATE}'"
[ "$RATE" -gt 0 ] || die "NGINX_RATE must be at least 1r/s"
uint NGINX_BURST "$BURST"
uint SURGE_NGINX_READY_SECS "$READY_SECS"
# UPSTREAM_ADDR is the upstream's HOST:PORT for nginx's upstream block;
# UPSTREAM its root URL.
UPSTREAM_ADDR=
if [ -n "$UPSTREAM" ]; then
	[[ $UPSTREAM =~ ^http://([^/?#@]+)(/v1)?/?$ ]] ||
		die "NGINX_UPSTREAM must be http://HOST:PORT or http://HOST:PORT/v1, got '$UPSTREAM'"
	UPSTREAM_ADDR=${BASH_REMATCH[1]}
	UPSTREAM=http://$UPSTREAM_ADDR
fi

mode=
case ${1:-} in
--serve) mode=serve ;;
--install-only) mode=install ;;
--) mode=run; shift; [ $# -gt 0 ] || usage ;;
*) usage ;;
esac

# --- install ----------------------------------------------------------------

# NGINX is the binary; LIBS the library path it needs (empty: the system's).
NGINX=${SURGE_NGINX_BIN:-}
LIBS=

# candidate prints the version of nginx apt would install; with root and no
# package lists yet, it updates them first.
candidate() {
	local v
	v=$(apt-cache policy nginx 2>/dev/null | awk '/Candidate:/ {print $2}')
	if { [ -z "$v" ] || [ "$v" = "(none)" ]; } && [ "$(id -u)" = 0 ]; then
		apt-get update -qq >/dev/null 2>&1 || true
		v=$(apt-cache policy nginx 2>/dev/null | awk '/Candidate:/ {print $2}')
	fi
	if [ -z "$v" ] || [ "$v" = "(none)" ]; then
		die "apt knows no nginx package (run apt-get update as root, or set SURGE_NGINX_BIN)"
	fi
	echo "$v"
}

# fetch PKG[=VERSION] DIR downloads a package with apt-get download (no root
# needed) and unpacks it into DIR.
fetch() {
	local dl
	dl=$(mktemp -d "$CACHE/.nginx-dl.XXXXXX")
	if ! (cd "$dl" && apt-get download "$1") >>"$CACHE/nginx-install.log" 2>&1; then
		rm -rf "$dl"
		die "apt-get download $1 failed; see $CACHE/nginx-install.log"
	fi
	dpkg-deb -x "$dl"/*.deb "$2" || { rm -rf "$dl"; die "dpkg-deb -x of $1 failed"; }
	rm -rf "$dl"
}

install_nginx() {
	if [ -n "$NGINX" ]; then
		[ -x "$NGINX" ] || die "SURGE_NGINX_BIN=$NGINX is not executable"
		return 0
	fi
	local tool
	for tool in apt-cache apt-get dpkg-deb ldd; do
		command -v "$tool" >/dev/null || die "$tool not found: this script fetches Debian's nginx (or set SURGE_NGINX_BIN)"
	done
	local version prefix
	version=$(candidate)
	prefix=$CACHE/nginx-${version//:/_}
	NGINX=$prefix/usr/sbin/nginx
	mkdir -p "$CACHE"
	exec 9>"$CACHE/.nginx.lock"
	flock 9 # one install at a time per cache directory
	if [ ! -x "$NGINX" ] || [ "$(cat "$prefix/install.stamp" 2>/dev/null)" != "nginx=$version" ]; then
		log "fetching Debian's nginx $version into $prefix"
		local t0=$EPOCHREALTIME tmp missing pkg
		rm -rf "$prefix"
		tmp=$(mktemp -d "$CACHE/.nginx-root.XXXXXX")
		: >"$CACHE/nginx-install.log"
		fetch "nginx=$version" "$tmp"
		# The libraries it links that this machine lacks: fetch nginx's
		# library dependencies (not libc, which must be the system's).
		missing=$(ldd "$tmp/usr/sbin/nginx" 2>/dev/null | awk '/not found/ {print $1}')
		if [ -n "$missing" ]; then
			log "this machine lacks $(echo "$missing" | tr '\n' ' '); fetching nginx's libraries"
			for pkg in $(apt-cache depends nginx | awk '$1 == "Depends:" && $2 ~ /^(lib|zlib)/ && $2 != "libc6" {print $2}' | sort -u); do
				fetch "$pkg" "$tmp"
			done
		fi
		mv -T "$tmp" "$prefix"
		printf '%s\n' "nginx=$version" >"$prefix/install.stamp"
		log "fetched in $(elapsed "$t0")s"
	fi
	exec 9>&-
	LIBS=$(find "$prefix" -name 'lib*.so*' -printf '%h\n' 2>/dev/null | sort -u | paste -sd: -)
	LD_LIBRARY_PATH=$LIBS "$NGINX" -v >/dev/null 2>&1 ||
		die "$NGINX does not run: $(LD_LIBRARY_PATH=$LIBS "$NGINX" -v 2>&1 | tail -n 1)"
}

install_nginx
[ "$mode" = install ] && { echo "$NGINX"; exit 0; }

# --- run --------------------------------------------------------------------

TMP=$(mktemp -d "${TMPDIR:-/tmp}/surge-nginx.XXXXXX")
LOG=$TMP/error.log
ACCESS=${SURGE_NGINX_ACCESS_LOG:-$TMP/access.log}
SIM_LOG=$TMP/sim.log
PID=''
SIM_PID=''

# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	local status=$?
	set +e # (exit "$status") below must not end the trap
	sim_stop "$status"
	(exit "$status")
	engine_cleanup # stops nginx, shows its error log on failure, removes TMP
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

start_sim() {
	if [ -n "$UPSTREAM" ]; then
		return 0 # nginx goes in front of that server
	fi
	sim_start
	UPSTREAM_ADDR=127.0.0.1:$SIM_PORT UPSTREAM=http://127.0.0.1:$SIM_PORT
}

# write_conf writes nginx.conf for PORT.
write_conf() {
	local user=
	[ "$(id -u)" != 0 ] || user="user root;"
	cat >"$TMP/nginx.conf" <<EOF
# Written by surge's scripts/nginx-e2e.sh.
daemon off;
worker_processes 1;
$user
pid $TMP/nginx.pid;
error_log $LOG warn;
events { worker_connections 1024; }
http {
	client_body_temp_path $TMP/client_body;
	proxy_temp_path $TMP/proxy;
	fastcgi_temp_path $TMP/fastcgi;
	uwsgi_temp_path $TMP/uwsgi;
	scgi_temp_path $TMP/scgi;

	log_format gateway '\$http_x_request_id\t\$status\t\$request_time\t\$upstream_response_time\t\$upstream_header_time\t\$upstream_connect_time\t\$limit_req_status';
	access_log $ACCESS gateway;

	# One bucket for every request: a constant key (an empty one, such as
	# \$server_name here, is not counted at all).
	limit_req_zone "all" zone=gateway:1m rate=${RATE}r/s;
	# Neither a refusal nor a delay in the error log: the access log has both.
	limit_req_log_level info;

	upstream engine {
		server $UPSTREAM_ADDR;
		keepalive 16;
	}

	server {
		listen 127.0.0.1:$PORT;

		location = /gateway-health {
			access_log off;
			return 204;
		}

		location / {
			# Beyond the rate, up to BURST requests wait in nginx's own
			# queue (no nodelay); beyond the burst, 429.
			limit_req zone=gateway burst=$BURST;
			limit_req_status 429;

			proxy_pass http://engine;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			# The upstream's own address, not nginx's default (the
			# upstream block's name, "engine"): Ollama answers 403 to a
			# Host header that is not a loopback address or localhost.
			proxy_set_header Host $UPSTREAM_ADDR;
			proxy_buffering off;

			# Evaluated when nginx sends the response headers: the
			# request's time so far, and the upstream's to its headers.
			add_header X-Request-Time "\${request_time}s" always;
			add_header X-Upstream-Header-Time "\${upstream_header_time}s" always;
		}
	}
}
EOF
}

start_nginx() {
	for _ in 1 2 3; do
		PORT=$(free_port)
		write_conf
		: >"$LOG"
		LD_LIBRARY_PATH=$LIBS setsid "$NGINX" -p "$TMP" -c "$TMP/nginx.conf" -e "$LOG" >"$TMP/nginx.out" 2>&1 </dev/null &
		PID=$!
		for _ in $(seq 100); do
			curl -fsS -o /dev/null "http://127.0.0.1:$PORT/gateway-health" 2>/dev/null && return 0
			kill -0 "$PID" 2>/dev/null || break
			sleep 0.1
		done
		if grep -q 'Address already in use' "$LOG" "$TMP/nginx.out"; then
			wait "$PID" 2>/dev/null || true
			PID=
			continue
		fi
		cat "$TMP/nginx.out" >&2
		die "nginx did not come up; see $LOG"
	done
	die "could not bind a loopback port for nginx"
}

# wait_upstream polls until GET /v1/models through nginx succeeds: the
# upstream's model is not this script's to know, and listing the models
# generates nothing.
wait_upstream() {
	local deadline=$((SECONDS + READY_SECS))
	until curl -fsS -o /dev/null --max-time 10 "http://127.0.0.1:$PORT/v1/models" 2>/dev/null; do
		kill -0 "$PID" 2>/dev/null || die "nginx exited; see $LOG"
		[ $SECONDS -lt $deadline ] || die "GET /v1/models through nginx to $UPSTREAM failed for ${READY_SECS}s (is NGINX_UPSTREAM an OpenAI-compatible server's root?); see $LOG"
		sleep 0.5
	done
}

t0=$EPOCHREALTIME
start_sim
start_nginx
# One request through nginx (it counts against the limit).
if [ -n "$SIM_PID" ]; then
	wait_ready
	front="surge sim on 127.0.0.1:$SIM_PORT"
else
	wait_upstream
	front=$UPSTREAM
fi
log "nginx $(LD_LIBRARY_PATH=$LIBS "$NGINX" -v 2>&1 | sed 's/.*nginx\///') on 127.0.0.1:$PORT in front of $front after $(elapsed "$t0")s (limit_req ${RATE}r/s, burst $BURST)"

export NGINX_BASE_URL="http://127.0.0.1:$PORT/v1"
export NGINX_UPSTREAM="$UPSTREAM"
[ -z "$SIM_PID" ] || export NGINX_MODEL="$MODEL"
export NGINX_ACCESS_LOG="$ACCESS" NGINX_ERROR_LOG="$LOG"
export NGINX_LIMIT_RATE="$RATE" NGINX_LIMIT_BURST="$BURST"
export NGINX_CONF="$TMP/nginx.conf" NGINX_BIN="$NGINX"
echo "NGINX_BASE_URL=$NGINX_BASE_URL"
echo "NGINX_UPSTREAM=$NGINX_UPSTREAM"
echo "NGINX_ACCESS_LOG=$NGINX_ACCESS_LOG"
echo "NGINX_LIMIT_RATE=$NGINX_LIMIT_RATE NGINX_LIMIT_BURST=$NGINX_LIMIT_BURST"
if [ -n "$SIM_PID" ]; then
	export SIM_BASE_URL="http://127.0.0.1:$SIM_PORT/v1"
	echo "SIM_BASE_URL=$SIM_BASE_URL"
else
	unset SIM_BASE_URL # not this run's: no simulator runs
fi

run_or_serve "$@"
