package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/surge-bench/surge/internal/field"
	"github.com/surge-bench/surge/internal/kubejob"
)

func newK8sCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "k8s",
		Short: "Kubernetes: manifests to run surge's generators in a cluster",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newK8sJobCmd())
	return cmd
}

func newK8sJobCmd() *cobra.Command {
	var (
		c           kubejob.Config
		file, out   string
		startAt     string
		force       bool
		experiments = "burst"
	)
	cmd := &cobra.Command{
		Use:   "job -f EXPERIMENT.yaml --workers N -o DIR [-- FLAGS FOR THE COMMAND…]",
		Short: "Write the manifests of a distributed run: N workers as an Indexed Job, a coordinator, the results volume",
		Long: `Write Kubernetes manifests (YAML, a few files in DIR) that run N surge
generators as an Indexed Job (completionMode Indexed, parallelism =
completions = N) and make one report of them:

  coordinator in the cluster (default): a Job running
      surge COMMAND --file /etc/surge/experiment.yaml --workers N --coordinator-listen :7070
    behind a headless Service NAME-coordinator, which the workers reach:
      surge worker --coordinator http://NAME-coordinator.NAMESPACE.svc:7070
  coordinator on your machine (--coordinator-listen HOST:PORT): no
    coordinator Job; the workers dial HOST:PORT, and you run the command
    printed here.
  static shards (--static): no coordinator; N pods run
      surge COMMAND … --shard auto/N --start-at T
    each writing its folder to the results volume, then a merge Job
    (later/40-merge.yaml, applied after them) runs surge merge.

The experiment file (-f) goes into a ConfigMap mounted at /etc/surge; it
is first read by the parser of surge COMMAND -f itself (with the flags
after --), so an unknown field, or a key of another command, is refused
here, before any manifest is written. Flags after -- are passed to the command
(e.g. -- --target http://vllm.llm.svc:8000/v1). Results go to a
PersistentVolumeClaim NAME-results and are copied out with kubectl cp
through a small pod (later/50-fetch.yaml) that mounts it.

The API key is a reference: --api-key-secret NAME puts the Secret's key
(--api-key-secret-key) into each pod's environment as --api-key-env and
tells each surge in them to read that variable (its own --api-key-env;
set it here, not after --); its value never appears in a manifest. Nothing is sent anywhere: this writes
files and prints the kubectl commands that run them.`,
		Example: `  surge k8s job -f burst.yaml --workers 4 --namespace llm --api-key-secret vllm-key -o k8s/ \
      -- --target http://vllm.llm.svc:8000/v1
  surge k8s job --workers 8 --coordinator-listen 203.0.113.7:7070 -o k8s/
  surge k8s job -f burst.yaml --workers 4 --static --start-at 2026-12-02T10:00:00Z -o k8s/`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageErr("--out: the folder to write the manifests into is required (-o DIR)")
			}
			c.Command, c.Args, c.Version, c.Now = experiments, args, toolVersion(), time.Now()
			if file != "" {
				b, err := os.ReadFile(file)
				if err != nil {
					return usageErr("--file: %v", err)
				}
				c.Experiment, c.ExperimentName = b, file
			}
			if startAt != "" {
				t, err := time.Parse(time.RFC3339, startAt)
				if err != nil {
					return usageErr("--start-at: %q: want an RFC 3339 time, e.g. 2026-12-02T10:00:00Z", startAt)
				}
				c.StartAt = t
			}
			if file != "" {
				if err := checkExperimentFile(cmd.Context(), experiments, file, args); err != nil {
					return err
				}
			}
			if err := c.Validate(); err != nil {
				var es field.Errors
				if errors.As(err, &es) {
					var lines []string
					for _, e := range es {
						lines = append(lines, "--"+e.Field+": "+e.Message)
					}
					return usageErr("%s", strings.Join(lines, "\n"))
				}
				return usageErr("%v", err)
			}
			files := c.Files()
			if err := kubejob.Write(out, files, force); err != nil {
				if ex := (*kubejob.ExistsError)(nil); errors.As(err, &ex) {
					return usageErr("--out: %s already exists (--force to replace the manifests)", ex.Path)
				}
				return &exitError{exitInternal, err}
			}
			w := cmd.OutOrStdout()
			noun := "manifest files"
			if len(files) == 1 {
				noun = "manifest file"
			}
			fmt.Fprintf(w, "Wrote %d %s to %s (%s mode, %d workers, image %s).\n\n", len(files), noun, out, c.Mode(), c.Workers, c.Image)
			for _, l := range c.Steps(out) {
				fmt.Fprintln(w, l)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "file", "f", "", "the experiment file (YAML) the coordinator or the shards run, put into a ConfigMap")
	f.StringVarP(&out, "out", "o", "", "folder to write the manifests into")
	f.IntVar(&c.Workers, "workers", 0, "number of worker pods (the Indexed Job's parallelism and completions)")
	f.StringVar(&experiments, "command", "burst", "the experiment the coordinator or shards run: run, burst or capacity")
	f.StringVar(&c.Image, "image", "", "surge container image (default "+kubejob.DefaultImageRepo+":<this surge's version>)")
	f.StringVar(&c.Namespace, "namespace", kubejob.DefaultNamespace, "namespace of every object")
	f.StringVar(&c.Name, "name", kubejob.DefaultName, "prefix of the objects' names (a DNS label)")
	f.StringVar(&c.CoordinatorListen, "coordinator-listen", "", "HOST:PORT of a coordinator on your machine, reachable from the pods (no coordinator Job then)")
	f.BoolVar(&c.Static, "static", false, "static shards (--shard auto/N --start-at) and surge merge instead of a coordinator")
	f.StringVar(&startAt, "start-at", "", "when the static shards start together, RFC 3339 (default 3 minutes after now)")
	f.IntVar(&c.Port, "port", kubejob.DefaultPort, "the coordinator's port in the cluster")
	f.StringVar(&c.CPU, "cpu", kubejob.DefaultCPU, "CPU request of each surge pod")
	f.StringVar(&c.Memory, "memory", kubejob.DefaultMemory, "memory request and limit of each surge pod")
	f.StringVar(&c.Storage, "storage", kubejob.DefaultStorage, "size of the results volume (PersistentVolumeClaim)")
	f.StringVar(&c.StorageClass, "storage-class", "", "storage class of the results volume (default: the cluster's; --static needs one with ReadWriteMany)")
	f.StringVar(&c.APIKeySecret, "api-key-secret", "", "Secret holding the target's API key, mounted as env (the value never appears in the manifests)")
	f.StringVar(&c.APIKeyKey, "api-key-secret-key", kubejob.DefaultSecretKey, "the key in --api-key-secret that holds the API key")
	f.StringVar(&c.APIKeyEnv, "api-key-env", kubejob.DefaultAPIKeyEnv, "the environment variable the pods read the key from (as surge run's --api-key-env)")
	f.StringVar(&c.FetchImage, "fetch-image", kubejob.DefaultFetchImage, "image of the pod kubectl cp copies the results from (needs tar)")
	f.BoolVar(&force, "force", false, "replace manifests already in --out")
	return cmd
}

type parseOnlyKey struct{}

// parseOnly reports whether an experiment command runs only to parse its
// flags and -f file (experimentCmd.runE stops right after).
func parseOnly(ctx context.Context) bool {
	v, _ := ctx.Value(parseOnlyKey{}).(bool)
	return v
}

// checkExperimentFile parses file, and the flags after --, with the
// command's own flags and strict YAML decoding, as `surge COMMAND -f file
// FLAGS…` would, and stops there: nothing runs. Its error is the
// command's own (file:line: unknown field "x").
func checkExperimentFile(ctx context.Context, command, file string, args []string) error {
	var c *cobra.Command
	switch command {
	case "run":
		c = newRunCmd()
	case "burst":
		c = newBurstCmd()
	case "capacity":
		c = newCapacityCmd()
	default:
		return nil // Validate names --command
	}
	if ctx == nil {
		ctx = context.Background()
	}
	c.SetArgs(append([]string{"--file", file}, args...))
	c.SetOut(io.Discard)
	c.SetErr(io.Discard)
	c.SilenceErrors, c.SilenceUsage = true, true
	err := c.ExecuteContext(context.WithValue(ctx, parseOnlyKey{}, true))
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return usageErr("--file: not an experiment file of surge %s: %v", command, ee.err)
	}
	return usageErr("the flags after -- (for surge %s): %v", command, err)
}
