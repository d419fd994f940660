package envrunner_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
)

// lifecycle logs the episode callbacks into the scripted environment's event log.
type lifecycle struct {
	events *[]string
	ends   []endSeen
	ids    map[string]int // external ids seen, by callback
	common []env.Info
	steps  int
}

type endSeen struct {
	id     int64
	err    error
	length int
	extID  string
}

func (l *lifecycle) OnEpisodeCreated(_ *envrunner.Runner, ep *envrunner.Episode) {
	*l.events = append(*l.events, fmt.Sprintf("created %d", ep.EnvID))
}

func (l *lifecycle) OnEpisodeStart(_ *envrunner.Runner, ep *envrunner.Episode) {
	*l.events = append(*l.events, fmt.Sprintf("start %d", ep.EnvID))
	l.ids["start "+ep.ExternalID]++
}

func (l *lifecycle) OnEpisodeStep(_ *envrunner.Runner, ep *envrunner.Episode) {
	l.steps++
	l.ids["step "+ep.ExternalID]++
	l.common = append(l.common, ep.LastInfo(env.CommonAgentID))
}

func (l *lifecycle) OnEpisodeEnd(_ *envrunner.Runner, ep *envrunner.Episode) {
	*l.events = append(*l.events, fmt.Sprintf("end %d", ep.EnvID))
	l.ends = append(l.ends, endSeen{id: ep.ID, err: ep.Err, length: ep.Length(), extID: ep.ExternalID})
}

func newLifecycle(se *scriptedEnv) *lifecycle {
	return &lifecycle{events: se.events, ids: map[string]int{}}
}

// TestOnEpisodeCreatedRunsBeforeTheReset: the runner makes a sub-environment's next episode,
// calling OnEpisodeCreated, before it resets the sub-environment, and calls OnEpisodeStart
// once the first observations are in (RLlib's create_episode before try_reset; the first
// episodes are created before the first poll), with synchronous and asynchronous resets.
func TestOnEpisodeCreatedRunsBeforeTheReset(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("async=%v", async), func(t *testing.T) {
			const envs = 2
			se := newScriptedEnv(envs, 3)
			se.async = async
			cb := newLifecycle(se)
			r := newRunner(t, envrunner.Config{Env: se, NumEnvs: envs, Policies: scriptedPolicies(envrunner.DefaultPolicyID),
				FragmentLength: 5, Callbacks: cb})
			for range 20 {
				require.NoError(t, r.Step())
			}
			// Per sub-environment: created, start, then for every later episode end, created,
			// reset, start.
			for e := range envs {
				var mine []string
				for _, ev := range *se.events {
					var kind string
					var i int
					_, err := fmt.Sscanf(ev, "%s %d", &kind, &i)
					require.NoError(t, err)
					if i == e {
						mine = append(mine, kind)
					}
				}
				require.GreaterOrEqual(t, len(mine), 7, "sub-environment %d: %v", e, mine)
				assert.Equal(t, []string{"created", "start"}, mine[:2], "sub-environment %d", e)
				for k := 2; k+4 <= len(mine); k += 4 {
					assert.Equal(t, []string{"end", "created", "reset", "start"}, mine[k:k+4], "sub-environment %d: %v", e, mine)
				}
			}
		})
	}
}

// TestFaultyEpisodeReachesOnEpisodeEnd: an episode whose sub-environment failed
// (EnvStatus.Err) reaches OnEpisodeEnd with the error in Episode.Err (RLlib calls
// on_episode_end with the exception), is reported in the metrics with Faulty set (RLlib's
// RolloutMetrics.episode_faulty) and counted in FaultyEpisodes, and leaves no rows.
func TestFaultyEpisodeReachesOnEpisodeEnd(t *testing.T) {
	se := newScriptedEnv(2, 4)
	se.fail = func(e, ep, t int) bool { return e == 1 && ep == 1 && t == 2 }
	cb := newLifecycle(se)
	r := newRunner(t, envrunner.Config{Env: se, NumEnvs: 2, Policies: scriptedPolicies(envrunner.DefaultPolicyID),
		FragmentLength: 4, Callbacks: cb})
	var faultyID int64
	rows := map[int64]int{}
	for _, mb := range sampleBatches(t, r, 5) {
		for _, c := range checkChunks(t, mb.PolicyBatches[envrunner.DefaultPolicyID]) {
			rows[c.epsID] += c.len()
		}
	}
	faulty := 0
	for _, e := range cb.ends {
		if e.err != nil {
			faulty++
			faultyID = e.id
			assert.True(t, errors.Is(e.err, errScriptedFault), "the sub-environment's error: %v", e.err)
			assert.Equal(t, 1, e.length, "the steps the faulty episode took")
		}
	}
	require.Equal(t, 1, faulty, "OnEpisodeEnd of the faulty episode")
	assert.Zero(t, rows[faultyID], "a faulty episode leaves no rows")
	ms := r.Metrics(nil)
	var flagged []envrunner.RolloutMetrics
	for _, m := range ms {
		if m.Faulty {
			flagged = append(flagged, m)
		}
	}
	require.Len(t, flagged, 1)
	assert.Equal(t, faultyID, flagged[0].EpisodeID)
	c := r.Counters()
	assert.Equal(t, int64(1), c.FaultyEpisodes)
	assert.Equal(t, int64(len(ms)-1), c.Episodes, "Episodes counts the episodes that ended whole")
}

// TestEpisodeWideInfoReachesCallbacks: the episode-wide info of a step (EnvStatus.Info,
// RLlib's "__common__") is the episode's last info of env.CommonAgentID in the callbacks of
// that step, replaced by every later step (nil where a step has none), as RLlib's
// set_last_info("__common__", ...) on every step.
func TestEpisodeWideInfoReachesCallbacks(t *testing.T) {
	se := newScriptedEnv(1, 6)
	se.common = func(_, ep, t int) env.Info {
		if t%2 == 1 {
			return env.Info{"ep": ep, "t": t}
		}
		return nil
	}
	cb := newLifecycle(se)
	r := newRunner(t, envrunner.Config{Env: se, NumEnvs: 1, Policies: scriptedPolicies(envrunner.DefaultPolicyID), Callbacks: cb})
	for range 14 {
		require.NoError(t, r.Step())
	}
	require.Len(t, cb.common, cb.steps)
	require.GreaterOrEqual(t, len(cb.common), 12)
	// OnEpisodeStep runs for steps t=1..6 of each episode.
	for i, info := range cb.common {
		t0 := i%6 + 1
		if t0%2 == 1 {
			assert.Equal(t, env.Info{"ep": i / 6, "t": t0}, info, "step %d", i)
		} else {
			assert.Nil(t, info, "step %d", i)
		}
	}
}

// TestEpisodeIDFromTheEnvironment: the runner asks an env.EpisodeIDer once per episode and
// shows the id to every callback of the episode (Episode.ExternalID).
func TestEpisodeIDFromTheEnvironment(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("async=%v", async), func(t *testing.T) {
			se := newScriptedEnv(2, 3)
			se.async = async
			ie := &idEnv{scriptedEnv: se}
			cb := newLifecycle(se)
			r := newRunner(t, envrunner.Config{Env: ie, NumEnvs: 2, Policies: scriptedPolicies(envrunner.DefaultPolicyID), Callbacks: cb})
			for range 16 {
				require.NoError(t, r.Step())
			}
			require.NotEmpty(t, cb.ends)
			started := 0
			for k, n := range cb.ids {
				var kind string
				var e, ep int
				_, err := fmt.Sscanf(k, "%s ext-%d-%d", &kind, &e, &ep)
				require.NoError(t, err, "callback saw external id %q", k)
				if kind == "start" {
					started++
					assert.Equal(t, 1, n, "%s", k)
				} else {
					assert.Equal(t, 3, n, "%s: every step", k)
				}
			}
			for _, e := range cb.ends {
				assert.NotEmpty(t, e.extID)
				assert.Positive(t, cb.ids["step "+e.extID])
			}
			assert.Equal(t, started, ie.asked, "asked once per episode")
		})
	}
}
