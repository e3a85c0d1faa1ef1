package kube

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/surge-bench/surge/internal/field"
)

// Target is what --watch-k8s names: a namespace and a label selector.
type Target struct {
	Namespace, Selector string
}

// String returns "NAMESPACE/SELECTOR".
func (t Target) String() string { return t.Namespace + "/" + t.Selector }

// ParseTarget reads NAMESPACE/SELECTOR (the selector as kubectl's -l takes
// it, e.g. "app=vllm,tier in (gpu)"); the error names flag.
func ParseTarget(s, flag string) (Target, error) {
	ns, sel, ok := strings.Cut(s, "/")
	if !ok || ns == "" || sel == "" {
		return Target{}, &field.Error{Field: flag, Message: fmt.Sprintf("%q: want NAMESPACE/SELECTOR, e.g. default/app=vllm", s)}
	}
	return Target{Namespace: ns, Selector: sel}, nil
}

// ListTimeout bounds each of the lists taken before the run.
const ListTimeout = 15 * time.Second

// Watch is a running watch of one Target's pods and of the nodes.
type Watch struct {
	Target  Target
	Tracker *Tracker
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	stop    sync.Once
}

// Start lists the Target's pods and the nodes (what existed before the
// run), then starts `kubectl get … -w -o json --output-watch-events` for
// both. kubectl is the binary to run ("kubectl" from PATH when empty).
// warn gets the warnings of the start: a selector matching no pod yet, nodes
// that cannot be listed (RBAC) so no node counts as added. An error —
// kubectl missing, or failing to list the pods — means no timeline; the
// caller says so and carries on.
func Start(ctx context.Context, kubectl string, t Target, warn func(string)) (*Watch, error) {
	if kubectl == "" {
		kubectl = "kubectl"
	}
	path, err := exec.LookPath(kubectl)
	if err != nil {
		return nil, fmt.Errorf("--watch-k8s needs kubectl, which was not found (%v): no scaling timeline for this run", err)
	}
	tr := NewTracker(time.Now)
	podArgs := []string{"get", "pods", "-n", t.Namespace, "-l", t.Selector, "-o", "json"}
	out, err := list(ctx, path, podArgs)
	if err != nil {
		return nil, fmt.Errorf("--watch-k8s %s: %w: no scaling timeline for this run", t, err)
	}
	var n int
	if err := Decode(bytes.NewReader(out), func(_ string, o *Object) { tr.Before(o); n += len(items(o)) }); err != nil {
		return nil, fmt.Errorf("--watch-k8s %s: %w", t, err)
	}
	if n == 0 {
		msg := fmt.Sprintf("--watch-k8s: no pod in namespace %s matches %q yet; scaling events are pods that appear during the run", t.Namespace, t.Selector)
		warn(msg)
		tr.Note(msg)
	}
	nodeArgs := []string{"get", "nodes", "-o", "json"}
	watchNodes := true
	if out, err := list(ctx, path, nodeArgs); err != nil {
		msg := fmt.Sprintf("--watch-k8s: nodes not watched (%v): no node counts as added for a pod", err)
		warn(msg)
		tr.Note(msg)
		watchNodes = false
	} else if err := Decode(bytes.NewReader(out), func(_ string, o *Object) { tr.NodesBefore(o) }); err != nil {
		return nil, fmt.Errorf("--watch-k8s nodes: %w", err)
	}
	wctx, cancel := context.WithCancel(ctx)
	w := &Watch{Target: t, Tracker: tr, cancel: cancel}
	w.stream(wctx, path, append(podArgs, "-w", "--output-watch-events"), "pods", tr.Pod)
	if watchNodes {
		w.stream(wctx, path, append(nodeArgs, "-w", "--output-watch-events"), "nodes", tr.Node)
	}
	return w, nil
}

// list runs one kubectl get and returns its output; its error carries
// kubectl's own last line of complaint.
func list(ctx context.Context, path string, args []string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, ListTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, append(args, "--request-timeout="+ListTimeout.String())...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kubectl %s: %v%s", strings.Join(args, " "), err, lastLine(stderr.Bytes()))
	}
	return out, nil
}

// lastLine is kubectl's own complaint: the last line of its stderr (the
// lines before it are client-go's retries, e.g. "memcache.go:265]
// Unhandled Error").
func lastLine(b []byte) string {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	line := bytes.TrimSpace(lines[len(lines)-1])
	if len(line) == 0 {
		return ""
	}
	return ": " + string(line)
}

// stream runs a kubectl watch until Stop, feeding what it prints to fn.
// A watch that ends on its own (kubectl failing, the API server closing
// the watch) leaves a note.
func (w *Watch) stream(ctx context.Context, path string, args []string, what string, fn func(string, *Object)) {
	cmd := exec.CommandContext(ctx, path, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		w.Tracker.Note(fmt.Sprintf("--watch-k8s: the %s watch did not start: %v", what, err))
		return
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		derr := Decode(bufio.NewReader(out), fn)
		werr := cmd.Wait()
		if ctx.Err() != nil {
			return // stopped
		}
		why := "kubectl exited"
		if err := errors.Join(derr, werr); err != nil {
			why = err.Error()
		}
		w.Tracker.Note(fmt.Sprintf("--watch-k8s: the %s watch ended before the run did (%s%s); later changes are not in the timeline", what, why, lastLine(stderr.Bytes())))
	}()
}

// Stop ends the watches and waits for their goroutines. It may be called
// more than once, and on a nil Watch (none started).
func (w *Watch) Stop() {
	if w == nil {
		return
	}
	w.stop.Do(func() {
		w.cancel()
		w.wg.Wait()
	})
}
