// Package kube watches a Kubernetes workload during a run through kubectl
// (`kubectl get pods -n NS -l SELECTOR -w -o json --output-watch-events`,
// and the same for nodes when the user may list them) and turns what it
// saw into the autoscaling timeline of internal/scaling.
//
// surge links no Kubernetes client: kubectl already holds the user's
// context, credentials and proxy settings, and the few fields the timeline
// needs are decoded into small structs of this package (no k8s.io/api in
// the run's path). Every change is stamped with surge's clock when it is
// decoded, alongside Kubernetes' own second-precision timestamps.
//
// A pod is a scaling event when it was not in the list taken before the
// run (`kubectl get pods … -o json`). Its milestones: created (first seen;
// metadata.creationTimestamp), node ready (when its node was not in the
// node list taken before the run: the node's Ready condition), scheduled
// (PodScheduled=True), container started (every container running; the
// latest startedAt), Ready (Ready=True), and first served: the earliest
// first token of a record whose replica header names the pod, by name or
// by pod IP (an IP:port value matches its IP).
package kube

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/surge-bench/surge/internal/scaling"
)

// Object is the part of a pod or node (or of a List of them) that the
// timeline reads.
type Object struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name              string    `json:"name"`
		CreationTimestamp time.Time `json:"creationTimestamp"`
	} `json:"metadata"`
	Spec struct {
		NodeName string `json:"nodeName"`
	} `json:"spec"`
	Status struct {
		PodIP  string `json:"podIP"`
		PodIPs []struct {
			IP string `json:"ip"`
		} `json:"podIPs"`
		Conditions []struct {
			Type               string    `json:"type"`
			Status             string    `json:"status"`
			LastTransitionTime time.Time `json:"lastTransitionTime"`
		} `json:"conditions"`
		ContainerStatuses []struct {
			State struct {
				Running *struct {
					StartedAt time.Time `json:"startedAt"`
				} `json:"running"`
			} `json:"state"`
		} `json:"containerStatuses"`
	} `json:"status"`
	Items []Object `json:"items"` // a List
}

// condition returns when condition typ became True, and whether it is.
func (o *Object) condition(typ string) (time.Time, bool) {
	for _, c := range o.Status.Conditions {
		if c.Type == typ {
			return c.LastTransitionTime, c.Status == "True"
		}
	}
	return time.Time{}, false
}

// running returns the latest container start when every container runs.
func (o *Object) running() (time.Time, bool) {
	cs := o.Status.ContainerStatuses
	if len(cs) == 0 {
		return time.Time{}, false
	}
	var last time.Time
	for _, c := range cs {
		if c.State.Running == nil {
			return time.Time{}, false
		}
		if c.State.Running.StartedAt.After(last) {
			last = c.State.Running.StartedAt
		}
	}
	return last, true
}

// Decode reads a kubectl JSON stream (objects one after another, as
// `kubectl get -o json` and `-w -o json [--output-watch-events]` print
// them) and calls fn with each object and its watch event type ("" for a
// bare object, "ADDED", "MODIFIED", "DELETED" with --output-watch-events).
// A List is passed whole. It returns nil at the end of the stream.
func Decode(r io.Reader, fn func(typ string, o *Object)) error {
	dec := json.NewDecoder(r)
	for {
		var raw struct {
			Object
			Type   string  `json:"type"`
			Nested *Object `json:"object"`
		}
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("kube: decode kubectl output: %w", err)
		}
		if raw.Nested != nil {
			fn(raw.Type, raw.Nested)
			continue
		}
		o := raw.Object
		fn("", &o)
	}
}

type stamp struct {
	at   time.Time // surge's clock (monotonic)
	kube time.Time // Kubernetes' time; zero if none
	ok   bool
}

func (s *stamp) set(now, kube time.Time) {
	if !s.ok {
		*s = stamp{at: now, kube: kube, ok: true}
	}
}

type pod struct {
	name, node                  string
	ips                         []string
	created, scheduled, started stamp
	ready                       stamp
}

type node struct {
	added bool // not in the list taken before the run
	ready stamp
}

// Tracker holds what the watches saw. It is safe for concurrent use (the
// pod and node watches feed it from their goroutines).
type Tracker struct {
	now func() time.Time

	mu          sync.Mutex
	before      map[string]bool // pods that existed before the run
	nodesBefore map[string]bool // nil: the nodes could not be listed
	pods        map[string]*pod
	order       []string
	nodes       map[string]*node
	notes       []string
}

// NewTracker returns an empty tracker stamping changes with now (time.Now
// outside tests).
func NewTracker(now func() time.Time) *Tracker {
	return &Tracker{now: now, before: map[string]bool{}, pods: map[string]*pod{}, nodes: map[string]*node{}}
}

// Before records the pods (a List or single pods) that existed before the
// run: they are not scaling events.
func (t *Tracker) Before(o *Object) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, it := range items(o) {
		t.before[it.Metadata.Name] = true
	}
}

// NodesBefore records the nodes that existed before the run; without it
// (nodes could not be listed) no node counts as added.
func (t *Tracker) NodesBefore(o *Object) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.nodesBefore == nil {
		t.nodesBefore = map[string]bool{}
	}
	for _, it := range items(o) {
		t.nodesBefore[it.Metadata.Name] = true
	}
}

// Note adds a line saying what the watch could not see.
func (t *Tracker) Note(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.notes = append(t.notes, s)
}

func items(o *Object) []Object {
	if strings.HasSuffix(o.Kind, "List") {
		return o.Items
	}
	return []Object{*o}
}

// Pod records one observation of a pod (or a List of pods).
func (t *Tracker) Pod(typ string, o *Object) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range items(o) {
		it := &items(o)[i]
		if typ == "DELETED" {
			continue
		}
		p := t.pods[it.Metadata.Name]
		if p == nil {
			p = &pod{name: it.Metadata.Name}
			t.pods[p.name] = p
			t.order = append(t.order, p.name)
		}
		p.created.set(now, it.Metadata.CreationTimestamp)
		if it.Spec.NodeName != "" {
			p.node = it.Spec.NodeName
		}
		for _, ip := range it.Status.PodIPs {
			if !slices.Contains(p.ips, ip.IP) {
				p.ips = append(p.ips, ip.IP)
			}
		}
		if ip := it.Status.PodIP; ip != "" && !slices.Contains(p.ips, ip) {
			p.ips = append(p.ips, ip)
		}
		if at, ok := it.condition("PodScheduled"); ok {
			p.scheduled.set(now, at)
		}
		if at, ok := it.running(); ok {
			p.started.set(now, at)
		}
		if at, ok := it.condition("Ready"); ok {
			p.ready.set(now, at)
		}
	}
}

// Node records one observation of a node (or a List of nodes).
func (t *Tracker) Node(typ string, o *Object) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range items(o) {
		it := &items(o)[i]
		if typ == "DELETED" {
			continue
		}
		n := t.nodes[it.Metadata.Name]
		if n == nil {
			n = &node{added: t.nodesBefore != nil && !t.nodesBefore[it.Metadata.Name]}
			t.nodes[it.Metadata.Name] = n
		}
		if at, ok := it.condition("Ready"); ok {
			n.ready.set(now, at)
		}
	}
}

// Replicas returns the names and IPs of the pods that appeared during the
// run: the replica header values FirstServed looks for.
func (t *Tracker) Replicas() map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]string{}
	for _, name := range t.order {
		if t.before[name] {
			continue
		}
		p := t.pods[name]
		out[name] = name
		for _, ip := range p.ips {
			out[ip] = name
		}
	}
	return out
}

// ReplicaPod returns the pod a replica header value names, by its name or
// its IP (an "IP:port" or "[IPv6]:port" value matches the IP), among
// replicas (Tracker.Replicas).
func ReplicaPod(replicas map[string]string, value string) (string, bool) {
	if p, ok := replicas[value]; ok {
		return p, true
	}
	if host, _, err := net.SplitHostPort(value); err == nil {
		p, ok := replicas[host]
		return p, ok
	}
	return "", false
}

// Timeline builds the timeline of the pods that appeared during the run,
// with times since origin (the run's start). firstServed is the first
// token time (ns since origin) of each new pod by name (see ReplicaPod).
// watch names what was watched, e.g. "default/app=vllm".
func (t *Tracker) Timeline(origin time.Time, watch string, r scaling.Run, firstServed map[string]int64) *scaling.Timeline {
	t.mu.Lock()
	defer t.mu.Unlock()
	tl := &scaling.Timeline{Source: scaling.SourceKubernetes, Watch: watch, Notes: slices.Clone(t.notes), Events: []scaling.Event{}}
	for _, name := range t.order {
		if t.before[name] {
			continue
		}
		p := t.pods[name]
		e := scaling.Event{Replica: name, Node: p.node}
		add := func(m string, s stamp) {
			if !s.ok {
				return
			}
			k := scaling.None
			if !s.kube.IsZero() {
				k = s.kube.Sub(origin).Nanoseconds()
			}
			e.Milestones = append(e.Milestones, scaling.Stamp{Milestone: m, AtNs: s.at.Sub(origin).Nanoseconds(), KubeNs: k})
		}
		add(scaling.PodCreated, p.created)
		if n := t.nodes[p.node]; n != nil && n.added {
			e.NewNode = true
			add(scaling.NodeReady, n.ready)
		}
		add(scaling.Scheduled, p.scheduled)
		add(scaling.ContainerStarted, p.started)
		add(scaling.Ready, p.ready)
		if ns, ok := firstServed[name]; ok {
			e.Milestones = append(e.Milestones, scaling.Stamp{Milestone: scaling.FirstServed, AtNs: ns, KubeNs: scaling.None})
		}
		r.Add(&e)
		tl.Events = append(tl.Events, e)
	}
	return tl
}
