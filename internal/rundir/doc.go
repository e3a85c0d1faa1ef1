// Package rundir is the run folder's one writer and one loader.
//
// A run folder (out/<run>/) holds what one run measured:
//
//	manifest.json   what was tested (no secrets)
//	requests.jsonl  one record per scheduled arrival (record.Writer)
//	engine.csv      scraped engine samples (scrape.CSVWriter), when available
//	timeseries.csv  per arrival window: rates, percentiles, queues
//	summary.json    the full analysis
//	results.md, results.csv, results.json, report.html
//	capacity.json, sweep.json, soak.json   an experiment's own result
//	check.json, check.md                   surge check's report
//
// and an experiment's folder holds one run folder per level (burst-5x/, …).
// Files lists every name; nothing else is ever written into a folder.
//
// # Claiming a folder
//
// Create claims a folder for one run or experiment. It is safe by
// construction against the three ways runs have collided:
//
//   - Two runs given the same --out: the second finds the folder locked and
//     gets a *BusyError naming the folder and the run that holds it.
//   - A folder that holds an earlier run: refused with a *NotEmptyError
//     unless Options.Force, which removes surge's own files and earlier run
//     folders first and leaves anything else alone.
//   - Two default-named runs started in the same second: DefaultPath adds
//     four random hex digits, distinct for every call within a process.
//
// Both errors satisfy errors.Is(err, ErrFolder), as does a folder that
// cannot be created, so a command maps them to its usage exit code without
// reading messages. Messages hold paths, a process id, the holder's own
// description and a time: nothing secret.
//
// # The lock
//
// The lock is path/.surge.lock. On Linux, macOS and the BSDs it is an
// exclusive flock(2) taken without waiting (LOCK_EX|LOCK_NB) and held until
// Dir.Close; the file records the holder's pid, owner and start time for the
// message another run prints. The kernel drops the lock when the holder
// exits, however it exits, so a lock file left by a killed run is stale and
// the next Create simply takes it over. Each Create and Close also holds a
// short flock on the folder itself while it works, so that another run never
// sees the lock taken before the holder's details are written, and never
// takes a lock file that Close is removing. Locks are only as good as the
// file system's flock: local file systems honour it; some network file
// systems do not.
//
// Elsewhere (Windows, Plan 9, WebAssembly) the lock file is created with
// O_EXCL and removed by Close. A run that dies without Close leaves it
// behind, and every later Create reports the folder busy until the file is
// removed by hand; the message says so. There the holder's details may also
// be missing from the message for the moment between a lock file's creation
// and the writing of its details.
//
// # Writing
//
// A Dir writes each file once: Records (requests.jsonl), EngineCSV,
// WriteJSON and WriteFile refuse a name already written. WriteManifest is the
// exception: the manifest is written when a run starts and replaced when it
// ends. WriteJSON, WriteFile and WriteManifest write to a temporary file in
// the folder and rename it into place, so a file is either absent or whole.
// Every error names the file.
//
// # Loading
//
// Load reads a run folder back (manifest, records, engine samples, the raw
// summary), for re-rendering reports; Runs lists an experiment's run folders.
package rundir
