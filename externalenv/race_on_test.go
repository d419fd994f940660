//go:build race

package externalenv_test

// underRace is true when the tests run under the race detector, whose instrumentation
// allocates: allocation counts are meaningless then.
const underRace = true
