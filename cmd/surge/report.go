package main

import (
	"cmp"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/surge-bench/surge/internal/experiment"
	"github.com/surge-bench/surge/internal/experiment/rerender"
	"github.com/surge-bench/surge/internal/judge"
)

func newReportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "report DIR",
		Short: "Re-render the reports of a run, soak or burst experiment's folder",
		Long: `Re-analyse a folder surge wrote from the files it keeps — manifest.json,
requests.jsonl, engine.csv and summary.json — and write its derived files
again (timeseries.csv, summary.json, results.md/.csv/.json, report.html) in
the layout of the command that wrote it: a surge run folder one row per
phase; a soak folder its window and drift tables (and soak.json); a burst
experiment's folder one row per multiplier, every burst-<k>x run in it
re-rendered too. It ends as the command did: the verdicts, the diagnosis,
and an exit line. Nothing is sent to any target.

One burst-<k>x, capacity step-* or sweep level-* folder alone is re-rendered
in the single-run layout, and says so. A capacity search's or a sweep's own
folder is refused (exit 2): its table holds the search's decisions, which
surge report does not redo; give one of its step or level folders.

A folder from an older surge version, or one that lost a file, is rendered
as far as it can be: each file missing or unreadable gets a WARNING line
naming it and what the reports lack for it (also noted in results.md).
surge report never writes manifest.json, nor a summary.json the folder did
not have: a second surge report finds what the first found missing. Only
requests.jsonl is indispensable: a run without it is skipped (exit 2 when
no run is left to render). Without manifest.json the options are the
defaults and the phases come from the records; without summary.json a
burst's prediction and μ are unknown; without engine.csv the engine's
samples (queue depth, KV-cache use) are.

Exit codes: 0 the reports were written, whatever the verdicts (the exit line
says which code the command that wrote the folder gives such results); 2 not
a folder surge wrote, no run in it could be re-rendered, or a run is still
writing there; 4 anything else, e.g. a file could not be written.`,
		Example: `  surge report out/burst-20261129-104500
  surge report out/burst-20261129-104500/burst-5x
  surge report out/soak-20261129-104500`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			w := cmd.OutOrStdout()
			out, err := rerender.Folder(args[0], w)
			if err != nil {
				return classify(nil, err)
			}
			if out.Part != "" { // the experiment's exit code weighs all its runs
				held := map[judge.Outcome]string{judge.Pass: "held", judge.Fail: "failed", judge.Inconclusive: "was inconclusive"}[out.Verdict]
				fmt.Fprintf(w, "exit 0: re-rendered (%s, whose exit code weighs all its runs: this run's SLO %s)\n", out.Part, held)
				return nil
			}
			fmt.Fprintf(w, "exit 0: re-rendered (%s)\n", verdictExit(out.Outcome))
			return nil
		},
	}
}

// verdictExit says which exit code the command that wrote the folder
// gives a run with these verdicts, and why, as its own exit line does.
func verdictExit(out experiment.Outcome) string {
	const with = "the command that wrote it exits %d with these results: %s"
	switch {
	case out.Partial:
		return fmt.Sprintf(with, exitSLO, "interrupted or stopped by its budget (the files are marked partial)")
	case out.Unusable:
		return fmt.Sprintf(with, exitTarget, "the target was unusable: no request succeeded")
	case out.Verdict == judge.Fail:
		return fmt.Sprintf(with, exitSLO, cmp.Or(out.Meaning, "an SLO failed (the verdicts above say which and by how much)"))
	case out.Verdict == judge.Inconclusive:
		return fmt.Sprintf(with, exitUndecided, cmp.Or(out.Meaning, "no SLO failed, but one could not be decided on its sample"))
	}
	return fmt.Sprintf(with, exitOK, cmp.Or(out.Meaning, "every SLO held"))
}
