package main

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
)

// TestRunRemoteWaitSetsBatchWait: --remote-wait MS becomes the RemoteVectorEnv's BatchWait
// (remote_env_batch_wait_ms) in every worker, 'all' is env.WaitAll, and a run with it works.
func TestRunRemoteWaitSetsBatchWait(t *testing.T) {
	for _, c := range []struct {
		args []string
		want time.Duration
	}{
		{nil, 0},
		{[]string{"--remote-wait", "25"}, 25 * time.Millisecond},
		{[]string{"--remote-wait", "all"}, env.WaitAll},
	} {
		args := append([]string{"--remote", "--env", "RandomEnv", "--model", "random", "--num-envs", "4", "--workers", "2"}, c.args...)
		f, err := parseRunFlags(args, io.Discard)
		require.NoError(t, err, args)
		s, err := buildRun(f.spec, f.maxModel.limit())
		require.NoError(t, err, args)
		for _, r := range s.Group.Runners() {
			rv, ok := r.Env().(*env.RemoteVectorEnv)
			require.True(t, ok, "%v: worker %d runs a %T", args, r.Worker(), r.Env())
			assert.Equal(t, c.want, rv.Options().BatchWait, args)
		}
		s.Close()
	}
	s := runJSON(t, "--remote", "--remote-wait", "2", "--env", "RandomEnv", "--model", "random", "--num-envs", "4", "--steps", "400")
	assert.Equal(t, int64(400), s.EnvSteps)
}

// TestRunRemoteWaitRefusesBadValues: a bad --remote-wait, or one without --remote, is a
// usage error naming the flag, before anything runs.
func TestRunRemoteWaitRefusesBadValues(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--remote", "--remote-wait", "-1"}, `--remote-wait "-1": want a whole number of milliseconds >= 0`},
		{[]string{"--remote", "--remote-wait", "soon"}, `--remote-wait "soon"`},
		{[]string{"--remote", "--remote-wait", "1.5"}, `--remote-wait "1.5"`},
		{[]string{"--remote", "--remote-wait", "99999999999999999999"}, "--remote-wait"},
		{[]string{"--remote-wait", "5"}, "--remote-wait needs --remote"},
	} {
		code, out, errs := runCLI(append([]string{"run", "--env", "RandomEnv", "--model", "random"}, c.args...)...)
		assert.Equal(t, 2, code, "%v: %s", c.args, errs)
		assert.Contains(t, errs, c.want, c.args)
		assert.Empty(t, out, c.args)
		assert.NotContains(t, errs, "panic", c.args)
	}
}
