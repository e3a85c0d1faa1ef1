package rundir

import (
	"os"
	"syscall"
)

// fallocate allocates n bytes of f's blocks (mode 0: the file grows).
func fallocate(f *os.File, n int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if ferr = syscall.Fallocate(int(fd), 0, 0, n); ferr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return ferr
}
