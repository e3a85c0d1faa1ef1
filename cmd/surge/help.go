package main

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagGroups are the groups --help shows a command's flags in, in this
// order, each flag in the order of its importance to a user of that group
// (the first the one most reach for). A flag no group names is one of the
// command's own and is shown first, under "<command> flags", in the order
// the command defines it; the simulator's knobs (usage "sim: …") go last.
var flagGroups = []struct {
	title string
	flags []string
}{
	{"Target and auth", []string{"target", "simulate", "model", "api", "api-key-env", "api-key-file", "api-key-secret", "api-key-secret-key",
		"header", "ca-cert", "insecure", "timeout", "connect-timeout", "stream", "retries", "retry-delay", "http-client", "gateway-timing"}},
	{"Load and phases", []string{"file", "rate", "baseline-rps", "multipliers", "duration", "baseline", "burst", "burst-rps", "recovery",
		"warmup", "warmup-requests", "baseline-fraction", "arrival", "burstiness", "recovery-limit", "recovery-metric", "settle-timeout", "start-rps", "max-rps",
		"rates", "step", "step-duration", "max-steps", "max-step-duration", "concurrency", "capacity-rps", "queue-limit", "growth",
		"trace", "trace-offset", "trace-window", "trace-block-tokens", "speed", "boost-rps", "boost-after", "repeat", "vary",
		"max-in-flight", "seed", "dry-run", "early-stop", "no-early-stop", "spin"}},
	{"SLO and deadlines", []string{"ttft-deadline", "e2e-deadline", "tpot-deadline", "token-deadline", "slo-ttft-p95", "slo-e2e-p99",
		"slo-goodput", "ttft-budget", "tpot-budget", "knee-threshold", "drift-latency", "drift-error-rate", "drift-kv", "confidence",
		"tolerance", "min-requests", "window"}},
	{"Workload", []string{"profile", "mix", "prompt-tokens", "output-tokens", "max-tokens-cap", "ignore-eos", "inputs", "query-tokens", "images", "image-size", "image-format", "prompt-calibration",
		"dataset", "dataset-format", "dataset-sample", "shared-prefix", "no-nonce", "sessions", "session-turns", "think-time",
		"turn-tokens", "fanout", "session-drain"}},
	{"Engine metrics and tracing", []string{"metrics-url", "metrics-preset", "metric", "scrape-interval", "otlp-listen", "otlp-grace",
		"watch-k8s", "replica-header", "prometheus-addr", "metrics-out", "web"}},
	{"Budgets", []string{"max-requests", "max-output-tokens", "max-cost", "price-input", "price-output"}},
	{"Output", []string{"out", "force", "quiet", "deployment", "hardware", "serving-config"}},
	{"Distributed", []string{"workers", "coordinator-listen", "workers-wait", "shard", "start-at"}},
}

// simGroup is the title of the simulator's knobs (simGroupVirtual for a
// command that has --simulate).
const (
	simGroup        = "Simulator (with no --target)"
	simGroupVirtual = "Simulator (with no --target, or with --simulate)"
)

func isSimFlag(f *pflag.Flag) bool { return strings.HasPrefix(f.Usage, "sim: ") }

// groupedFlags renders cmd's own flags (not the inherited ones) in
// flagGroups' groups, as --help shows them.
func groupedFlags(cmd *cobra.Command) string {
	local := cmd.LocalFlags()
	order := map[string]int{}
	group := map[string]int{}
	for gi, g := range flagGroups {
		for i, name := range g.flags {
			group[name], order[name] = gi, i
		}
	}
	own := pflag.NewFlagSet("own", pflag.ContinueOnError)
	own.SortFlags = false
	sets := make([]*pflag.FlagSet, len(flagGroups))
	for i := range sets {
		sets[i] = pflag.NewFlagSet(flagGroups[i].title, pflag.ContinueOnError)
		sets[i].SortFlags = false
	}
	sim := pflag.NewFlagSet("sim", pflag.ContinueOnError)
	sim.SortFlags = false
	grouped := make([][]*pflag.Flag, len(flagGroups))
	// cmd.Flags() keeps the order the command defined its flags in;
	// LocalFlags() is sorted.
	all := cmd.Flags()
	sorted := all.SortFlags
	all.SortFlags = false
	defer func() { all.SortFlags = sorted }()
	all.VisitAll(func(f *pflag.Flag) {
		if local.Lookup(f.Name) == nil {
			return
		}
		switch gi, ok := group[f.Name]; {
		case f.Name == "help":
		case isSimFlag(f):
			sim.AddFlag(f)
		case ok:
			grouped[gi] = append(grouped[gi], f)
		default:
			own.AddFlag(f)
		}
	})
	var b strings.Builder
	section := func(title string, fs *pflag.FlagSet) {
		if !fs.HasFlags() {
			return
		}
		fmt.Fprintf(&b, "\n%s:\n%s", title, fs.FlagUsagesWrapped(0))
	}
	section(cmd.Name()+" flags", own)
	for gi, fl := range grouped {
		slices.SortStableFunc(fl, func(a, c *pflag.Flag) int { return order[a.Name] - order[c.Name] })
		for _, f := range fl {
			sets[gi].AddFlag(f)
		}
		section(flagGroups[gi].title, sets[gi])
	}
	title := simGroup
	if cmd.Flags().Lookup("simulate") != nil {
		title = simGroupVirtual
	}
	section(title, sim)
	if h := local.Lookup("help"); h != nil {
		hs := pflag.NewFlagSet("help", pflag.ContinueOnError)
		hs.AddFlag(h)
		section("Help", hs)
	}
	return strings.TrimPrefix(b.String(), "\n")
}

// usageTemplate is cobra's usage template with the flags in groups
// (groupedFlags) instead of one alphabetical list.
const usageTemplate = `Usage:{{if .Runnable}}
  {{.UseLine}}{{end}}{{if .HasAvailableSubCommands}}
  {{.CommandPath}} [command]{{end}}{{if gt (len .Aliases) 0}}

Aliases:
  {{.NameAndAliases}}{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}

Available Commands:{{range .Commands}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{if .HasAvailableLocalFlags}}

{{groupedFlags .}}{{end}}{{if .HasAvailableInheritedFlags}}

Global Flags:
{{.InheritedFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}{{if .HasAvailableSubCommands}}

Use "{{.CommandPath}} [command] --help" for more information about a command.{{end}}
`

func init() {
	cobra.AddTemplateFunc("groupedFlags", func(c *cobra.Command) string {
		return strings.TrimRight(groupedFlags(c), "\n")
	})
}

// helpText is what `surge <args> --help` prints, for tests and the CLI
// reference.
func helpText(args ...string) string {
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append(args, "--help"))
	_ = root.Execute()
	return out.String()
}

// moreHelp is the exit codes and examples of the commands whose own
// definitions do not say them, by command path; newRoot adds them.
var moreHelp = map[string]struct{ exit, example string }{
	"surge": {example: "  # the burst experiment against the built-in simulator: the demo\n  surge burst\n\n" +
		"  # one run of 5 req/s for 10 minutes against an endpoint, its engine's metrics scraped\n" +
		"  surge run --target http://127.0.0.1:8000/v1 --model my-model --rate 5 --duration 10m --metrics-url http://127.0.0.1:8000/metrics\n\n" +
		"  # what each command does, with its flags in groups\n  surge burst --help"},
	"surge report": {exit: "Exit codes: 0 re-rendered (the exit line says which code the command that wrote the folder gives these results); " +
		"2 not a folder surge wrote, a folder without requests.jsonl, a capacity search's or sweep's own folder, or one in use by a run; " +
		"4 the re-rendered files could not be written."},
	"surge predict": {exit: "Exit codes: 0 predicted; 2 a flag out of range (μ, λ, the burst and its duration must be positive numbers)."},
	"surge sim":     {exit: "Exit codes: 0 stopped by Ctrl-C or SIGTERM after serving; 2 a flag out of range, or --addr cannot be listened on."},
	"surge k8s": {
		exit:    "Exit codes: 0 help printed; the work is done by its commands (surge k8s job --help).",
		example: "  # manifests for a burst run by 4 workers in namespace llm, written to k8s/\n  surge k8s job -f burst.yaml --workers 4 --namespace llm -o k8s/\n  kubectl apply -f k8s/",
	},
	"surge k8s job": {exit: "Exit codes: 0 the manifests were written; 2 a missing or bad flag or experiment file, or --out exists without --force; 4 the manifests could not be written."},
	"surge workload": {
		exit:    "Exit codes: 0 help printed; the work is done by its commands (surge workload inspect --help, surge workload fit --help).",
		example: "  # what the default chat profile sends, without sending it\n  surge workload inspect\n\n  # fit a workload to production logs, then run it\n  surge workload fit requests.csv -o fitted/\n  surge run -f fitted/workload.yaml --simulate",
	},
	"surge workload inspect": {exit: "Exit codes: 0 printed; 2 a bad flag, an experiment file given twice, or an unknown field in it."},
	"surge workload fit":     {exit: "Exit codes: 0 fitted and written; 2 a log without the columns surge needs, or a bad flag; 4 --out could not be written."},
	"surge version": {
		exit:    "Exit codes: 0 printed.",
		example: "  surge version\n  # surge v0.3.0 (go1.26.0, linux/amd64)",
	},
}

// addHelp appends moreHelp's exit codes and examples to the commands
// under root, and sets each command's flag suggestions.
func addHelp(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if h, ok := moreHelp[c.CommandPath()]; ok {
			if h.exit != "" {
				c.Long = strings.TrimRight(cmp.Or(c.Long, c.Short), "\n") + "\n\n" + wrap(h.exit, 78)
			}
			if h.example != "" && c.Example == "" {
				c.Example = h.example
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}

// newHelpCmd is cobra's help command, but an unknown topic is a usage
// error (exit 2) that names the closest commands.
func newHelpCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, rest, err := root.Find(args)
			if err != nil || c == nil || len(rest) > 0 {
				msg := fmt.Sprintf("help: no command %q", strings.Join(args, " "))
				if s := root.SuggestionsFor(args[len(args)-1]); len(s) > 0 {
					msg += "; did you mean " + strings.Join(s, ", ") + "?"
				}
				return usageErr("%s (surge --help lists them)", msg)
			}
			c.InitDefaultHelpFlag()
			return c.Help()
		},
	}
}

// flagHint says, for an unknown flag of the command args name, the
// closest flags of that command and the commands that do have the flag;
// "" when it knows none.
func flagHint(root *cobra.Command, args []string, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return ""
	}
	c, _, ferr := root.Find(args)
	if ferr != nil || c == nil {
		return ""
	}
	var near []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		limit := 2
		if len(name) <= 4 {
			limit = 1
		}
		if distance(name, f.Name) <= limit || (len(name) >= 3 && strings.HasPrefix(f.Name, name)) {
			near = append(near, "--"+f.Name)
		}
	})
	var others []string
	var walk func(o *cobra.Command)
	walk = func(o *cobra.Command) {
		if o != c && o.Flags().Lookup(name) != nil {
			others = append(others, o.CommandPath())
		}
		for _, s := range o.Commands() {
			walk(s)
		}
	}
	walk(root)
	var parts []string
	if len(near) > 0 {
		parts = append(parts, "did you mean "+strings.Join(near, ", ")+"?")
	}
	if len(others) > 0 {
		parts = append(parts, fmt.Sprintf("--%s is a flag of %s, not of %s", name, strings.Join(others, ", "), c.CommandPath()))
	}
	return strings.Join(parts, " ")
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
