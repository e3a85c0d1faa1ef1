package check

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/report"
)

// Report is what one `surge check` found: check.json is its JSON, check.md
// its table. It holds no content: evidence and details are counts, times,
// statuses and names.
type Report struct {
	// Target is the endpoint, its URL redacted, or "built-in simulator".
	Target   string    `json:"target"`
	Model    string    `json:"model"`
	API      string    `json:"api"`
	Version  string    `json:"surge_version"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Server is what the api check learned about the endpoint.
	Server  ServerInfo `json:"server"`
	Results []Result   `json:"results"`
	Totals  Totals     `json:"totals"`
	// Requests is every request the suite sent.
	Requests int `json:"requests"`
	// Status is the verdict's first word (Outcome()): PASS, FAIL,
	// INTERRUPTED or UNREACHABLE; ExitCode the code surge check exits
	// with. The command fills both before writing check.json, so CI
	// need not recompute them from the results.
	Status   string `json:"verdict"`
	ExitCode int    `json:"exit_code"`
	// Interrupted is true when Ctrl-C stopped the suite: Results hold
	// what ran, the check under way as a SKIP "interrupted".
	Interrupted bool `json:"interrupted,omitempty"`
	// Deadline is true when the suite's deadline (Config.Deadline) cut
	// it short: the checks from the one under way on are SKIPs.
	Deadline bool `json:"deadline_passed,omitempty"`
	// Unreachable is why the target could not be reached ("" when it was).
	Unreachable string `json:"unreachable,omitempty"`
	// Internal is true when a check failed by a bug in surge (exit 4).
	Internal bool `json:"internal_error,omitempty"`
}

// ServerInfo is Server as check.json writes it.
type ServerInfo struct {
	Models      []string `json:"models"`
	MaxModelLen int      `json:"max_model_len,omitempty"`
	Engine      string   `json:"engine,omitempty"`
}

// Totals counts the results by status.
type Totals struct {
	Pass int `json:"pass"`
	Warn int `json:"warn"`
	Skip int `json:"skip"`
	Fail int `json:"fail"`
}

func (r *Report) total() {
	r.Totals = Totals{}
	for _, x := range r.Results {
		switch x.Status {
		case Pass:
			r.Totals.Pass++
		case Warn:
			r.Totals.Warn++
		case Skip:
			r.Totals.Skip++
		case Fail:
			r.Totals.Fail++
		}
	}
}

// setServer copies what the api check learned into the report.
func (r *Report) setServer(s Server) {
	r.Server = ServerInfo(s)
	if r.Server.Models == nil {
		r.Server.Models = []string{}
	}
}

// Passed reports whether every check that ran passed (WARN and SKIP do
// not fail) and the suite ran to its end.
func (r *Report) Passed() bool {
	return r.Totals.Fail == 0 && !r.Interrupted && r.Unreachable == ""
}

// The outcomes of a suite, as the verdict line and check.json say them.
const (
	OutcomePass        = "PASS"
	OutcomeFail        = "FAIL"
	OutcomeInterrupted = "INTERRUPTED"
	OutcomeUnreachable = "UNREACHABLE"
)

// Outcome returns the suite's outcome, the first word of Verdict():
// UNREACHABLE, else FAIL when a check failed, else INTERRUPTED, else PASS.
func (r *Report) Outcome() string {
	switch {
	case r.Unreachable != "":
		return OutcomeUnreachable
	case r.Totals.Fail > 0:
		return OutcomeFail
	case r.Interrupted:
		return OutcomeInterrupted
	}
	return OutcomePass
}

// Failed lists the names of the checks that FAILed.
func (r *Report) Failed() []string {
	var out []string
	for _, x := range r.Results {
		if x.Status == Fail {
			out = append(out, x.Name)
		}
	}
	return out
}

// nameWidth is the width of the name column: the longest check name.
const nameWidth = len(CheckStreamIncremental)

// RequiredLegend explains the * that Line puts after a required check's
// name; the console prints it before the lines when a check is required.
const RequiredLegend = "* required (--require): a SKIP of it is a FAIL"

// Line is one check's console line: status, name (with a * when it is
// required, see RequiredLegend), evidence.
func Line(x Result) string {
	name := x.Name
	if x.Required {
		name += "*"
	}
	return fmt.Sprintf("%-4s  %-*s  %s", x.Status, nameWidth+1, name, x.Evidence)
}

// Verdict is the line after the checks: what ran (PASS, WARN, FAIL)
// and how it went, what was skipped and why, the failed checks by name,
// then the count of each status, requests and time. A SKIP did not run:
// "PASS — 1 check ran and passed; 3 skipped (…)".
func (r *Report) Verdict() string {
	ran := r.Totals.Pass + r.Totals.Warn + r.Totals.Fail
	var head string
	switch {
	case r.Unreachable != "":
		head = "UNREACHABLE — " + r.Unreachable
	case r.Totals.Fail > 0:
		head = fmt.Sprintf("FAIL — %d of %s that ran failed (%s)", r.Totals.Fail, checkCount(ran), strings.Join(r.Failed(), ", ")) + r.skipped()
	case r.Interrupted:
		head = fmt.Sprintf("INTERRUPTED — %s ran, none failed", checkCount(ran)) + r.skipped()
	case ran == 0:
		head = "PASS — no check ran" + r.skipped()
	default:
		warned := ""
		if r.Totals.Warn > 0 {
			warned = fmt.Sprintf(" (%d with a warning)", r.Totals.Warn)
		}
		head = fmt.Sprintf("PASS — %s ran and passed%s", checkCount(ran), warned) + r.skipped()
	}
	return fmt.Sprintf("verdict: %s; %d passed, %d warned, %d skipped, %d failed; %s in %s",
		head, r.Totals.Pass, r.Totals.Warn, r.Totals.Skip, r.Totals.Fail, requestCount(r.Requests), showDur(r.Finished.Sub(r.Started)))
}

// maxSkipReasons bounds the length of the reasons skipped() repeats;
// longer, it names the skipped checks instead.
const maxSkipReasons = 100

// skipped is "; 3 skipped (why)" after the verdict's head, "" when
// nothing was skipped: the distinct reasons when they are short, else
// the skipped checks' names (their lines say why).
func (r *Report) skipped() string {
	if r.Totals.Skip == 0 {
		return ""
	}
	var why, names []string
	for _, x := range r.Results {
		if x.Status != Skip {
			continue
		}
		names = append(names, x.Name)
		if !slices.Contains(why, x.Evidence) {
			why = append(why, x.Evidence)
		}
	}
	list := strings.Join(why, "; ")
	if len(list) > maxSkipReasons {
		list = strings.Join(names, ", ")
	}
	return fmt.Sprintf("; %d skipped (%s)", r.Totals.Skip, list)
}

// checkCount is "1 check", "2 checks".
func checkCount(n int) string {
	if n == 1 {
		return "1 check"
	}
	return fmt.Sprintf("%d checks", n)
}

// requestCount is "1 request", "2 requests".
func requestCount(n int) string {
	if n == 1 {
		return "1 request"
	}
	return fmt.Sprintf("%d requests", n)
}

// WriteMarkdown writes check.md: what was checked, then one table row per
// check, then the verdict.
func (r *Report) WriteMarkdown(w io.Writer) error {
	return report.WriteGridMarkdown(w, r.Grid())
}

// Grid is the checks as a table: what was checked (target, model,
// server), one row per check, the verdict in the notes.
func (r *Report) Grid() report.Grid {
	g := report.Grid{
		Title: "surge check",
		Meta: []report.KV{
			{Key: "target", Value: r.Target},
			{Key: "model", Value: fmt.Sprintf("%s (%s API)", r.Model, r.API)},
		},
		Columns: []report.Column{
			{Key: "status", Head: "status", Kind: report.KindText},
			{Key: "check", Head: "check", Kind: report.KindText},
			{Key: "evidence", Head: "evidence", Kind: report.KindText},
			{Key: "requests", Head: "requests", Kind: report.KindCount},
			{Key: "time", Head: "time", Kind: report.KindText},
		},
		Notes: []string{r.Verdict()},
	}
	if s := r.Server; s.Engine != "" || s.MaxModelLen > 0 || len(s.Models) > 0 {
		var parts []string
		if s.Engine != "" {
			parts = append(parts, "engine "+s.Engine)
		}
		if s.MaxModelLen > 0 {
			parts = append(parts, fmt.Sprintf("max_model_len %d", s.MaxModelLen))
		}
		if len(s.Models) > 0 {
			parts = append(parts, fmt.Sprintf("%d model(s) listed", len(s.Models)))
		}
		g.Meta = append(g.Meta, report.KV{Key: "server", Value: strings.Join(parts, ", ")})
	}
	g.Meta = append(g.Meta, report.KV{Key: "surge", Value: fmt.Sprintf("%s, started %s, %s in %s", r.Version, r.Started.UTC().Format(time.RFC3339), requestCount(r.Requests), showDur(r.Finished.Sub(r.Started)))})
	if r.Interrupted {
		g.Meta = append(g.Meta, report.KV{Key: "**interrupted**", Value: "the checks below are those that ran"})
	}
	for _, x := range r.Results {
		name := x.Name
		if x.Required {
			name += " (required)"
		}
		g.Rows = append(g.Rows, []report.Cell{
			report.TextCell(string(x.Status)), report.TextCell(name), report.TextCell(x.Evidence),
			report.NumCell(report.Val(float64(x.Requests))), report.TextCell(showDur(x.Duration)),
		})
	}
	return g
}
