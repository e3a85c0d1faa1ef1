package virtual

import (
	"context"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/workload"
)

// A record of a virtual run carries its request's labels as a live
// client's record does (Request.Label).
func TestTagCarriesEveryLabel(t *testing.T) {
	req := workload.Request{Profile: "rag", MaxTokens: 300, DatasetRow: 17, Session: 4, Turn: 3, Branch: 2, PrefixTokens: 512, SessionTurns: 5, Prompt: "text"}
	live := record.New("x", 1, "p", 0)
	req.Label(&live)
	virt := record.New("x", 1, "p", 0)
	tg := tagOf(&req)
	tg.label(&virt)
	if !reflect.DeepEqual(live, virt) || tg.maxTok != 300 {
		t.Errorf("virtual labels %+v, live %+v", virt, live)
	}
	if n := unsafe.Sizeof(tag{}); n > 48 {
		t.Errorf("a tag is %d bytes: it is kept per arrival", n)
	}
}

func mixGenerator(t *testing.T) *workload.Generator {
	t.Helper()
	m, _ := workload.ParseMix("chat=0.7,rag=0.2,longgen=0.1")
	ws, err := m.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := workload.New(workload.Config{Mix: ws, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestOpenLabelsEachRecordWithItsProfile(t *testing.T) {
	gen := mixGenerator(t)
	arr := constant(t, "main", 20, 10*time.Second)
	cfg := baseConfig()
	cfg.Profile = "mix" // the run's label; each request's own wins
	out, err := Open(context.Background(), cfg, gen, arr, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for i := range out.Records {
		r := &out.Records[i]
		want := gen.Generate(arr[i])
		if r.Profile != want.Profile || r.MaxTokens != want.MaxTokens {
			t.Fatalf("record %d: profile %q max_tokens %d, want %q %d", i, r.Profile, r.MaxTokens, want.Profile, want.MaxTokens)
		}
		seen[r.Profile]++
	}
	if len(seen) != 3 {
		t.Errorf("profiles seen: %v", seen)
	}
}

func TestClosedLabelsEachRecordWithItsProfile(t *testing.T) {
	gen := mixGenerator(t)
	out, err := Closed(context.Background(), baseConfig(), gen, schedule.ClosedLoop{Users: 4, Duration: 20 * time.Second, Phase: "c"})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for i := range out.Records {
		r := &out.Records[i]
		if want := gen.ProfileName(&schedule.Arrival{Seq: r.Seq}); r.Profile != want {
			t.Fatalf("record %d: profile %q, want %q", i, r.Profile, want)
		}
		seen[r.Profile]++
	}
	if len(seen) < 2 {
		t.Errorf("profiles seen: %v", seen)
	}
}
