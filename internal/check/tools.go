package check

// toolChecks returns the tools checks (not written yet).
func toolChecks() []Check { return nil }
