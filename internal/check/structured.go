package check

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
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
	structuredMaxTokens = 2048
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

	n := StructuredRequests
	valid, cut, notJSON := 0, 0, 0
	var firstBad string
	var ttfts []time.Duration
	for i := range n {
		x, err := t.Probe.Send(ctx, Req{Prompt: structuredPrompt, MaxTokens: structuredMaxTokens, Stream: true, Timeout: timeout,
			Extra: map[string]any{"response_format": rf}})
		if err != nil {
			return Result{Status: Fail, Evidence: fmt.Sprintf("request %d: no response: %s", i+1, noResponse(err))}
		}
		if x.Status >= 400 && x.Status < 500 && i == 0 {
			return Result{Status: Skip, Evidence: fmt.Sprintf("no structured output: %s on response_format json_schema", statusWord(x)),
				Details: map[string]any{"status": x.Status}}
		}
		if x.Status != 200 {
			return Result{Status: Fail, Evidence: fmt.Sprintf("request %d: %s", i+1, statusWord(x))}
		}
		if fc := x.FirstContent(); fc >= 0 {
			ttfts = append(ttfts, fc)
		}
		why := ""
		switch {
		case x.TimedOut:
			why = fmt.Sprintf("timed out after %s", roundDur(x.Elapsed))
		case x.FinishReason == "length":
			cut++
			why = fmt.Sprintf("cut by max_tokens %d", structuredMaxTokens)
		case x.EndErr != nil:
			why = "stream broke: " + x.EndErr.Error()
		default:
			inst, jerr := jsonschema.UnmarshalJSON(strings.NewReader(x.Text))
			if jerr != nil {
				notJSON++
				why = fmt.Sprintf("not JSON (%s)", nBytes(len(x.Text)))
			} else if verr := sch.Validate(inst); verr != nil {
				why = "violates the schema " + schemaViolation(verr)
			}
		}
		if why == "" {
			valid++
		} else if firstBad == "" {
			firstBad = fmt.Sprintf("response %d %s", i+1, why)
		}
	}

	r := Result{Details: map[string]any{"requests": n, "valid": valid, "cut_by_max_tokens": cut, "not_json": notJSON}}
	ttft := ""
	if fc := free.FirstContent(); fc > 0 && len(ttfts) > 0 {
		m := medianDur(ttfts)
		r.Details["ttft_ms"] = millis(m)
		r.Details["ttft_unconstrained_ms"] = millis(fc)
		ttft = fmt.Sprintf("; TTFT %s vs %s unconstrained, %s", roundDur(m), roundDur(fc), times(m, fc))
	}
	r.Evidence = fmt.Sprintf("%d/%d valid", valid, n) + ttft
	if valid == n {
		r.Status = Pass
		return r
	}
	r.Status = Fail
	r.Evidence = fmt.Sprintf("%d/%d valid: %s", valid, n, firstBad) + ttft
	return r
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
	return "at " + ptr + ": " + kw
}
