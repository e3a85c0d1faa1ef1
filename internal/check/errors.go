package check

// errorChecks returns the errors checks (not written yet).
func errorChecks() []Check { return nil }
