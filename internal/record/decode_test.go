package record

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// slowDecode is what encoding/json makes of line: the contract the fast
// decoder must match.
func slowDecode(line []byte) (Record, error) {
	var r Record
	err := json.Unmarshal(line, &r)
	return r, err
}

// TestDecoderMatchesEncodingJSON: every line, odd or not, decodes to the
// same Record and the same error as encoding/json makes of it, and the
// lines surge writes take the fast path.
func TestDecoderMatchesEncodingJSON(t *testing.T) {
	written := map[string]Record{
		"full":    full(),
		"dropped": func() Record { r := New("x-0", 0, "baseline", 0); r.Outcome = GeneratorDrop; return r }(),
		"empty timings": func() Record {
			r := full()
			r.ServerTiming = []Timing{{"", 0}}
			return r
		}(),
		"negative": func() Record { r := full(); r.ScheduledNs, r.Shard = -5, -1; return r }(),
		"worker lost": func() Record {
			r := New("x-1", 1, "baseline", 0)
			r.Outcome, r.Error, r.Cause = GeneratorDrop, "worker w1 lost at 2.0 s: connection dropped (never sent)", CauseWorkerLost
			return r
		}(),
	}
	for name, r := range written {
		line := r.AppendJSON(nil)
		r.Schema = SchemaVersion
		var got Record
		d := newDecoder()
		got = New("", 0, "", 0)
		if !d.decode(line, &got) {
			t.Errorf("%s: a line surge writes took the slow path: %s", name, line)
		}
		if !reflect.DeepEqual(got, r) {
			t.Errorf("%s: fast decode\n got %+v\nwant %+v", name, got, r)
		}
	}
	odd := map[string]string{
		"spaces":          ` { "id" : "a" , "seq" : 3 , "good" : true , "ratelimit" : { "limit_tokens" : 4 } , "server_timing" : [ { "name" : "q" , "dur_ns" : 1 } ] } `,
		"unknown field":   `{"id":"a","worker":"w1","seq":3}`,
		"other case":      `{"ID":"a","Seq":3}`,
		"null":            `{"id":"a","sent_ns":null}`,
		"null ratelimit":  `{"ratelimit":null}`,
		"null timings":    `{"server_timing":null}`,
		"escape":          `{"id":"a\"b","error":"x\u00e9"}`,
		"non-ascii":       `{"profile":"é"}`,
		"float":           `{"seq":1.5}`,
		"exponent":        `{"seq":1e3}`,
		"leading zero":    `{"seq":01}`,
		"huge":            `{"seq":99999999999999999999}`,
		"max int64":       `{"seq":9223372036854775807}`,
		"min int64":       `{"seq":-9223372036854775808}`,
		"minus alone":     `{"seq":-}`,
		"string for int":  `{"seq":"3"}`,
		"int for string":  `{"id":3}`,
		"bool for int":    `{"status":true}`,
		"bad bool":        `{"good":tru}`,
		"bad outcome":     `{"outcome":"exploded"}`,
		"empty outcome":   `{"outcome":""}`,
		"trailing":        `{"id":"a"} x`,
		"two objects":     `{"id":"a"}{"id":"b"}`,
		"truncated":       `{"id":"a","seq":`,
		"no close":        `{"id":"a"`,
		"trailing comma":  `{"id":"a",}`,
		"array":           `[1,2]`,
		"empty":           `{}`,
		"duplicate":       `{"seq":1,"seq":2}`,
		"ratelimit other": `{"ratelimit":{"limit_requests":1,"bogus":2}}`,
		"timings other":   `{"server_timing":[{"name":"a","x":1}]}`,
		"timings empty":   `{"server_timing":[]}`,
		"control char":    "{\"id\":\"a\tb\"}",
	}
	for name, line := range odd {
		want, wantErr := slowDecode([]byte(line))
		var got Record
		gotErr := newDecoder().unmarshal([]byte(line), &got)
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Errorf("%s: error %v, encoding/json says %v", name, gotErr, wantErr)
			continue
		}
		if wantErr == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", name, got, want)
		}
	}
}

// FuzzDecoder: whatever the line, the fast decoder agrees with encoding/json.
func FuzzDecoder(f *testing.F) {
	r := full()
	f.Add(string(r.AppendJSON(nil)))
	f.Add(`{"id":"a","seq":-0,"ratelimit":{},"server_timing":[{}]}`)
	f.Fuzz(func(t *testing.T, line string) {
		if strings.ContainsRune(line, '\n') {
			return
		}
		want, wantErr := slowDecode([]byte(line))
		var got Record
		gotErr := newDecoder().unmarshal([]byte(line), &got)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%q: error %v, encoding/json says %v", line, gotErr, wantErr)
		}
		if wantErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %+v\nwant %+v", line, got, want)
		}
	})
}
