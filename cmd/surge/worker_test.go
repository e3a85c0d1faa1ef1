package main

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

// proc is surge in a child process (the test binary, see TestMain).
type proc struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  strings.Builder
	done chan struct{}
	url  chan string // the coordinator's URL, once it says it listens
}

var listening = regexp.MustCompile(`coordinator: listening on (http://\S+);`)

func start(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(os.Args[0], args...), done: make(chan struct{}), url: make(chan string, 1)}
	p.cmd.Env = append(os.Environ(), "SURGE_TEST_CLI=1")
	p.cmd.Stdout = nil
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.out.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				p.url <- m[1]
			}
		}
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		p.wait()
	})
	return p
}

func (p *proc) wait() int {
	<-p.done
	p.cmd.Wait()
	return p.cmd.ProcessState.ExitCode()
}

func (p *proc) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func resultNotes(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r struct{ Notes []string }
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r.Notes
}

func fleetRecords(t *testing.T, dir string) []record.Record {
	t.Helper()
	var recs []record.Record
	if err := record.ReadFile(filepath.Join(dir, "requests.jsonl"), func(r *record.Record) error {
		recs = append(recs, *r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return recs
}

// A coordinator and two workers as three processes on loopback: one run
// folder holding one record per scheduled arrival (the same arrivals as a
// single process's run of the same command), every worker exiting 0 —
// and, in a second run, a worker killed mid-run whose unsent arrivals are
// generator_drop records naming it; in a third, a worker given SIGINT
// (Ctrl-C) mid-run, which sends its last records, exits 1 and is recorded
// as interrupted, not as a dropped connection (REVIEW15 #20). Real time:
// ~10 s, the proof that the binary itself works as a fleet.
func TestWorkersMultiProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time multi-process test")
	}
	args := []string{"run", "-q", "--rate", "20", "--duration", "2s", "--seed", "3", "--prompt-tokens", "64", "--output-tokens", "16"}
	one := filepath.Join(t.TempDir(), "one")
	if code, _, stderr := surge(t, append(args, "-o", one)...); !ran(code) {
		t.Fatalf("single process: exit %d: %s", code, stderr)
	}
	want := fleetRecords(t, one)

	for _, mode := range []string{"whole", "kill", "interrupt"} {
		kill := mode != "whole" // w1 ends mid-run
		dir := filepath.Join(t.TempDir(), "fleet")
		coord := start(t, append(args, "-o", dir, "--workers", "2", "--coordinator-listen", "127.0.0.1:0", "--workers-wait", "20s")...)
		var url string
		select {
		case url = <-coord.url:
		case <-time.After(20 * time.Second):
			t.Fatalf("no coordinator: %s", coord.stderr())
		}
		w0 := start(t, "worker", "--coordinator", url, "--name", "w0")
		w1 := start(t, "worker", "--coordinator", url, "--name", "w1")
		if kill {
			// Killed 0.7 s after its run started (it says so on stderr).
			go func() {
				for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
					if strings.Contains(w1.stderr(), " arrivals (clock offset") {
						time.Sleep(700 * time.Millisecond)
						break
					}
				}
				if mode == "kill" {
					w1.cmd.Process.Signal(syscall.SIGKILL)
				} else {
					w1.cmd.Process.Signal(syscall.SIGINT)
				}
			}()
		}
		code := coord.wait()
		if !ran(code) {
			t.Fatalf("coordinator (kill %v): exit %d: %s", kill, code, coord.stderr())
		}
		if c := w0.wait(); c != 0 {
			t.Fatalf("w0: exit %d: %s", c, w0.stderr())
		}
		got := fleetRecords(t, dir)
		if len(got) != len(want) {
			t.Fatalf("kill %v: %d records, one process %d\n%s", kill, len(got), len(want), coord.stderr())
		}
		m, err := record.ReadManifest(filepath.Join(dir, "manifest.json"))
		if err != nil || m.Distributed == nil || len(m.Distributed.Each) != 2 {
			t.Fatalf("manifest: %v %+v", err, m)
		}
		drops := 0
		for _, r := range got {
			switch {
			case mode == "interrupt" && (r.Outcome == record.GeneratorDrop || r.Outcome == record.Cancelled):
				// Interrupted: its requests in flight are its own cancelled
				// records, its arrivals not yet sent generator_drop, both
				// naming the interruption.
				if r.Cause != record.CauseWorkerInterrupted || !strings.HasPrefix(r.Error, "worker w1 interrupted at") {
					t.Fatalf("seq %d: %s %q (cause %q)\n%s", r.Seq, r.Outcome, r.Error, r.Cause, coord.stderr())
				}
				if r.Outcome == record.GeneratorDrop {
					drops++
				}
			case r.Outcome == record.GeneratorDrop || r.Outcome == record.Cancelled && r.Cause == record.CauseWorkerLost:
				// Killed: its arrivals due before the kill are cancelled (in
				// flight), those after it generator_drop (never sent).
				drops++
				if !strings.Contains(r.Error, "worker w1 lost at") || !strings.Contains(r.Error, "connection dropped") {
					t.Fatalf("drop: %q", r.Error)
				}
			case r.Outcome != record.OK:
				t.Fatalf("seq %d: %s %s", r.Seq, r.Outcome, r.Error)
			}
		}
		if mode == "interrupt" {
			if c := w1.wait(); c != 1 || !strings.Contains(w1.stderr(), "the coordinator recorded this worker as interrupted") {
				t.Fatalf("interrupted w1: exit %d: %s", c, w1.stderr())
			}
			g := m.Distributed.Each[slices.IndexFunc(m.Distributed.Each, func(g record.Generator) bool { return g.Name == "w1" })]
			if s := coord.stderr(); !g.Interrupted || !strings.Contains(s, "INTERRUPTED: worker w1 interrupted at") || strings.Contains(s, "connection dropped") {
				t.Fatalf("coordinator: %+v\n%s", g, s)
			}
		}
		if kill != (drops > 0) {
			t.Fatalf("kill %v: %d drops\n%s", kill, drops, coord.stderr())
		}
		if !kill {
			if c := w1.wait(); c != 0 {
				t.Fatalf("w1: exit %d: %s", c, w1.stderr())
			}
			// surge report rebuilds the per-worker lines from the manifest:
			// the re-render's notes are the run's own (REVIEW15 #23).
			before := resultNotes(t, dir)
			if len(before) == 0 || !strings.Contains(strings.Join(before, "\n"), "worker 1 w") {
				t.Fatalf("run's notes without the worker lines: %q", before)
			}
			if code, _, stderr := surge(t, "report", dir); code != 0 {
				t.Fatalf("report: exit %d: %s", code, stderr)
			}
			if after := resultNotes(t, dir); !slices.Equal(after, before) {
				t.Fatalf("re-rendered notes %q, the run's %q", after, before)
			}
		}
	}
}

// A worker whose coordinator is unreachable exits 3 naming the address.
func TestWorkerUnreachableExits3(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	code, _, stderr := surge(t, "worker", "--coordinator", url, "--connect-timeout", "300ms")
	if code != exitTarget || !strings.Contains(stderr, "coordinator "+url+" unreachable") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

// What --workers cannot do is refused before anything runs, naming the flag.
func TestWorkersRefusals(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--workers", "2", "--simulate"}, "--workers: workers send live requests"},
		{[]string{"run", "--workers", "2", "--sessions"}, "--sessions: sessions cannot be split"},
		{[]string{"run", "--workers", "2", "--shard", "0/2"}, "--shard: static shards and --workers"},
		{[]string{"burst", "--workers", "2", "--max-cost", "1", "--price-input", "1", "--price-output", "1"}, "--max-cost: a budget"},
		{[]string{"worker"}, "--coordinator: required"},
	} {
		code, _, stderr := surge(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d: %s", tc.args, code, stderr)
		}
	}
}

// Workers that do not come: the coordinator gives up, naming how many came.
func TestWorkersWaitTimeout(t *testing.T) {
	code, _, stderr := surge(t, "run", "-q", "--workers", "2", "--coordinator-listen", "127.0.0.1:0", "--workers-wait", "300ms", "-o", filepath.Join(t.TempDir(), "r"))
	if code != exitTarget || !strings.Contains(stderr, "only 0 of 2 workers registered within 300ms") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

// nsScript runs, inside a user and network namespace of its own (unshare
// -rn), the simulator and a coordinator on 10.77.0.1 and two workers in a
// second network namespace (10.77.0.2) joined to it by a veth pair: the
// workers reach the coordinator and the target over a link, not loopback.
const nsScript = `set -e
ip link set lo up
unshare -n sleep 60 &
B=$!
sleep 0.2
ip link add va type veth peer name vb
ip link set vb netns $B
ip addr add 10.77.0.1/24 dev va
ip link set va up
nsenter -t $B -n ip link set lo up
nsenter -t $B -n ip addr add 10.77.0.2/24 dev vb
nsenter -t $B -n ip link set vb up
"$BIN" sim --addr 10.77.0.1:18000 2>/dev/null &
SIM=$!
"$BIN" run -q --target http://10.77.0.1:18000/v1 --rate 20 --duration 2s --seed 3 --prompt-tokens 64 --output-tokens 16 \
  --workers 2 --coordinator-listen 10.77.0.1:17777 -o "$DIR" 2>"$DIR.coord" &
C=$!
nsenter -t $B -n "$BIN" worker --coordinator http://10.77.0.1:17777 --name ns0 2>"$DIR.w0" &
nsenter -t $B -n "$BIN" worker --coordinator http://10.77.0.1:17777 --name ns1 2>"$DIR.w1" &
code=0
wait $C || code=$?
kill $SIM $B 2>/dev/null || true
# 1 and 5 are verdicts (an SLO failed, or 40 requests could not decide
# one): the run ran.
case $code in 1|5) code=0 ;; esac
exit $code
`

// Two workers in another network namespace than the coordinator and the
// target (when this machine lets a test create namespaces): one folder,
// one record per arrival, each worker's offset measured over the link.
func TestWorkersAcrossNetworkNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time multi-process test")
	}
	for _, tool := range []string{"unshare", "nsenter", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skip("no " + tool)
		}
	}
	if err := exec.Command("unshare", "-rn", "ip", "link", "add", "va", "type", "veth", "peer", "name", "vb").Run(); err != nil {
		t.Skipf("cannot create network namespaces with a veth pair here: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "ns")
	cmd := exec.Command("unshare", "-rn", "bash", "-c", nsScript)
	cmd.Env = append(os.Environ(), "SURGE_TEST_CLI=1", "BIN="+os.Args[0], "DIR="+dir)
	out, err := cmd.CombinedOutput()
	logs := func() string {
		var b strings.Builder
		for _, f := range []string{".coord", ".w0", ".w1"} {
			s, _ := os.ReadFile(dir + f)
			b.WriteString(f + ":\n" + string(s))
		}
		return b.String()
	}
	if err != nil {
		t.Fatalf("%v: %s\n%s", err, out, logs())
	}
	recs := fleetRecords(t, dir)
	m, err := record.ReadManifest(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var arrivals int64
	for _, g := range m.Distributed.Each {
		arrivals += g.Arrivals
		if g.Lost || g.Records != g.Arrivals || g.RTTNs <= 0 {
			t.Errorf("worker %+v", g)
		}
	}
	if int64(len(recs)) != arrivals || arrivals == 0 {
		t.Fatalf("%d records, %d arrivals\n%s", len(recs), arrivals, logs())
	}
	for _, r := range recs {
		if r.Outcome != record.OK || r.Shard != int(r.Seq%2) {
			t.Fatalf("seq %d shard %d: %s %s", r.Seq, r.Shard, r.Outcome, r.Error)
		}
	}
	t.Logf("%d records over a veth link; %s", len(recs), strings.TrimSpace(logs()))
}

// A worker pointed at a server that is not a coordinator (a 404 to the
// clock: the wrong port) stops at once saying so, exit 3, no Go "<nil>";
// a malformed --coordinator is a usage error, not a refusal.
func TestWorkerNotACoordinator(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	start := time.Now()
	code, _, stderr := surge(t, "worker", "--coordinator", srv.URL, "--connect-timeout", "20s")
	if code != exitTarget || !strings.Contains(stderr, srv.URL+" answered 404 Not Found to /fleet/v1/time: not a surge coordinator (wrong port?)") || strings.Contains(stderr, "<nil>") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("took %s: a 404 will not heal, no retries", el)
	}
	for _, bad := range []string{"127.0.0.1:7777", "ftp://x", "http://[::1"} {
		code, _, stderr := surge(t, "worker", "--coordinator", bad)
		if code != exitUsage || strings.Contains(stderr, "refused") || !strings.Contains(stderr, "--coordinator: ") {
			t.Errorf("%s: exit %d: %s", bad, code, stderr)
		}
	}
}

// While the coordinator is not there yet, the worker says it is waiting.
func TestWorkerSaysItWaits(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	code, _, stderr := surge(t, "worker", "--coordinator", url, "--connect-timeout", "300ms", "--name", "w9")
	if code != exitTarget || !strings.Contains(stderr, "worker w9: waiting for the coordinator at "+url+" (up to 300ms)") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

// --help names --workers' value int, not the backquoted "surge worker" in
// its usage (pflag takes a backquoted word for the value's name).
func TestWorkersHelpNamesTheValue(t *testing.T) {
	for _, c := range []string{"run", "burst", "capacity"} {
		_, out, errs := surge(t, c, "--help")
		if help := out + errs; !strings.Contains(help, "--workers int ") || strings.Contains(help, "--workers surge") {
			t.Errorf("surge %s --help: --workers is not shown as --workers int", c)
		}
	}
}
