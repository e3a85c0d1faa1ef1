package check

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/field"
)

// MaxOverloadRequests is the most requests Config.OverloadRequests may
// allow the overload probe (errors.overload) to send.
const MaxOverloadRequests = 2048

// MaxLongTokens is the largest max_tokens of streaming.long.
const MaxLongTokens = 1 << 20

// Groups returns the groups of api's suite ("" is chat) in the order
// they run.
func Groups(api string) []string {
	var out []string
	for _, c := range Suite(api) {
		if !slices.Contains(out, c.Group) {
			out = append(out, c.Group)
		}
	}
	return out
}

// NamesFor returns the names --only, --skip and --require accept with
// --api api: its suite's groups, then every check's full name.
func NamesFor(api string) []string {
	names := Groups(api)
	for _, c := range Suite(api) {
		if !slices.Contains(names, c.Name) {
			names = append(names, c.Name)
		}
	}
	return names
}

// Names returns every name some suite accepts: NamesFor of each API in
// turn, chat's first.
func Names() []string {
	var names []string
	for _, api := range APIs() {
		for _, n := range NamesFor(api) {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	return names
}

// suitesOf lists the APIs whose suite has the check or group name:
// "chat or completions".
func suitesOf(name string) string {
	var apis []string
	for _, api := range APIs() {
		if slices.Contains(NamesFor(api), name) {
			apis = append(apis, api)
		}
	}
	return strings.Join(apis, " or ")
}

// apiName is an API as messages name it: "" is chat.
func apiName(api string) string {
	if api == "" {
		return APIChat
	}
	return api
}

// Validate checks the configuration: the API, the names given to Only,
// Skip and Require (those of the API's suite), and the bounds of the
// numbers. Each problem is a field.Error named api, only, skip, require,
// long_tokens, context_tokens, overload_requests or timeout.
func (c Config) Validate() error {
	var errs field.Errors
	suite := Suite(c.API)
	if suite == nil {
		errs.Add("api", "surge check has no suite for %q; it checks %s", c.API, strings.Join(APIs(), ", "))
	}
	valid := NamesFor(c.API)
	for _, l := range []struct {
		key   string
		names []string
	}{{"only", c.Only}, {"skip", c.Skip}, {"require", c.Require}} {
		for _, n := range splitNames(l.names) {
			switch {
			case slices.Contains(valid, n):
			case suite != nil && slices.Contains(Names(), n):
				errs.Add(l.key, "%q is checked with --api %s, not %s; valid: %s", n, suitesOf(n), apiName(c.API), strings.Join(valid, ", "))
			case suite != nil:
				errs.Add(l.key, "unknown check or group %q; valid: %s", n, strings.Join(valid, ", "))
			}
		}
	}
	for _, l := range []struct {
		key   string
		names []string
	}{{"only", c.Only}, {"skip", c.Skip}, {"require", c.Require}} {
		if len(l.names) > 0 && len(splitNames(l.names)) == 0 {
			errs.Add(l.key, "names no check or group (empty); valid: %s", strings.Join(valid, ", "))
		}
	}
	skip, require := splitNames(c.Skip), splitNames(c.Require)
	for _, s := range skip {
		if gate, only := onlyGate(suite, s); only {
			errs.Add("skip", "the %s check always runs: every other check depends on what it learns", gate)
		}
	}
	for _, r := range require {
		for _, s := range skip {
			if covers(s, r) || covers(r, s) {
				errs.Add("require", "%q is also left out by --skip %s", r, s)
			}
		}
	}
	if c.LongTokens < 1 || c.LongTokens > MaxLongTokens {
		errs.Add("long_tokens", "must be 1..%d, got %d", MaxLongTokens, c.LongTokens)
	}
	if c.ContextTokens < 0 || c.ContextTokens > MaxLongTokens {
		errs.Add("context_tokens", "must be 0..%d (0 = the profile's longest prompt), got %d", MaxLongTokens, c.ContextTokens)
	}
	if c.OverloadRequests < 1 || c.OverloadRequests > MaxOverloadRequests {
		errs.Add("overload_requests", "must be 1..%d, got %d", MaxOverloadRequests, c.OverloadRequests)
	}
	if c.Deadline < 0 {
		errs.Add("deadline", "must be > 0 (or 0 for %s), got %s", DefaultDeadline, c.Deadline)
	}
	if c.Timeout < 0 {
		errs.Add("timeout", "must be > 0, got %s", c.Timeout)
	}
	return errs.Err()
}

// onlyGate reports whether the selector names the suite's gate and
// nothing else (--skip api, --skip messages.served): the gate always
// runs, so leaving it out is refused. A group that holds more (--skip
// messages) leaves out the rest.
func onlyGate(suite []Check, selector string) (gate string, only bool) {
	n := 0
	for _, c := range suite {
		if !selects(selector, c) {
			continue
		}
		if c.Gate == nil {
			return "", false
		}
		gate, n = c.Name, n+1
	}
	return gate, n > 0
}

// splitNames splits every entry at commas ("streaming,usage") and drops
// blanks, so a flag may be repeated or given a list.
func splitNames(in []string) []string {
	var out []string
	for _, s := range in {
		for n := range strings.SplitSeq(s, ",") {
			if n = strings.TrimSpace(n); n != "" {
				out = append(out, n)
			}
		}
	}
	return out
}

// covers reports whether the selector (a group or a full name) names the
// check or group name.
func covers(selector, name string) bool {
	return selector == name || strings.HasPrefix(name, selector+".")
}

// selects reports whether a selector names check c.
func selects(selector string, c Check) bool { return selector == c.Name || selector == c.Group }

// Select returns the checks c runs, in order: every check of the suite
// of c.API, or those Only names, without those Skip names; a check
// Require names runs even when Only leaves it out, and is marked
// required. The suite's gate (the api check, messages.served, …) always
// runs first. Call Validate first.
func Select(c Config) []Selected {
	only, skip, require := splitNames(c.Only), splitNames(c.Skip), splitNames(c.Require)
	var out []Selected
	for _, ch := range Suite(c.API) {
		named := func(sel []string) bool {
			return slices.ContainsFunc(sel, func(s string) bool { return selects(s, ch) })
		}
		req := named(require)
		run := ch.Gate != nil || req || ((len(only) == 0 || named(only)) && !named(skip))
		if run {
			out = append(out, Selected{Check: ch, Required: req})
		}
	}
	return out
}

// Selected is a check chosen to run, and whether a SKIP of it fails.
type Selected struct {
	Check
	Required bool
}

// ErrUnreachable is wrapped by Run's error when the target could not be
// reached at all: the first request got no response (connection refused,
// an unknown host, a TLS failure).
var ErrUnreachable = errors.New("the target is unreachable")

// Run runs the checks in order through p and returns the report; each
// result goes to each (nil: none) as soon as it is known. When the gate
// (the api check, messages.served, …) fails, every later check is a
// SKIP; when ctx ends (Ctrl-C), the check under way is recorded as a SKIP
// "interrupted", the rest are not run, and the report says Interrupted.
// The error is non-nil only when the target is unreachable
// (ErrUnreachable): the report then holds the gate's FAIL.
func Run(ctx context.Context, p *Probe, cfg Config, checks []Selected, each func(Result)) (*Report, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Deadline <= 0 {
		cfg.Deadline = DefaultDeadline
	}
	rep := &Report{Model: p.Model(), API: p.API(), Started: time.Now()}
	outer := ctx
	ctx, cancel := context.WithTimeout(ctx, cfg.Deadline)
	defer cancel()
	late := func() bool { return ctx.Err() != nil && outer.Err() == nil }
	pastDeadline := fmt.Sprintf("the suite's deadline (--deadline %s) passed", cfg.Deadline)
	t := &T{Probe: p, Config: cfg}
	emit := func(r Result) {
		rep.Results = append(rep.Results, r)
		if each != nil {
			each(r)
		}
	}
	gateFailed := ""
	var unreachable error
	for _, c := range checks {
		if late() {
			rep.Deadline = true
			emit(finish(Result{Status: Skip, Evidence: pastDeadline}, c, 0, 0))
			continue
		}
		if ctx.Err() != nil {
			rep.Interrupted = true
			break
		}
		if gateFailed != "" {
			emit(finish(Result{Status: Skip, Evidence: gateFailed + " check failed"}, c, 0, 0))
			continue
		}
		// Each check starts on a new connection: one the server closed
		// after the last check's response is not this check's failure.
		p.CloseIdle()
		sent, start := p.Sent(), time.Now()
		var r Result
		if c.Gate != nil {
			r, unreachable = safeGate(ctx, c.Check, t)
		} else {
			r = safeRun(ctx, c.Check, t)
		}
		r = finish(r, c, p.Sent()-sent, time.Since(start))
		switch {
		case late():
			r.Status, r.Evidence, r.Details = Skip, pastDeadline+" while it ran", nil
			rep.Deadline = true
		case ctx.Err() != nil:
			r.Status, r.Evidence, r.Details = Skip, "interrupted", nil
			rep.Interrupted = true
		}
		if r.Status == Fail && strings.HasPrefix(r.Evidence, internalPrefix) {
			rep.Internal = true
		}
		emit(r)
		if rep.Interrupted {
			break
		}
		if c.Gate != nil && r.Status == Fail {
			gateFailed = c.Name
		}
		if unreachable != nil {
			break
		}
	}
	rep.setServer(t.Server)
	rep.Finished = time.Now()
	rep.Requests = p.Sent()
	rep.total()
	if unreachable != nil {
		rep.Unreachable = unreachable.Error()
		return rep, fmt.Errorf("check: %w: %v", ErrUnreachable, unreachable)
	}
	return rep, nil
}

// internalPrefix starts the evidence of a check that panicked.
const internalPrefix = "internal error"

// safeRun runs c, turning a panic (a bug in surge) into a FAIL whose
// evidence says so, so the report is still written.
func safeRun(ctx context.Context, c Check, t *T) (r Result) {
	defer func() {
		if v := recover(); v != nil {
			r = Result{Status: Fail, Evidence: fmt.Sprintf("%s (a bug in surge): %v", internalPrefix, v)}
		}
	}()
	return c.Run(ctx, t)
}

// safeGate is safeRun for a suite's gate: its result, and its error
// when the target is unreachable.
func safeGate(ctx context.Context, c Check, t *T) (r Result, unreachable error) {
	defer func() {
		if v := recover(); v != nil {
			r, unreachable = Result{Status: Fail, Evidence: fmt.Sprintf("%s (a bug in surge): %v", internalPrefix, v)}, nil
		}
	}()
	return c.Gate(ctx, t)
}

// finish fills what the runner knows of a result; a required check that
// SKIPs becomes a FAIL.
func finish(r Result, c Selected, requests int, d time.Duration) Result {
	r.Name, r.Group, r.Required = c.Name, c.Group, c.Required
	r.Requests, r.Duration, r.Seconds = requests, d, roundSeconds(d)
	if c.Required && r.Status == Skip {
		r.Status, r.Evidence = Fail, "required: "+r.Evidence
	}
	return r
}

func roundSeconds(d time.Duration) float64 {
	return float64(d.Round(time.Millisecond)) / float64(time.Second)
}

// transportCause describes a request that got no response: the cause without
// the URL the client repeats (it may hold credentials).
func transportCause(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

// generate sends r with the check's timeout. r.Extra's ignore_eos, when
// set, is asked for where the server takes it: a 400 that names it is
// answered by sending r again without it.
func generate(ctx context.Context, t *T, r Req) (*Exchange, error) {
	if r.Timeout == 0 {
		r.Timeout = t.Config.Timeout
	}
	x, err := t.Probe.Send(ctx, r)
	if err != nil || x.Status != 400 || r.Extra["ignore_eos"] == nil || !strings.Contains(string(x.Body), "ignore_eos") {
		return x, err
	}
	extra := map[string]any{}
	for k, v := range r.Extra {
		if k != "ignore_eos" {
			extra[k] = v
		}
	}
	r.Extra = extra
	return t.Probe.Send(ctx, r)
}

// failed is the result of an exchange that did not end in a complete
// 200: no response, a timeout, another status, a stream asked for and
// answered with one body, or a broken body; bad is false when it is none
// of these.
func failed(x *Exchange, err error, what string) (r Result, bad bool) {
	switch {
	case err != nil:
		return Result{Status: Fail, Evidence: what + ": no response: " + transportCause(err)}, true
	case x.TimedOut:
		return Result{Status: Fail, Evidence: fmt.Sprintf("%s: no end within %s (%d chunks)", what, showDur(x.Elapsed), len(x.Chunks))}, true
	case x.Status != 200:
		return Result{Status: Fail, Evidence: what + ": " + httpStatus(x)}, true
	case x.StreamAsked && !x.Stream:
		return Result{Status: Fail, Evidence: what + ": " + streamIgnored(x)}, true
	case x.EndErr != nil:
		return Result{Status: Fail, Evidence: fmt.Sprintf("%s: %v after %d chunks at %s", what, x.EndErr, len(x.Chunks), showDur(x.Elapsed))}, true
	}
	return Result{}, false
}

// streamIgnored is the evidence of a streamed request answered with one
// body: "200 application/json, not an event stream: stream ignored".
func streamIgnored(x *Exchange) string {
	return statusText(x) + ", not an event stream: stream ignored"
}

// statusText is the status ("400") with the OpenAI error type when the
// body has one, else the content type: "404 text/html".
func statusText(x *Exchange) string {
	s := fmt.Sprint(x.Status)
	if typ, ok := x.ErrorBody(); ok && wordLike.MatchString(typ) {
		return s + " (" + typ + ")"
	} else if ok {
		return s + " (error body)"
	}
	if ct := contentType(x); ct != "" {
		return s + " " + ct
	}
	return s
}

// httpStatus is statusText after "HTTP ".
func httpStatus(x *Exchange) string { return "HTTP " + statusText(x) }

// contentType is the response's media type without parameters, when it
// is a common one (a server's own value is not repeated).
func contentType(x *Exchange) string {
	if x.Header == nil {
		return ""
	}
	ct, _, _ := strings.Cut(x.Header.Get("Content-Type"), ";")
	switch ct = strings.ToLower(strings.TrimSpace(ct)); ct {
	case "":
		return ""
	case "text/html", "text/plain", "text/event-stream", "application/json", "application/xml", "text/xml", "application/octet-stream":
		return ct
	}
	return "of another content type"
}

// wordLike is what a server's error type must look like to reach the
// evidence (an identifier): anything else could be text of its own.
var wordLike = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,39}$`)

// refused reports whether a 4xx answer means the server does not take a
// parameter (a 400/422 to a request that differs from a plain one by it):
// the check then SKIPs rather than FAILs.
func refused(x *Exchange) bool { return x.Status == 400 || x.Status == 422 }

// showDur renders a duration for evidence: 41ms, 1.32s, 1m05s.
func showDur(d time.Duration) string {
	switch {
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Round(time.Millisecond).Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}
