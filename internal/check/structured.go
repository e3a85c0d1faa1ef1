package check

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// incidentSchema is structured.schema's response schema: an incident
// report with nested objects, $defs/$ref, enums, arrays with minItems,
// required fields and additionalProperties false everywhere (the shape
// strict mode demands).
//
//go:embed testdata/incident_report.schema.json
var incidentSchema []byte

// Defaults of structured.schema.
const (
	// StructuredRequests is how many constrained requests are sent.
	StructuredRequests = 5
	// structuredMaxTokens is generous for the schema: a filled-in report
	// is 300–600 tokens; a response cut by it counts as invalid.
	structuredMaxTokens = 1024
	// StructuredMaxTime bounds the constrained requests: none is sent
	// once it has passed (grammar-constrained decoding can be slow: 40
	// tokens/s on Ollama on a CPU).
	StructuredMaxTime = 60 * time.Second
)

const structuredPrompt = "Write the post-incident report for this outage as JSON: " +
	"on 2026-11-30 between 14:02 and 14:47 UTC the checkout API of the web shop returned errors " +
	"for 45 minutes after a database connection pool was exhausted by a retry storm; " +
	"about 12% of orders failed; on-call engineers rolled back the 14:00 deploy and raised the pool size. " +
	"Give a timeline of at least three events, the affected services, two action items with owners, and the root cause."

func structuredChecks() []Check {
	return []Check{{
		Name:  CheckStructuredSchema,
		Group: GroupStructured,
		What:  "response_format json_schema (strict, a large nested schema): every response validates; TTFT against an unconstrained request",
		Run:   runStructuredSchema,
	}}
}

func runStructuredSchema(ctx context.Context, t *T) Result {
	if !t.Probe.Chat() {
		return Result{Status: Skip, Evidence: "response_format json_schema needs the chat API"}
	}
	sch, doc, err := compileSchema("incident_report.schema.json", incidentSchema)
	if err != nil { // the shipped schema compiles: a test proves it
		return Result{Status: Fail, Evidence: "the shipped schema does not compile: " + err.Error()}
	}
	rf := map[string]any{"type": "json_schema", "json_schema": map[string]any{
		"name": "incident_report", "schema": doc, "strict": true}}
	timeout := reqTimeout(t)

	// The unconstrained request first: the same prompt, for TTFT.
	free, err := t.Probe.Send(ctx, Req{Prompt: structuredPrompt, MaxTokens: 16, Stream: true, Timeout: timeout})
	if err != nil {
		return Result{Status: Fail, Evidence: "no response: " + noResponse(err)}
	}
	if free.Status != 200 {
		return Result{Status: Fail, Evidence: fmt.Sprintf("unconstrained request: %s", statusWord(free))}
	}

	send := func() (*Exchange, error) {
		return t.Probe.Send(ctx, Req{Prompt: structuredPrompt, MaxTokens: structuredMaxTokens, Stream: true, Timeout: timeout,
			Extra: map[string]any{"response_format": rf}})
	}
	// The first constrained request alone: its TTFT against the
	// unconstrained one (it may include compiling the schema's grammar,
	// which every new schema pays once).
	began := time.Now()
	first, err := send()
	if err != nil {
		return Result{Status: Fail, Evidence: "no response: " + noResponse(err)}
	}
	if first.Status >= 400 && first.Status < 500 {
		return Result{Status: Skip, Evidence: fmt.Sprintf("no structured output: %s on response_format json_schema", statusWord(first)),
			Details: map[string]any{"status": first.Status}}
	}
	n := StructuredRequests
	answers := []*Exchange{first}
	stopped := ""
	switch _, cutFirst := judgeStructured(sch, first); {
	case cutFirst:
		// A first answer that runs past max_tokens is a model that does
		// not close the JSON: the next ones would each take as long to
		// say the same.
		stopped = fmt.Sprintf("; %d not sent", n-1)
	case time.Since(began) > StructuredMaxTime:
		stopped = fmt.Sprintf("; %d not sent (%s passed)", n-1, showDur(StructuredMaxTime))
	default:
		// The others at once: validity does not need them one by one,
		// and a long schema answer takes seconds.
		rest, failed := sendRest(n-1, send)
		if failed != nil {
			return *failed
		}
		answers = append(answers, rest...)
	}
	return structuredResult(tallyStructured(sch, answers), len(answers), n, stopped, first, free)
}

// sendRest sends the other n constrained requests at once and returns
// their answers in order, or a failed Result naming the first that got
// no response (numbered from 2: the first request was sent alone).
func sendRest(n int, send func() (*Exchange, error)) ([]*Exchange, *Result) {
	rest := make([]*Exchange, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range rest {
		wg.Go(func() { rest[i], errs[i] = send() })
	}
	wg.Wait()
	for i, e := range errs {
		if e != nil {
			return nil, &Result{Status: Fail, Evidence: fmt.Sprintf("request %d: no response: %s", i+2, noResponse(e))}
		}
	}
	return rest, nil
}

// structuredTally is how the constrained answers were judged.
type structuredTally struct {
	valid, cut, notJSON int
	// firstBad names the first invalid answer (cut ones aside), firstCut
	// the first one max_tokens cut.
	firstBad, firstCut string
}

// tallyStructured judges each constrained answer against the schema.
func tallyStructured(sch *jsonschema.Schema, answers []*Exchange) structuredTally {
	var n structuredTally
	for i, x := range answers {
		why, isCut := judgeStructured(sch, x)
		switch {
		case why == "":
			n.valid++
		case isCut:
			n.cut++
			if n.firstCut == "" {
				n.firstCut = fmt.Sprintf("response %d %s", i+1, why)
			}
			continue
		case strings.HasPrefix(why, "not JSON"):
			n.notJSON++
		}
		if why != "" && n.firstBad == "" {
			n.firstBad = fmt.Sprintf("response %d %s", i+1, why)
		}
	}
	return n
}

// structuredResult is structured.schema's verdict on the tally of the
// sent answers out of n, with the first constrained answer's TTFT
// against the unconstrained one's; stopped says why some were not sent.
func structuredResult(tally structuredTally, sent, n int, stopped string, first, free *Exchange) Result {
	valid, cut := tally.valid, tally.cut
	r := Result{Details: map[string]any{"requests": sent, "valid": valid, "cut_by_max_tokens": cut, "not_json": tally.notJSON}}
	ttft := ""
	if fc, ff := first.FirstContent(), free.FirstContent(); fc > 0 && ff > 0 {
		r.Details["ttft_ms"] = millis(fc)
		r.Details["ttft_unconstrained_ms"] = millis(ff)
		ttft = fmt.Sprintf("; TTFT %s vs %s unconstrained, %s", showDur(fc), showDur(ff), times(fc, ff))
	}
	switch {
	case tally.firstBad != "":
		r.Status, r.Evidence = Fail, fmt.Sprintf("%d/%d valid: %s%s", valid, sent, tally.firstBad, stopped)+ttft
	case cut > 0:
		// The model had not finished: nothing the server sent broke the
		// schema, and its part cannot be judged.
		r.Status, r.Evidence = Warn, fmt.Sprintf("%d/%d valid, cannot judge the rest: %s before the model finished the document%s", valid, sent, tally.firstCut, stopped)+ttft
	case sent < n:
		r.Status, r.Evidence = Warn, fmt.Sprintf("%d/%d valid%s", valid, sent, stopped)+ttft
	default:
		r.Status, r.Evidence = Pass, fmt.Sprintf("%d/%d valid", valid, n)+ttft
	}
	return r
}

// judgeStructured says why a constrained answer is not a valid instance
// of the schema ("" when it is), and whether max_tokens cut it.
func judgeStructured(sch *jsonschema.Schema, x *Exchange) (why string, cut bool) {
	switch {
	case x.TimedOut:
		return fmt.Sprintf("timed out after %s", showDur(x.Elapsed)), false
	case x.Status != 200:
		return "got " + statusWord(x), false
	case x.StreamAsked && !x.Stream:
		return streamIgnored(x), false
	case x.FinishReason == "length":
		return fmt.Sprintf("cut by max_tokens %d", structuredMaxTokens), true
	case x.EndErr != nil:
		return "stream broke: " + x.EndErr.Error(), false
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(x.Text))
	if err != nil {
		return fmt.Sprintf("not JSON (%s)", nBytes(len(x.Text))), false
	}
	if err := sch.Validate(inst); err != nil {
		return "violates the schema " + schemaViolation(err), false
	}
	return "", false
}

// compileSchema compiles a JSON Schema document (draft 2020-12 unless it
// says otherwise) and returns it with its decoded form, to send.
func compileSchema(name string, raw []byte) (*jsonschema.Schema, any, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	c := jsonschema.NewCompiler()
	loc := "mem:///" + url.PathEscape(name)
	if err := c.AddResource(loc, doc); err != nil {
		return nil, nil, err
	}
	s, err := c.Compile(loc)
	if err != nil {
		return nil, nil, err
	}
	return s, doc, nil
}

// schemaViolation names the first violation of a validation error: the
// JSON pointer of the instance and the keyword that failed ("at
// /timeline/0/kind: enum"). No value is named: the message of the
// validator quotes the instance, which is model output.
func schemaViolation(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return "(unknown violation)"
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	ptr := "/"
	if len(ve.InstanceLocation) > 0 {
		var sb strings.Builder
		for _, p := range ve.InstanceLocation {
			sb.WriteByte('/')
			sb.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(p))
		}
		ptr = sb.String()
	}
	kw := "schema"
	if ve.ErrorKind != nil {
		if kp := ve.ErrorKind.KeywordPath(); len(kp) > 0 {
			kw = kp[0]
		}
	}
	return "at " + ptr + ": " + kw + violationNote(ve.ErrorKind)
}

// violationNote says more of a violation where what it names comes from
// our schema, never from the instance: the properties required and
// missing, the types wanted and got (JSON type names). Other kinds
// (additionalProperties, enum, const…) would name model output.
func violationNote(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Required:
		return " (missing " + quoteNames("property", k.Missing) + ")"
	case *kind.Type:
		if wordLike.MatchString(k.Got) {
			return fmt.Sprintf(" (%s, want %s)", k.Got, strings.Join(k.Want, " or "))
		}
	}
	return ""
}

// quoteNames is "property 'id'", or "properties 'id', 'kind'", for names
// of our schema.
func quoteNames(noun string, names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "'" + n + "'"
	}
	if len(names) != 1 {
		noun = strings.TrimSuffix(noun, "y") + "ies"
	}
	return noun + " " + strings.Join(q, ", ")
}
