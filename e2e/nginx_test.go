package e2e

import (
	"bufio"
	"cmp"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/record"
)

// nginxLine is one line of the access log scripts/nginx-e2e.sh writes:
// X-Request-Id, status, $request_time, $upstream_response_time,
// $upstream_header_time, $upstream_connect_time, $limit_req_status.
type nginxLine struct {
	status              int
	request, upResponse int64 // ns; upResponse is record.None without an upstream
	limit               string
}

// nginxSeconds reads one of nginx's times ("0.123"), or a list of them
// ("0.001, 0.120" when nginx tried the upstream twice: their sum). "-" (no
// upstream) is record.None.
func nginxSeconds(s string) (int64, error) {
	if s == "-" {
		return record.None, nil
	}
	var sum float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return int64(math.Round(sum * 1e9)), nil
}

// readNginxLog reads the access log from offset, by request id. Lines
// without an id (not surge's) are counted, not kept.
func readNginxLog(t *testing.T, path string, offset int64) (byID map[string]nginxLine, anonymous int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, 0); err != nil {
		t.Fatal(err)
	}
	byID = map[string]nginxLine{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) != 7 {
			t.Fatalf("access log line %q: %d fields, want 7", sc.Text(), len(fields))
		}
		if fields[0] == "-" {
			anonymous++
			continue
		}
		var l nginxLine
		var err1, err2, err3 error
		l.status, err1 = strconv.Atoi(fields[1])
		l.request, err2 = nginxSeconds(fields[2])
		l.upResponse, err3 = nginxSeconds(fields[3])
		l.limit = fields[6]
		if err := cmp.Or(err1, err2, err3); err != nil || l.request == record.None {
			t.Fatalf("access log line %q: %v", sc.Text(), err)
		}
		if _, dup := byID[fields[0]]; dup {
			t.Fatalf("request id %s logged twice", fields[0])
		}
		byID[fields[0]] = l
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return byID, anonymous
}

// pct is the nearest-rank percentile of sorted values.
func pct(sorted []float64, p float64) float64 {
	return sorted[max(int(math.Ceil(p*float64(len(sorted))))-1, 0)]
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}

// TestNginxGatewayWait runs surge through nginx (scripts/nginx-e2e.sh)
// whose limit_req queues requests beyond its rate (burst, no nodelay) and
// refuses beyond the burst with 429, and compares, request by request, the
// gateway wait surge reads from nginx's response headers
// (--gateway-timing header:X-Request-Time,X-Upstream-Header-Time: nginx's
// $request_time when it sends the headers, minus $upstream_header_time)
// with nginx's own access log, joined by X-Request-Id.
//
// From the log the wait is $request_time − $upstream_response_time, not
// − $upstream_header_time: the log line is written when the streamed
// response has ended, so $request_time then spans the whole stream, and
// only the upstream's whole response time takes the stream out again.
// Both differences are the time before nginx turned to the upstream (the
// limiter's delay, reading the request); the log's also holds the moment
// between the upstream's last byte and the client's, which with
// proxy_buffering off is one event-loop turn. $request_time − header time
// would add each request's stream (~0.3 s here) to its wait.
func TestNginxGatewayWait(t *testing.T) {
	base, logPath := os.Getenv("NGINX_BASE_URL"), os.Getenv("NGINX_ACCESS_LOG")
	if base == "" || logPath == "" {
		t.Skip("no gateway: run through scripts/nginx-e2e.sh")
	}
	rate, burst := envInt(t, "NGINX_LIMIT_RATE", 10), envInt(t, "NGINX_LIMIT_BURST", 10)
	st, err := os.Stat(logPath)
	if err != nil {
		t.Fatal(err)
	}
	offset := st.Size()

	// Calm, then three times the limiter's rate, then calm: the calm
	// phases' requests mostly pass undelayed (a Poisson gap under 1/rate
	// still delays one a little), the overload fills the burst queue (each
	// waits up to burst/rate) and the rest is refused.
	dir := t.TempDir()
	calm := float64(rate) / 4
	phases := fmt.Sprintf("phases:\n  - {name: calm, duration: 5s, rate: %g}\n  - {name: over, duration: 4s, rate: %d}\n  - {name: after, duration: 4s, rate: %g}\n",
		calm, 3*rate, calm)
	if err := os.WriteFile(filepath.Join(dir, "phases.yaml"), []byte(phases), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	// No prompt calibration: its probes would count against the limiter.
	args := []string{"run", "-f", filepath.Join(dir, "phases.yaml"), "--target", base, "--model", cmp.Or(os.Getenv("NGINX_MODEL"), "surge-sim"),
		"--prompt-tokens", "64", "--output-tokens", "16", "--prompt-calibration", "off",
		"--gateway-timing", "header:X-Request-Time,X-Upstream-Header-Time", "-q", "-o", out}
	cmd := exec.Command(surgeBin, args...)
	b, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	t.Logf("surge %s → exit %d\n%s", strings.Join(args, " "), code, b)
	if code != 0 && code != 1 && code != 5 { // 1: the 429s fail the SLO
		t.Fatalf("exit %d", code)
	}

	recs := readRecords(t, filepath.Join(out, "requests.jsonl"))
	logged, anonymous := readNginxLog(t, logPath, offset)

	var diffs []float64           // |surge − nginx log|, ms
	var passed, delayed []float64 // surge's gateway wait, ms, by nginx's $limit_req_status
	var clientGap []float64       // surge's headers − sent minus nginx's own total at the headers, ms
	var refused int
	ids := map[string]bool{}
	for _, r := range recs {
		ids[r.ID] = true
		l, ok := logged[r.ID]
		switch {
		case r.Outcome == record.GeneratorDrop:
			continue // never sent
		case !ok:
			t.Errorf("record %s (%s, status %d) has no line in nginx's access log", r.ID, r.Outcome, r.Status)
			continue
		case l.status != r.Status:
			t.Errorf("record %s: surge saw status %d, nginx logged %d", r.ID, r.Status, l.status)
			continue
		}
		switch r.Outcome {
		case record.RateLimited:
			// (c) a 429 is the limiter's refusal, recorded as rate_limited.
			refused++
			if l.limit != "REJECTED" {
				t.Errorf("record %s: 429 but nginx's limit_req_status is %s", r.ID, l.limit)
			}
		case record.OK:
			if r.GatewayNs == record.None || l.upResponse == record.None {
				t.Errorf("record %s (limit_req %s): no gateway wait: surge %d, nginx upstream_response_time %d", r.ID, l.limit, r.GatewayNs, l.upResponse)
				continue
			}
			wait := float64(r.GatewayNs) / 1e6
			nginxWait := float64(l.request-l.upResponse) / 1e6
			diffs = append(diffs, math.Abs(wait-nginxWait))
			switch l.limit {
			case "PASSED":
				passed = append(passed, wait)
			case "DELAYED":
				delayed = append(delayed, wait)
			default:
				t.Errorf("record %s: 200 with limit_req_status %q", r.ID, l.limit)
			}
			if r.UpstreamNs != record.None && r.HeadersNs != record.None && r.SentNs != record.None {
				clientGap = append(clientGap, float64(r.HeadersNs-r.SentNs-r.GatewayNs-r.UpstreamNs)/1e6)
			}
		default:
			t.Errorf("record %s: outcome %s (status %d, nginx %s)", r.ID, r.Outcome, r.Status, l.limit)
		}
	}
	for id, l := range logged {
		if !ids[id] {
			t.Errorf("nginx logged request %s (status %d), which has no record", id, l.status)
		}
		if l.status == 429 && l.limit != "REJECTED" {
			t.Errorf("nginx answered %s 429 with limit_req_status %s", id, l.limit)
		}
	}
	if len(diffs) < 20 || refused == 0 {
		t.Fatalf("%d requests joined with a wait, %d refused: the run must exceed the limit (rate %d/s, burst %d)", len(diffs), refused, rate, burst)
	}

	// (a) surge's per-request gateway wait against nginx's access log.
	slices.Sort(diffs)
	// Both sides are whole ms (nginx's resolution): count them by value.
	var exact, oneMs int
	for _, d := range diffs {
		switch math.Round(d) {
		case 0:
			exact++
		case 1:
			oneMs++
		}
	}
	line := fmt.Sprintf("|surge gateway_ns − nginx ($request_time − $upstream_response_time)|, ms, n=%d: p50 %.2f, p95 %.2f, max %.2f (%d at 0 ms, %d at 1 ms, %d above)",
		len(diffs), pct(diffs, 0.5), pct(diffs, 0.95), diffs[len(diffs)-1], exact, oneMs, len(diffs)-exact-oneMs)
	t.Log(line)
	if pct(diffs, 0.95) > 5 {
		t.Errorf("surge's gateway wait disagrees with nginx's access log: %s", line)
	}

	// (b) the limiter's queue: the requests nginx delayed waited well above
	// the ones it passed at once.
	slices.Sort(passed)
	slices.Sort(delayed)
	if len(passed) < 5 || len(delayed) < 5 {
		t.Fatalf("%d requests passed at once and %d delayed: want both", len(passed), len(delayed))
	}
	queue := fmt.Sprintf("surge's gateway wait, ms: PASSED n=%d p50 %.1f p95 %.1f max %.1f; DELAYED n=%d p50 %.1f p95 %.1f max %.1f (burst/rate = %d ms); %d refused with 429",
		len(passed), pct(passed, 0.5), pct(passed, 0.95), passed[len(passed)-1],
		len(delayed), pct(delayed, 0.5), pct(delayed, 0.95), delayed[len(delayed)-1], 1000*burst/rate, refused)
	t.Log(queue)
	if pct(delayed, 0.5) <= 10*max(pct(passed, 0.95), 1) {
		t.Errorf("the limiter's queue is not visible in surge's gateway wait: %s", queue)
	}

	// surge's own clock: its wait for the headers beyond nginx's total at
	// the headers (the loopback network, surge's and nginx's event loops).
	if len(clientGap) > 0 {
		slices.Sort(clientGap)
		t.Logf("surge headers − sent − nginx's X-Request-Time, ms, n=%d: min %.2f, p50 %.2f, p95 %.2f, max %.2f",
			len(clientGap), clientGap[0], pct(clientGap, 0.5), pct(clientGap, 0.95), clientGap[len(clientGap)-1])
	}
	t.Logf("%d records, %d access-log lines of surge's requests, %d other lines", len(recs), len(logged), anonymous)
	if a := os.Getenv("SURGE_ARTIFACTS"); a != "" {
		os.WriteFile(filepath.Join(a, "nginx-gateway.txt"), []byte(line+"\n"+queue+"\n"), 0o644)
	}
}
