package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/surge-bench/surge/internal/merge"
)

func newMergeCmd() *cobra.Command {
	var o merge.Options
	cmd := &cobra.Command{
		Use:   "merge DIR… -o OUT",
		Short: "Join the run folders of static shards (--shard I/N) into one run folder and one report",
		Long: `Join the folders that N processes wrote with --shard 0/N … N-1/N (or
--shard auto/N in a Kubernetes Indexed Job) into one run folder, as if one
process had recorded every request, and write its reports as surge report
does.

The shards must be one experiment: their manifests must agree on the
command, target, model, API, plan, workload, seed, SLOs and every other
option that defines it, the surge version and N; a disagreement is refused
naming the field, both values and both folders. Every shard 0..N-1 must be
given, each once. requests.jsonl is merged streaming, in schedule order
(seq), each record keeping its shard; each shard's times are moved onto the
earliest shard's origin (by the difference of their start times), so the
report shows what the target saw. A start skew above 100 ms is warned
about: start shards together with --start-at.

Experiment folders (surge burst, surge run --repeat, surge capacity) are
merged run folder by run folder, by name (burst-2x with burst-2x, …); a
capacity search's own table holds each shard's decisions and is not
re-rendered: each merged step is.

Exit codes: 0 merged and re-rendered (the exit line says which code the
command that wrote the shards gives such results); 2 the folders are not
the shards of one run (the message names the field or the shard), or OUT
is not empty (--force); 4 anything else, e.g. a file could not be written.`,
		Example: `  # two machines, one schedule, started together:
  surge run --target http://vllm:8000/v1 --rate 40 --duration 5m --shard 0/2 --start-at 2026-12-02T10:00:00Z -o out/s0
  surge run --target http://vllm:8000/v1 --rate 40 --duration 5m --shard 1/2 --start-at 2026-12-02T10:00:00Z -o out/s1
  surge merge out/s0 out/s1 -o out/merged

  # a burst experiment's shards, burst-<k>x folder by folder:
  surge merge out/burst-s0 out/burst-s1 out/burst-s2 -o out/burst`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			w := cmd.OutOrStdout()
			m, err := merge.Folders(cmd.Context(), args, o, w)
			if err != nil {
				return classify(nil, err)
			}
			fmt.Fprintf(w, "merged %d shards, %d records, into %s\n", len(args), m.Records, o.Out)
			fmt.Fprintf(w, "exit 0: merged (%s)\n", verdictExit(m.Rendered.Outcome))
			return nil
		},
	}
	cmd.Flags().StringVarP(&o.Out, "out", "o", "", "the merged run folder (required; an existing non-empty one is refused without --force)")
	cmd.Flags().BoolVar(&o.Force, "force", false, "reuse a non-empty --out folder: surge's files and run folders in it are replaced")
	return cmd
}
