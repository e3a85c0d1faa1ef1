package rundir

import (
	"os"
	"syscall"
)

// fallocate allocates n bytes of f's blocks (mode 0: the file grows).
func fallocate(f *os.File, n int64) error {
	return control(f, func(fd int) error { return syscall.Fallocate(fd, 0, 0, n) })
}
