// Package report renders surge's results: the results table as Markdown
// (results.md), CSV and JSON, and a self-contained report.html with charts.
//
// The package knows nothing about load generation or analysis. It renders
// plain input structs ([Table], [Row], [HTMLReport], [RunCharts]) that the
// caller fills from analysis results, and every renderer writes to an
// [io.Writer].
//
// # Values that can be unavailable
//
// A metric that could not be measured is never printed as 0 and never left
// out: it is an [Opt] whose zero value means "unavailable". (Columns that do
// not apply to an experiment — the burst columns of a capacity step — are a
// layout's choice, [Table.Omit], and only in Markdown and HTML.) Renderers print
// it as `n/a` (Markdown, CSV, HTML) or as `{"value": null, "reason": "…"}`
// (JSON), and Markdown and HTML list the reason beside the table. A censored
// value — a P99 when more than 1% of requests timed out, so that only a lower
// bound is known (docs/method.md §7) — is made with [Above] and prints as `> 60s`
// (Markdown, HTML), `>60000` (CSV, in the column's unit) or
// `{"value": null, "lower_bound": 60000, …}` (JSON).
//
// # Columns and units (one row per model × workload × deployment × multiplier)
//
//   - multiplier k: burst rate = k × baseline rate (dimensionless, shown "5×").
//   - baseline, burst, offered, sent, successful and goodput rates: requests
//     per second. Offered is what the schedule intended, sent what left the
//     generator, successful the complete valid responses, goodput the
//     responses that also met the per-request deadline (docs/method.md §1).
//   - goodput % = 100 × goodput RPS / offered RPS (percent).
//   - TTFT, completion and engine queue wait P50/P95/P99: milliseconds. The
//     caller decides what they are measured from (surge measures TTFT and
//     completion from the scheduled arrival). Queue wait is the engine's own
//     measurement; without engine telemetry it is `n/a` and load-induced
//     latency is "extra observed latency", never queue time (docs/method.md §5).
//   - rejection (HTTP 429), timeout, error and drop (generator_drop) rates:
//     fractions of all scheduled arrivals in the row, in [0, 1]; Markdown and
//     HTML show them as percent, CSV and JSON as raw fractions.
//   - recovery: seconds from the end of the burst until P99 latency was back
//     within 10% of the pre-burst P99 for three consecutive windows
//     (docs/method.md §3), or "did not recover within Xs" when the watched window
//     ended first; predicted recovery: seconds from the backlog model
//     (backlog / (μ − λ), docs/method.md §8), or "never" when λ ≥ μ.
//   - samples: requests counted in the row; partial: the run was cut short.
//
// # report.html
//
// [WriteHTML] writes one file that loads nothing from the network: the chart
// library uPlot (vendored from npm, version and checksums in
// assets/uplot/README.md) and the page's own script and styles are inlined,
// and the chart data sits in a `<script type="application/json">` block.
// X axes are seconds since the run's start; phases are drawn as shaded bands
// and burst end, measured recovery and predicted recovery as vertical markers.
package report
