package report

// Text is the hint for people: "suggests <hypothesis>: <evidence>; check
// <check>" — a hypothesis to check, never a conclusion.
func (h Hint) Text() string {
	return "suggests " + h.Hypothesis + ": " + h.Evidence + "; check " + h.Check
}
