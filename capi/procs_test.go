package main

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// TestRaiseGOMAXPROCSOption: an env opened with "raise_gomaxprocs": false leaves GOMAXPROCS
// alone while its threads wait; by default one waiting thread over the processors raises it.
func TestRaiseGOMAXPROCSOption(t *testing.T) {
	needRuntime(t)
	if procs.fixed {
		t.Skip("GOMAXPROCS is set in the environment: the library leaves it alone")
	}
	before := runtime.GOMAXPROCS(0)
	defer func() {
		runtime.GOMAXPROCS(before)
		procs.set.Store(int32(before))
	}()
	obs := []float32{0.01, 0, 0.02, 0}
	act := make([]float32, 1)
	for _, c := range []struct {
		options string
		want    int // GOMAXPROCS after one get_action with it at 1
	}{
		{`{"raise_gomaxprocs": false}`, 1},
		{`{}`, 2},
	} {
		e, err := openEnv("cartpole_mlp", []byte(c.options))
		require.NoError(t, err)
		id, err := e.start(nil, true)
		require.NoError(t, err)
		runtime.GOMAXPROCS(1)
		procs.set.Store(1)
		require.NoError(t, e.getAction([]byte(id), obs, act))
		deadline := time.Now().Add(2 * time.Second)
		for runtime.GOMAXPROCS(0) != c.want && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond) // a late raise would show now
		assert.Equal(t, c.want, runtime.GOMAXPROCS(0), "options %s", c.options)
		require.NoError(t, e.close())
	}
	_, err := openEnv("cartpole_mlp", []byte(`{"raise_gomaxprocs": 1}`))
	assert.Equal(t, statusInvalidArgument, statusOf(err))
}
