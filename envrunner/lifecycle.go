package envrunner

import (
	"maps"

	"github.com/onnxrl/sampler/env"
)

// startEpisode makes the episode running in sub-environment e.
func (r *Runner) startEpisode(e env.EnvID, training bool) *Episode {
	for e >= len(r.episodes) {
		r.episodes = append(r.episodes, nil)
	}
	var ep *Episode
	if n := len(r.epPool); n > 0 {
		ep = r.epPool[n-1]
		r.epPool = r.epPool[:n-1]
	} else {
		ep = &Episode{}
	}
	if ep.CustomMetrics == nil || ep.UserData == nil { // callbacks write into them, as in RLlib
		ep.CustomMetrics, ep.UserData = map[string]float64{}, map[string]any{}
	}
	ep.ID, ep.EnvID, ep.Worker = r.nextID(), e, r.cfg.Worker
	ep.extra = r.cfg.MaxEpisodes > 0 && r.started >= r.cfg.MaxEpisodes
	if !ep.extra {
		r.started++
	}
	ep.TrainingEnabled = training && !ep.extra
	r.episodes[e] = ep
	if r.cb.created != nil {
		r.cb.created.OnEpisodeCreated(r, ep)
	}
	if r.cb.start != nil {
		r.cb.start.OnEpisodeStart(r, ep)
	}
	return ep
}

// finish ends an episode: callbacks, metrics, its agents' data to the batch (complete
// mode) or left for the next cut (truncate mode).
func (r *Runner) finish(ep *Episode) {
	if ep.extra {
		r.drop(ep)
		return
	}
	r.endEpisode(ep)
	if r.complete && r.collect && ep.TrainingEnabled {
		r.out.EnvSteps += ep.Length
	}
	for _, a := range ep.agents {
		if a.slot >= 0 {
			a.pol.release(a.slot)
			a.slot = -1
		}
		a.ep, a.fast = nil, false
		if r.complete {
			r.emit(a)
		}
		if !a.listed {
			a.pol.putRec(a)
		}
	}
	r.recycle(ep)
}

// endEpisode calls OnEpisodeEnd and records the episode's metrics, once. The runner calls it
// as soon as the episode's last step is taken in, before the sub-environment's next episode
// starts (as RLlib does); the episode's data follows after the step's inference.
func (r *Runner) endEpisode(ep *Episode) {
	if ep.endCalled || ep.extra {
		return
	}
	ep.endCalled = true
	r.episodesDone++
	r.progress.returnSum += ep.TotalReward
	if r.cb.end != nil {
		r.cb.end.OnEpisodeEnd(r, ep)
	}
	m := RolloutMetrics{Worker: r.cfg.Worker, EpisodeID: ep.ID, EpisodeLength: ep.Length, EpisodeReturn: ep.TotalReward}
	if n := len(ep.agents); n > 1 {
		// The callers keep the metrics: cut them from a slab that is never written twice,
		// rather than allocating (and growing) a slice per episode.
		if cap(r.rewards)-len(r.rewards) < n {
			r.rewards = make([]AgentReward, 0, max(256, n))
		}
		off := len(r.rewards)
		r.rewards = ep.AgentRewards(r.rewards)
		m.AgentReturns = r.rewards[off:len(r.rewards):len(r.rewards)]
	}
	if len(ep.CustomMetrics) > 0 {
		m.CustomMetrics = maps.Clone(ep.CustomMetrics)
	}
	r.metrics = append(r.metrics, m)
}

// fault drops an episode whose sub-environment failed (RLlib's faulty episode): its data is
// discarded and it counts as faulty, not in the episode metrics.
func (r *Runner) fault(ep *Episode) {
	r.faulty++
	if ep.ended { // it was about to finish in this step
		for i, e := range r.ending {
			if e == ep {
				r.ending = append(r.ending[:i], r.ending[i+1:]...)
				break
			}
		}
	}
	r.drop(ep)
}

// drop ends an episode without recording anything of it.
func (r *Runner) drop(ep *Episode) {
	for _, a := range ep.agents {
		if a.slot >= 0 {
			a.pol.release(a.slot)
			a.slot = -1
		}
		a.ep, a.fast = nil, false
		a.clearTrajectory()
		if !a.listed {
			a.pol.putRec(a)
		}
	}
	r.recycle(ep)
}

func (r *Runner) recycle(ep *Episode) {
	if r.episodeAt(ep.EnvID) == ep {
		r.episodes[ep.EnvID] = nil
	}
	ep.clearAgents()
	clear(ep.CustomMetrics)
	clear(ep.UserData)
	ep.Length, ep.TotalReward, ep.ended, ep.stepped, ep.faulty, ep.endCalled = 0, 0, false, false, false, false
	r.epPool = append(r.epPool, ep)
}
