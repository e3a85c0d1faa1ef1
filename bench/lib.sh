# bench/lib.sh — shell helpers the bench scripts share (sourced, not run).

# wait_health ADDR LOG waits up to 5 s for bench/sseserver at ADDR to answer
# GET /health; if it never does, it prints the server's LOG and exits 1.
wait_health() {
	local i
	for i in $(seq 100); do
		curl -sf "http://$1/health" >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	curl -sf "http://$1/health" >/dev/null || { cat "$2" >&2; exit 1; }
}
