package envrunner

// SetDeferEnvs sets the fewest sub-environments for which inferRun defers its rows
// (deferEnvs) and the bytes of a policy's defRows (deferBytes; 1 holds one block, which
// fills every step) for a test, and returns what restores them: the tests' runners are small.
func SetDeferEnvs(n, bytes int) (restore func()) {
	oldN, oldBytes := deferEnvs, deferBytes
	deferEnvs, deferBytes = n, bytes
	return func() { deferEnvs, deferBytes = oldN, oldBytes }
}
