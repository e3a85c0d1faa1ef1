package report

import (
	"fmt"
	"strings"
)

// Text is the hint for people: "suggests <hypothesis>: <evidence>; check
// <check>" — a hypothesis to check, never a conclusion.
func (h Hint) Text() string {
	return "suggests " + h.Hypothesis + ": " + h.Evidence + "; check " + h.Check
}

// Text renders the diagnosis for people: "<scope>  <mode>: <summary>",
// then one indented line per hint.
func (d Diagnosis) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %s: %s\n", d.Scope, d.Mode, d.Summary)
	for _, h := range d.Hints {
		fmt.Fprintf(&b, "    %s\n", h.Text())
	}
	return b.String()
}
