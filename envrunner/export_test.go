package envrunner

// SetDeferEnvs sets the fewest sub-environments for which inferRun defers its rows
// (deferEnvs) for a test, and returns what restores it: the tests' runners are small.
func SetDeferEnvs(n int) (restore func()) {
	old := deferEnvs
	deferEnvs = n
	return func() { deferEnvs = old }
}
