// Package virtual runs surge's load against the engine model (internal/sim)
// in virtual time (--simulate): no sockets, no goroutines, no clock. A run
// of hours takes milliseconds, and the same Config, seed and load always
// give the same records, samples and stop moments.
//
// # Virtual time and the ideal client
//
// Time is a time.Duration since the run's start. The client side is ideal:
// every request is sent and connected at its scheduled time (schedule lag
// and connection wait are 0) and sees every token the moment the engine
// produces it, so everything measured is the engine's doing. Each outcome is
// converted into the record.Record the HTTP client would have written:
//
//	429 from admission control    rate_limited, status 429, Retry-After kept, done = sent
//	500 / 503 (injected)          http_error, done = sent
//	not complete by sent + T      timeout, done = scheduled + T (T = Config.Timeout > 0)
//	reset or malformed chunk      stream_error after the tokens before it
//	otherwise                     ok; TPOT = (done − first token) / (output tokens − 1)
//	                              for ≥ 2 tokens, ITL max = the longest gap between tokens
//
// Records are judged with analyze.Judge against Config.Deadlines (Good).
// Engine samples are simulator snapshots every Config.ScrapeInterval from
// 0, and one more after the last event, as if scraped. Queue waits are
// exact: admission − arrival at the engine (the scheduled time, plus any wait at the simulator's gateway) of every admitted request, in seconds,
// by phase (the model knows the admission times; no histogram buckets).
//
// # Open loop
//
// Open submits each arrival at its scheduled time whatever happened before
// (sim.Simulate). Every fault the simulator injects is enacted as a client
// sees it, mid-stream ones included.
//
// # Closed loop
//
// Closed runs schedule.ClosedLoop users: each sends its next request at the
// instant its previous one ended, FailurePause (100 ms) after one that
// failed at once (429, 500, 503, 400), until Warmup + Duration; requests
// in flight then finish. At equal times completions come first, then
// timeouts, then users waking from a pause. Mid-stream faults (reset,
// malformed chunk, stall, slow headers) are not modelled in the closed
// loop: a configuration with any of them is refused (run those against the
// HTTP simulator instead).
//
// # Early stop, replayed
//
// A live run may be ended early by its caller (a capacity step that cannot
// pass): once per whole second of its ticker, from a check time on, it asks
// about the records complete so far. Open asks a Stopper the same question
// at each virtual second t with max(CheckFrom, 1 s) ≤ t < the plan's end:
// the horizon at t is the scheduled time of the first arrival not finished
// by t, and the Stopper sees the records of every arrival scheduled before
// the horizon, all of them finished by t.
//
// Those records come from a simulation of the whole plan, and that is exact
// for the ones the Stopper sees: a request that finished by t cannot have
// been affected by arrivals after t (the engine is causal). On a stop at t,
// the arrivals at or after t are never sent, so the run is simulated again
// without them: the engine has less work after the stop, and the records,
// samples and events returned are those of the shortened run.
package virtual
