package externalenv

import (
	"errors"
	"math"
	"strconv"
)

// ErrBadReward is wrapped by the error for a reward, or a step's sum of rewards, that the
// rewards column (float32) cannot hold: NaN, an infinity, or a value beyond float32's range
// (issue 35: four rewards of 3e38 to one step were summed to Infinity and written).
var ErrBadReward = errors.New("externalenv: reward does not fit the rewards column")

// RewardError says which reward was refused and why; it wraps ErrBadReward. The HTTP server,
// the C API and the Python package report this one error.
type RewardError struct {
	Reward  float64 // the reward given
	Sum     float64 // the step's sum of rewards it would have made (Reward when it alone does not fit)
	Episode string  // the episode's id ("" when the reward was refused before one was named)
	Agent   string  // multi-agent: the agent's id
}

// maxReward is float32's largest finite value as the error text says it.
var maxReward = strconv.FormatFloat(math.MaxFloat32, 'g', -1, 32)

func (e *RewardError) Error() string {
	b := []byte("externalenv: reward ")
	b = strconv.AppendFloat(b, e.Reward, 'g', -1, 64)
	if e.Agent != "" {
		b = strconv.AppendQuote(append(b, " of agent "...), e.Agent)
	}
	if e.Episode != "" {
		b = strconv.AppendQuote(append(b, " in episode "...), e.Episode)
	}
	switch {
	case math.IsNaN(e.Reward) || math.IsInf(e.Reward, 0):
		b = append(b, " is not finite"...)
	case fits(e.Reward):
		b = strconv.AppendFloat(append(b, " makes the step's sum of rewards "...), e.Sum, 'g', -1, 64)
		b = append(b, ", which does not fit the rewards column (float32: at most "...)
		b = append(append(b, maxReward...), " in magnitude)"...)
	default:
		b = append(b, " does not fit the rewards column (float32: at most "...)
		b = append(append(b, maxReward...), " in magnitude)"...)
	}
	return string(b)
}

// Is reports ErrBadReward.
func (e *RewardError) Is(target error) bool { return target == ErrBadReward }

// fits reports whether v is a finite value float32 holds.
func fits(v float64) bool { return !math.IsNaN(v) && math.Abs(v) <= math.MaxFloat32 }

// CheckReward returns nil for a reward the rewards column holds, else a *RewardError for it
// (agent: the multi-agent id, or ""). LogReturns checks every reward and the sum it makes;
// callers that take several rewards at once check them all first with CheckReward.
func CheckReward(v float64, agent string) error {
	if fits(v) {
		return nil
	}
	return &RewardError{Reward: v, Sum: v, Agent: agent}
}

// addReward returns agent i's reward (i < 0: an agent not seen yet) plus v, or a *RewardError
// when v or the sum does not fit float32; ep.mu is held. The rewards of queued, unreported
// observations that may still be taken back count too: a GetAction or Submit that gives up
// takes its observation back and gives its reward to the agent's next one, so from the first
// such event on, all of them may become one step's reward.
func (ep *episode) addReward(i int, v float64, episode, agent string) (float64, error) {
	var sum, pending float64
	if i >= 0 {
		sum = ep.agents[i].reward
		merge := false
		for q := ep.head; q != nil; q = q.next {
			merge = merge || q.waiter || q.ticket != nil
			for k := range q.ents {
				if merge && q.ents[k].agent == int32(i) {
					pending += q.ents[k].reward
				}
			}
		}
	}
	if s := sum + v; fits(v) && fits(s) && fits(s+pending) {
		return s, nil
	}
	return sum, &RewardError{Reward: v, Sum: sum + pending + v, Episode: episode, Agent: agent}
}
