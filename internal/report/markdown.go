package report

import (
	"io"
	"strings"
	"unicode/utf8"
)

// WriteMarkdown writes t as results.md: WriteGridMarkdown of its grid
// for people — one aligned sub-table per column group (load, latency,
// failures and recovery), the identity columns (model, workload,
// deployment) whose value is the same on every row printed once above
// them, notes giving the reason for every n/a and censored value, the
// verdicts, the diagnoses and the legend.
func WriteMarkdown(w io.Writer, t Table) error {
	return WriteGridMarkdown(w, t.grid(true))
}

// WriteTerminalTables writes t's rows for a terminal (WriteGridText): its
// heading, the identity shared by every row, one aligned block per
// column group and the reasons for n/a and censored cells — no legend:
// what each column means is in legendFile, which the last line points to.
func WriteTerminalTables(w io.Writer, t Table, legendFile string) error {
	g := t.grid(true)
	g.LegendIn = legendFile
	return WriteGridText(w, g)
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// pad pads s with spaces to width runes, on the left when right-aligned.
func pad(s string, width int, right bool) string {
	n := width - utf8.RuneCountInString(s)
	if n <= 0 {
		return s
	}
	if right {
		return strings.Repeat(" ", n) + s
	}
	return s + strings.Repeat(" ", n)
}

func orNA(s string) string {
	if s == "" {
		return NA
	}
	return s
}
