package run

import (
	"context"
	"errors"
	"fmt"
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
		return calibrate.Model(e.modelTokenizer(), texts)
	}
	cc := e.ClientConfig(2)
	cc.Retries = 0
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
		Chat:   o.API == "chat",
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

// modelTokenizer is the engine model's count of a prompt in virtual time:
// the simulator's tokenizer, as its HTTP facade would count the request.
func (e *Env) modelTokenizer() func(string) int {
	chat := e.Opts.API == "chat"
	sc := e.Opts.Sim
	return func(prompt string) int { return sc.PromptTokens(chat, prompt) }
}
