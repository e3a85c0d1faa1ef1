package workload

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseDist(t *testing.T) {
	sigma := math.Log(6000.0/800) / z95
	for spec, want := range map[string]Dist{
		"200":                                     Fixed(200),
		"fixed:200":                               Fixed(200),
		"fixed:value=64":                          Fixed(64),
		"uniform:min=100,max=400":                 Uniform(100, 400),
		" Normal: mean=500, sd=120 ":              {Kind: KindNormal, MeanTokens: 500, SD: 120, Min: 1, Max: MaxPromptTokens},
		"normal:mean=500,sd=120,min=8,max=900":    {Kind: KindNormal, MeanTokens: 500, SD: 120, Min: 8, Max: 900},
		"lognormal:median=800,p95=6000":           LogNormal(800, sigma, 1, MaxPromptTokens),
		"lognormal:median=800,sigma=0.5,max=4096": LogNormal(800, 0.5, 1, 4096),
	} {
		got, err := ParseDist(spec)
		if err != nil {
			t.Errorf("%q: %v", spec, err)
			continue
		}
		if got.Kind != want.Kind || got.Value != want.Value || got.Min != want.Min || got.Max != want.Max ||
			got.MeanTokens != want.MeanTokens || got.SD != want.SD || got.Median != want.Median || math.Abs(got.Sigma-want.Sigma) > 1e-12 {
			t.Errorf("%q = %+v, want %+v", spec, got, want)
		}
	}
}

// Every mistake names what is wrong, in the words of the spec.
func TestParseDistErrors(t *testing.T) {
	for spec, want := range map[string]string{
		"":                                      "want a token count such as 200",
		"lots":                                  `want a token count such as 200 or a distribution such as lognormal:median=800,p95=6000, got "lots"`,
		"0":                                     "value: must be in [1, 1048576], got 0",
		"gamma:k=2":                             `unknown distribution "gamma"`,
		"lognormal:median=800":                  "lognormal: p95 (or sigma): required",
		"lognormal:median=800,p95=600":          "lognormal: p95: must be above the median (800), got 600",
		"lognormal:median=800,p95=9000,sigma=1": "lognormal: give p95 or sigma, not both",
		"lognormal:p95=900":                     "lognormal: median: required",
		"lognormal:median=800,p95=x":            `lognormal: p95: want a number, got "x"`,
		"lognormal:median=800,p95=900,p99=1000": "lognormal: p99: not a parameter of lognormal",
		"normal:mean=500":                       "normal: sd: required",
		"normal:mean=5000,sd=1,max=900":         "normal: mean: must be in [min, max] = [1, 900], got 5000",
		"uniform:max=10":                        "uniform: min and max: required",
		"uniform:min=10,max=5":                  "uniform: max: must be >= min (10), got 5",
		"uniform:min=1.5,max=5":                 "uniform: min: must be a whole number of tokens, got 1.5",
		"uniform:min=1,min=2,max=5":             "uniform: min: given twice",
		"lognormal:median=-800,p95=6000":        "lognormal: median: must be > 0, got -800",
		"lognormal:median=0,sigma=1":            "lognormal: median: must be > 0, got 0",
		"lognormal:median=99999999999,sigma=1":  "lognormal: median: must be in [min, max] = [1, 1048576], got 99999999999",
		"normal:mean=500,sd=-1e12":              "normal: sd: must be >= 0, got -1000000000000",
		"fixed:1e11":                            "fixed: value: must be in [1, 1048576], got 100000000000",
		"empirical:":                            "empirical: want empirical:FILE",
		"empirical:/no/such/file.csv":           "empirical: open /no/such/file.csv",
	} {
		_, err := ParseDist(spec)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", spec, err, want)
		}
		if err != nil && (strings.Contains(err.Error(), "e+") || strings.Contains(err.Error(), "NaN")) {
			t.Errorf("%q: error %v: want plain numbers", spec, err)
		}
	}
}

// A histogram exported from logs: header, repeated lengths added up, zero
// counts dropped; draws follow the counts and the mean is exact.
func TestEmpirical(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prompts.csv")
	if err := os.WriteFile(path, []byte("tokens,count\n100,1\n400,2\n100,1\n\n9000,0\n1600,4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := ParseDist("empirical:" + path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Values, []int{100, 400, 1600}) || !slices.Equal(d.Counts, []int64{2, 2, 4}) {
		t.Fatalf("values %v counts %v", d.Values, d.Counts)
	}
	if m := d.Mean(); m != (200+800+6400)/8.0 || d.Upper() != 1600 {
		t.Fatalf("mean %g upper %d", m, d.Upper())
	}
	rng := rand.New(rand.NewPCG(1, 2))
	seen := map[int]int{}
	const n = 80000
	for range n {
		seen[d.Sample(rng)]++
	}
	for v, share := range map[int]float64{100: 0.25, 400: 0.25, 1600: 0.5} {
		if got := float64(seen[v]) / n; math.Abs(got-share) > 0.01 {
			t.Errorf("length %d drawn %.3f of the time, want %.2f", v, got, share)
		}
	}
	if len(seen) != 3 {
		t.Errorf("drew lengths outside the histogram: %v", seen)
	}
	// Errors name the file and its line (blank lines counted), the column,
	// and never a cell's text.
	for body, want := range map[string]string{
		"tokens,count\n":          ": no row with a count > 0",
		"100,1\n200\n":            ":2: want tokens,count, got 1 fields",
		"100,1\nx,2\n":            ":2: tokens: not a whole number (a 1-byte text, not shown)",
		"100,1\n\n\n200,x\n":      ":4: count: not a whole number (a 1-byte text, not shown)",
		"100,1\n12.5,2\n":         ":2: tokens: not a whole number, got 12.5",
		"0,5\n":                   ":1: tokens: must be in [1, 1048576], got 0",
		"100,-1\n":                ":1: count: must be >= 0, got -1",
		"100,1\nZEBRA-CANARY,3\n": ":2: tokens: not a whole number (a 12-byte text, not shown)",
		"100,1\n3,ZEBRA-CANARY\n": ":2: count: not a whole number (a 12-byte text, not shown)",
		"100,1\n\"ZEBRA-CANARY\n": ":2: extraneous or missing \" in quoted-field",
		"100,1\nZEBRA-CANARY\n":   ":2: want tokens,count, got 1 fields",
		"100,1\n3,ZEBRA,CANARY\n": ":2: want tokens,count, got 3 fields",
		"100,1\n99999999999,3\n":  ":2: tokens: must be in [1, 1048576], got 99999999999",
		"100,1\n1e11,3\n":         ":2: tokens: want plain digits, got 100000000000",
	} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ParseDist("empirical:" + path)
		if err == nil || !strings.HasPrefix(err.Error(), "empirical: "+path+want) {
			t.Errorf("%q: error %v, want %q", body, err, "empirical: "+path+want)
		}
		if err != nil && strings.Contains(err.Error(), "ZEBRA") {
			t.Errorf("%q: error shows a cell's text: %v", body, err)
		}
	}
}

// Lognormal by median and p95: the draws' median and 95th percentile are
// the numbers given. Normal: the draws' mean is Mean() (clamping included).
func TestSampledQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	const n = 100000
	draw := func(d Dist) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = d.Sample(rng)
		}
		slices.Sort(out)
		return out
	}
	ln, err := ParseDist("lognormal:median=800,p95=6000")
	if err != nil {
		t.Fatal(err)
	}
	v := draw(ln)
	if med, p95 := float64(v[n/2]), float64(v[n*95/100]); math.Abs(med/800-1) > 0.03 || math.Abs(p95/6000-1) > 0.04 {
		t.Errorf("lognormal:median=800,p95=6000 drew median %g, p95 %g", med, p95)
	}
	nm, err := ParseDist("normal:mean=100,sd=80,min=50,max=400") // clamped hard at 50
	if err != nil {
		t.Fatal(err)
	}
	v = draw(nm)
	var sum float64
	for _, x := range v {
		sum += float64(x)
	}
	if got, want := sum/n, nm.Mean(); math.Abs(got-want) > 1 || v[0] != 50 || v[n-1] > 400 {
		t.Errorf("normal clamped to [50, 400]: sample mean %g, Mean() %g, range [%d, %d]", got, want, v[0], v[n-1])
	}
}

// A dataset's max_tokens out of range prints as a plain number.
func TestMaxTokensPlainNumber(t *testing.T) {
	_, rerr := maxTokens([]byte("99999999999"), "max_tokens")
	if rerr == nil || rerr.problem != "must be a whole number in [1, 1048576], got 99999999999" {
		t.Errorf("got %+v", rerr)
	}
}
