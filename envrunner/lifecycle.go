package envrunner

import (
	"maps"

	"github.com/onnxrl/sampler/env"
)

// createEpisode makes the next episode of sub-environment e, unless it has one waiting, and
// calls OnEpisodeCreated: before the sub-environment's reset, as RLlib's create_episode. The
// episode starts (startEpisode) with the reset's first observations.
func (r *Runner) createEpisode(e env.EnvID) {
	for e >= len(r.eps.next) {
		r.eps.next = append(r.eps.next, nil)
	}
	if r.eps.next[e] != nil {
		return // a reset that failed is tried again: the episode made for it waits
	}
	var ep *Episode
	if n := len(r.eps.pool); n > 0 {
		ep = r.eps.pool[n-1]
		r.eps.pool = r.eps.pool[:n-1]
	} else {
		ep = &Episode{}
	}
	if ep.CustomMetrics == nil || ep.UserData == nil { // callbacks write into them, as in RLlib
		ep.CustomMetrics, ep.UserData = map[string]float64{}, map[string]any{}
	}
	ep.ID, ep.EnvID, ep.Worker, ep.proto = r.nextID(), e, r.cfg.Worker, r.proto
	r.eps.next[e] = ep
	if r.cb.created != nil {
		r.cb.created.OnEpisodeCreated(r, ep)
	}
}

// startEpisode starts the episode running in sub-environment e: the one made before its
// reset, or a new one (an environment that started an episode on its own).
func (r *Runner) startEpisode(e env.EnvID, training bool) *Episode {
	for e >= len(r.eps.byEnv) {
		r.eps.byEnv = append(r.eps.byEnv, nil)
	}
	if e >= len(r.eps.next) || r.eps.next[e] == nil {
		r.createEpisode(e)
	}
	ep := r.eps.next[e]
	r.eps.next[e] = nil
	ep.extra = r.extraEpisodes()
	if !ep.extra {
		r.eps.started++
	}
	ep.TrainingEnabled = training && !ep.extra
	r.eps.byEnv[e] = ep
	if r.eps.idr != nil {
		ep.ExternalID = r.eps.idr.EpisodeID(e)
	}
	if r.cb.start != nil {
		r.cb.start.OnEpisodeStart(r, ep)
	}
	return ep
}

// extraEpisodes reports whether the episodes that start now are extra (Config.MaxEpisodes
// started): from then on, for the rest of the run, a running episode may be one.
func (r *Runner) extraEpisodes() bool {
	return r.cfg.MaxEpisodes > 0 && r.eps.started >= r.cfg.MaxEpisodes
}

// finish ends an episode: callbacks, metrics, its agents' data to the batch (complete
// mode) or left for the next cut (truncate mode).
func (r *Runner) finish(ep *Episode) {
	if ep.extra {
		r.drop(ep)
		return
	}
	r.endEpisode(ep)
	if r.mode.complete && r.mode.collect && ep.TrainingEnabled {
		r.out.EnvSteps += ep.Length()
	}
	for _, a := range ep.agents {
		if a.slot >= 0 {
			a.pol.release(a.slot)
			a.slot = -1
		}
		a.ep = nil
		if r.mode.complete {
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
	r.count.episodes++
	r.progress.returnSum += ep.TotalReward()
	if r.cb.end != nil {
		r.cb.end.OnEpisodeEnd(r, ep)
	}
	m := RolloutMetrics{Worker: r.cfg.Worker, EpisodeID: ep.ID, EpisodeLength: ep.Length(), EpisodeReturn: ep.TotalReward()}
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
	r.addMetrics(m)
}

// addMetrics records an ended episode's metrics for Metrics, in place of the oldest once
// MaxMetrics are kept.
func (r *Runner) addMetrics(m RolloutMetrics) {
	r.met.mu.Lock()
	if limit := r.cfg.MaxMetrics; limit < 0 || len(r.met.list) < limit {
		r.met.list = append(r.met.list, m)
	} else {
		r.met.list[r.met.at] = m
		r.met.at = (r.met.at + 1) % limit
		r.met.dropped++
	}
	r.met.mu.Unlock()
}

// fault drops an episode whose sub-environment failed with err (RLlib's faulty episode): its
// data is discarded; OnEpisodeEnd sees it with Err set, and its metrics are marked Faulty (it
// counts in FaultyEpisodes, not in Episodes).
func (r *Runner) fault(ep *Episode, err error) {
	r.count.faulty++
	if !ep.endCalled && !ep.extra {
		ep.endCalled = true
		ep.Err = err
		if r.cb.end != nil {
			r.cb.end.OnEpisodeEnd(r, ep)
		}
		r.addMetrics(RolloutMetrics{Worker: r.cfg.Worker, EpisodeID: ep.ID, EpisodeLength: ep.Length(),
			EpisodeReturn: ep.TotalReward(), Faulty: true})
	}
	if ep.ended { // it was about to finish in this step
		for i, e := range r.step.ending {
			if e == ep {
				r.step.ending = append(r.step.ending[:i], r.step.ending[i+1:]...)
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
		a.ep = nil
		a.clearTrajectory()
		if !a.listed {
			a.pol.putRec(a)
		}
	}
	r.recycle(ep)
}

func (r *Runner) recycle(ep *Episode) {
	if r.episodeAt(ep.EnvID) == ep {
		r.eps.byEnv[ep.EnvID] = nil
	}
	ep.clearAgents()
	clear(ep.CustomMetrics)
	clear(ep.UserData)
	ep.length, ep.ended, ep.stepped, ep.faulty, ep.endCalled = 0, false, false, false, false
	ep.ExternalID, ep.Err, ep.common, ep.byAll = "", nil, nil, false
	r.eps.pool = append(r.eps.pool, ep)
}
