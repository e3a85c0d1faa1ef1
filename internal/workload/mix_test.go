package workload

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/surge-bench/surge/internal/schedule"
)

func TestParseMix(t *testing.T) {
	good := []struct {
		in   string
		want Mix
	}{
		{"chat=0.7,rag=0.2,longgen=0.1", Mix{{"chat", 0.7}, {"rag", 0.2}, {"longgen", 0.1}}},
		{" chat = 3 , rag=1 ", Mix{{"chat", 3}, {"rag", 1}}},
		{"chat=1,rag=0", Mix{{"chat", 1}, {"rag", 0}}},
		{"", nil},
	}
	for _, c := range good {
		got, err := ParseMix(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseMix(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	bad := []struct{ in, want string }{
		{"chat", `want name=weight pairs such as chat=0.7,rag=0.3, got "chat"`},
		{"chat=", `want name=weight pairs such as chat=0.7,rag=0.3, got "chat="`},
		{"=0.3", `want name=weight pairs such as chat=0.7,rag=0.3, got "=0.3"`},
		{"chat=0.5,,rag=0.5", `want name=weight pairs such as chat=0.7,rag=0.3, got ""`},
		{"chat=lots", `chat: weight: want a number, got "lots"`},
		{"chat=-1,rag=2", `chat: weight: must be a finite number >= 0, got -1`},
		{"chat=NaN", `chat: weight: must be a finite number >= 0, got NaN`},
		{"chat=Inf", `chat: weight: must be a finite number >= 0, got +Inf`},
		{"chat=0,rag=0", `the weights must sum to more than 0 (and stay finite), got 0`},
		{"chat=1e308,rag=1e308", `the weights must sum to more than 0 (and stay finite), got +Inf`},
		{"chat=0.5,chat=0.5", `chat: given twice`},
	}
	for _, c := range bad {
		if _, err := ParseMix(c.in); err == nil || err.Error() != c.want {
			t.Errorf("ParseMix(%q): %v, want %q", c.in, err, c.want)
		}
	}
	m, _ := ParseMix("chat=0.7,rag=0.2,longgen=0.1")
	if s := m.String(); s != "chat=0.7,rag=0.2,longgen=0.1" {
		t.Errorf("String = %q", s)
	}
}

func TestMixYAML(t *testing.T) {
	type doc struct {
		Mix Mix `yaml:"mix"`
	}
	good := map[string]Mix{
		"mix: {chat: 0.7, rag: 0.3}":         {{"chat", 0.7}, {"rag", 0.3}},
		"mix:\n  longgen: 1\n  chat: 3\n":    {{"longgen", 1}, {"chat", 3}},
		"mix: chat=0.7,rag=0.3":              {{"chat", 0.7}, {"rag", 0.3}},
		"mix: {support-bot: 2, chat: 0.5}\n": {{"support-bot", 2}, {"chat", 0.5}},
	}
	for in, want := range good {
		var d doc
		if err := yaml.Unmarshal([]byte(in), &d); err != nil || !reflect.DeepEqual(d.Mix, want) {
			t.Errorf("%q: %v, %v; want %v", in, d.Mix, err, want)
		}
		// Round trip.
		b, _ := yaml.Marshal(d)
		var back doc
		if err := yaml.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back.Mix, want) {
			t.Errorf("%q: round trip %s: %v, %v", in, b, back.Mix, err)
		}
	}
	bad := map[string]string{
		"mix:\n  chat: 0.7\n  rag: -1\n": "line 3: mix: rag: weight: must be a finite number >= 0, got -1",
		"mix:\n  chat: lots\n":           `line 2: mix: chat: weight: want a number, got "lots"`,
		"mix:\n  chat: [1]\n":            "line 2: mix: chat: weight: want a number, got a list",
		"mix: [chat, rag]":               "line 1: mix: want a mapping of profile names to weights, such as {chat: 0.7, rag: 0.3}",
		"mix: {}":                        "line 1: mix: the mapping is empty; give profile weights such as {chat: 0.7, rag: 0.3}",
		"mix: {chat: 0, rag: 0}":         "line 1: mix: the weights must sum to more than 0 (and stay finite), got 0",
		"mix: chat=x":                    `line 1: mix: chat: weight: want a number, got "x"`,
		"mix:\n  chat: 1\n  chat: 2\n":   "line 3: mix: chat: given twice",
	}
	for in, want := range bad {
		var d doc
		if err := yaml.Unmarshal([]byte(in), &d); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

func TestMixResolve(t *testing.T) {
	custom := []Profile{
		{Name: "chat", Prompt: Fixed(10), Output: Fixed(5), MaxTokens: 5}, // redefines the built-in
		{Name: "agent", Prompt: Fixed(2000), Output: Fixed(50), MaxTokens: 64},
	}
	m, _ := ParseMix("chat=1,agent=1,rag=2")
	ws, err := m.Resolve(custom)
	if err != nil {
		t.Fatal(err)
	}
	rag, _ := Lookup(ProfileRAG)
	want := []Weighted{{custom[0], 1}, {custom[1], 1}, {rag, 2}}
	if !reflect.DeepEqual(ws, want) {
		t.Errorf("Resolve = %+v, want %+v", ws, want)
	}
	m, _ = ParseMix("chat=1,agnet=1")
	if _, err := m.Resolve(custom); err == nil || err.Error() != `unknown profile "agnet" (known: chat, longgen, rag, agent)` {
		t.Errorf("Resolve: %v", err)
	}
}

func mixGen(t testing.TB, seed int64, mix string) *Generator {
	t.Helper()
	m, err := ParseMix(mix)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := m.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(Config{Mix: ws, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestMixShares(t *testing.T) {
	const n = 100_000
	for _, seed := range []int64{1, 7} {
		g := mixGen(t, seed, "chat=0.7,rag=0.2,longgen=0.1")
		count := map[string]int{}
		for i := range int64(n) {
			r := g.Generate(schedule.Arrival{Seq: i})
			count[r.Profile]++
			// The chosen profile's distributions and cap apply.
			switch r.Profile {
			case ProfileRAG:
				if r.PromptTokens < 3000 || r.PromptTokens > 4000 || r.MaxTokens > 1024 {
					t.Fatalf("rag request %d: prompt %d, max_tokens %d", i, r.PromptTokens, r.MaxTokens)
				}
			case ProfileLongGen:
				if r.MaxTokens < 256 || r.MaxTokens > 2048 {
					t.Fatalf("longgen request %d: max_tokens %d", i, r.MaxTokens)
				}
			case ProfileChat:
				if r.PromptTokens > 4096 {
					t.Fatalf("chat request %d: prompt %d", i, r.PromptTokens)
				}
			default:
				t.Fatalf("request %d: profile %q", i, r.Profile)
			}
		}
		// σ of a share p over n draws is sqrt(p(1−p)/n) ≤ 0.0015: 0.01
		// is more than 6σ.
		for name, w := range map[string]float64{ProfileChat: 0.7, ProfileRAG: 0.2, ProfileLongGen: 0.1} {
			if got := float64(count[name]) / n; math.Abs(got-w) > 0.01 {
				t.Errorf("seed %d: %s: share %.4f, want %.2f ± 0.01", seed, name, got, w)
			}
		}
	}
	// Weights need not sum to 1, and a weight of 0 is never chosen.
	g := mixGen(t, 3, "chat=7,rag=0,longgen=3")
	count := map[string]int{}
	for i := range int64(n) {
		count[g.ProfileName(&schedule.Arrival{Seq: i})]++
	}
	if count[ProfileRAG] != 0 || math.Abs(float64(count[ProfileChat])/n-0.7) > 0.01 {
		t.Errorf("chat=7,rag=0,longgen=3: %v", count)
	}
}

func TestMixDeterministic(t *testing.T) {
	a := mixGen(t, 5, "chat=0.7,rag=0.2,longgen=0.1")
	b := mixGen(t, 5, "longgen=0.1,rag=0.2,chat=0.7") // the same mix, written in another order
	const n = 500
	first := make([]Request, n)
	for i := range first {
		first[i] = a.Generate(schedule.Arrival{Seq: int64(i)})
	}
	// Another generator, backwards: the same requests.
	for i := n - 1; i >= 0; i-- {
		r := b.Generate(schedule.Arrival{Seq: int64(i)})
		if !reflect.DeepEqual(r, first[i]) {
			t.Fatalf("request %d differs between generators and call orders: %q vs %q", i, r.Profile, first[i].Profile)
		}
		if got := b.ProfileName(&schedule.Arrival{Seq: int64(i)}); got != r.Profile {
			t.Fatalf("request %d: ProfileName %q, Generate %q", i, got, r.Profile)
		}
	}
	// Another seed chooses differently.
	c := mixGen(t, 6, "chat=0.7,rag=0.2,longgen=0.1")
	same := 0
	for i := range first {
		if c.ProfileName(&schedule.Arrival{Seq: int64(i)}) == first[i].Profile {
			same++
		}
	}
	if same == n {
		t.Error("seeds 5 and 6 chose the same profile for every request")
	}
}

func TestMixOfOneIsTheProfile(t *testing.T) {
	// A mix of one profile makes exactly the requests of that profile:
	// the choice takes nothing from the per-request stream.
	g := mixGen(t, 1, "rag=1")
	h := newGen(t, ProfileRAG, nil)
	for i := range int64(200) {
		a := schedule.Arrival{Seq: i}
		if r, s := g.Generate(a), h.Generate(a); !reflect.DeepEqual(r, s) {
			t.Fatalf("request %d: mix of one differs from the profile", i)
		}
	}
}

func TestMixReplayLabels(t *testing.T) {
	g := mixGen(t, 1, "chat=0.5,longgen=0.5")
	for i := range int64(50) {
		both := schedule.Arrival{Seq: i, PromptTokens: 100, OutputTokens: 20}
		if r := g.Generate(both); r.Profile != ProfileReplay || r.PromptTokens != 100 || g.ProfileName(&both) != ProfileReplay {
			t.Fatalf("replayed arrival %d: profile %q, prompt %d", i, r.Profile, r.PromptTokens)
		}
		one := schedule.Arrival{Seq: i, PromptTokens: 100}
		if r := g.Generate(one); r.Profile != g.ProfileName(&schedule.Arrival{Seq: i}) || r.PromptTokens != 100 {
			t.Fatalf("arrival %d with a replayed prompt: profile %q", i, r.Profile)
		}
	}
}

func TestMixAllocations(t *testing.T) {
	// The choice allocates nothing: still one allocation, the prompt.
	g := mixGen(t, 1, "chat=0.7,rag=0.2,longgen=0.1")
	seq := int64(0)
	allocs := testing.AllocsPerRun(300, func() {
		g.Generate(arrival(seq))
		seq++
	})
	if allocs != 1 {
		t.Errorf("%v allocations per request, want 1", allocs)
	}
}

func TestMixValidate(t *testing.T) {
	chat, _ := Lookup(ProfileChat)
	cases := map[string][]Weighted{
		`workload: mix: chat: given twice`:                                            {{chat, 1}, {chat, 1}},
		`workload: mix: chat: weight: must be a finite number >= 0, got -1`:           {{chat, -1}},
		`workload: profile "x": max_tokens: must be in [1, 1048576], got 0`:           {{Profile{Name: "x", Prompt: Fixed(1), Output: Fixed(1)}, 1}},
		`workload: mix: the weights must sum to more than 0 (and stay finite), got 0`: {{chat, 0}},
	}
	for want, mix := range cases {
		if _, err := New(Config{Mix: mix}); err == nil || err.Error() != want {
			t.Errorf("New: %v, want %q", err, want)
		}
	}
}

func BenchmarkGenerateMix(b *testing.B) {
	g := mixGen(b, 1, "chat=0.7,rag=0.2,longgen=0.1")
	seq := int64(0)
	b.ReportAllocs()
	for b.Loop() {
		g.Generate(arrival(seq))
		seq++
	}
}

func TestDistYAMLString(t *testing.T) {
	type doc struct {
		P Profile `yaml:"p"`
	}
	in := "p:\n  name: agent\n  prompt: lognormal:median=800,p95=6000\n  output: 200\n  max_tokens: 256\n"
	var d doc
	if err := yaml.Unmarshal([]byte(in), &d); err != nil {
		t.Fatal(err)
	}
	want, _ := ParseDist("lognormal:median=800,p95=6000")
	if !reflect.DeepEqual(d.P.Prompt, want) || !reflect.DeepEqual(d.P.Output, Fixed(200)) {
		t.Errorf("decoded %+v", d.P)
	}
	back, err := ParseDist(want.String())
	if err != nil || math.Abs(back.Sigma-want.Sigma) > 1e-5 || back.Median != want.Median {
		t.Errorf("String %q reads back as %+v, %v", want.String(), back, err)
	}
	bad := map[string]string{
		"p:\n  prompt: lognormal:median=800,p95=600\n": "line 2: lognormal: p95: must be above the median (800), got 600",
		"p:\n  prompt: {kind: fixed, vaule: 3}\n":      "line 2: field vaule not found in type workload.Dist",
		"p:\n  prompt: [1, 2]\n":                       "line 2: want a distribution such as lognormal:median=800,p95=6000 or a mapping {kind: …}, got a list",
	}
	for in, want := range bad {
		var d doc
		if err := yaml.Unmarshal([]byte(in), &d); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

// BenchmarkMixPick is the cost of the choice alone (ProfileName).
func BenchmarkMixPick(b *testing.B) {
	g := mixGen(b, 1, "chat=0.7,rag=0.2,longgen=0.1")
	a := schedule.Arrival{}
	n := 0
	for b.Loop() {
		a.Seq++
		n += len(g.ProfileName(&a))
	}
	_ = n
}
