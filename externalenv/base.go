package externalenv

import (
	"time"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/spaces"
)

// base holds what ExternalEnv and ExternalMultiAgentEnv share: the core, the start of
// episodes, and the BaseEnv side that the sampler drives (Poll, SendActions, TryReset, Stop).
type base struct {
	c *core
}

// NumEnvs is the number of sub-environments of the BaseEnv (MaxConcurrentEpisodes), for the
// sampler's configuration.
func (b *base) NumEnvs() int { return b.c.maxEpisodes }

// ObservationSpace returns the observation space (of every agent).
func (b *base) ObservationSpace() spaces.Space { return b.c.obsSpace }

// ActionSpace returns the action space (of every agent).
func (b *base) ActionSpace() spaces.Space { return b.c.actSpace }

// StartEpisode starts an episode and returns its id: id itself, or a new UUID when id is "".
// With trainingEnabled false the episode runs but leaves no rows in the sample batches.
func (b *base) StartEpisode(id string, trainingEnabled bool) (string, error) {
	return b.c.startEpisode(id, trainingEnabled)
}

// Poll appends the pending observations (at most MaxBatch), blocking until there is at least
// one, the run loop ended (*RunLoopError, once the observations it reported have been
// polled) or Stop was called (ErrStopped). See the package documentation for what the
// observations carry.
func (b *base) Poll(dst *env.Batch) error { return b.c.poll(dst) }

// SendActions answers the observations of the last Poll: the actions of a GetAction's
// agents go to its caller (copied) once all are in; the actions for LogAction observations
// are dropped. An action for an agent that waits for none, or of the wrong length, is an
// error wrapping env.ErrBadActions, and so is a polled observation left without an action.
func (b *base) SendActions(actions []env.Action) error { return b.c.sendActions(actions) }

// TryReset is a no-op returning async=true: the episode that runs next in sub-environment
// id starts with the simulator's next StartEpisode, reported by a later Poll.
func (b *base) TryReset(id env.EnvID, _ env.Seed, _ *env.Batch) (bool, error) {
	return b.c.tryReset(id)
}

// EpisodeID returns the id (StartEpisode's) of the episode running in sub-environment id,
// or of the one that ended there last until the next one starts; "" when none ran there yet
// or id is out of range. It is env.EpisodeIDer, for the sampler's goroutine (call it after
// the Poll that reported the episode's first observation).
func (b *base) EpisodeID(id env.EnvID) string { return b.c.episodeID(id) }

// TruncateEpisode ends running episode id truncated, as EndEpisodeTruncated would with the
// last observation of each agent that has not ended (a multi-agent episode whose agents
// have all ended reports agent "__expired__" with an observation sampled from the space). An
// episode that has not observed yet ends without a report: nothing of it is recorded. It is
// for a caller that gives up on an episode (a failed request, an idle client); errors are
// those of the simulator's calls (ErrEpisodeNotFound, ErrEpisodeDone, ErrStopped).
func (b *base) TruncateEpisode(id string) error { return b.c.truncateEpisode(id) }

// TruncateAll truncates every running episode (see TruncateEpisode), as at a shutdown, and
// returns how many reported an end (those that never observed end without one).
func (b *base) TruncateAll() (int, error) { return b.c.truncateAll() }

// TruncateIdle truncates (see TruncateEpisode) every running episode that has had no call
// of the simulator for at least idle as of now, and none in progress (a GetAction waiting,
// an observation not answered yet), and returns how many. An episode counts as idle from
// the first TruncateIdle that sees no call since the one before, so call it every fraction of
// idle: an episode ends between idle and idle plus that interval after its last call.
func (b *base) TruncateIdle(idle time.Duration, now time.Time) int {
	return b.c.truncateIdle(idle, now)
}

// Running returns the number of episodes started and not ended.
func (b *base) Running() int { return b.c.runningEpisodes() }

// Stop releases everything: blocked Poll and GetAction calls return ErrStopped, as does every
// later call, and the run loop's context is cancelled. It does not wait for the run loop.
func (b *base) Stop() error { return b.c.stop() }
