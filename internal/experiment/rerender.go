package experiment

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/report"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/scrape"
)

// Rerender re-analyses a run folder, or a burst experiment's folder of run
// folders, from the files it holds (manifest.json, requests.jsonl,
// engine.csv, summary.json) and writes every derived file again:
// summary.json, timeseries.csv, results.md/.csv/.json and report.html.
func Rerender(dir string, stdout io.Writer) error {
	if _, err := os.Stat(filepath.Join(dir, "requests.jsonl")); err == nil {
		env, res, _, err := loadRun(dir)
		if err != nil {
			return err
		}
		if err := writeRunFiles(dir, res); err != nil {
			return err
		}
		if err := writeRunReports(env, res, dir); err != nil {
			return err
		}
		PrintPhases(stdout, res)
		fmt.Fprintf(stdout, "\nre-rendered %s\n", dir)
		return nil
	}
	runDirs, _ := filepath.Glob(filepath.Join(dir, "burst-*x"))
	if len(runDirs) == 0 {
		return &ConfigError{fmt.Errorf("report: %s holds neither requests.jsonl nor burst-<k>x run folders", dir)}
	}
	var runs []BurstRun
	var env *Env
	var cfg *BurstConfig
	partial := false
	for _, rd := range runDirs {
		e, res, c, err := loadRun(rd)
		if err != nil {
			return err
		}
		if res.Burst == nil || c == nil {
			return &ConfigError{fmt.Errorf("report: %s: not a burst run (summary.json has no burst section)", rd)}
		}
		if err := writeRunFiles(rd, res); err != nil {
			return err
		}
		env, cfg = e, c
		b := res.Burst
		runs = append(runs, BurstRun{K: b.K, Result: res, Prediction: b.Prediction, MuSource: b.MuSource,
			Settle: time.Duration(b.SettleNs), SettleNote: b.SettleNote, BurstEnd: time.Duration(b.BurstEndNs),
			Recovery: measuredRecovery(res.Analysis.Recovery, time.Duration(b.PlannedRecoveryNs))})
		partial = partial || res.Partial
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].K < runs[j].K })
	env.Stdout = stdout
	if _, err := writeBurstReports(env, cfg, dir, runs, partial); err != nil {
		return err
	}
	return nil
}

// savedConfig is the configuration a manifest records.
type savedConfig struct {
	Plan    schedule.Plan   `json:"plan"`
	Options Options         `json:"options"`
	Extra   json.RawMessage `json:"extra"`
}

// loadRun reads one run folder back into a Result, re-analysing its records.
func loadRun(dir string) (*Env, *Result, *BurstConfig, error) {
	man, err := record.ReadManifest(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, nil, nil, err
	}
	var cfg savedConfig
	b, _ := json.Marshal(man.Config)
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, nil, nil, fmt.Errorf("report: %s: manifest config: %w", dir, err)
	}
	var burst *BurstConfig
	var extra struct {
		Burst *BurstConfig `json:"burst"`
	}
	if len(cfg.Extra) > 0 && json.Unmarshal(cfg.Extra, &extra) == nil && extra.Burst != nil {
		burst = extra.Burst
		burst.Options = cfg.Options
	}
	var sum Summary
	if b, err := os.ReadFile(filepath.Join(dir, "summary.json")); err == nil {
		if err := json.Unmarshal(b, &sum); err != nil {
			return nil, nil, nil, fmt.Errorf("report: %s: summary.json: %w", dir, err)
		}
	}
	var recs []record.Record
	if err := record.ReadFile(filepath.Join(dir, "requests.jsonl"), func(r *record.Record) error {
		recs = append(recs, *r)
		return nil
	}); err != nil {
		return nil, nil, nil, err
	}
	var engine []scrape.Sample
	if f, err := os.Open(filepath.Join(dir, "engine.csv")); err == nil {
		engine, err = scrape.ReadCSV(f)
		f.Close()
		if err != nil {
			return nil, nil, nil, fmt.Errorf("report: %s: engine.csv: %w", dir, err)
		}
	}
	env := &Env{Opts: cfg.Options, BaseURL: man.Target, Version: man.Version, Stdout: io.Discard}
	if burst != nil {
		rule := env.recoveryRule(burst)
		env.recovery = &rule
	}
	var exclude []string
	for _, p := range cfg.Plan.Phases {
		if p.Name == schedule.PhaseWarmup {
			exclude = append(exclude, p.Name)
		}
	}
	an, err := analyzeRecords(env.analyzeConfig(cfg.Plan, exclude), recs, 0)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("report: %s: %w", dir, err)
	}
	res := &Result{
		Spec:     Spec{Name: man.RunID, Dir: dir, Command: man.Command, Plan: cfg.Plan, Exclude: exclude},
		Analysis: an, Scrape: sum.Engine, Engine: engine, Records: int64(len(recs)), Partial: man.Partial,
		Plan: cfg.Plan, Simulated: man.Simulated, SimEvents: sum.SimEvents, QueueWait: sum.EngineWait, Burst: sum.Burst,
	}
	if res.QueueWait == nil {
		res.QueueWait = map[string]QueueWait{}
	}
	return env, res, burst, nil
}

// writeRunReports writes results.* and report.html of a single run, one
// row per measured phase.
func writeRunReports(env *Env, res *Result, dir string) error {
	t := report.Table{Title: "surge " + res.Spec.Command + ": " + env.TargetName(), Meta: HTMLMeta(env)}
	for _, ph := range res.Analysis.Phases {
		if ph.Excluded {
			continue
		}
		row := Row(res, &env.Opts, ph.Name)
		row.Recovery = report.RecoveryNA(report.ReasonNoBurst)
		row.PredictedRecovery = report.RecoveryNA(report.ReasonNoBurst)
		row.Workload = env.Opts.Profile + " / " + ph.Name
		t.Rows = append(t.Rows, row)
		t.Verdicts = append(t.Verdicts, sloVerdicts(ph.Name, ph.SLO)...)
	}
	t.Verdicts = append(t.Verdicts, sloVerdicts("overall", res.Analysis.Verdict)...)
	if res.Partial {
		t.Notes = append(t.Notes, "PARTIAL: the run was interrupted before the plan completed.")
	}
	ht := t
	ht.Meta = nil
	return writeReports(dir, t, report.HTMLReport{Title: t.Title, Meta: t.Meta, Tables: []report.Table{ht},
		Runs: []report.RunCharts{Charts(res, &env.Opts, res.Spec.Name)}})
}
