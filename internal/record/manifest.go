package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"
)

// NA is written for anything a manifest does not know. It is never guessed.
const NA = "n/a"

// Manifest says what a run tested, so that results can be compared and
// reproduced. It holds no secrets: the target is a URL without credentials,
// and the API key is named only by where it came from.
type Manifest struct {
	// SchemaVersion is the run folder's layout (SchemaVersion; 0 when read
	// from a folder written before versions). EncodeManifest sets it.
	SchemaVersion int       `json:"schema_version"`
	Tool          string    `json:"tool"`              // "surge"
	Version       string    `json:"version"`           // surge version
	Command       string    `json:"command"`           // burst, run, capacity, ...
	RunID         string    `json:"run_id"`            // run folder name
	Started       time.Time `json:"started"`           // wall clock at the run origin
	Finished      time.Time `json:"finished,omitzero"` // wall clock at the end (absent until the run has ended)
	Partial       bool      `json:"partial"`           // interrupted before the plan completed
	// PartialCause is why, as a value to branch on; PartialWhy says it in
	// words, with the details (which budget, which write error).
	PartialCause PartialCause `json:"partial_cause,omitempty"`
	PartialWhy   string       `json:"partial_why"` // why, when Partial
	// SeenNs is how long after Started the run was last seen alive: a live
	// run rewrites it every quarter second while it sends, so that a run
	// killed without a word still says when it died.
	// Absent from finished runs and from runs in virtual time.
	SeenNs int64 `json:"seen_ns,omitempty"`
	// Arrivals accounts for every arrival of the plan (absent where it is
	// unknown: closed loops, sessions, distributed runs).
	Arrivals    *Arrivals `json:"arrivals,omitempty"`
	Target      string    `json:"target"`       // base URL, or "in-process simulator"
	Simulated   bool      `json:"simulated"`    // target is surge's simulated engine
	VirtualTime bool      `json:"virtual_time"` // run in virtual time (--simulate)
	Model       string    `json:"model"`
	API         string    `json:"api"`        // chat or completions
	KeySource   string    `json:"key_source"` // e.g. "env OPENAI_API_KEY", "none"; never the key
	Deployment  string    `json:"deployment"` // serverless, dedicated, self-managed, simulator, n/a
	Hardware    string    `json:"hardware"`
	Serving     string    `json:"serving_config"`
	Workload    string    `json:"workload"` // profile name
	PromptSet   string    `json:"prompt_set"`
	// Dataset is the file of real prompts the requests came from (absent
	// for synthetic prompts). It never holds text from the file.
	Dataset    *DatasetInfo `json:"dataset,omitempty"`
	CacheState string       `json:"cache_state"` // e.g. "unique prompts (nonce): prefix cache defeated"
	// SharedPrefix is the shared prefix the workload put before every
	// prompt (--shared-prefix), in numbers; absent without one.
	SharedPrefix *SharedPrefix `json:"shared_prefix,omitempty"`
	Seed         int64         `json:"seed"`
	// Rep is the run's number among Repeats repeated runs of one
	// configuration (--repeat, a multiplier listed twice), 1..Repeats; both
	// are 0 for a run that was not repeated. Seed is then the options' seed
	// + Rep − 1.
	Rep        int    `json:"rep,omitempty"`
	Repeats    int    `json:"repeats,omitempty"`
	MetricsURL string `json:"metrics_url"`
	// HTTPClient is the HTTP client the requests went through: "surge"
	// (surge's own HTTP/1.1) or "go" (net/http), what --http-client auto
	// picked. Absent in virtual time and on a coordinator (each worker
	// picks its own).
	HTTPClient string `json:"http_client,omitempty"`
	// GatewayTiming is the gateway timing convention chosen
	// (--gateway-timing), absent when auto or in virtual time.
	GatewayTiming string `json:"gateway_timing,omitempty"`
	Config        any    `json:"config"` // the effective configuration
	// PromptSizing is how prompts were sized for the target's tokenizer
	// and how long the server found them (absent in runs from before it).
	PromptSizing *PromptSizing `json:"prompt_sizing,omitempty"`
	// Mix lists the profiles of a mixed workload (--mix) with their
	// shares and distributions; absent for a single profile.
	Mix []MixProfile `json:"mix,omitempty"`
	// Traces describes the traces that replay phases replayed (absent
	// without any).
	Traces []ReplayedTrace `json:"traces,omitempty"`
	// Spent is what the run spent, in numbers, and Budget the command's
	// budget: Spent with a budget or a price set, Budget with a budget.
	Spent  *Spent  `json:"spent,omitempty"`
	Budget *Budget `json:"budget,omitempty"`
	// Distributed says how more than one process generated the run's
	// load; absent for a single process.
	Distributed *Distribution `json:"distributed,omitempty"`
}

// PartialCause is why a run ended before its plan completed. The empty
// cause is none: the run completed.
type PartialCause string

// The causes of a partial run.
const (
	// PartialUnfinished: the manifest written before the first arrival,
	// still there: the run is under way, or it died before it could write
	// its results. A re-render that finds its lock released calls it
	// PartialKilled.
	PartialUnfinished PartialCause = "unfinished"
	// PartialKilled: the run ended without a word (kill -9, the machine
	// stopped, the kernel's out-of-memory killer): what it had not yet
	// written is lost.
	PartialKilled PartialCause = "killed"
	// PartialInterrupted: Ctrl-C or SIGTERM; requests in flight were
	// cancelled and recorded as such.
	PartialInterrupted PartialCause = "interrupted"
	// PartialBudget: the command's budget (requests, tokens, cost) ended
	// the schedule.
	PartialBudget PartialCause = "budget"
	// PartialDiskFull: the disk filled up (ENOSPC, EDQUOT).
	PartialDiskFull PartialCause = "disk_full"
	// PartialWriteError: another write error (EIO, a removed folder).
	PartialWriteError PartialCause = "write_error"
	// PartialMemory: the process neared its memory limit and stopped the
	// schedule before the runtime or the kernel killed it.
	PartialMemory PartialCause = "memory"
	// PartialWorker: a merged run one of whose shards was partial.
	PartialWorker PartialCause = "shard"
)

// PartialCauses lists every cause, for the JSON Schema and tests.
var PartialCauses = []PartialCause{PartialUnfinished, PartialKilled, PartialInterrupted, PartialBudget, PartialDiskFull, PartialWriteError, PartialMemory, PartialWorker}

// CutRequests says whether surge itself cut requests short (it cancelled
// them, or died with them in flight): those requests are not failures of
// the target. A budget only stops sending; what was in flight completes.
func (c PartialCause) CutRequests() bool {
	return c != "" && c != PartialBudget
}

// LegacyCause reads the cause of a partial run from the words a surge
// before partial_cause wrote in partial_why; only for folders from
// before it.
func LegacyCause(partial bool, why string) PartialCause {
	switch {
	case !partial:
		return ""
	case strings.HasPrefix(why, "budget:"):
		return PartialBudget
	case strings.HasPrefix(why, "not finished"):
		return PartialUnfinished
	case strings.HasPrefix(why, "stopped by a write error"):
		return PartialWriteError
	default:
		return PartialInterrupted
	}
}

// Arrivals accounts for the arrivals of a run's plan: Planned =
// Recorded + Unrecorded + Unsent.
type Arrivals struct {
	Planned  int64 `json:"planned"`  // arrivals in the whole plan
	Recorded int64 `json:"recorded"` // with a record in requests.jsonl
	// Unrecorded were due before the run ended and have no record: sent
	// (or being sent) when it died, or their records were lost with it.
	Unrecorded int64 `json:"unrecorded"`
	Unsent     int64 `json:"unsent"` // due after the run ended: never sent
	// EndNs is when the run ended, after its origin: the arrivals due by
	// then were due, the rest never sent.
	EndNs int64 `json:"end_ns"`
}

// Distribution modes.
const (
	DistShard       = "shard"       // static shards (--shard i/n), each its own folder until surge merge
	DistCoordinator = "coordinator" // workers driven by a coordinator (--workers N): one folder
)

// Distribution is how a run's arrivals were split between generators:
// arrival (or session) Seq goes to generator Seq mod Generators, and each
// record's Shard is the index of the generator that sent it.
type Distribution struct {
	Mode       string `json:"mode"`       // DistShard or DistCoordinator
	Generators int    `json:"generators"` // n: shards or workers
	// Shard is the index of the one shard a static shard's own folder
	// holds; -1 in a merged or coordinated folder, which holds them all.
	Shard int `json:"shard"`
	// Each is what is known of each generator, indexed by Record.Shard.
	Each []Generator `json:"each,omitempty"`
	// StartSkewNs is how far apart the generators' origins were (merged
	// static shards: from their manifests' start times); 0 with a
	// coordinator, whose clock every arrival is on.
	StartSkewNs int64 `json:"start_skew_ns"`
	// LeadNs (coordinator mode) is how far ahead of the moment the jobs
	// went out the coordinator set the run's origin, so that every worker
	// has its job before its first arrival is due.
	LeadNs int64 `json:"lead_ns,omitempty"`
}

// Generator is one shard or worker of a distributed run.
type Generator struct {
	Index   int       `json:"index"`   // = Record.Shard
	Name    string    `json:"name"`    // the worker's name, or the shard's folder
	Version string    `json:"version"` // its surge version
	Started time.Time `json:"started"` // its wall clock at its origin
	// Coordinator mode: the worker's clock minus the coordinator's, as
	// measured at registration (ClockOffsetNs, with the round trip it was
	// measured over) and rechecked during the run (OffsetDriftNs: the
	// largest change since registration).
	ClockOffsetNs int64 `json:"clock_offset_ns,omitempty"`
	RTTNs         int64 `json:"rtt_ns,omitempty"`
	OffsetDriftNs int64 `json:"offset_drift_ns,omitempty"`
	Arrivals      int64 `json:"arrivals"` // arrivals assigned to it
	Records       int64 `json:"records"`  // records received from it
	// Lost says the generator stopped answering during the run; its
	// unsent arrivals are generator_drop records with LostWhy.
	Lost    bool   `json:"lost,omitempty"`
	LostWhy string `json:"lost_why,omitempty"`
	// LagP99Ms is the p99 of its schedule lag (sent − scheduled), ms.
	LagP99Ms float64 `json:"lag_p99_ms"`
	// Static shards (--start-at): the wall-clock time the shards were
	// told to start at, and how far after it this one's origin was (≈ 0
	// when it waited; more when the time had passed as it began).
	StartAt     time.Time `json:"start_at,omitzero"`
	StartLateNs int64     `json:"start_late_ns,omitempty"`
	// Partial and PartialWhy are the shard's own (a merged folder is
	// partial when any of its shards is).
	Partial    bool   `json:"partial,omitempty"`
	PartialWhy string `json:"partial_why,omitempty"`
	// ReadyBeforeNs (coordinator mode) is how long before the run's origin
	// the worker had its job and its load generator ready; negative when
	// after (its first arrivals were then late by up to as much).
	ReadyBeforeNs int64 `json:"ready_before_ns,omitempty"`
	// A lost worker's arrivals without a record: LostInFlight were due
	// before it was lost (it had sent them, or was sending them: cancelled
	// records), LostUnsent were due after (generator_drop records). For an
	// Interrupted worker LostInFlight counts the cancelled records it sent.
	LostInFlight int64 `json:"lost_in_flight,omitempty"`
	LostUnsent   int64 `json:"lost_unsent,omitempty"`
	// Due (coordinator mode) is how many of its Arrivals were due before
	// the schedule was stopped (Ctrl-C, a recovered burst phase) or have
	// a record; = Arrivals when the schedule ran to its end.
	Due int64 `json:"due,omitempty"`
	// Interrupted (with Lost) says the worker was interrupted on its own
	// machine (Ctrl-C, SIGTERM) and said so after sending its last
	// records: its requests in flight are its own cancelled records
	// (LostInFlight), its arrivals not yet sent generator_drop
	// (LostUnsent); LostWhy names the interruption.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Spent is what requests spent, from their usage, and the prices the cost
// is at (USD per million tokens; each absent when not given). CostUSD is
// absent without both prices.
type Spent struct {
	Requests     int64    `json:"requests"`
	InputTokens  int64    `json:"input_tokens"`
	OutputTokens int64    `json:"output_tokens"`
	CostUSD      *float64 `json:"cost_usd,omitempty"`
	PriceInput   *float64 `json:"price_input_usd_per_m,omitempty"`
	PriceOutput  *float64 `json:"price_output_usd_per_m,omitempty"`
}

// Budget is a command's budget (each limit absent when not set) and
// whether it stopped the command — in a manifest, whether it cut this run.
type Budget struct {
	MaxRequests     *int64   `json:"max_requests,omitempty"`
	MaxOutputTokens *int64   `json:"max_output_tokens,omitempty"`
	MaxCostUSD      *float64 `json:"max_cost_usd,omitempty"`
	Stopped         bool     `json:"stopped"`
	Reason          string   `json:"reason,omitempty"` // why it stopped, as in partial_why
}

// MixProfile is one profile of a mixed workload as it was sent.
type MixProfile struct {
	Name      string  `json:"name"`
	Weight    float64 `json:"weight"`     // as given
	Share     float64 `json:"share"`      // weight / Σweights: the expected fraction of arrivals
	Prompt    string  `json:"prompt"`     // prompt length distribution, tokens (workload.ParseDist's form)
	Output    string  `json:"output"`     // output length distribution, tokens
	MaxTokens int     `json:"max_tokens"` // cap: max_tokens = min(output draw, cap)
}

// ReplayedTrace describes the trace one replay phase replayed and the
// cache state its prompts imply.
type ReplayedTrace struct {
	Phase       string  `json:"phase"`
	File        string  `json:"file"`
	Format      string  `json:"format"`                 // surge, azure or mooncake (detected by header or keys)
	Rows        int     `json:"rows"`                   // entries in the file
	Kept        int     `json:"kept"`                   // entries replayed: in the slice and within the phase
	OffsetNs    int64   `json:"offset_ns"`              // the slice starts this far into the trace (trace time)
	WindowNs    int64   `json:"window_ns"`              // and lasts this long; 0 = to the end
	Speed       float64 `json:"speed"`                  // trace time ÷ replay time
	BlockTokens int     `json:"block_tokens,omitempty"` // tokens per hash id (Mooncake)
	// PromptTokens is the intended prompt tokens of the kept entries;
	// RepeatedTokens those of them in leading blocks an earlier kept entry
	// had — what a perfect prefix cache, empty at the start, would reuse —
	// and RepeatedShare their ratio. 0 for traces without hash ids, whose
	// prompts surge makes unique.
	PromptTokens   int64   `json:"prompt_tokens"`
	RepeatedTokens int64   `json:"repeated_prefix_tokens"`
	RepeatedShare  float64 `json:"repeated_prefix_share"`
}

// DatasetInfo identifies a dataset of real prompts without its text: the
// file, its format, its rows, how they were sampled and the sha256 of its
// bytes (so that a rerun can check it has the same file).
type DatasetInfo struct {
	File     string `json:"file"`              // the path as given
	Format   string `json:"format"`            // sharegpt, openai-jsonl, prompts-jsonl
	Rows     int    `json:"rows"`              // rows read (requests)
	Skipped  int    `json:"skipped,omitempty"` // sharegpt conversations without a human turn
	Sampling string `json:"sampling"`          // shuffle, random, sequential
	SHA256   string `json:"sha256"`            // hex sha256 of the file
}

// PromptSizing says how prompts were sized (the calibration against the
// target's tokenizer, see package calibrate) and compares the intended
// prompt lengths with the server's own counts.
type PromptSizing struct {
	Calibration    string  `json:"calibration"`     // vllm-tokenize, llamacpp-tokenize+probe, probe, model, off, failed
	Description    string  `json:"description"`     // the calibration in words
	TokensPerByte  float64 `json:"tokens_per_byte"` // the target's tokens per byte of surge's text; 0 = not calibrated (0.25 assumed)
	OverheadTokens float64 `json:"overhead_tokens"` // tokens the target adds per prompt (chat template, BOS)
	Fallback       string  `json:"fallback,omitempty"`
	Warning        string  `json:"warning,omitempty"`
	// Intended and Actual are over the successful requests whose server
	// reported usage.prompt_tokens: what surge meant to send and what the
	// server counted, request by request.
	Intended TokenStats `json:"intended"`
	Actual   TokenStats `json:"actual"`
	// Ratio is the server's count over the intended length, request by
	// request, in thousandths (1000 = exact): its p5 and p95 say how far
	// the spread of lengths, not only their median, is off.
	Ratio TokenStats `json:"ratio_permille"`
}

// SharedPrefix counts the shared prefix of a run's prompts: the prompt
// tokens a server's prefix cache may serve instead of computing them.
type SharedPrefix struct {
	Tokens    int    `json:"tokens"`    // intended tokens of the prefix, the same text in every prompt
	Placement string `json:"placement"` // where it is sent, e.g. "start of the user message"
	// Requests are the run's arrivals (every record, sent or not) and
	// PromptTokens their intended prompt tokens; Share = Tokens × Requests /
	// PromptTokens, the part of the prompt tokens in the shared prefix.
	Requests     int     `json:"requests"`
	PromptTokens int64   `json:"prompt_tokens"`
	Share        float64 `json:"share"`
	// Lengthened counts the draws shorter than the prefix plus a unique
	// tail, sent longer than drawn (see workload.Generator.Generate).
	Lengthened int `json:"lengthened"`
}

// TokenStats summarises prompt lengths in tokens (percentiles nearest-rank).
type TokenStats struct {
	Samples int     `json:"samples"`
	Mean    float64 `json:"mean"`
	P5      int     `json:"p5"`
	P50     int     `json:"p50"`
	P95     int     `json:"p95"`
}

// WriteManifest writes m as indented JSON to path, replacing empty
// descriptive fields with NA.
func WriteManifest(path string, m *Manifest) error {
	var b bytes.Buffer
	if err := EncodeManifest(&b, m); err != nil {
		return err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("record: manifest: %w", err)
	}
	return nil
}

// EncodeManifest writes m to w as indented JSON and a newline, replacing
// empty descriptive fields with NA (in m too), as WriteManifest does.
func EncodeManifest(w io.Writer, m *Manifest) error {
	m.SchemaVersion = SchemaVersion
	for _, s := range []*string{&m.Model, &m.Deployment, &m.Hardware, &m.Serving, &m.Workload, &m.PromptSet, &m.CacheState, &m.MetricsURL, &m.KeySource} {
		if *s == "" {
			*s = NA
		}
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("record: manifest: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("record: manifest: %w", err)
	}
	return nil
}

// ReadManifest reads a manifest written by WriteManifest.
func ReadManifest(path string) (*Manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("record: manifest: %w", err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("record: manifest: %s: %w", path, err)
	}
	return &m, nil
}

// RedactURL returns raw without anything that may carry a secret: user
// information, query string and fragment. An unparsable URL becomes
// "(invalid URL)", never the raw text.
func RedactURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	if strings.Contains(u.Opaque, "@") {
		// "user:pass@host:4318" or "kind:http://u:p@h/" parse as a scheme
		// and an opaque rest, which String would repeat whole.
		return u.Scheme + ":(redacted)"
	}
	if u.User != nil {
		u.User = url.User("redacted")
	}
	if u.RawQuery != "" || u.ForceQuery {
		u.RawQuery, u.ForceQuery = "redacted", false
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}
