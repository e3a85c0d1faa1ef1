package main

import (
	"github.com/spf13/cobra"

	"github.com/surge-bench/surge/internal/experiment/burst"
)

func newReportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "report DIR",
		Short: "Re-render the reports of a run folder (or a burst experiment's folder)",
		Long: `Re-analyse a run folder from the files it keeps — manifest.json,
requests.jsonl, engine.csv and summary.json — and write summary.json,
timeseries.csv, results.md/.csv/.json and report.html again. Given the folder
of a burst experiment, it does so for every burst-<k>x run and the top-level
results table. Nothing is sent to any target.

A folder from an older surge version, or one that lost a file, is rendered
as far as it can be: each file missing or unreadable gets a WARNING line
naming it and what the reports lack for it (also noted in results.md), and
the exit code is 0. Only requests.jsonl is indispensable: a run without it
is skipped (exit 2 when no run is left to render). Without manifest.json the
options are the defaults and the phases come from the records; without
summary.json a burst's prediction and μ are unknown.`,
		Example: `  surge report out/burst-20261129-104500
  surge report out/burst-20261129-104500/burst-5x`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := burst.Rerender(args[0], cmd.OutOrStdout()); err != nil {
				return classify(nil, err)
			}
			return nil
		},
	}
}
