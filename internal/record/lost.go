package record

import "strings"

// WorkerLost says a record's Error names a lost worker of a coordinated
// run ("worker NAME lost at …", written by the coordinator): its
// generator_drop was not the in-flight cap, its cancelled not Ctrl-C.
func WorkerLost(err string) bool {
	return strings.HasPrefix(err, "worker ") && strings.Contains(err, " lost at ")
}
