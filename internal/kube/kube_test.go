package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"

	"github.com/surge-bench/surge/internal/scaling"
)

// origin is the run's start in the recorded streams: the burst began 30 s
// later, at 04:00:30.
var origin = time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)

// latest is the newest Kubernetes time an object carries: when the change
// the watch reports happened.
func latest(o *Object) time.Time {
	t := o.Metadata.CreationTimestamp
	for _, c := range o.Status.Conditions {
		if c.LastTransitionTime.After(t) {
			t = c.LastTransitionTime
		}
	}
	if at, ok := o.running(); ok && at.After(t) {
		t = at
	}
	return t
}

type seen struct {
	typ  string
	obj  *Object
	node bool
}

func readStream(t *testing.T, name string, node bool) []seen {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []seen
	if err := Decode(f, func(typ string, o *Object) { out = append(out, seen{typ, o, node}) }); err != nil {
		t.Fatal(err)
	}
	return out
}

// replay feeds the recorded pod and node streams to a tracker in the order
// their changes happened, each seen by surge's clock 700 ms after
// Kubernetes' second-precision time (a watch's latency).
func replay(t *testing.T, pods, nodes string) *Tracker {
	t.Helper()
	var now time.Time
	tr := NewTracker(func() time.Time { return now })
	load := func(name string, fn func(*Object)) {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := Decode(bytes.NewReader(b), func(_ string, o *Object) { fn(o) }); err != nil {
			t.Fatal(err)
		}
	}
	load("pods-list.json", tr.Before)
	load("nodes-list.json", tr.NodesBefore)
	all := append(readStream(t, pods, false), readStream(t, nodes, true)...)
	slices.SortStableFunc(all, func(a, b seen) int { return latest(a.obj).Compare(latest(b.obj)) })
	for _, s := range all {
		now = latest(s.obj).Add(700 * time.Millisecond)
		if s.obj.Metadata.CreationTimestamp.Before(origin) {
			now = origin.Add(200 * time.Millisecond) // listed as the watch began
		}
		if s.node {
			tr.Node(s.typ, s.obj)
		} else {
			tr.Pod(s.typ, s.obj)
		}
	}
	return tr
}

func sec(s float64) int64 { return int64(s * 1e9) }

// TestScaleUpStream: 1 → 3 pods; one fits on the existing node, the other
// waits unschedulable for a node the autoscaler adds. The pod that was
// there before is no event; each new pod's milestones are surge's stamps
// with Kubernetes' times beside them.
func TestScaleUpStream(t *testing.T) {
	tr := replay(t, "pods-scaleup.json", "nodes-scaleup.json")
	reps := tr.Replicas()
	if _, ok := reps["vllm-7d9f6c5b8-k2m4x"]; ok {
		t.Errorf("the pod listed before the run is a replica of the timeline: %v", reps)
	}
	pod, ok := ReplicaPod(reps, "10.8.2.3:8000")
	if !ok || pod != "vllm-7d9f6c5b8-z7w9r" {
		t.Errorf("ReplicaPod(10.8.2.3:8000) = %q, %v; want the pod with that IP", pod, ok)
	}
	first := map[string]int64{"vllm-7d9f6c5b8-p8q2n": sec(73.25), "vllm-7d9f6c5b8-z7w9r": sec(201.5)}
	tl := tr.Timeline(origin, "llm/app=vllm", scaling.Run{BurstStartNs: sec(30), RecoveredNs: sec(215)}, first)
	if len(tl.Events) != 2 {
		t.Fatalf("%d events, want 2 (the two new pods): %+v", len(tl.Events), tl.Events)
	}
	type ms struct {
		m          string
		at, kubeAt float64 // seconds since origin; kubeAt -1 for none
	}
	want := map[string][]ms{
		"vllm-7d9f6c5b8-p8q2n": {{scaling.BurstStart, 30, -1}, {scaling.PodCreated, 31.7, 31}, {scaling.Scheduled, 31.7, 31},
			{scaling.ContainerStarted, 34.7, 34}, {scaling.Ready, 72.7, 72}, {scaling.FirstServed, 73.25, -1}, {scaling.Recovered, 215, -1}},
		"vllm-7d9f6c5b8-z7w9r": {{scaling.BurstStart, 30, -1}, {scaling.PodCreated, 31.7, 31}, {scaling.NodeReady, 124.7, 124}, {scaling.Scheduled, 126.7, 126},
			{scaling.ContainerStarted, 161.7, 161}, {scaling.Ready, 200.7, 200}, {scaling.FirstServed, 201.5, -1}, {scaling.Recovered, 215, -1}},
	}
	for _, e := range tl.Events {
		var got []ms
		for _, s := range e.Milestones {
			k := -1.0
			if s.KubeNs != scaling.None {
				k = float64(s.KubeNs) / 1e9
			}
			got = append(got, ms{s.Milestone, float64(s.AtNs) / 1e9, k})
		}
		if !slices.Equal(got, want[e.Replica]) {
			t.Errorf("%s:\n got %v\nwant %v", e.Replica, got, want[e.Replica])
		}
	}
	if e := tl.Events[1]; !e.NewNode || e.Node != "gke-gpu-b" {
		t.Errorf("second pod: node %q new=%v, want gke-gpu-b added", e.Node, e.NewNode)
	}
	if tl.Events[0].NewNode {
		t.Error("the pod on the existing node counts a node added")
	}
	var total *scaling.Interval
	for _, iv := range tl.Intervals() {
		if iv.From == scaling.PodCreated && iv.To == scaling.FirstServed {
			total = &iv
		}
	}
	if total == nil || total.N != 2 || total.Min != time.Duration(sec(73.25-31.7)) || total.Max != time.Duration(sec(201.5-31.7)) {
		t.Errorf("pod created → first served: %+v", total)
	}
}

// TestStreamsAreKubernetesObjects: the recorded streams decode strictly
// into k8s.io/api's Pod and Node, so the watcher is tested against the
// shape the API server sends.
func TestStreamsAreKubernetesObjects(t *testing.T) {
	for _, name := range []string{"pods-scaleup.json", "nodes-scaleup.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		n := 0
		for dec.More() {
			var ev struct {
				Type   string          `json:"type"`
				Object json.RawMessage `json:"object"`
			}
			if err := dec.Decode(&ev); err != nil {
				t.Fatal(err)
			}
			var target any = &corev1.Pod{}
			if strings.HasPrefix(name, "nodes") {
				target = &corev1.Node{}
			}
			od := json.NewDecoder(bytes.NewReader(ev.Object))
			od.DisallowUnknownFields()
			if err := od.Decode(target); err != nil {
				t.Errorf("%s object %d: %v", name, n, err)
			}
			n++
		}
		if n < 3 {
			t.Errorf("%s: %d events", name, n)
		}
	}
}

// fakeKubectl writes a kubectl that prints the recorded files: the list
// for `get … -o json`, the stream for `get … -w`, or fails as kubectl does
// without a cluster when fail is set for that resource.
func fakeKubectl(t *testing.T, podsList, podsWatch string, nodesFail bool) string {
	t.Helper()
	td, _ := filepath.Abs("testdata")
	script := `#!/bin/sh
res=$2; watch=no
for a in "$@"; do [ "$a" = "-w" ] && watch=yes; done
if [ "$res" = nodes ] && [ "` + map[bool]string{true: "yes", false: "no"}[nodesFail] + `" = yes ]; then
  echo 'Error from server (Forbidden): nodes is forbidden: User "ci" cannot list resource "nodes" in API group "" at the cluster scope' >&2; exit 1
fi
if [ "$res" = pods ]; then list=` + filepath.Join(td, podsList) + `; stream=` + filepath.Join(td, podsWatch) + `
else list=` + filepath.Join(td, "nodes-list.json") + `; stream=` + filepath.Join(td, "nodes-scaleup.json") + `; fi
if [ $watch = yes ]; then cat "$stream"; exec sleep 60; fi
cat "$list"
`
	p := filepath.Join(t.TempDir(), "kubectl")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStartWatchesThroughKubectl runs the watch through a kubectl that
// replays the recorded streams: the pods and nodes seen, the watch stopped
// cleanly (no note about a watch that ended early, no goroutine left).
func TestStartWatchesThroughKubectl(t *testing.T) {
	defer goleak.VerifyNone(t)
	kc := fakeKubectl(t, "pods-list.json", "pods-scaleup.json", false)
	var warns []string
	w, err := Start(context.Background(), kc, Target{"llm", "app=vllm"}, func(s string) { warns = append(warns, s) })
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(w.Tracker.Replicas()) < 4 && time.Now().Before(deadline) { // 2 pods × (name + IP)
		time.Sleep(10 * time.Millisecond)
	}
	for {
		w.Tracker.mu.Lock()
		n := w.Tracker.nodes["gke-gpu-b"]
		ready := n != nil && n.ready.ok
		w.Tracker.mu.Unlock()
		if ready || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	w.Stop()
	if len(warns) != 0 {
		t.Errorf("warnings: %v", warns)
	}
	tl := w.Tracker.Timeline(time.Now(), w.Target.String(), scaling.Run{BurstStartNs: scaling.None, RecoveredNs: scaling.None}, nil)
	if len(tl.Events) != 2 || len(tl.Notes) != 0 {
		t.Fatalf("events %d, notes %v", len(tl.Events), tl.Notes)
	}
	if !tl.Events[1].NewNode {
		t.Errorf("the node added during the watch is not seen: %+v", tl.Events[1])
	}
}

// TestSelectorMatchingNothingWarns: an empty list before the run warns at
// once and stays in the timeline's notes; nodes forbidden warn too, and the
// run still gets a watch.
func TestSelectorMatchingNothingWarns(t *testing.T) {
	kc := fakeKubectl(t, "empty-list.json", "empty-list.json", true)
	var warns []string
	w, err := Start(context.Background(), kc, Target{"llm", "app=nothing"}, func(s string) { warns = append(warns, s) })
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	if len(warns) != 2 || !strings.Contains(warns[0], `no pod in namespace llm matches "app=nothing"`) || !strings.Contains(warns[1], "nodes is forbidden") {
		t.Errorf("warnings: %q", warns)
	}
	tl := w.Tracker.Timeline(time.Now(), "llm/app=nothing", scaling.Run{BurstStartNs: scaling.None, RecoveredNs: scaling.None}, nil)
	if len(tl.Events) != 0 || len(tl.Notes) < 2 {
		t.Errorf("timeline: %+v", tl)
	}
}

func TestKubectlMissingOrFailing(t *testing.T) {
	_, err := Start(context.Background(), filepath.Join(t.TempDir(), "no-kubectl"), Target{"llm", "app=vllm"}, func(string) {})
	if err == nil || !strings.Contains(err.Error(), "needs kubectl") || !strings.Contains(err.Error(), "no scaling timeline") {
		t.Errorf("missing kubectl: %v", err)
	}
	p := filepath.Join(t.TempDir(), "kubectl")
	os.WriteFile(p, []byte("#!/bin/sh\necho 'The connection to the server localhost:8080 was refused - did you specify the right host or port?' >&2\nexit 1\n"), 0o755)
	_, err = Start(context.Background(), p, Target{"llm", "app=vllm"}, func(string) {})
	if err == nil || !strings.Contains(err.Error(), "connection to the server localhost:8080 was refused") {
		t.Errorf("failing kubectl: %v", err)
	}
}

func TestParseTarget(t *testing.T) {
	if tg, err := ParseTarget("llm/app=vllm,tier=gpu", "watch_k8s"); err != nil || tg.Namespace != "llm" || tg.Selector != "app=vllm,tier=gpu" {
		t.Errorf("got %+v, %v", tg, err)
	}
	for _, bad := range []string{"", "llm", "/app=x", "llm/"} {
		if _, err := ParseTarget(bad, "watch_k8s"); err == nil || !strings.Contains(err.Error(), "NAMESPACE/SELECTOR") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
