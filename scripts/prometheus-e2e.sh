#!/usr/bin/env bash
# prometheus-e2e.sh: a real Prometheus (Debian's package) with its
# remote-write receiver on, scraping surge's simulator as it would scrape
# vLLM, for surge's end-to-end tests of --metrics-out prometheus-rw=URL
# and of the Grafana dashboard's queries (deploy/grafana/surge.json).
#
# Installs Debian's prometheus when this machine has none (apt-get: root,
# or sudo), builds surge, starts `surge sim` on a free loopback port and
# Prometheus on another, with its own configuration and storage in a
# temporary directory: --web.enable-remote-write-receiver, a 1 s scrape of
# the simulator's /metrics (vLLM's metric names) as job "vllm". It waits
# until Prometheus is ready and has scraped the simulator once, then runs
# a command or serves until Ctrl-C. Everything it started is stopped and
# the temporary directory removed on exit.
#
# Usage:
#   scripts/prometheus-e2e.sh -- COMMAND [ARG...]   run COMMAND
#   scripts/prometheus-e2e.sh --serve               serve until Ctrl-C
#   scripts/vllm-e2e.sh -- bash -c 'PROMETHEUS_SCRAPE=$VLLM_METRICS_URL scripts/prometheus-e2e.sh -- COMMAND'
#                                                   Prometheus scraping vLLM instead
#
# COMMAND runs with these variables exported:
#   PROMETHEUS_URL    http://127.0.0.1:PORT (query /api/v1/query; push to
#                     /api/v1/write)
#   SIM_BASE_URL      http://127.0.0.1:PORT/v1, the simulator Prometheus scrapes
#   SIM_MODEL         the model it serves (surge-sim)
#                     (neither with PROMETHEUS_SCRAPE: no simulator runs)
#   PROMETHEUS_LOG    Prometheus's log
# The script exits with COMMAND's status.
#
# Environment (optional): PROMETHEUS_SCRAPE, an engine's metrics URL
# (http://HOST:PORT/metrics) to scrape as job "vllm" instead of starting
# the simulator; SURGE_PROMETHEUS_BIN, a prometheus binary to run instead
# of Debian's (then nothing is installed); SURGE_PROMETHEUS_READY_SECS
# (default 60).
#
# Facts this relies on (Debian 12's prometheus 2.42.0+ds-5+deb12u1): the
# package does not start a server where there is no systemd (containers);
# where it does, its server listens on :9090 and this one on another port.
set -euo pipefail

ENGINE=prometheus
ENGINE_NAME=Prometheus
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib/engine.sh
. "$ROOT/scripts/lib/engine.sh"

mode=''
case "${1:-}" in
--serve) mode=serve ;;
--) mode=run; shift; [ $# -gt 0 ] || usage ;;
*) usage ;;
esac

READY_SECS=${SURGE_PROMETHEUS_READY_SECS:-60}
uint SURGE_PROMETHEUS_READY_SECS "$READY_SECS"
STOP_TENTHS=50
TAIL_LINES=40
MODEL=surge-sim

PROM=${SURGE_PROMETHEUS_BIN:-}
if [ -z "$PROM" ]; then
	if ! command -v prometheus >/dev/null; then
		log "installing Debian's prometheus"
		sudo=''
		[ "$(id -u)" = 0 ] || sudo=sudo
		$sudo apt-get update -qq >/dev/null
		DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends prometheus >/dev/null
	fi
	PROM=$(command -v prometheus)
fi
log "$("$PROM" --version 2>&1 | head -n 1)"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/surge-prometheus.XXXXXX")
LOG=$TMP/prometheus.log
SIM_LOG=$TMP/sim.log
PID=''
SIM_PID=''

# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	local status=$?
	set +e
	sim_stop "$status"
	(exit "$status")
	engine_cleanup # stops Prometheus, shows its log on failure, removes TMP
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

SCRAPE=${PROMETHEUS_SCRAPE:-}
if [ -z "$SCRAPE" ]; then
	sim_start
	SCRAPE=http://127.0.0.1:$SIM_PORT/metrics
fi
[[ $SCRAPE =~ ^http://([^/]+)(/.*)$ ]] || die "PROMETHEUS_SCRAPE must be http://HOST:PORT/PATH, got '$SCRAPE'"
SCRAPE_HOST=${BASH_REMATCH[1]} SCRAPE_PATH=${BASH_REMATCH[2]}

for _ in 1 2 3; do
	PORT=$(free_port)
	cat >"$TMP/prometheus.yml" <<CONF
# Written by surge's scripts/prometheus-e2e.sh.
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: vllm
    metrics_path: '$SCRAPE_PATH'
    static_configs:
      - targets: ['$SCRAPE_HOST']
CONF
	setsid "$PROM" --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/data" \
		--web.listen-address="127.0.0.1:$PORT" --web.enable-remote-write-receiver \
		--storage.tsdb.retention.time=1d >"$LOG" 2>&1 </dev/null &
	PID=$!
	deadline=$((SECONDS + READY_SECS))
	until curl -fsS -o /dev/null "http://127.0.0.1:$PORT/-/ready" 2>/dev/null; do
		kill -0 "$PID" 2>/dev/null || break
		[ $SECONDS -lt $deadline ] || die "Prometheus not ready after ${READY_SECS}s; see $LOG"
		sleep 0.2
	done
	kill -0 "$PID" 2>/dev/null && break
	PID=''
done
[ -n "$PID" ] || die "Prometheus did not start; see $LOG"
deadline=$((SECONDS + READY_SECS))
until curl -fsS "http://127.0.0.1:$PORT/api/v1/query?query=up%7Bjob%3D%22vllm%22%7D%3D%3D1" 2>/dev/null | grep -q '"value"'; do
	[ $SECONDS -lt $deadline ] || die "Prometheus has not scraped $SCRAPE after ${READY_SECS}s; see $LOG"
	sleep 0.5
done

export PROMETHEUS_URL=http://127.0.0.1:$PORT PROMETHEUS_LOG=$LOG
if [ -n "$SIM_PID" ]; then
	export SIM_BASE_URL=http://127.0.0.1:$SIM_PORT/v1 SIM_MODEL=$MODEL
fi
log "Prometheus at $PROMETHEUS_URL (remote-write: $PROMETHEUS_URL/api/v1/write), scraping $SCRAPE"
run_or_serve "$@"
