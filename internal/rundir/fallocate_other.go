//go:build !linux

package rundir

import (
	"errors"
	"os"
)

// fallocate is Linux's; elsewhere allocate writes the bytes.
func fallocate(*os.File, int64) error { return errors.ErrUnsupported }
