//go:build unix

package openai

import "syscall"

// fdLimit is the process's open-file limit (RLIMIT_NOFILE, soft: Go raises
// it to the hard limit at start-up), or 0 when unknown.
func fdLimit() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur > 1<<30 {
		return 0
	}
	return int(r.Cur)
}
