package record

import "strings"

// LostWorkerError is the Error of a record a coordinated run's lost
// worker left behind: "worker NAME lost at WHEN: WHY". The coordinator
// writes it and WorkerLost reads it, so the two cannot drift apart.
func LostWorkerError(name, when, why string) string {
	return "worker " + name + lostAt + when + ": " + why
}

const lostAt = " lost at "

// WorkerLost says a record's Error names a lost worker of a coordinated
// run (LostWorkerError): its generator_drop was not the in-flight cap, its
// cancelled not Ctrl-C.
func WorkerLost(err string) bool {
	return strings.HasPrefix(err, "worker ") && strings.Contains(err, lostAt)
}
