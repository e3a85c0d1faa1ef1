package scrape

import (
	"bytes"
	"errors"
	"flag"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

func csvSamples() []Sample {
	b := []float64{0.3, 0.5, inf}
	full := EmptySample(1e9)
	full.set(Waiting, 7)
	full.set(Running, 22)
	full.set(KVUsage, 0.4)
	full.set(Replicas, 2)
	full.set(PromptTokens, 123456)
	full.set(GenerationTokens, 45678)
	full.set(Success, 250)
	full.setHist(QueueTime, hist(b, []float64{150, 175, 250}, 108))
	full.setHist(TTFT, hist([]float64{0.1, 1, inf}, []float64{100, 245, 250}, 90.5))
	full.setHist(E2E, Hist{Count: 250, Sum: 1190}) // from a summary: no buckets

	partial := EmptySample(2250e6) // llama.cpp-like: gauges and counters only
	partial.set(Waiting, 46)
	partial.set(Running, 4)
	partial.set(PromptTokens, 33065)
	partial.set(GenerationTokens, 7801)

	none := EmptySample(3e9) // a successful scrape where nothing mapped was found

	return []Sample{full, partial, none}
}

func TestCSVGolden(t *testing.T) {
	var buf bytes.Buffer
	w := NewCSVWriter(&buf)
	for _, s := range csvSamples() {
		if err := w.Write(s); err != nil {
			t.Fatal(err)
		}
	}
	const golden = "testdata/engine.golden.csv"
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("engine.csv differs from %s (run with -update after checking):\n%s", golden, buf.String())
	}
}

func TestCSVRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewCSVWriter(&buf)
	in := csvSamples()
	for _, s := range in {
		if err := w.Write(s); err != nil {
			t.Fatal(err)
		}
	}
	out, err := ReadCSV(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("read %d samples, want %d", len(out), len(in))
	}
	for i := range in {
		if !sameSample(in[i], out[i]) {
			t.Errorf("sample %d:\n got %+v\nwant %+v", i, out[i], in[i])
		}
	}
}

// sameSample compares samples treating NaN as equal to NaN and nil bucket
// slices as equal to empty ones.
func sameSample(a, b Sample) bool {
	if a.TNs != b.TNs || a.Has != b.Has {
		return false
	}
	for _, m := range Metrics() {
		x, okA := a.Value(m)
		y, okB := b.Value(m)
		if okA != okB || (okA && x != y) {
			return false
		}
		ha, hb := a.Hist(m), b.Hist(m)
		if (ha == nil) != (hb == nil) {
			return false
		}
		if ha != nil && (ha.Count != hb.Count || ha.Sum != hb.Sum || len(ha.Bounds) != len(hb.Bounds) ||
			(len(ha.Bounds) > 0 && (!reflect.DeepEqual(ha.Bounds, hb.Bounds) || !reflect.DeepEqual(ha.Counts, hb.Counts)))) {
			return false
		}
	}
	return true
}

// flushCounter records how much had reached the underlying writer, and
// whether Flush was called, after each Write of the CSVWriter.
type flushCounter struct {
	bytes.Buffer
	flushes int
}

func (f *flushCounter) Flush() error { f.flushes++; return nil }

func TestCSVFlushesEachSample(t *testing.T) {
	var f flushCounter
	w := NewCSVWriter(&f)
	s := csvSamples()
	if err := w.Write(s[0]); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(f.String(), "\n"); lines != 2 || f.flushes != 1 {
		t.Errorf("after one sample: %d lines reached the writer, %d flushes; want header + 1 row, 1 flush", lines, f.flushes)
	}
	if err := w.Write(s[1]); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(f.String(), "\n"); lines != 3 || f.flushes != 2 {
		t.Errorf("after two samples: %d lines, %d flushes", lines, f.flushes)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestCSVWriteError(t *testing.T) {
	err := NewCSVWriter(failWriter{}).Write(csvSamples()[0])
	if err == nil || err.Error() != "scrape: engine.csv: disk full" {
		t.Errorf("err = %v", err)
	}
}

func TestReadCSVErrors(t *testing.T) {
	head := strings.Join(CSVHeader, ",") + "\n"
	tests := []struct{ name, in, want string }{
		{"no t_s", "waiting\n1\n", "scrape: engine.csv: no t_s column"},
		{"bad number", "t_s,waiting\n1.000,x\n", `scrape: engine.csv line 2: column waiting: invalid number "x"`},
		{"empty time", "t_s,waiting\n,1\n", "scrape: engine.csv line 2: column t_s: empty"},
		{"bad bucket", head + "1.000,,,,,2,1,,,,,,,,0.3-2 +Inf:2,,,\n", `scrape: engine.csv line 2: column queue_time_buckets: bucket "0.3-2": want le:count`},
		{"descending buckets", head + "1.000,,,,,2,1,,,,,,,,0.5:1 0.3:2,,,\n", `scrape: engine.csv line 2: column queue_time_buckets: bucket "0.3:2": bounds not ascending`},
		{"ragged row", "t_s,waiting\n1.000\n", "scrape: engine.csv: record on line 2: wrong number of fields"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadCSV(strings.NewReader(tt.in))
			if err == nil || err.Error() != tt.want {
				t.Errorf("err = %v\nwant %s", err, tt.want)
			}
		})
	}
	if s, err := ReadCSV(strings.NewReader("")); err != nil || s != nil {
		t.Errorf("empty file: %v, %v", s, err)
	}
	// Unknown columns are ignored, missing ones leave metrics unavailable.
	s, err := ReadCSV(strings.NewReader("t_s,extra,waiting\n0.5,zzz,3\n"))
	if err != nil || len(s) != 1 || s[0].TNs != 5e8 || s[0].Waiting != 3 || s[0].Has.Has(Running) || !math.IsNaN(s[0].Running) {
		t.Errorf("tolerant read = %+v, %v", s, err)
	}
}

// An engine.csv written before replicas_starting existed still reads.
func TestReadCSVWithoutReplicasStarting(t *testing.T) {
	head := strings.Join(CSVHeader[:len(CSVHeader)-1], ",") + "\n"
	s, err := ReadCSV(strings.NewReader(head + "1.000,3,4,,2,,,,,,,,,,,,\n"))
	if err != nil || len(s) != 1 {
		t.Fatalf("%v, %d samples", err, len(s))
	}
	if v, ok := s[0].Value(Replicas); !ok || v != 2 {
		t.Errorf("replicas %v %v", v, ok)
	}
	if _, ok := s[0].Value(ReplicasStarting); ok {
		t.Error("replicas_starting available from a file without the column")
	}
}
