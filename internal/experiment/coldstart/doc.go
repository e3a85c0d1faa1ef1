// Package coldstart measures the cold start of an inference server apart
// from its warm latency: what an autoscaler pays every time it adds a
// replica (process start, model load, graph capture, cache fill) and what a
// request pays when it arrives at a service scaled to zero.
//
// # Two modes
//
// With a start command (Config.StartCmd) surge starts the server itself,
// through sh -c in its own process group, its output to a log file, and
// measures from the instant it started the command (t0). Without one the
// target is an endpoint scaled to zero, and t0 is the instant the first
// request is sent. Each cycle is repeated Config.Repeat times: a started
// server is stopped (SIGTERM to the whole group, SIGKILL after
// Config.StopGrace) and its port must close before the next cycle; a
// scale-from-zero endpoint is left alone for Config.Idle between cycles so
// that it can scale back to zero.
//
// # Milestones (seconds since t0)
//
//	listen       the first TCP connection the target's host:port accepted
//	             (start command only; polled every Config.Poll)
//	first token  the first token of the first successful request: a tiny
//	             streamed completion (Config.MaxTokens tokens) is sent, one
//	             at a time, until one ends well (HTTP 200, a token, [DONE]);
//	             every failed one (refused, 503, timeout) is counted and
//	             another follows after Config.Poll. A server that answers
//	             /v1/models while its model loads is not ready by this rule.
//	             A 404 whose GET /models list lacks the model ends the
//	             cycle at once (ErrModel): no retry serves a wrong name.
//	warm         the send time of the first request of the first steady
//	             window (below): from then on latency is warm.
//
// The cold TTFT is the first successful request's own time to first token
// (sent → token); for a scale-from-zero endpoint it is what the first user
// waits.
//
// # The warm rule
//
// After the first success surge keeps sending single small requests, one
// after the other, and keeps the TTFT (sent → first token) of each
// successful one. The latency is steady when the last K = Config.WarmWindow
// TTFTs are all within a tolerance of their median m:
//
//	|ttft_i − m| ≤ max(X · m, F)   for each of the K
//
// with X = Config.WarmTolerance (0.25 = 25%) and an absolute floor F =
// WarmFloor (5 ms: timers and loopback jitter here are about 1 ms, so a
// 20 ms TTFT that varies by 3 ms is steady). A failed request empties the
// window. The warm TTFT is m of the first steady window; its first
// request's send time is the warm milestone. A cycle that is not steady
// after Config.WarmMax requests has no warm milestone ("not steady").
//
// # The distribution
//
// Each milestone is reported per cycle and as min / median / max over the
// cycles that reached it (the median is the nearest rank, the ⌈N/2⌉-th
// smallest value, as for repeated runs; the warm rule's m too). A scale-from-zero cycle whose first token came
// within twice the warm TTFT is marked "warm start": the endpoint had not
// scaled to zero, so that cycle measured no cold start (raise Idle).
package coldstart
