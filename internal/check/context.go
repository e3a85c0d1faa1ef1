package check

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/calibrate"
	"github.com/surge-bench/surge/internal/workload"
)

func contextChecks() []Check {
	return []Check{
		{Name: CheckContextLong, Group: GroupContext,
			What: "the profile's longest prompt (or --context-tokens), sized in the target's tokens, is accepted; its TTFT against the median prompt's",
			Run:  runContextLong},
		{Name: CheckContextExceeded, Group: GroupContext,
			What: "a prompt past the context length gets a clean 400 (or 413) with an OpenAI error body, not a 200, a 5xx or a hang",
			Run:  runContextExceeded},
	}
}

// contextMaxTokens is the generation of the context checks' requests:
// they measure the prompt, not the answer.
const contextMaxTokens = 8

// contextPrompts builds unique prompts of synthetic text (surge's
// workload text, each with a nonce so that no prefix cache serves one
// from another or from an earlier run) and sizes them in the target's
// tokens from the usage of calibration requests.
type contextPrompts struct {
	gen    *workload.Generator
	nonce  int64
	n      int
	sizing workload.Sizing
	// how says how the prompts were sized, for the evidence.
	how string
}

func newContextPrompts(p workload.Profile) (*contextPrompts, error) {
	g, err := workload.New(workload.Config{Profile: p})
	if err != nil {
		return nil, err
	}
	return &contextPrompts{gen: g, nonce: time.Now().UnixNano(), how: "surge's estimate of 4 bytes per token"}, nil
}

// text is a fresh prompt of exactly b bytes.
func (c *contextPrompts) text(b int) string {
	c.n++
	head := "[surge check " + strconv.FormatInt(c.nonce, 36) + "-" + strconv.Itoa(c.n) + "] "
	return head + c.gen.Text(uint64(c.n), max(b-len(head), 1))
}

// forTokens is a fresh prompt of about n of the target's tokens.
func (c *contextPrompts) forTokens(n int) string { return c.text(c.sizing.Bytes(n)) }

// calibrate sends one unary max_tokens 1 request of each size, in
// tokens, and fits tokens = c + d·bytes to the usage.prompt_tokens they
// report (calibrate.Fit). The first is sized by surge's estimate; the
// next by the density the ones before measured (overhead included, so
// an upper bound), so that a tokenizer far denser than 4 bytes per token
// (vLLM's tiny test model) does not push one past the context. Without
// usage the prompts stay sized by surge's estimate. It returns the
// requests sent, or a Result when the target refused a prompt.
func (c *contextPrompts) calibrate(ctx context.Context, t *T, sizes ...int) (int, *Result) {
	var pts []calibrate.Point
	sent := 0
	perByte := 1.0 / workload.BytesPerToken
	for _, n := range sizes {
		txt := c.text(max(int(float64(n)/perByte), 1))
		x, err := t.Probe.Send(ctx, Req{Prompt: txt, MaxTokens: 1, Timeout: reqTimeout(t)})
		sent++
		if err != nil {
			return sent, &Result{Status: Fail, Evidence: fmt.Sprintf("a prompt of ~%d tokens: no response: %s", n, noResponse(err))}
		}
		if x.Status != 200 {
			return sent, &Result{Status: Fail, Evidence: fmt.Sprintf("a prompt of ~%d tokens: %s", n, statusWord(x))}
		}
		if x.Usage != nil && x.Usage.PromptTokens > 0 {
			pts = append(pts, calibrate.Point{Bytes: len(txt), Tokens: x.Usage.PromptTokens})
			perByte = max(perByte, float64(x.Usage.PromptTokens)/float64(len(txt)))
		}
	}
	if d, off, err := calibrate.Fit(pts); err == nil {
		c.sizing = workload.Sizing{TokensPerByte: d, Overhead: off}
		c.how = fmt.Sprintf("measured %.2f bytes per token", 1/d)
	} else if len(pts) > 0 {
		c.how = "surge's estimate of 4 bytes per token: the calibration did not fit"
	} else {
		c.how = "surge's estimate of 4 bytes per token: no usage reported"
	}
	return sent, nil
}

// distMedian is a length distribution's median, in tokens.
func distMedian(d workload.Dist) int {
	switch d.Kind {
	case workload.KindLogNormal:
		return min(max(int(math.Round(d.Median)), d.Min), d.Max)
	case workload.KindUniform:
		return (d.Min + d.Max) / 2
	case workload.KindNormal:
		return min(max(int(math.Round(d.MeanTokens)), d.Min), d.Max)
	case workload.KindEmpirical:
		var total, run int64
		for _, n := range d.Counts {
			total += n
		}
		for i, n := range d.Counts {
			run += n
			if 2*run >= total {
				return d.Values[i]
			}
		}
	}
	return d.Value
}

// checkProfile is the configured profile, or the chat profile.
func checkProfile(t *T) workload.Profile {
	if t.Config.Profile.Name != "" {
		return t.Config.Profile
	}
	p, _ := workload.Lookup(workload.ProfileChat) // a default profile: always there
	return p
}

// longSizes is context.long's prompt sizes, in the target's tokens.
type longSizes struct {
	want   int    // the tokens asked for
	source string // where want comes from, for the evidence
	long   int    // the long prompt's: want, capped below max_model_len
	median int    // the median prompt's, at most an eighth of long
	capped string // why long is below want ("" when it is not)
}

// sizeContextLong sizes context.long's prompts from the profile (or
// --context-tokens) and the server's max_model_len, or fails when the
// prompts the user gave do not fit.
func sizeContextLong(t *T, prof workload.Profile) (longSizes, *Result) {
	sz := longSizes{want: prof.Prompt.Upper(), source: fmt.Sprintf("the %s profile's longest prompt", prof.Name)}
	if t.Config.ContextTokens > 0 {
		sz.want, sz.source = t.Config.ContextTokens, "--context-tokens"
	}
	median := distMedian(prof.Prompt)
	sz.long = sz.want
	if m := t.Server.MaxModelLen; m > 0 {
		// Room for the answer and for an error of the sizing.
		limit := m - contextMaxTokens - max(32, m/50)
		if sz.long > limit && t.Config.ContextTokens > 0 {
			// The user said their prompts are this long: they do not fit,
			// whatever a shorter one would show. (The profile's longest
			// prompt is a guess: capped, a WARN.)
			return sz, &Result{Status: Fail, Details: map[string]any{"tokens_asked": sz.want, "max_model_len": m, "source": "--context-tokens"},
				Evidence: fmt.Sprintf("your prompts (--context-tokens %s) do not fit max_model_len %s", thousands(sz.want), thousands(m))}
		}
		if sz.long > limit {
			sz.long = max(limit, 1)
			sz.capped = fmt.Sprintf("capped from %s to %s tokens, below max_model_len %s", thousands(sz.want), thousands(sz.long), thousands(m))
		}
	}
	sz.median = min(median, max(sz.long/8, 1))
	return sz, nil
}

func runContextLong(ctx context.Context, t *T) Result {
	prof := checkProfile(t)
	sz, failed := sizeContextLong(t, prof)
	if failed != nil {
		return *failed
	}
	long, median, source := sz.long, sz.median, sz.source

	ps, err := newContextPrompts(prof)
	if err != nil {
		return Result{Status: Fail, Evidence: "profile: " + err.Error()}
	}
	// Two sizes far enough apart for the fit, the larger within the
	// context.
	sent, failed := ps.calibrate(ctx, t, 64, min(512, max(long/2, 128)))
	if failed != nil {
		failed.Requests = sent
		return *failed
	}
	usage := map[string]any{"include_usage": true}
	shortX, err := t.Probe.Send(ctx, Req{Prompt: ps.forTokens(median), MaxTokens: contextMaxTokens, Stream: true,
		Timeout: reqTimeout(t), Extra: map[string]any{"stream_options": usage}})
	if err != nil {
		return Result{Status: Fail, Evidence: fmt.Sprintf("the median prompt (%d tokens): no response: %s", median, noResponse(err))}
	}
	if shortX.Status != 200 || shortX.FirstContent() < 0 {
		return Result{Status: Fail, Evidence: fmt.Sprintf("the median prompt (%d tokens): %s", median, shotWord(shortX))}
	}
	longX, err := t.Probe.Send(ctx, Req{Prompt: ps.forTokens(long), MaxTokens: contextMaxTokens, Stream: true,
		Timeout: reqTimeout(t), Extra: map[string]any{"stream_options": usage}})
	details := map[string]any{"tokens_asked": sz.want, "tokens_sent": long, "median_tokens": median, "source": source,
		"max_model_len": t.Server.MaxModelLen, "sizing": ps.how}
	at := fmt.Sprintf("at ~%s tokens (%s; %s)", thousands(long), source, ps.how)
	if err != nil {
		return Result{Status: Fail, Details: details, Evidence: "no response " + at + ": " + noResponse(err)}
	}
	details["status"] = longX.Status
	switch {
	case longX.TimedOut:
		return Result{Status: Fail, Details: details, Evidence: fmt.Sprintf("no complete answer within %s %s", showDur(reqTimeout(t)), at)}
	case longX.Status >= 400 && longX.Status < 500:
		return Result{Status: Fail, Details: details, Evidence: fmt.Sprintf("%s %s: the endpoint cannot take the profile's prompts", statusWord(longX), at)}
	case longX.Status != 200:
		return Result{Status: Fail, Details: details, Evidence: statusWord(longX) + " " + at}
	case longX.EndErr != nil || longX.FirstContent() < 0:
		return Result{Status: Fail, Details: details, Evidence: shotWord(longX) + " " + at}
	}
	return judgeContextLong(sz, ps, longX, shortX, details)
}

// judgeContextLong is context.long's verdict on a long prompt the
// server answered: its TTFT against the median prompt's, failed when
// the server counted the prompt far shorter than sent (it was cut).
func judgeContextLong(sz longSizes, ps *contextPrompts, longX, shortX *Exchange, details map[string]any) Result {
	long, source := sz.long, sz.source
	tl, ts := longX.FirstContent(), shortX.FirstContent()
	counted := func(x *Exchange, asked int) string {
		if x.Usage != nil && x.Usage.PromptTokens > 0 {
			return thousands(x.Usage.PromptTokens)
		}
		return "~" + thousands(asked)
	}
	if longX.Usage != nil {
		details["prompt_tokens"] = longX.Usage.PromptTokens
	}
	if shortX.Usage != nil {
		details["median_prompt_tokens"] = shortX.Usage.PromptTokens
	}
	details["ttft_ms"], details["median_ttft_ms"] = millis(tl), millis(ts)
	ev := fmt.Sprintf("TTFT %s at %s tokens vs %s at %s (%s); %s; %s", showDur(tl), counted(longX, long),
		showDur(ts), counted(shortX, sz.median), times(tl, ts), source, ps.how)
	if longX.Usage == nil && ps.sizing.TokensPerByte > 0 {
		ev += "; usage not reported"
	}
	// The prompts are sized from the server's own counts: one it counts
	// far shorter was cut (Ollama keeps the end of a prompt past num_ctx).
	// Sized by surge's estimate (the calibration did not fit), a tokenizer
	// may count fewer tokens than 4 bytes each: under half is still a cut,
	// under 90% a doubt.
	if u := longX.Usage; u != nil && u.PromptTokens > 0 && float64(u.PromptTokens) < 0.9*float64(long) {
		switch {
		case ps.sizing.TokensPerByte > 0:
			return Result{Status: Fail, Details: details, Evidence: fmt.Sprintf("the prompt was cut silently: the server counted %s of ~%s tokens (%s; %s)",
				thousands(u.PromptTokens), thousands(long), source, ps.how)}
		case 2*u.PromptTokens < long:
			return Result{Status: Fail, Details: details, Evidence: fmt.Sprintf("usage reports %s prompt tokens for ~%s sent: the prompt was cut, or usage is wrong (%s; %s)",
				thousands(u.PromptTokens), thousands(long), source, ps.how)}
		default:
			return Result{Status: Warn, Details: details, Evidence: fmt.Sprintf("usage reports %s prompt tokens for ~%s sent: cut, or a tokenizer sparser than the estimate (%s; %s)",
				thousands(u.PromptTokens), thousands(long), source, ps.how)}
		}
	}
	if sz.capped != "" {
		return Result{Status: Warn, Details: details, Evidence: ev + "; " + sz.capped}
	}
	return Result{Status: Pass, Details: details, Evidence: ev}
}

func runContextExceeded(ctx context.Context, t *T) Result {
	limit, source := t.Server.MaxModelLen, "max_model_len"
	if limit <= 0 {
		limit, source = t.Config.ContextTokens, "--context-tokens"
	}
	if limit <= 0 {
		return Result{Status: Skip, Evidence: "context length not reported; give --context-tokens"}
	}
	ps, err := newContextPrompts(checkProfile(t))
	if err != nil {
		return Result{Status: Fail, Evidence: "profile: " + err.Error()}
	}
	if _, failed := ps.calibrate(ctx, t, max(min(64, limit/16), 1), max(min(256, limit/4), 2)); failed != nil {
		return *failed
	}
	target := limit + max(limit/10, 64)
	prompt := ps.forTokens(target)
	if ps.sizing.TokensPerByte == 0 {
		// Not calibrated: half as many bytes more, in case the tokenizer
		// counts fewer tokens than surge's estimate.
		prompt = ps.text(target * workload.BytesPerToken * 3 / 2)
	}
	x, err := t.Probe.Send(ctx, Req{Prompt: prompt, MaxTokens: contextMaxTokens, Stream: true, Timeout: reqTimeout(t),
		Extra: map[string]any{"stream_options": map[string]any{"include_usage": true}}})
	details := map[string]any{"context_tokens": limit, "source": source, "tokens_sent": target, "sizing": ps.how}
	sent := fmt.Sprintf("a ~%s-token prompt (%s %s) → ", thousands(target), source, thousands(limit))
	if err != nil {
		return Result{Status: Fail, Details: details, Evidence: sent + "no response: " + noResponse(err)}
	}
	details["status"] = x.Status
	_, body := x.ErrorBody()
	switch {
	case x.TimedOut:
		return Result{Status: Fail, Details: details, Evidence: fmt.Sprintf("%sno answer within %s (a hang)", sent, showDur(reqTimeout(t)))}
	case x.Status >= 400 && x.Status < 500 && body:
		return Result{Status: Pass, Details: details, Evidence: fmt.Sprintf("%s%d with an OpenAI error body", sent, x.Status)}
	case x.Status >= 400 && x.Status < 500:
		return Result{Status: Warn, Details: details, Evidence: sent + statusWord(x)}
	case x.Status != 200:
		return Result{Status: Fail, Details: details, Evidence: sent + statusWord(x)}
	case x.EndErr != nil && len(x.Body) > 0:
		return Result{Status: Warn, Details: details, Evidence: sent + "200, then an error event in the stream (clients check the status first)"}
	case x.EndErr != nil:
		return Result{Status: Fail, Details: details, Evidence: sent + "200, then the stream broke"}
	case x.Usage == nil || x.Usage.PromptTokens == 0:
		return Result{Status: Warn, Details: details, Evidence: sent + "200: no error, and no usage to tell whether the prompt was cut"}
	}
	details["prompt_tokens"] = x.Usage.PromptTokens
	// A server that truncates keeps at most the context: the prompt was
	// sized 10% past it in the server's own tokens.
	if x.Usage.PromptTokens <= limit {
		return Result{Status: Fail, Details: details, Evidence: fmt.Sprintf("%s200: the prompt was cut silently to %s tokens, no error",
			sent, thousands(x.Usage.PromptTokens))}
	}
	return Result{Status: Warn, Details: details, Evidence: fmt.Sprintf("%s200 with %s prompt tokens: the context is longer than %s says",
		sent, thousands(x.Usage.PromptTokens), source)}
}

// thousands writes n with thousands separators: 7,900.
func thousands(n int) string { return analyze.Thousands(int64(n)) }
