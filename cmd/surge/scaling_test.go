package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/scaling"
)

// TestScalingTimelineFromSimulator: a virtual burst whose autoscaler adds
// replicas writes scaling.json, draws the milestones in report.html and
// tabulates them (and their distribution) in results.md; surge report
// renders the timeline from scaling.json again.
func TestScalingTimelineFromSimulator(t *testing.T) {
	skipVirtualUnderRace(t)
	out := filepath.Join(t.TempDir(), "b")
	// Recovery judged on TTFT: the timed-out requests leave the queue, so
	// completion times are back within the first window while first
	// tokens still wait; both replicas come before the recovery.
	code, _, stderr := surge(t, "burst", "--simulate", "--autoscale", "--max-replicas", "4", "--multipliers", "5",
		"--warmup", "10s", "--baseline", "60s", "--burst", "120s", "--recovery", "180s", "--recovery-metric", "ttft", "-q", "-o", out)
	if !ran(code) {
		t.Fatalf("code %d: %s", code, stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, "burst-5x", "scaling.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tl scaling.Timeline
	if err := json.Unmarshal(b, &tl); err != nil || tl.Source != scaling.SourceSimulator || len(tl.Events) < 2 {
		t.Fatalf("scaling.json: %v %+v", err, tl)
	}
	if _, ok := tl.Events[0].At(scaling.FirstServed); !ok {
		t.Errorf("event without first served: %+v", tl.Events[0])
	}
	md, _ := os.ReadFile(filepath.Join(out, "results.md"))
	for _, want := range []string{"# 5×: autoscaling timeline", "| r1 ", "distribution over", "| pod created | first served |"} {
		if !strings.Contains(strings.Join(strings.Fields(string(md)), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("results.md lacks %q", want)
		}
	}
	html, _ := os.ReadFile(filepath.Join(out, "report.html"))
	if !strings.Contains(string(html), "autoscaling timeline") || !strings.Contains(string(html), "first served (replica 1)") {
		t.Error("report.html lacks the timeline table or its markers")
	}
	// surge report reads scaling.json back: an edit there shows.
	edited := strings.ReplaceAll(string(b), `"r1"`, `"r1-from-file"`)
	if err := os.WriteFile(filepath.Join(out, "burst-5x", "scaling.json"), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := surge(t, "report", out); code != exitOK {
		t.Fatalf("surge report: %d %s", code, stderr)
	}
	md, _ = os.ReadFile(filepath.Join(out, "results.md"))
	if !strings.Contains(string(md), "r1-from-file") {
		t.Error("surge report did not render the timeline from scaling.json")
	}
}

// fakeKubectl puts on PATH a kubectl that replays recorded files of dir:
// RES-list.json for `get RES -o json`, RES-watch.json for `get RES -w`
// (RES pods or nodes), with names from files (nil: those names).
func fakeKubectl(t *testing.T, dir string, files map[string]string) {
	td, _ := filepath.Abs(dir)
	name := func(n string) string {
		if f, ok := files[n]; ok {
			return f
		}
		return n
	}
	bin := t.TempDir()
	script := `#!/bin/sh
watch=no
for a in "$@"; do [ "$a" = "-w" ] && watch=yes; done
if [ $watch = yes ]; then
  if [ "$2" = pods ]; then cat ` + td + "/" + name("pods-watch.json") + `; else cat ` + td + "/" + name("nodes-watch.json") + `; fi
  exec sleep 60
fi
if [ "$2" = pods ]; then cat ` + td + "/" + name("pods-list.json") + `; else cat ` + td + "/" + name("nodes-list.json") + `; fi
`
	if err := os.WriteFile(filepath.Join(bin, "kubectl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// TestWatchK8sScaleUpRendered: the recorded scale-up from 1 to 3 pods
// with a node added (internal/kube/testdata) rendered in a run's report:
// both events, the added node, the distribution over the two, and the
// note that no response named a new pod (the simulator's replicas are r0…).
func TestWatchK8sScaleUpRendered(t *testing.T) {
	fakeKubectl(t, filepath.Join("..", "..", "internal", "kube", "testdata"), map[string]string{"pods-watch.json": "pods-scaleup.json", "nodes-watch.json": "nodes-scaleup.json"})
	out := filepath.Join(t.TempDir(), "r")
	code, _, stderr := surge(t, "run", "--rate", "10", "--duration", "1s", "--output-tokens", "4", "--prompt-tokens", "16", "--prompt-calibration", "off", "--watch-k8s", "llm/app=vllm", "-q", "-o", out)
	if !ran(code) {
		t.Fatalf("code %d: %s", code, stderr)
	}
	md, _ := os.ReadFile(filepath.Join(out, "results.md"))
	for _, want := range []string{"vllm-7d9f6c5b8-p8q2n", "vllm-7d9f6c5b8-z7w9r", "gke-gpu-b (added)", "distribution over 2 events", "first served unknown"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("results.md lacks %q", want)
		}
	}
	html, _ := os.ReadFile(filepath.Join(out, "report.html"))
	if !strings.Contains(string(html), "node ready (vllm-7d9f6c5b8-z7w9r)") {
		t.Error("report.html lacks the node-ready marker of the pod that needed a node")
	}
}

// TestWatchK8sLive: a live run against the built-in simulator with a
// watch of a replayed cluster: the pod that appeared (r1) is the event,
// and its first request served comes from the records' replica header
// (the simulator's X-Surge-Replica names r0 and r1).
func TestWatchK8sLive(t *testing.T) {
	fakeKubectl(t, filepath.Join("testdata", "k8s"), nil)
	out := filepath.Join(t.TempDir(), "r")
	code, _, stderr := surge(t, "run", "--rate", "20", "--duration", "1s", "--output-tokens", "4", "--prompt-tokens", "16", "--prompt-calibration", "off", "--replicas", "2", "--watch-k8s", "llm/app=sim", "-q", "-o", out)
	if !ran(code) {
		t.Fatalf("code %d: %s", code, stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, "scaling.json"))
	if err != nil {
		t.Fatalf("%v (stderr %s)", err, stderr)
	}
	var tl scaling.Timeline
	json.Unmarshal(b, &tl)
	if tl.Source != scaling.SourceKubernetes || tl.Watch != "llm/app=sim" || len(tl.Events) != 1 || tl.Events[0].Replica != "r1" {
		t.Fatalf("timeline %+v", tl)
	}
	e := tl.Events[0]
	fs, ok := e.At(scaling.FirstServed)
	_, rok := e.At(scaling.Ready)
	if !ok || !rok || fs <= 0 {
		t.Errorf("milestones %+v", e.Milestones)
	}
	md, _ := os.ReadFile(filepath.Join(out, "results.md"))
	if !strings.Contains(string(md), "kubectl watch of llm/app=sim") {
		t.Error("results.md lacks the Kubernetes timeline")
	}
}

// TestWatchK8sSelectorMatchesNothing: a selector that matches no pod is
// said at the start as a console warning ("WARNING: …", like the rest of
// the output, not slog's key=value line), and the run carries on.
func TestWatchK8sSelectorMatchesNothing(t *testing.T) {
	dir := t.TempDir()
	empty := `{"kind":"List","apiVersion":"v1","items":[]}` + "\n"
	for f, body := range map[string]string{"pods-list.json": empty, "nodes-list.json": empty, "pods-watch.json": "", "nodes-watch.json": ""} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fakeKubectl(t, dir, nil)
	code, stdout, stderr := surge(t, "run", "--rate", "10", "--duration", "500ms", "--output-tokens", "4", "--prompt-tokens", "16", "--prompt-calibration", "off", "--watch-k8s", "llm/app=nothing", "-q", "-o", filepath.Join(t.TempDir(), "r"))
	if !ran(code) {
		t.Fatalf("code %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "\nWARNING: --watch-k8s: no pod in namespace llm matches \"app=nothing\" yet") || strings.Contains(stdout+stderr, "level=") {
		t.Errorf("the selector warning is not a console WARNING line:\nstdout: %s\nstderr: %s", stdout, stderr)
	}
}

func TestWatchK8sWithoutKubectl(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	out := filepath.Join(t.TempDir(), "r")
	code, stdout, stderr := surge(t, "run", "--rate", "10", "--duration", "1s", "--output-tokens", "4", "--prompt-tokens", "16", "--prompt-calibration", "off", "--watch-k8s", "llm/app=sim", "-o", out)
	if !ran(code) {
		t.Fatalf("the run did not carry on: code %d: %s", code, stderr)
	}
	// A warning of the console, in its format, not a slog line (REVIEW15).
	if !strings.Contains(stdout, "\nWARNING: --watch-k8s needs kubectl") || strings.Contains(stdout+stderr, "level=") {
		t.Errorf("the kubectl warning is not a console WARNING line:\nstdout: %s\nstderr: %s", stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "scaling.json")); err == nil {
		t.Error("a scaling.json without a watch")
	}
	if code, _, stderr := surge(t, "run", "--simulate", "--watch-k8s", "llm/app=sim", "-o", filepath.Join(t.TempDir(), "v")); code != exitUsage || !strings.Contains(stderr, "--watch-k8s: watches a live cluster") {
		t.Errorf("--simulate with --watch-k8s: %d %s", code, stderr)
	}
	if code, _, stderr := surge(t, "run", "--watch-k8s", "app=sim", "-o", filepath.Join(t.TempDir(), "w")); code != exitUsage || !strings.Contains(stderr, "NAMESPACE/SELECTOR") {
		t.Errorf("bad target: %d %s", code, stderr)
	}
}
