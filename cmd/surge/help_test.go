package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagLine is a flag's line in --help: "  -o, --out string   …".
var flagLine = regexp.MustCompile(`(?m)^ +(?:-\w, )?--([\w-]+)`)

// commands lists every command under root but help and completion.
func commands(root *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Name() == "help" || c.Name() == "completion" || c.Hidden {
			return
		}
		out = append(out, c)
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	return out
}

// --help shows every flag of a command once, in flagGroups' groups in
// their order; the experiments have no flag outside the groups.
func TestHelpGroupsEveryFlag(t *testing.T) {
	experiments := map[string]bool{"run": true, "burst": true, "capacity": true, "sweep": true, "soak": true}
	for _, c := range commands(newRoot()) {
		text := groupedFlags(c)
		shown := map[string]int{}
		for _, m := range flagLine.FindAllStringSubmatch(text, -1) {
			shown[m[1]]++
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if n := shown[f.Name]; n != 1 && !f.Hidden {
				t.Errorf("%s --help: --%s shown %d times", c.CommandPath(), f.Name, n)
			}
		})
		if experiments[c.Name()] && strings.Contains(text, c.Name()+" flags:") {
			t.Errorf("%s --help: flags outside the groups:\n%s", c.CommandPath(), text[:strings.Index(text, "\n\n")])
		}
		last := -1
		for _, g := range flagGroups {
			if at := strings.Index(text, "\n"+g.title+":\n"); at >= 0 {
				if at < last {
					t.Errorf("%s --help: group %q out of order", c.CommandPath(), g.title)
				}
				last = at
			}
		}
	}
	help := helpText("burst")
	for _, want := range []string{"Target and auth:\n      --target", "Load and phases:\n  -f, --file", "SLO and deadlines:", "Workload:", "Engine metrics and tracing:", "Budgets:", "Output:", "Distributed:", simGroupVirtual + ":"} {
		if !strings.Contains(help, want) {
			t.Errorf("surge burst --help lacks %q", want)
		}
	}
}

// Every command says its exit codes and shows an example.
func TestEveryCommandHasExitCodesAndExamples(t *testing.T) {
	for _, c := range commands(newRoot()) {
		if !strings.Contains(c.Long, "Exit codes:") {
			t.Errorf("%s: no exit codes in its help", c.CommandPath())
		}
		if c.Example == "" {
			t.Errorf("%s: no example in its help", c.CommandPath())
		}
	}
}

// A misspelt command, help topic or flag, and a flag of another command,
// are usage errors (exit 2) that name the closest valid names.
func TestBadNamesSuggest(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"help", "nonsense"}, `help: no command "nonsense"`},
		{[]string{"help", "brust"}, "did you mean burst?"},
		{[]string{"brust"}, "Did you mean this?\n\tburst"},
		{[]string{"burst", "--multiplier", "2"}, "did you mean --multipliers?"},
		{[]string{"run", "--multipliers", "2"}, "--multipliers is a flag of surge burst, not of surge run"},
		{[]string{"run", "--rat", "2"}, "did you mean --rate"},
	}
	for _, c := range cases {
		code, _, errOut := surge(t, c.args...)
		if code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("surge %s: exit %d, stderr %q; want 2 and %q", strings.Join(c.args, " "), code, errOut, c.want)
		}
	}
}
