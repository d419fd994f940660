package envrunner

// The names of the metrics every summary uses (sample run --json, the C API's and Python's
// metrics, sample worker's Prometheus metrics with a sample_worker_ prefix): RLlib's new API
// stack's (ray.rllib.utils.metrics, the EnvRunner results), so that a summary never mixes
// them with the old stack's (episode_reward_mean, num_faulty_episodes). docs/metrics.md has
// the table of every key, with the few that are the sampler's own.
const (
	// NumEnvStepsSampledLifetime: env steps over the run (NUM_ENV_STEPS_SAMPLED_LIFETIME).
	NumEnvStepsSampledLifetime = "num_env_steps_sampled_lifetime"
	// NumAgentStepsSampledLifetime: agent steps over the run.
	NumAgentStepsSampledLifetime = "num_agent_steps_sampled_lifetime"
	// NumEpisodesLifetime: episodes that ended over the run, faulty ones not counted.
	NumEpisodesLifetime = "num_episodes_lifetime"
	// NumEpisodes: episodes that ended since the last report (NUM_EPISODES).
	NumEpisodes = "num_episodes"
	// NumEnvStepFailures: episodes lost to a failed sub-environment, a failed reset
	// included (NUM_ENV_STEP_FAILURES_LIFETIME, whose value is "num_env_step_failures").
	NumEnvStepFailures = "num_env_step_failures"
	// The episodes' returns and lengths (EPISODE_RETURN_MEAN, ...; EPISODE_LEN_MEAN).
	EpisodeReturnMean = "episode_return_mean"
	EpisodeReturnMin  = "episode_return_min"
	EpisodeReturnMax  = "episode_return_max"
	EpisodeLenMean    = "episode_len_mean"
	// NumEnvStepsSampledLifetimeThroughput: env steps per second over the run (RLlib logs
	// NUM_ENV_STEPS_SAMPLED_LIFETIME with its throughput under this key).
	NumEnvStepsSampledLifetimeThroughput = "num_env_steps_sampled_lifetime_throughput"
)

// NewAPIStackMetrics lists the names above.
var NewAPIStackMetrics = []string{NumEnvStepsSampledLifetime, NumAgentStepsSampledLifetime, NumEpisodesLifetime,
	NumEpisodes, NumEnvStepFailures, EpisodeReturnMean, EpisodeReturnMin, EpisodeReturnMax, EpisodeLenMean,
	NumEnvStepsSampledLifetimeThroughput}
