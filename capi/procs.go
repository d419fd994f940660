package main

import (
	"os"
	"runtime"
	"sync"
	"sync/atomic"
)

// Host threads that wait in the library hold a Go processor (P) each while they run Go code,
// and the sampler goroutine needs one too. With GOMAXPROCS at its default (the number of
// cores), eight threads of a simulator on two cores queue for the two Ps every time they
// enter the library, and each queued entry costs two thread switches: cpp_sim (8 threads x
// 128 agents, 2 cores) ran at 0.64-1.1M actions/s with GOMAXPROCS=2 and 1.08-1.24M with 8,
// alternating. So the library raises GOMAXPROCS to the most threads seen waiting in it at
// once plus one, unless the host set GOMAXPROCS itself or opened its envs with the option
// "raise_gomaxprocs": false (their threads are not counted).
var procs struct {
	waiting atomic.Int32 // host threads in get_action(s) now
	set     atomic.Int32 // the GOMAXPROCS the library asked for last
	fixed   bool         // the host set GOMAXPROCS in the environment
	mu      sync.Mutex   // applyProcs
}

// maxProcs bounds what the library asks for.
const maxProcs = 256

func init() {
	procs.fixed = os.Getenv("GOMAXPROCS") != ""
	procs.set.Store(int32(runtime.GOMAXPROCS(0)))
}

// waitIn counts a host thread that enters a call that waits for the sampler; the caller
// calls waitOut when it returns.
func waitIn() {
	n := procs.waiting.Add(1) + 1 // and the sampler's
	if procs.fixed || n > maxProcs {
		return
	}
	for {
		cur := procs.set.Load()
		if n <= cur {
			return
		}
		if procs.set.CompareAndSwap(cur, n) {
			go applyProcs() // stops the world: once per new high
			return
		}
	}
}

// applyProcs sets GOMAXPROCS to procs.set unless it is there already: the goroutines of
// several new highs may run in any order, and none lowers it.
func applyProcs() {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	if want := int(procs.set.Load()); want > runtime.GOMAXPROCS(0) {
		runtime.GOMAXPROCS(want)
	}
}

func waitOut() { procs.waiting.Add(-1) }
