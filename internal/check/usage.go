package check

// usageChecks returns the usage checks (not written yet).
func usageChecks() []Check { return nil }
