package run

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/surge-bench/surge/internal/push"
)

// pushGrace is how long the command waits at its end for the last
// pushes to arrive.
const pushGrace = 10 * time.Second

// startPusher starts pushing to --metrics-out's endpoints; nil without
// any. The options were validated.
func (e *Env) startPusher() {
	var targets []push.Target
	for _, m := range e.Opts.MetricsOut {
		t, _ := push.ParseTarget(m)
		targets = append(targets, t)
	}
	if len(targets) == 0 {
		return
	}
	var client *http.Client
	if e.network != nil {
		client = &http.Client{Transport: &http.Transport{DialContext: e.network.DialContext}}
	}
	e.pusher = push.New(targets, client, push.DefaultPolicy, e.Version)
}

// SetRunID names the command's folder in the pushed metrics' run_id
// label (its base name).
func (e *Env) SetRunID(id string) { e.runID = id }

// pushLabels are the labels of every series a run pushes: which command
// folder, command and run, the burst multiplier, the workload and the
// worker (this process's shard, or "local").
func (e *Env) pushLabels(spec Spec) []push.Label {
	mult := ""
	if spec.Multiplier > 0 {
		mult = strconv.FormatFloat(spec.Multiplier, 'g', -1, 64)
	}
	worker := "local"
	if i, n, _ := e.Opts.ShardOf(); n > 1 {
		worker = fmt.Sprintf("%d/%d", i, n)
	}
	return []push.Label{{Name: "run_id", Value: e.runID}, {Name: "command", Value: spec.Command}, {Name: "run", Value: spec.Name},
		{Name: "multiplier", Value: mult}, {Name: "profile", Value: e.Opts.WorkloadName()}, {Name: "worker", Value: worker}}
}

// genAIOperation is the API's gen_ai.operation.name.
func genAIOperation(api string) string {
	switch api {
	case "completions":
		return "text_completion"
	case "embeddings", "rerank":
		return api
	default:
		return "chat" // chat, responses, messages
	}
}

// pushPhases pushes a run's per-phase values, as its summary.json has
// them, when its analysis is done.
func (e *Env) pushPhases(spec Spec, res *Result) {
	if e.pusher == nil || res.Analysis == nil {
		return
	}
	e.pusher.Push(push.Phases(res.Analysis, time.Now(), e.pushLabels(spec)))
}

// FinishPush waits (pushGrace at most) for the last pushes and writes to
// w what did not arrive, per endpoint, or one line saying everything
// did; once, nil-safe on w. Close calls it too.
func (e *Env) FinishPush(w io.Writer) []push.Stats {
	e.pushOnce.Do(func() {
		if e.pusher == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), pushGrace)
		defer cancel()
		e.pushStats = e.pusher.Close(ctx)
		if w == nil {
			return
		}
		for _, s := range e.pushStats {
			if msg := s.Warning(); msg != "" {
				fmt.Fprintln(w, "WARNING:", msg)
			} else {
				fmt.Fprintf(w, "metrics pushed to %s: %d batches, %d samples\n", s.Target, s.Delivered, s.Samples)
			}
		}
	})
	return e.pushStats
}
