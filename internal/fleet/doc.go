// Package fleet runs one surge run on several processes with one clock:
// a coordinator (surge run|burst|capacity --workers N) that computes the
// whole schedule and writes the one run folder, and workers (surge worker
// --coordinator URL) that send their share of the arrivals with the normal
// load generator and stream their records back.
//
// # The protocol
//
// Plain HTTP/1.1 and JSON, served by the coordinator:
//
//	GET  /fleet/v1/time       the coordinator's clock, for offset samples
//	POST /fleet/v1/register   a worker's name, surge version and clock offset;
//	                          another version is refused (409), naming both
//	GET  /fleet/v1/control    one long response per worker, JSON lines:
//	                          pings (1/s), jobs, stop/cancel, done
//	POST /fleet/v1/beat       a worker's heartbeat during a job (1/s): in
//	                          flight, the newest offset sample
//	POST /fleet/v1/records    a batch of finished records (gzip JSON lines,
//	                          every 200 ms or 500 records); final=1 ends the job
//	                          (with stop=interrupted&at=NS: Ctrl-C on the worker)
//	POST /fleet/v1/bye        an interrupted worker leaving, after its last records
//
// A job is one run's share for worker i of n: the arrivals
// schedule.Shard(arrivals, i, n) (Seq mod n = i), the run's origin on the
// coordinator's clock, and what the worker needs to build exactly the
// requests one process would — the workload configuration with the run's
// seed, salt and prompt sizing, the target, the client's timeouts, the
// in-flight cap. Never the API key or headers: a worker reads its own, as
// surge run does.
//
// # One clock
//
// Each side's clock is its monotonic clock expressed in Unix ns (the wall
// reading at process start plus the monotonic time since), so a wall-clock
// step during a run moves nothing. A worker measures its offset NTP-style:
// it reads its clock (t0), asks the coordinator's (s), reads its clock
// again (t1); the round trip is RTT = t1 − t0 and
//
//	offset = (t0 + t1)/2 − s    (the worker's clock minus the coordinator's)
//
// which is exact when both legs take as long, and off by at most RTT/2
// otherwise. Of several samples the one with the smallest RTT is kept. The
// worker converts the run's origin O (coordinator clock) to its own clock as
// O + offset and runs the load generator from there, so every time in its
// records (ns since the origin) is already on the coordinator's axis,
// within RTT/2. The offset is measured at registration and again when each
// job arrives; every heartbeat carries a further sample (the best of five
// round trips), and the largest change among samples whose RTT is within
// twice the job's plus 5 ms is the drift the manifest records
// (record.Generator.OffsetDriftNs). The drift is reported, not corrected:
// a run keeps the origin it started from.
//
// The origin is set ahead of the moment the jobs go out (Coordinator.Lead:
// ten of the slowest worker's RTTs, 2 µs per arrival and 250 ms of setup,
// at most MaxLead), so that every worker has its job and its load generator
// ready before the first arrival is due; the manifest records the lead
// (Distribution.LeadNs) and how early each worker was ready
// (Generator.ReadyBeforeNs, negative if late).
//
// # Losing a worker
//
// A worker is lost when its control connection drops or nothing (no
// heartbeat, no records) came from it for Config.LostAfter (5 s). Its
// arrivals that have no record yet are then written with an error that
// names the worker, when and why ("worker w2 lost at 12.3 s: no heartbeat
// for 5 s"): cancelled when they were due before the loss (the worker had
// them in flight; the loss is when the connection dropped, or when it was
// last heard from), generator_drop ("never sent") when due after it. The
// records it sent stay. The record
// count of the run therefore equals the schedule's, as with one process.
// Records a lost worker sends later are refused (410 Gone), so none is
// counted twice. Each such record carries record.CauseWorkerLost, which
// the analysis reads (never the error text) to count its drops apart from
// the in-flight cap's.
//
// # A worker interrupted on its machine
//
// Ctrl-C or SIGTERM on a worker is not a loss: its control stream stays
// open while the load generator cancels the requests in flight, whose
// records name the interruption (record.CauseWorkerInterrupted, "worker
// w1 interrupted at 6.9 s: Ctrl-C or SIGTERM on the worker (cancelled
// mid-stream)"); its last batch says stop=interrupted with the moment, and
// the coordinator takes those records, closes the share and writes its
// arrivals without a record — none was sent — as generator_drop with the
// same cause. Then the worker says bye (also when no job was under way)
// and closes the stream, and the coordinator counts it gone for good, as
// interrupted (record.Generator.Interrupted). A dropped connection before
// the last batch is still a loss.
package fleet
