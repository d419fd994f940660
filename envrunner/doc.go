// Package envrunner is the sampling loop: RLlib's EnvRunner over any env.BaseEnv, with one
// batched ONNX Runtime run per policy per step, episodes, sample batches, postprocessing
// (GAE), metrics and perf stats.
//
// # A step
//
// Runner.Step polls the BaseEnv, takes in every ready agent (its reward completes the
// transition of its last action), resets the sub-environments whose episode ended (their
// first observations act in the same step), runs the agent connectors of each agent's policy
// straight into that policy's observation input, runs each policy's session once over all
// its ready agents (in chunks of the session's capacity when there are more), turns the
// outputs into actions, log-probabilities and RNN states with the action connectors, and
// sends the actions. An agent maps to a policy once per episode (Config.PolicyMapping). A
// final observation goes through the model only when its value is needed (GAE on a
// truncated episode).
//
// An environment that implements env.Columnar (a VectorEnv through env.NewVectorBaseEnv) is
// driven through its columns instead of per-agent records: observations are copied into
// the model's input in one go where the agent connectors leave them as they are, and
// actions are written straight into the environment's action column. Everything else is
// the same (a test runs both protocols side by side and compares batches, metrics and
// callbacks).
//
// # Episodes and callbacks
//
// A sub-environment's next episode is made, and OnEpisodeCreated called, before the runner
// resets the sub-environment (before the first Poll for the first episodes), as RLlib's
// create_episode; OnEpisodeStart follows once its first observations are in, after the
// runner asked an env.EpisodeIDer (once) for the episode's Episode.ExternalID. Episode-wide
// info (env.EnvStatus.Info, RLlib's "__common__") is Episode.LastInfo(env.CommonAgentID),
// replaced by every step. An episode whose sub-environment failed (env.EnvStatus.Err) is
// faulty: OnEpisodeEnd sees it with Episode.Err set (RLlib passes the exception), its
// RolloutMetrics are marked Faulty (episode_faulty) and its data is dropped; a reset that
// failed before an episode could start only adds a Faulty RolloutMetrics, as in RLlib.
//
// An action the environment took itself is reported with the observation it was taken at
// (env.AgentObs.OffPolicyAction, RLlib's off_policy_actions) and recorded as that row's
// action; the agent connectors that keep past actions, and Episode.LastAction, see it too.
// The row's action_dist_inputs, action_logp and vf_preds stay the policy's outputs at that
// observation (action_logp is the log-probability of the action the policy sampled and sent,
// which the environment ignored), as RLlib buffers the logged action beside the policy's
// extra outputs; an off-policy learner that needs the logged action's probability computes
// it from action_dist_inputs.
//
// When a sub-environment ends an episode for all agents ("__all__"), an agent that was not
// in that last step (it acted and waits for its next observation) gets a final row: its last
// observation repeated as new_obs, the rewards reported for it since, terminated (so GAE
// does not bootstrap it), as RLlib fakes a final observation for it (RLlib's is all zeros with
// reward 0: repeating the last one keeps new_obs in the observation space, and the rewards
// reported without an observation are not lost). A reward reported without an observation
// (env.AgentObs with Obs nil) is added to the agent's next transition.
//
// # Sample batches
//
// Each agent's trajectory is kept as it grows (RLlib's agent collector) and moved into its
// policy's SampleBatch when a fragment is cut (TruncateEpisodes: every FragmentLength*NumEnvs
// steps, counted by env or agent steps, the running episodes are cut and continue in the next
// batch) or when its episode ends (CompleteEpisodes). Counted by env steps, a truncated
// batch holds exactly FragmentLength*NumEnvs env steps, as RLlib's, also when one runner
// step brings more (asynchronous environments, ExternalEnv clients): the transitions past the
// target go to the next batch. Counted by agent steps, the agents of one env step stay in one
// batch, which may pass the target by that step's other agents (RLlib does not hold
// agent_steps batches to it either). Columns: obs and new_obs (the
// observations as the model sees them, after the agent connectors), actions (as the policy
// chose them, before unsquash and clip, or the environment's off-policy action),
// rewards, terminateds, truncateds, eps_id, env_id, agent_index, t, action_dist_inputs,
// action_logp (0 when not exploring, as RLlib's StochasticSampling records it), vf_preds,
// state_in_N/state_out_N and seq_lens (sequences of at most
// Config.MaxSeqLen rows, 20 by default as RLlib's max_seq_len) for recurrent policies, and
// advantages and value_targets with GAE (bootstrapped with the value of the last
// observation when the chunk does not end with a termination). Episodes of a failed
// sub-environment (faulty) and episodes with training disabled leave nothing in the batches.
//
// Recurrent batches: by default state_in_N has a row per row of the batch, where RLlib's
// view requirement keeps only the state going into each sequence (one row per seq_lens
// entry); Config.StatePerSequence selects RLlib's layout (SampleBatch.StatePerSequence),
// which JSON lines hold too. The per-row form stays the default because every column then
// has one row per step, which the per-row formats need (the Parquet and Arrow tables of
// envrunner/output and arrowbatch refuse the other, readers that take a JSON batch row by
// row), and the state of any step stays at hand for re-running the model from it (RLlib's
// rows can be taken from it, SampleBatch.SequenceStateIn, not the other way round): the same
// values, since a sequence starts at a chunk's first row and every MaxSeqLen rows after it.
//
// Sample (or Ready and Take) hands a fragment over in a caller-owned MultiAgentBatch whose
// buffers are reused: passing the same batch back allocates nothing in steady state.
//
//	r, err := envrunner.New(envrunner.Config{Env: be, NumEnvs: 8, Seed: 1,
//		Policies: map[envrunner.PolicyID]envrunner.PolicyConfig{
//			envrunner.DefaultPolicyID: {Policy: policy, Action: connectors.ActionConfig{Explore: true}}},
//		GAE: &envrunner.GAE{Gamma: 0.99, Lambda: 0.95}})
//	defer r.Close()
//	var b envrunner.MultiAgentBatch
//	for range 10 {
//		err = r.Sample(&b) // b.PolicyBatches[envrunner.DefaultPolicyID] holds 200*8 rows
//	}
//	metrics := r.Metrics(nil) // one RolloutMetrics per finished episode
//
// # New model versions
//
// SwapPolicy replaces a policy's model by a new version of it (same observation row,
// distribution, value output and RNN states) from any goroutine; it takes effect at the next
// batch boundary, and the running episodes go on with their connector and RNN states.
//
// # More cores
//
// One goroutine owns one Runner; nothing in it is locked but the episode metrics, which
// Metrics may take from any goroutine while the runner steps. A Group runs several runners,
// each on its own goroutine with its own environment shard, sessions and random source (a
// group of one steps it on the caller's goroutine), and hands their batches to one sink in
// a fixed round-robin order, so the merged output of a seeded run does not depend on
// timing. The envrunner/output package writes batches in RLlib's offline JSON format.
//
// # Metrics
//
// Metrics returns a RolloutMetrics per episode finished since its last call (length, return,
// per-agent returns, the callbacks' custom metrics; faulty ones marked Faulty, for summaries
// to leave out), the last Config.MaxMetrics of them (100,000 by default) when it is called
// too seldom;
// Counters the totals (env and agent steps, episodes, faulty episodes); PerfStats the mean (or, with PerfEMA, moving average) milliseconds per step of
// raw observation processing, inference, action processing, env wait and env render, as
// RLlib's sampler perf stats (resets count as raw observation processing, not env wait). The
// runner warns once when one agent buffers more than max(1000, 10*FragmentLength)
// observations, and once when the environment steps over 1000 times without reporting any
// agent.
//
// Every summary built on these (sample run --json, the C API's and Python's metrics, sample
// worker's Prometheus metrics) names them as RLlib's new API stack does (docs/metrics.md):
//
//	name                                       meaning
//	num_env_steps_sampled_lifetime             Counters.EnvSteps
//	num_agent_steps_sampled_lifetime           Counters.AgentSteps
//	num_episodes_lifetime                      Counters.Episodes (faulty ones not counted)
//	num_episodes                               episodes ended since the last report
//	num_env_step_failures                      Counters.FaultyEpisodes
//	episode_return_mean, _min, _max            RolloutMetrics.EpisodeReturn over the episodes
//	episode_len_mean                           RolloutMetrics.EpisodeLength over the episodes
//	num_env_steps_sampled_lifetime_throughput  env steps per second of wall time
//
// and perf{mean_*_ms} are PerfStats (RLlib's sampler perf stats; the new stack's closest
// timers are env_step_timer, env_to_module_connector with env_reset_timer,
// rlmodule_inference_timer and module_to_env_connector).
package envrunner
