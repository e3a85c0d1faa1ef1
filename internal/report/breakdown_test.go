package report

import (
	"bytes"
	"strings"
	"testing"
)

// Breakdown tables appear after the results tables and before the charts,
// escaped, with n/a reasons; a page without them is as before.
func TestHTMLBreakdowns(t *testing.T) {
	rep := burstReport()
	var plain bytes.Buffer
	if err := WriteHTML(&plain, rep); err != nil {
		t.Fatal(err)
	}
	rep.Breakdowns = []Grid{{
		Title:   "By profile <mix>",
		Columns: []Column{{Key: "profile", Head: "profile", Kind: KindText}, {Key: "ttft_p50_ms", Head: "TTFT p50", Kind: KindMs}},
		Rows: [][]Cell{
			{TextCell("chat"), NumCell(Val(548))},
			{TextCell("rag"), NumCell(Unavailable("no samples"))},
		},
	}}
	var b bytes.Buffer
	if err := WriteHTML(&b, rep); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	at := strings.Index(page, "By profile &lt;mix&gt;")
	results := strings.LastIndex(page, `<section class="results">`)
	run := strings.Index(page, `<section class="run"`)
	if at < 0 || results < 0 || at < results || (run >= 0 && at > run) {
		t.Fatalf("breakdown at %d, results at %d, runs at %d", at, results, run)
	}
	for _, want := range []string{">chat<", ">548<", "no samples"} {
		if !strings.Contains(page[at:], want) {
			t.Errorf("breakdown: no %q", want)
		}
	}
	rep.Breakdowns = nil
	var again bytes.Buffer
	WriteHTML(&again, rep)
	if again.String() != plain.String() {
		t.Error("a page without breakdowns changed")
	}
	// A malformed table fails before anything is written.
	rep.Breakdowns = []Grid{{Title: "x", Columns: []Column{{Key: "a", Head: "a"}}, Rows: [][]Cell{{}}}}
	var bad bytes.Buffer
	if err := WriteHTML(&bad, rep); err == nil || bad.Len() > 0 {
		t.Errorf("malformed breakdown: %v, %d bytes written", err, bad.Len())
	}
}
