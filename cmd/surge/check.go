package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/surge-bench/surge/internal/calibrate"
	"github.com/surge-bench/surge/internal/check"
	"github.com/surge-bench/surge/internal/openai"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/rundir"
	"github.com/surge-bench/surge/internal/workload"
)

// exitCodesCheck ends surge check's --help.
var exitCodesCheck = "\n\n" + wrap("Exit codes: 0 every check that ran passed (WARN and SKIP do not fail); "+
	"1 a check failed (a SKIP of a check --require names is a failure), or the suite was interrupted (both files say so); "+
	"2 usage or configuration error (e.g. an unknown check name), or the output folder is in use or not empty; "+
	"3 the target is unreachable (the first request got no response: connection refused, unknown host, TLS); "+
	"4 anything else, e.g. check.json could not be written.", 78)

func newCheckCmd() *cobra.Command {
	o := run.DefaultOptions()
	o.PromptCalibration = calibrate.Off // checks size nothing by tokens
	cfg := check.DefaultConfig()
	var quiet bool
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Verify the behaviour production depends on, before routing traffic to an endpoint",
		Long: `Run a suite of checks against an OpenAI-compatible endpoint and say, one
line per check, whether it does what production traffic depends on: streaming
that really streams, a long generation that ends with [DONE], connections kept
alive, usage sent and right, tool calls and structured output that parse, long
prompts accepted and too-long ones refused cleanly, stop, temperature,
max_tokens and seed honoured, and what errors and overload look like.

Each line is PASS, WARN (works, with a caveat worth knowing), SKIP (not run or
not applicable, and why: e.g. the endpoint has no tool support) or FAIL, with
its evidence in a few words: counts, times, statuses and header names, never
prompt or answer text. The api check runs first; when it fails (not an OpenAI
API, the model not served) every other check SKIPs. A verdict line and an exit
line follow; check.json and check.md go to the run folder. docs/checks.md gives
every check's rule.

--api picks the suite. Chat and completions share the one above; responses
(OpenAI's Responses API), messages (Anthropic's Messages API), embeddings and
rerank have their own, named after the API: its served check runs first (a
404 or 405 on the API's path FAILs it, and every other check SKIPs), then
streaming, usage and the end of a stream, tool_use blocks, vectors and their
dimensions, results and their order, and what bad requests get.

--only, --skip and --require take group names or full check names of the
--api's suite, comma-separated or repeated:
` + indentNames() + `
A check --require names runs even when --only leaves it out, and its SKIP is a
FAIL ("required: …"). The first check of a suite (api, messages.served, …)
always runs.

The checks run one after another and bound their own load: a few short
requests each, one long generation (--long-tokens), and the overload probe's
burst of at most --overload-requests (at most 2048). With no --target the
suite runs against the built-in simulator, which passes every check; the
simulator's flags apply to it (surge sim --help), --quirk NAME makes it
misbehave.` + exitCodesCheck,
		Example: `  # the built-in simulator: every check passes
  surge check

  # a vLLM server, the long generation near the model's 8192-token cap
  surge check --target http://127.0.0.1:8000/v1 --model meta-llama/Llama-3.1-8B-Instruct \
    --long-tokens 8000

  # only streaming and usage, behind a gateway with a key; fail if tools are missing
  surge check --target https://llm.example.com/v1 --model m --api-key-env LLM_KEY \
    --only streaming,usage --require tools

  # the simulator behind a buffering proxy: streaming.incremental FAILs (exit 1)
  surge check --quirk buffered-stream

  # a vLLM server's Anthropic Messages API, tool_use blocks required
  surge check --target http://127.0.0.1:8000/v1 --model m --api messages --require messages.tools`,
		Args: cobra.NoArgs,
	}
	f := newFlags(cmd.Flags())
	f.target(&o)
	f.strings(&cfg.Only, "only", "only", "run only these checks or groups (comma-separated or repeated), e.g. --only streaming,usage.unary")
	f.strings(&cfg.Skip, "skip", "skip", "leave these checks or groups out, e.g. --skip errors")
	f.strings(&cfg.Require, "require", "require", "these checks or groups must run and pass: a SKIP of them (feature missing) is a FAIL, e.g. --require tools")
	f.integer(&cfg.LongTokens, "long_tokens", "long-tokens", "max_tokens of streaming.long's generation; set it near the model's cap for your own endpoint")
	f.integer(&cfg.ContextTokens, "context_tokens", "context-tokens", "prompt length of context.long, tokens (0 = the --profile's longest prompt)")
	f.str(&o.Profile, "profile", "profile", "workload profile whose longest prompt context.long sends (and whose median it compares TTFT with): "+strings.Join(workload.Names(), ", "))
	f.dur(&cfg.Deadline, "deadline", "deadline", "bound on the whole suite: the check under way when it passes, and those after it, are SKIPs that say so")
	f.integer(&cfg.OverloadRequests, "overload_requests", "overload-requests", fmt.Sprintf("most requests the overload probe (errors.overload) may send, 1..%d", check.MaxOverloadRequests))
	f.fs.StringVarP(&o.Out, "out", "o", "", "output folder for check.json and check.md (default out/check-<date>-<time>-<id>; an existing non-empty one is refused without --force)")
	f.bind("out", "out")
	f.boolean(&o.Force, "force", "force", "reuse a non-empty --out folder: surge's files in it are replaced")
	f.fs.BoolVarP(&quiet, "quiet", "q", false, "print only the checks that did not pass, the verdict and the exit line")
	f.simulator("sim.", &o.Sim)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg.Timeout, cfg.API = o.Timeout, o.API
		if err := o.Validate(); err != nil {
			return f.explain(err)
		}
		if err := cfg.Validate(); err != nil {
			return f.explain(err)
		}
		cfg.Profile, _ = workload.Lookup(o.Profile) // a name Validate accepted
		f.warnSimulatorOnly(cmd.ErrOrStderr(), o.Target)
		return runCheck(cmd, f, o, cfg, quiet)
	}
	return cmd
}

// indentNames lists the names --only, --skip and --require take with
// each --api (together, check.Names()), wrapped and indented for --help.
func indentNames() string {
	var b strings.Builder
	for _, api := range check.APIs() {
		head := api
		switch api {
		case check.APICompletions:
			continue // chat's suite
		case check.APIChat:
			head = "chat, completions"
		}
		for i, l := range slices.Collect(strings.SplitSeq(wrap(head+": "+strings.Join(check.NamesFor(api), ", "), 72), "\n")) {
			if i > 0 {
				l = "  " + l
			}
			b.WriteString("  " + l + "\n")
		}
	}
	return b.String()
}

// runCheck prepares the target, claims the run folder, runs the selected
// checks, writes check.json and check.md and maps the report to an exit
// code. Ctrl-C stops the suite; the files are still written.
func runCheck(cmd *cobra.Command, f *flags, o run.Options, cfg check.Config, quiet bool) error {
	ctx := cmd.Context()
	w := cmd.OutOrStdout()
	o.Quiet = true // no live view: the lines are the view
	logger := run.ConsoleLogger(cmd.ErrOrStderr())
	env, err := run.PrepareWith(context.WithoutCancel(ctx), o, false, run.Setup{Logger: logger, Version: toolVersion(), Network: network, Interrupt: ctx})
	if err != nil {
		return classify(f, err)
	}
	defer env.Close()
	path := o.Out
	if path == "" {
		path = rundir.DefaultPath("out", "check", time.Now())
	}
	d, err := rundir.Create(path, rundir.Options{Force: o.Force, Owner: "surge check"})
	if err != nil {
		return classify(f, err)
	}
	defer d.Close()
	// One connection per request the overload probe may have in flight;
	// the other checks send one request at a time.
	hc, header, err := openai.HTTP(env.ClientConfig(cfg.OverloadRequests + 2))
	if err != nil {
		return classify(f, err)
	}
	defer hc.CloseIdleConnections()
	probe := check.NewProbe(env.BaseURL, o.Model, o.API, hc, header)
	fmt.Fprintf(w, "surge check: %s, model %s, %s API\n", env.TargetName(), o.Model, o.API)
	checks := check.Select(cfg)
	if slices.ContainsFunc(checks, func(c check.Selected) bool { return c.Required }) {
		fmt.Fprintln(w, check.RequiredLegend)
	}
	rep, runErr := check.Run(ctx, probe, cfg, checks, func(r check.Result) {
		if !quiet || r.Status != check.Pass {
			fmt.Fprintln(w, check.Line(r))
		}
	})
	rep.Target, rep.Version = env.TargetName(), toolVersion()
	rep.Status, rep.ExitCode = rep.Outcome(), checkCode(rep, runErr)
	if err := writeCheck(d, rep); err != nil {
		return &exitError{exitInternal, err}
	}
	fmt.Fprintln(w, rep.Verdict())
	fmt.Fprintf(w, "wrote %s (check.json, check.md)\n", d.Path())
	return checkExit(w, rep, runErr)
}

// writeCheck writes check.json and check.md into the run folder.
func writeCheck(d *rundir.Dir, rep *check.Report) error {
	if err := d.WriteJSON("check.json", rep); err != nil {
		return err
	}
	return d.WriteFile("check.md", rep.WriteMarkdown)
}

// checkCode is the code surge check exits with for a report (checkExit
// says why).
func checkCode(rep *check.Report, runErr error) int {
	switch {
	case errors.Is(runErr, check.ErrUnreachable):
		return exitTarget
	case runErr != nil, rep.Internal:
		return exitInternal
	case rep.Interrupted, rep.Totals.Fail > 0:
		return exitSLO
	}
	return exitOK
}

// checkExit prints the exit line of a report and returns its code, the
// one checkCode decides (check.json records the same).
func checkExit(w io.Writer, rep *check.Report, runErr error) error {
	code := checkCode(rep, runErr)
	switch {
	case code == exitOK:
		fmt.Fprintln(w, "exit 0: every check that ran passed (WARN and SKIP do not fail)")
		return nil
	case code == exitTarget:
		fmt.Fprintf(w, "exit 3: the target is unreachable: %s\n", rep.Unreachable)
	case runErr != nil:
		return &exitError{exitInternal, runErr}
	case code == exitInternal:
		fmt.Fprintln(w, "exit 4: a check failed by a bug in surge (its line says so)")
	case rep.Interrupted:
		fmt.Fprintln(w, "Interrupted: the checks above are those that ran (check.json and check.md say so).")
		fmt.Fprintln(w, "exit 1: interrupted (the files are marked interrupted)")
	default:
		fmt.Fprintf(w, "exit 1: %s failed\n", strings.Join(rep.Failed(), ", "))
	}
	return &exitError{code, errSilent}
}
