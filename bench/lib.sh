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

# busy prints the busy ticks (all but idle and iowait) of CPU $GEN_CPU, then
# of CPU $SERVER_CPU.
busy() {
	awk -v a="cpu$GEN_CPU" -v b="cpu$SERVER_CPU" '$1 == a { ga = 0; for (i = 2; i <= 9; i++) if (i != 5 && i != 6) ga += $i }
		$1 == b { sb = 0; for (i = 2; i <= 9; i++) if (i != 5 && i != 6) sb += $i } END { printf "%d %d\n", ga, sb }' /proc/stat
}

# wait_quiet waits up to $QUIET seconds for a second in which both CPUs were
# under $QUIET_PCT % busy and sets quiet to "yes", "waited out Ns" or, with
# QUIET=0, "not checked".
wait_quiet() {
	local deadline=$((SECONDS + QUIET)) b0 b1 i
	quiet="not checked"
	((QUIET > 0)) || return 0
	while ((SECONDS < deadline)); do
		read -ra b0 <<<"$(busy)"
		sleep 1
		read -ra b1 <<<"$(busy)"
		for i in 0 1; do
			# /proc/stat counts 1/100 s ticks: over 1 s, ticks = percent.
			(((b1[i] - b0[i]) >= QUIET_PCT)) && continue 2
		done
		quiet=yes
		return 0
	done
	quiet="waited out ${QUIET}s"
}
