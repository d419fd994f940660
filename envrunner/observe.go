package envrunner

import (
	"fmt"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/internal/grow"
)

// statuses handles the sub-environment statuses of the batch from index from on: faults,
// episode ends (the env goes on the reset list) and episode starts.
func (r *Runner) statuses(from int) {
	for i := from; i < len(r.batch.Envs); i++ {
		st := &r.batch.Envs[i]
		ep := r.episodeAt(st.Env)
		switch {
		case st.Err != nil:
			if ep != nil && !ep.ended {
				r.fault(ep, st.Err)
			} else {
				// A reset failed: the episode that ended before it is whole and finishes
				// as usual; the one that could not start counts as faulty (as in RLlib,
				// which reports a RolloutMetrics with episode_faulty and nothing else).
				r.count.faulty++
				r.addMetrics(RolloutMetrics{Worker: r.cfg.Worker, Faulty: true})
			}
			r.step.resets = append(r.step.resets, st.Env)
			if from > 0 { // the reset itself failed: try again next step
				r.step.resets = r.step.resets[:len(r.step.resets)-1]
				r.step.retry = append(r.step.retry, st.Env)
			}
			continue
		case st.Reset:
			if ep != nil && !ep.ended {
				// A new episode without the old one ending (an external simulator that
				// started over): the old one ends as it stands.
				ep.ended = true
				r.step.ending = append(r.step.ending, ep)
				r.endEpisode(ep)
			}
			ep = r.startEpisode(st.Env, !st.TrainingDisabled)
		}
		if ep != nil && !ep.ended {
			ep.common = st.Info // replaced by every step, as RLlib's set_last_info("__common__")
		}
		if ep != nil && (st.Terminated || st.Truncated) && !ep.ended {
			ep.ended, ep.byAll = true, true
			r.step.ending = append(r.step.ending, ep)
			r.step.resets = append(r.step.resets, st.Env)
		}
	}
}

func (r *Runner) episodeAt(e env.EnvID) *Episode {
	if e < 0 || e >= len(r.eps.byEnv) {
		return nil
	}
	return r.eps.byEnv[e]
}

// addRow takes in one polled agent: completes its pending transition and queues its
// observation for its policy.
func (r *Runner) addRow(o *env.AgentObs) {
	ep := r.episodeAt(o.Env)
	if ep == nil || (ep.ended && !r.isEnding(ep)) {
		ep = r.startEpisode(o.Env, true)
	}
	a := ep.agent(o.Agent)
	if o.Obs == nil { // a reward without an observation, for an agent that has one
		if a != nil && !a.done {
			a.carry += o.Reward
			if o.Terminated || o.Truncated {
				r.finalRow(a)
			}
		}
		return
	}
	if a == nil {
		if a = r.newAgent(ep, o.Agent); a == nil {
			return // an unknown policy: Step reports r.mapErr
		}
	} else if a.done {
		return // a done agent reported again; nothing to do
	}
	r.observe(a, o.Obs, o.Reward, o.Terminated, o.Truncated, o.Info, o.OffPolicyAction, false)
}

// newAgent makes the record of an agent that appears in the episode, or returns nil and
// sets r.mapErr when PolicyMapping names a policy the runner does not have.
func (r *Runner) newAgent(ep *Episode, id env.AgentID) *agentRec {
	pid := r.mapping(id, ep)
	p := r.byID[pid]
	if p == nil {
		if r.mapErr == nil {
			ids := make([]PolicyID, len(r.policies))
			for i, p := range r.policies {
				ids[i] = p.id
			}
			r.mapErr = fmt.Errorf("envrunner: PolicyMapping(%q) returned %q, which is not one of the runner's policies %v", id, pid, ids)
		}
		return nil
	}
	a := p.newRec()
	a.id, a.ep, a.index = id, ep, int32(len(ep.agents))
	a.epsID, a.envID = ep.ID, int32(ep.EnvID)
	a.slot = p.slot()
	a.t0, a.reward, a.steps, a.done, a.pending = 0, 0, 0, false, false
	a.collect = r.mode.collect && ep.TrainingEnabled
	a.lastAct = nil
	ep.addAgent(a)
	return a
}

// observe takes in an observation of the agent: completes its pending transition and queues
// the observation for its policy.
//
// col says that obs, reward and info are the agent's row of the env's columns (addColumn):
// the record then does not keep them (except for a final observation, whose row the reset
// reuses); the protocol finds them there (inColumns).
func (r *Runner) observe(a *agentRec, obs []float32, reward float64, terminated, truncated bool, info env.Info, offPolicy []float32, col bool) {
	ep, p := a.ep, a.pol
	done := terminated || truncated
	if done {
		// The final observation is read after this step's resets, which may reuse the
		// environment's buffer it points into: keep a copy.
		a.final = append(a.final[:0], obs...)
		obs = a.final
	}
	if !col || done {
		a.lastObs, a.lastInfo, a.lastReward = obs, info, reward
	}
	// The environment's own action at this observation is the row's action (RLlib's
	// off_policy_actions, reported with the observation they were taken at).
	if a.logged = !done && len(offPolicy) == p.actW && offPolicy != nil; a.logged {
		a.offBuf = append(a.offBuf[:0], offPolicy...)
	}
	if a.carry != 0 { // rewards reported without an observation since the last action
		reward += a.carry
		a.carry = 0
	}
	if a.pending {
		a.pending = false
		r.stepDone(a, ep)
		if a.collect && info != nil {
			a.infos = append(a.infos, transitionInfo{int32(a.n), info})
		}
		a.complete(reward, doneFlags(terminated, truncated))
	} else { // its first observation
		a.reward += reward
	}
	a.done = done
	// A final observation needs the model only for the value that bootstraps a truncated
	// episode.
	if !done || (a.collect && r.cfg.GAE != nil && p.hasValue && !terminated) {
		if done {
			p.inferFinals++
		}
		pushRow(&p.infer, a, obs, reward)
	} else {
		pushRow(&p.finals, a, obs, reward)
	}
}

// stepDone counts the transition the agent completes in this step (before complete): an agent
// step, and an env step when it is the episode's first in the step. In truncate_episodes mode counted by env
// steps, the transitions of an env step beyond the fragment's FragmentLength*NumEnvs belong
// to the next fragment (RLlib builds a truncated batch of exactly rollout_fragment_length
// env steps): the record notes where its part of the fragment ends (cutAt), and cut splits
// there.
func (r *Runner) stepDone(a *agentRec, ep *Episode) {
	if !ep.extra {
		r.count.agentSteps++
		r.frag.sinceCutAgent++
	}
	over := false
	switch {
	case !r.mode.stepCB && len(ep.agents) == 1:
		// The episode's one agent stepped: the env step counts here, without the touched
		// list (which exists to count a multi-agent step once); the episode's length is
		// the agent's steps (Episode.Length).
		if !ep.extra {
			over = r.mode.exact && r.frag.sinceCutEnv+r.step.counted >= r.mode.target
			r.step.stepped++
			r.step.counted++
		}
	case !ep.stepped:
		ep.stepped = true
		r.step.touched = append(r.step.touched, ep)
		ep.over = false
		if !ep.extra {
			ep.over = r.mode.exact && r.frag.sinceCutEnv+r.step.counted >= r.mode.target
			r.step.counted++
		}
		over = ep.over
	default:
		over = ep.over
	}
	if over && a.collect && a.cutAt == 0 {
		a.cutAt = int32(a.n) + 1
	}
}

// finalRows gives the agents of an episode that ended for all agents ("__all__") but were
// not in its last step their final rows (finalRow).
func (r *Runner) finalRows(ep *Episode) {
	for _, a := range ep.agents {
		if !a.done && a.pending {
			r.finalRow(a)
		}
	}
}

// finalRow ends an agent whose episode ended without a final observation of it: its pending
// transition completes with the rewards reported for it since its last action and ends
// terminated (GAE does not bootstrap it), with its last observation (as the model saw it)
// repeated as the new observation, RLlib's fake final observation.
func (r *Runner) finalRow(a *agentRec) {
	reward := a.carry
	a.carry = 0
	a.done = true
	if !a.pending {
		a.reward += reward
		return
	}
	a.pending, a.logged = false, false
	r.stepDone(a, a.ep)
	a.complete(reward, flagTerminated)
	if a.collect {
		s, w := a.pol.lay.stride, a.pol.obsW
		next := a.newRow()
		copy(next[:w], a.tr[(a.n-1)*s:(a.n-1)*s+w])
		clear(next[w:])
		next[a.pol.lay.rew] = float32(reward) // the transition's (trajLayout.rew)
		r.recorded(a)
	}
}

// doneFlags returns a record's end flags for a transition's terminated and truncated (0 for
// one that does not end its episode).
func doneFlags(terminated, truncated bool) uint8 {
	var f uint8
	if terminated {
		f += flagTerminated
	}
	if truncated {
		f += flagTruncated
	}
	return f
}

// pushRow appends a row, writing its fields in place (see grow.Zero).
func pushRow(rows *[]row, a *agentRec, obs []float32, reward float64) {
	ro := grow.Zero(rows)
	ro.rec, ro.obs, ro.reward = a, obs, reward
}

// isEnding reports whether ep is on the step's list of episodes that end. It looks from the
// list's end: addColumn asks about the episode it has just put there, and at thousands of
// sub-environments whose episodes end in the same step a search from the front was
// quadratic: 0.16 s of a 29 s profile of BenchmarkSampleRun greedy at 4096 sub-environments
// (3 ns per env step), whose episodes all end together every 500 steps.
func (r *Runner) isEnding(ep *Episode) bool {
	for i := len(r.step.ending) - 1; i >= 0; i-- {
		if r.step.ending[i] == ep {
			return true
		}
	}
	return false
}

// list makes sure the record is on the list of records with data.
func (r *Runner) list(a *agentRec) {
	if !a.listed {
		a.listed = true
		r.frag.listed = append(r.frag.listed, a)
	}
}
