package runspec

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/envrunner"
)

// TestSampleSteps: a run of a number of steps returns every batch (as the runners made them,
// in sample run's order) and the episodes that ended.
func TestSampleSteps(t *testing.T) {
	s := baseSpec() // 5 envs over 2 workers, fragments of 10, random policy
	s.MaxEnvSteps = 1000
	res, err := Sample(context.Background(), s)
	require.NoError(t, err)
	rows := 0
	for _, b := range res.Batches {
		pb := b.PolicyBatches[envrunner.DefaultPolicyID]
		require.NoError(t, pb.Validate())
		rows += pb.Count
	}
	// Each worker steps all of its sub-environments at once: up to one step each past its share.
	assert.True(t, res.Counters.EnvSteps >= 1000 && res.Counters.EnvSteps < 1000+5, "env steps %d", res.Counters.EnvSteps)
	assert.EqualValues(t, res.Counters.EnvSteps, rows, "every step is in a batch")
	assert.Greater(t, len(res.Batches), 1000/30, "fragments of 10 steps of 3 and of 2 sub-environments")
	assert.EqualValues(t, res.Counters.Episodes-res.Counters.FaultyEpisodes, len(res.Episodes))
	st := res.EpisodeStats()
	assert.Positive(t, st.Episodes)
	assert.True(t, st.ReturnMin <= st.ReturnMean && st.ReturnMean <= st.ReturnMax)
	assert.Positive(t, res.StepsPerSec())

	// The same spec gives the same batches, each in storage of its own.
	again, err := Sample(context.Background(), s)
	require.NoError(t, err)
	require.Len(t, again.Batches, len(res.Batches))
	for i := range res.Batches {
		assert.Equal(t, res.Batches[i], again.Batches[i], "batch %d", i)
	}
}

func TestSampleEpisodes(t *testing.T) {
	s := baseSpec()
	s.MaxEpisodes = 7
	res, err := Sample(context.Background(), s)
	require.NoError(t, err)
	assert.Len(t, res.Episodes, 7)
	assert.Equal(t, 7, res.EpisodeStats().Episodes)

	s.MaxEpisodes = 0
	_, err = Sample(context.Background(), s)
	var se *SpecError
	assert.ErrorAs(t, err, &se, "a run without an end")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s.MaxEnvSteps = 1 << 40
	res, err = Sample(ctx, s)
	assert.True(t, errors.Is(err, context.Canceled), "%v", err)
	require.NotNil(t, res)
}

// TestCloneBatch: every slice of the copy, columns added later included, has storage of its
// own and the same values.
func TestCloneBatch(t *testing.T) {
	s := baseSpec()
	s.GAE, s.Gamma, s.Lambda = true, 0.99, 0.95
	r, err := Build(s)
	require.NoError(t, err)
	defer r.Close()
	var b envrunner.MultiAgentBatch
	require.NoError(t, r.Group.Runners()[0].Sample(&b))
	c := cloneBatch(&b)
	require.Equal(t, &b, c)
	orig := reflect.ValueOf(b.PolicyBatches[envrunner.DefaultPolicyID]).Elem()
	cp := reflect.ValueOf(c.PolicyBatches[envrunner.DefaultPolicyID]).Elem()
	checked := 0
	for i := range orig.NumField() {
		f := orig.Field(i)
		if f.Kind() != reflect.Slice || f.Len() == 0 || !orig.Type().Field(i).IsExported() {
			continue
		}
		assert.NotEqual(t, unsafe.Pointer(f.Pointer()), unsafe.Pointer(cp.Field(i).Pointer()), "%s shares storage", orig.Type().Field(i).Name)
		checked++
	}
	assert.GreaterOrEqual(t, checked, 10, "obs, new_obs, actions, rewards, ... advantages")
	b.PolicyBatches[envrunner.DefaultPolicyID].Rewards[0] = 1e6
	assert.NotEqual(t, float32(1e6), c.PolicyBatches[envrunner.DefaultPolicyID].Rewards[0])
}
