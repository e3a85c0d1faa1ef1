package check

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/surge-bench/surge/internal/sim"
)

func validIncident(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/incident_report.valid.json")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// mutate decodes the valid report, applies f, and encodes it again.
func mutate(t *testing.T, f func(m map[string]any)) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(validIncident(t)), &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	b, _ := json.Marshal(m)
	return string(b)
}

func TestIncidentSchema(t *testing.T) {
	sch, _, err := compileSchema("incident_report.schema.json", incidentSchema)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		doc  string
		want string // "" = valid
	}{
		{"valid", validIncident(t), ""},
		{"enum", mutate(t, func(m map[string]any) { m["severity"] = "SEV9" }), "at /severity: enum"},
		{"nested enum via $ref", mutate(t, func(m map[string]any) {
			m["timeline"].([]any)[1].(map[string]any)["kind"] = "party"
		}), "at /timeline/1/kind: enum"},
		{"required", mutate(t, func(m map[string]any) { delete(m, "root_cause") }), "at /: required (missing property 'root_cause')"},
		{"two required", mutate(t, func(m map[string]any) { delete(m, "root_cause"); delete(m, "severity") }), "at /: required (missing properties 'severity', 'root_cause')"},
		// The extra property's name is model output: never named.
		{"additionalProperties", mutate(t, func(m map[string]any) { m["extra"] = 1 }), "at /: additionalProperties"},
		{"minItems", mutate(t, func(m map[string]any) { m["timeline"] = m["timeline"].([]any)[:2] }), "at /timeline: minItems"},
		{"type", mutate(t, func(m map[string]any) { m["window"].(map[string]any)["duration_minutes"] = "45" }), "at /window/duration_minutes: type (string, want integer)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inst, err := jsonschema.UnmarshalJSON(strings.NewReader(c.doc))
			if err != nil {
				t.Fatal(err)
			}
			err = sch.Validate(inst)
			if c.want == "" {
				if err != nil {
					t.Fatalf("valid report rejected: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("invalid report accepted")
			}
			if got := schemaViolation(err); got != c.want {
				t.Errorf("violation %q, want %q", got, c.want)
			}
		})
	}
}

// schemaServer streams answer (split in pieces) to a request with
// response_format, and a short text to one without; refuse answers a
// constrained request with that status.
func schemaServer(t *testing.T, answer func(i int) string, finish string, refuse int) (*Probe, *atomic.Int32) {
	var constrained atomic.Int32
	p := serveProbe(t, func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req["response_format"] == nil {
			writeSSE(w, true, delta(map[string]any{"content": "Sure."}, nil), delta(map[string]any{}, "length"))
			return
		}
		i := int(constrained.Add(1))
		if refuse != 0 {
			writeAPIError(w, refuse, "response_format is not supported")
			return
		}
		a := answer(i)
		var ev []any
		for len(a) > 0 {
			n := min(len(a), 40)
			ev = append(ev, delta(map[string]any{"content": a[:n]}, nil))
			a = a[n:]
		}
		writeSSE(w, true, append(ev, delta(map[string]any{}, finish))...)
	}, "")
	return p, &constrained
}

func TestStructuredShapes(t *testing.T) {
	valid := validIncident(t)
	bad := mutate(t, func(m map[string]any) { m["detected_by"] = "a dream" })
	cases := []struct {
		name     string
		answer   func(int) string
		finish   string
		refuse   int
		want     Status
		evidence []string
	}{
		{"all valid", func(int) string { return valid }, "stop", 0, Pass, []string{"5/5 valid", "TTFT", "unconstrained"}},
		{"one violates", func(i int) string {
			if i == 3 {
				return bad
			}
			return valid
		}, "stop", 0, Fail, []string{"4/5 valid: response ", " violates the schema at /detected_by: enum"}},
		{"not JSON", func(int) string { return "Here is your report: ..." }, "stop", 0, Fail, []string{"0/5 valid", "not JSON"}},
		{"cut by max_tokens", func(int) string { return valid[:200] }, "length", 0, Warn, []string{"0/1 valid, cannot judge the rest: response 1 cut by max_tokens 1024 before the model finished", "4 not sent"}},
		{"refused", nil, "stop", 400, Skip, []string{"no structured output: 400"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, n := schemaServer(t, c.answer, c.finish, c.refuse)
			r := runCheck(t, CheckStructuredSchema, p, DefaultConfig(), Server{})
			wantStatus(t, r, c.want, c.evidence...)
			want := int32(StructuredRequests)
			if c.name == "cut by max_tokens" {
				want = 1
			}
			if c.refuse == 0 && n.Load() != want {
				t.Errorf("%d constrained requests, want %d", n.Load(), want)
			}
			if strings.Contains(r.Evidence, "dream") || strings.Contains(r.Evidence, "report:") {
				t.Errorf("evidence names content: %s", r.Evidence)
			}
		})
	}
}

func TestStructuredNeedsChat(t *testing.T) {
	p := simProbe(t, fastSim(), APICompletions)
	wantStatus(t, runCheck(t, CheckStructuredSchema, p, DefaultConfig(), Server{}), Skip, "chat API")
}

// The simulator both ways: its constrained answers validate;
// schema-violations fails.
func TestStructuredSim(t *testing.T) {
	r := runCheck(t, CheckStructuredSchema, simProbe(t, fastSim(), ""), DefaultConfig(), Server{})
	wantStatus(t, r, Pass, "5/5 valid")
	cfg := fastSim()
	cfg.Quirks = []string{sim.QuirkSchemaViolations}
	r = runCheck(t, CheckStructuredSchema, simProbe(t, cfg, ""), DefaultConfig(), Server{})
	wantStatus(t, r, Fail, "0/5 valid", "violates the schema at /")
}
