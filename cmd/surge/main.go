// Command surge load-tests LLM inference services: open-arrival load,
// bursts over a named baseline, goodput under per-request deadlines, queue
// visibility, recovery time and honest percentiles. See README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Exit codes (the user-facing contract).
const (
	exitOK        = 0 // ran, and every SLO held
	exitSLO       = 1 // ran, and an SLO failed
	exitUsage     = 2 // usage or configuration error
	exitTarget    = 3 // the target was unusable
	exitInternal  = 4 // anything else went wrong
	exitUndecided = 5 // ran, nothing failed, but a verdict could not be decided on its sample (INCONCLUSIVE)
)

// exitError carries an exit code up to main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, a ...any) error {
	return &exitError{exitUsage, fmt.Errorf(format, a...)}
}

func main() { os.Exit(signalled()) }

// signalled runs the command line with Ctrl-C and SIGTERM ending its
// context (the test binary, run as surge, calls it too).
func signalled() int {
	// A closed stdout (surge run | head) must not kill a run before it has
	// written its report: writes to it fail quietly instead.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return cli(ctx, os.Args[1:], os.Stdout, os.Stderr)
}

// cli executes one surge command line and returns its exit code.
func cli(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != errSilent {
			fmt.Fprintln(stderr, "surge:", ee.err)
		}
		return ee.code
	}
	// cobra's own errors (unknown flag, bad value, missing args) are usage
	// errors. A bad value is told as every field error is: "--mix: …".
	var bad *pflag.InvalidValueError
	if errors.As(err, &bad) {
		err = fmt.Errorf("--%s: %w", bad.GetFlag().Name, bad.Unwrap())
	}
	fmt.Fprintln(stderr, "surge:", err)
	if hint := flagHint(root, args, err); hint != "" {
		fmt.Fprintln(stderr, hint)
	}
	fmt.Fprintln(stderr, "Run 'surge --help' for usage.")
	return exitUsage
}

// errSilent marks an exit whose message was already printed.
var errSilent = errors.New("")

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "surge",
		Short: "Load-test LLM inference services the way capacity planners need",
		Long: `surge load-tests OpenAI-compatible LLM inference endpoints with open-arrival
load and tells you how many users got an answer in time (goodput), what
happens in a 2x/5x/10x burst, where requests waited, and how long the service
took to be healthy again.

With no --target, every command runs against surge's built-in simulated
inference engine, so you can try everything on a laptop.` + exitCodesRoot,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetUsageTemplate(usageTemplate) // flags in groups (help.go)
	root.SetHelpCommand(newHelpCmd(root))
	root.AddCommand(newVersionCmd(), newSimCmd(), newRunCmd(), newBurstCmd(), newReportCmd(), newPredictCmd())
	root.AddCommand(newCapacityCmd(), newSweepCmd(), newSoakCmd(), newWorkloadCmd(), newCheckCmd())
	root.AddCommand(newCompareCmd())
	root.AddCommand(newColdstartCmd())
	root.AddCommand(newMergeCmd())
	root.AddCommand(newK8sCmd())
	root.AddCommand(newWorkerCmd())
	addHelp(root) // exit codes and examples the commands do not say themselves (help.go)
	return root
}
