package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/surge-bench/surge/internal/compare"
	"github.com/surge-bench/surge/internal/rundir"
)

func newCompareCmd() *cobra.Command {
	var out string
	var force bool
	cmd := &cobra.Command{
		Use:   "compare DIR_A DIR_B [DIR...]",
		Short: "Compare folders of one command kind side by side: what differs, and every metric's delta",
		Long: `Compare two or more folders surge wrote with the same command — surge run
folders, burst experiments, capacity searches, sweeps, or one run of them
(burst-5x/, step-03-4rps/) — the first being the reference.

From their manifests it lists every setting that differs (target, model,
serving config key by key, hardware, workload and its distributions, arrival
process, phases, SLOs, surge version, seed), named as you set it
(max-waiting, baseline-rps). One setting differs: it says so and names it.
Several: it warns that the comparison confounds them and names them all.

Then, row by row (multiplier, phase, step rate, level), every metric of the
folders' results with its difference and ratio against the reference. What
a folder did not measure — no value, or no such row (a multiplier only one
side ran) — is "not tested", never zero. With repeated runs (--repeat N) the
pooled value is compared and the per-run values give a confidence statement
(a bootstrap interval with 5 or more runs a side, else whether the ranges
overlap). Percentiles are never averaged.

Writes compare.md (also printed), compare.json and compare.html into -o.

Exit codes: 0 compared; 2 fewer than two folders, a folder surge did not
write, folders of different kinds, or the output folder in use or not empty;
4 anything else, e.g. a file could not be written.`,
		Example: `  # two what-ifs of the same burst: only --max-waiting differs
  surge burst --simulate --baseline-rps 8 --multipliers 5 -o out/mw0
  surge burst --simulate --baseline-rps 8 --multipliers 5 --max-waiting 20 -o out/mw20
  surge compare out/mw0 out/mw20

  # one multiplier's run of each, into a named folder
  surge compare out/mw0/burst-5x out/mw20/burst-5x -o out/cmp-5x`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usageErr("compare: give at least two folders (DIR_A DIR_B [DIR...]), got %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := compare.Folders(args)
			if errors.Is(err, compare.ErrInput) {
				return &exitError{exitUsage, err}
			}
			if err != nil {
				return &exitError{exitInternal, err}
			}
			path := out
			if path == "" {
				path = rundir.DefaultPath("out", "compare", time.Now())
			}
			d, err := rundir.Create(path, rundir.Options{Force: force, Owner: "surge compare"})
			if err != nil {
				return classify(nil, err)
			}
			defer d.Close()
			if err := c.Write(d, nil); err != nil {
				return &exitError{exitInternal, err}
			}
			w := cmd.OutOrStdout()
			_ = c.WriteMarkdown(w) // a closed stdout (| head) fails quietly: the files are written
			fmt.Fprintf(w, "\nreports: %s/compare.md  %s/compare.json  %s/compare.html\n", path, path, path)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "output folder (default out/compare-<date>-<time>-<id>; an existing non-empty one is refused without --force)")
	cmd.Flags().BoolVar(&force, "force", false, "reuse a non-empty --out folder: surge's files in it are replaced")
	return cmd
}
