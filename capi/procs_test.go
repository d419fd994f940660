package main

import (
	"runtime"
	"testing"
	"time"
)

// TestWaitInRaisesProcs: more host threads waiting than processors raises GOMAXPROCS to
// cover them and the sampler; a host that set GOMAXPROCS keeps it.
func TestWaitInRaisesProcs(t *testing.T) {
	if procs.fixed {
		t.Skip("GOMAXPROCS is set in the environment: the library leaves it alone")
	}
	before := runtime.GOMAXPROCS(0)
	defer func() {
		runtime.GOMAXPROCS(before)
		procs.set.Store(int32(before))
	}()
	want := before + 3
	for range want - 1 {
		waitIn()
	}
	defer func() {
		for range want - 1 {
			waitOut()
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.GOMAXPROCS(0) < want {
		if time.Now().After(deadline) {
			t.Fatalf("GOMAXPROCS %d with %d threads waiting, want %d", runtime.GOMAXPROCS(0), want-1, want)
		}
		time.Sleep(time.Millisecond)
	}

	procs.fixed = true
	defer func() { procs.fixed = false }()
	waitIn()
	defer waitOut()
	time.Sleep(10 * time.Millisecond)
	if got := runtime.GOMAXPROCS(0); got != want {
		t.Fatalf("GOMAXPROCS %d after a host that set it, want %d kept", got, want)
	}
}
