package env

// EpisodeIDer is implemented by a BaseEnv whose episodes carry ids given from outside (an
// ExternalEnv's start_episode ids). The runner asks once per episode, after the reset or poll
// that began it, and shows the id to callbacks.
type EpisodeIDer interface {
	// EpisodeID returns the id of the episode now running in sub-environment env, or "" when
	// it has none.
	EpisodeID(env EnvID) string
}
