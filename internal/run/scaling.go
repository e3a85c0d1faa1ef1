package run

// The autoscaling timeline of a run (--watch-k8s, or the simulator's own
// scaling milestones): internal/scaling builds it, internal/kube watches
// a cluster through kubectl. Kept in this file so that Execute carries
// only three calls.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/surge-bench/surge/internal/field"
	"github.com/surge-bench/surge/internal/kube"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/rundir"
	"github.com/surge-bench/surge/internal/scaling"
	"github.com/surge-bench/surge/internal/schedule"
)

// ScalingFile is the run folder's autoscaling timeline.
const ScalingFile = "scaling.json"

// checkWatch finds the configuration errors of --watch-k8s.
func checkWatch(o *Options, virtual bool) error {
	if o.WatchK8s == "" {
		return nil
	}
	if _, err := kube.ParseTarget(o.WatchK8s, "watch_k8s"); err != nil {
		return err
	}
	if virtual {
		return &field.Error{Field: "watch_k8s", Message: "watches a live cluster; --simulate runs in virtual time, where the engine model's own scaling milestones (--autoscale) make the timeline"}
	}
	return nil
}

// startWatch starts the --watch-k8s watch for one run, or returns nil:
// without the flag, or when kubectl is missing or fails (said once as a
// warning; the run carries on without a timeline).
func (e *Env) startWatch(ctx context.Context) *kube.Watch {
	if e.Opts.WatchK8s == "" || e.Virtual {
		return nil
	}
	t, err := kube.ParseTarget(e.Opts.WatchK8s, "watch_k8s")
	if err != nil {
		return nil // Check refused it already
	}
	w, err := kube.Start(ctx, e.Opts.Kubectl, t, func(s string) { e.Logger.Warn(s) })
	if err != nil {
		e.Logger.Warn(err.Error())
		return nil
	}
	return w
}

// scalingTimeline stops the watch and builds the run's timeline: from the
// cluster when it was watched, else from the simulator's milestones; nil
// when there is neither. The first request each new pod served is read
// from requests.jsonl (the replica header of each record).
func (e *Env) scalingTimeline(spec Spec, res *Result, w *kube.Watch) *scaling.Timeline {
	r := scalingRun(res)
	if w == nil {
		return scaling.FromSim(res.SimEvents, r)
	}
	w.Stop()
	reps := w.Tracker.Replicas()
	first := map[string]int64{}
	if len(reps) > 0 {
		err := record.ReadFile(recordsPath(spec.Dir.Path()), func(rec *record.Record) error {
			at := rec.FirstTokenNs
			if at == record.None {
				at = rec.DoneNs
			}
			if rec.Outcome != record.OK || rec.Replica == "" || at == record.None {
				return nil
			}
			if pod, ok := kube.ReplicaPod(reps, rec.Replica); ok {
				if v, seen := first[pod]; !seen || at < v {
					first[pod] = at
				}
			}
			return nil
		})
		if err != nil {
			w.Tracker.Note(fmt.Sprintf("first request served per pod unknown: %v", err))
		}
	}
	tl := w.Tracker.Timeline(res.Started, w.Target.String(), r, first)
	if len(first) == 0 && len(tl.Events) > 0 {
		tl.Notes = append(tl.Notes, fmt.Sprintf("no response named a new pod in its %s header: first served unknown (--replica-header names the header your pods or gateway add, by pod name or IP)", e.replicaHeader()))
	}
	return tl
}

func (e *Env) replicaHeader() string {
	if e.Opts.ReplicaHeader != "" {
		return e.Opts.ReplicaHeader
	}
	return "X-Surge-Replica"
}

// scalingRun is what the run itself says of every event: the burst
// phase's start, and its measured recovery.
func scalingRun(res *Result) scaling.Run {
	r := scaling.Run{BurstStartNs: scaling.None, RecoveredNs: scaling.None}
	for _, b := range res.Plan.Bounds() {
		if b.Name == schedule.PhaseBurst {
			r.BurstStartNs = int64(b.Start)
			break
		}
	}
	if v := res.Verdicts; v != nil && v.Recovery.Recovered {
		r.RecoveredNs = int64((v.Recovery.BurstEndMs + v.Recovery.RecoveryTimeMs) * float64(time.Millisecond))
	}
	return r
}

// recordsPath is the folder's requests.jsonl, or its gzipped form.
func recordsPath(dir string) string {
	p := filepath.Join(dir, "requests.jsonl")
	if _, err := os.Stat(p); err != nil {
		if _, gz := os.Stat(p + ".gz"); gz == nil {
			return p + ".gz"
		}
	}
	return p
}

// saveScaling writes scaling.json when the run has a timeline.
func saveScaling(d *rundir.Dir, tl *scaling.Timeline) error {
	if tl == nil {
		return nil
	}
	return d.WriteJSON(ScalingFile, tl)
}

// loadScaling reads a folder's scaling.json; without one, the timeline is
// rebuilt from the simulator's milestones in summary.json.
func loadScaling(dir string, res *Result) *scaling.Timeline {
	b, err := os.ReadFile(filepath.Join(dir, ScalingFile))
	if err == nil {
		var tl scaling.Timeline
		if json.Unmarshal(b, &tl) == nil {
			return &tl
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return scaling.FromSim(res.SimEvents, scalingRun(res))
}
