package check

// apiChecks returns the api checks (not written yet).
func apiChecks() []Check { return nil }
