package run

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/calibrate"
	"github.com/surge-bench/surge/internal/openai"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/workload"
)

// calibrationBudget bounds the whole calibration (a hanging /tokenize or
// probe must not hold the run for minutes).
const calibrationBudget = 90 * time.Second

// probeWait bounds one probe request (max_tokens 1: a live server answers
// in well under a second, a cold one in seconds). A probe that got no
// answer at all in that time ends the probing: a target that accepts and
// never answers costs the calibration one /tokenize wait and one probe
// wait, not its whole budget.
const probeWait = 15 * time.Second

// calibratePrompts measures the target's tokenizer on surge's synthetic
// text (package calibrate): against the engine model in virtual time,
// otherwise over HTTP — the in-process simulator included, through its API.
func (e *Env) calibratePrompts(ctx context.Context) calibrate.Result {
	o := &e.Opts
	if o.PromptCalibration == calibrate.Off {
		return calibrate.Result{Method: calibrate.UsedOff}
	}
	texts, err := calibrationTexts(o, e.Virtual)
	if err != nil {
		return calibrate.Result{Method: calibrate.UsedNone, Warning: "prompt calibration failed (" + err.Error() + ")"}
	}
	if e.Virtual {
		r := calibrate.Model(e.modelTokenizer(), texts)
		r.ContextTokens = o.Sim.MaxModelLen
		return r
	}
	cc := e.ClientConfig(2)
	cc.Retries = 0
	if cc.Timeout <= 0 || cc.Timeout > probeWait {
		cc.Timeout = probeWait
	}
	client, err := openai.New(cc, time.Now())
	if err != nil {
		return calibrate.Result{Method: calibrate.UsedNone, Warning: "prompt calibration failed (" + err.Error() + ")"}
	}
	defer client.CloseIdle()
	seq := int64(0)
	probe := func(ctx context.Context, text string) (int, error) {
		seq++
		req := workload.Request{Seq: -seq, Profile: "calibration", Prompt: text, MaxTokens: 1}
		rec := record.New("calibration", -seq, "calibration", 0)
		client.Do(ctx, &req, &rec)
		switch {
		case rec.Outcome == record.Timeout && rec.HeadersNs == record.None:
			return 0, fmt.Errorf("%w within %s", calibrate.ErrNoAnswer, cc.Timeout)
		case rec.Outcome != record.OK && rec.Status > 0:
			return 0, fmt.Errorf("%s (HTTP %d)", rec.Outcome, rec.Status)
		case rec.Outcome != record.OK:
			return 0, errors.New(string(rec.Outcome))
		case !rec.UsageFromServer || rec.PromptTokens <= 0:
			return 0, errors.New("the answer reports no usage.prompt_tokens")
		}
		return rec.PromptTokens, nil
	}
	ctx, cancel := context.WithTimeout(ctx, calibrationBudget)
	defer cancel()
	return calibrate.Run(ctx, calibrate.Config{
		Method: o.PromptCalibration,
		Root:   strings.TrimSuffix(e.BaseURL, "/v1"),
		Model:  o.Model,
		Chat:   openai.Conversational(o.API),
		Client: client.HTTPClient(),
		Header: client.AuthHeader(),
		Probe:  probe,
		Text:   texts,
	})
}

// calibrationTexts is the run's own synthetic text at surge's estimate,
// under a salt of its own so that the measured prompts are not the run's.
func calibrationTexts(o *Options, virtual bool) (calibrate.Texts, error) {
	salt := uint64(time.Now().UnixNano()) ^ 0xca1b
	if virtual {
		salt = 0xca1b
	}
	p := workload.Profile{Name: "calibration", Prompt: workload.Fixed(1), Output: workload.Fixed(1), MaxTokens: 1}
	g, err := workload.New(workload.Config{Profile: p, Seed: o.Seed, Salt: salt, NoNonce: o.NoNonce})
	if err != nil {
		return nil, err
	}
	return func(i, tokens int) string {
		return g.Generate(schedule.Arrival{Seq: -int64(i + 1), PromptTokens: tokens}).Prompt
	}, nil
}

// modelTokenizer is the engine model's count of one prompt in virtual
// time: the simulator's tokenizer, as its HTTP facade would count it.
func (e *Env) modelTokenizer() func(string) int {
	count := e.modelCount()
	return func(prompt string) int { return count(prompt) }
}

// modelCount is the engine model's count of a request's prompt texts (its
// one prompt or its messages' contents) in virtual time, as the HTTP facade
// would count it: chat messages each with their template overhead; for
// completions the contents joined by a blank line, as the client sends them.
func (e *Env) modelCount() func(texts ...string) int {
	chat := openai.Conversational(e.Opts.API)
	sc := e.Opts.Sim
	return func(texts ...string) int {
		if chat || len(texts) == 1 {
			return sc.PromptTokens(chat, texts...)
		}
		n := 0
		for _, t := range texts {
			n += len(t)
		}
		return max(sc.TextTokens(n+2*(len(texts)-1)), 1)
	}
}

// promptAcc compares, request by request, the prompt length surge
// intended with the server's usage.prompt_tokens, over the successful
// requests that carry usage, and records the calibration used; fed one
// record at a time, it counts both lengths by value (a run's prompts take
// few distinct lengths), so the statistics stay exact without a list.
type promptAcc struct {
	ps               *record.PromptSizing
	gen              *workload.Generator // nil: the workload does not build
	arrivals         *arrivalIndex
	intended, actual map[int]int64
	ratio            map[int]int64 // actual / intended, ‰
}

func (e *Env) newPromptSizing(wcfg workload.Config, arrivals *arrivalIndex) *promptAcc {
	c := &e.Calibration
	p := newPromptAcc(&record.PromptSizing{Calibration: c.Method, Description: c.Describe(), TokensPerByte: c.TokensPerByte,
		OverheadTokens: c.OverheadTokens, Fallback: c.Fallback, Warning: c.Warning}, arrivals)
	if gen, err := workload.New(wcfg); err == nil {
		p.gen = gen
	}
	return p
}

// newPromptAcc counts into ps the prompts of the records of arrivals.
func newPromptAcc(ps *record.PromptSizing, arrivals *arrivalIndex) *promptAcc {
	return &promptAcc{ps: ps, arrivals: arrivals, intended: map[int]int64{}, actual: map[int]int64{}, ratio: map[int]int64{}}
}

func (p *promptAcc) add(r *record.Record) {
	if p.gen == nil || r.Outcome != record.OK || r.PromptTokens <= 0 || r.Turn > 1 || r.Branch > 0 {
		return // a session's later turns and sub-requests are not their arrival's draw
	}
	in := p.gen.IntendedPromptTokens(p.arrivals.of(r.Seq))
	p.intended[in]++
	p.actual[r.PromptTokens]++
	if in > 0 {
		p.ratio[int(math.Round(1000*float64(r.PromptTokens)/float64(in)))]++
	}
}

func (p *promptAcc) result() *record.PromptSizing {
	if p.gen != nil {
		p.ps.Intended, p.ps.Actual, p.ps.Ratio = countedStats(p.intended), countedStats(p.actual), countedStats(p.ratio)
	}
	return p.ps
}

// countedStats is the mean and the nearest-rank p5, p50 and p95 of the
// values counted in c (value → times).
func countedStats(c map[int]int64) record.TokenStats {
	var n, sum int64
	keys := make([]int, 0, len(c))
	for v, k := range c {
		keys = append(keys, v)
		n += k
		sum += int64(v) * k
	}
	if n == 0 {
		return record.TokenStats{}
	}
	slices.Sort(keys)
	rank := func(p float64) int {
		r := int64(max(int(math.Ceil(p*float64(n)))-1, 0)) // 0-based rank ⌈p·n⌉
		for _, v := range keys {
			if r < c[v] {
				return v
			}
			r -= c[v]
		}
		return keys[len(keys)-1]
	}
	return record.TokenStats{Samples: int(n), Mean: float64(sum) / float64(n), P5: rank(0.05), P50: rank(0.50), P95: rank(0.95)}
}
