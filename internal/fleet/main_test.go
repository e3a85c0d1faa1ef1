package fleet

import (
	"testing"

	"go.uber.org/goleak"
)

// No coordinator or worker goroutine outlives its test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
