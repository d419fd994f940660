// Package arrowbatch turns the runner's sample batches into Apache Arrow record batches and
// back: one row per transition, with the column names of RLlib's offline data API. The Parquet
// files of envrunner/output are these records on disk; the same records, as Arrow IPC, are the
// form in which samples travel between processes.
//
// # Schema
//
// Columns, in order (the optional ones only when the batches have them):
//
//	obs, new_obs            fixed_size_list<float32>[obs width]
//	actions                 int64 (Discrete), fixed_size_list<int64>[n] (MultiDiscrete,
//	                        MultiBinary), fixed_size_list<float32>[n] (Box and the rest)
//	rewards                 float32
//	terminateds, truncateds bool
//	eps_id                  int64
//	env_id                  int32 (the sub-environment)
//	agent_id                string (the agent id the environment gave, RLlib's agent_id;
//	                        "" for rows read from files that did not record it)
//	agent_index             int32 (the agent's index in its episode, RLlib's agent_index)
//	module_id               string (the policy)
//	t                       int32 (the episode's env step at which the agent observed)
//	infos                   string, nullable: each row's info (reported with its new_obs)
//	                        as a JSON object, null for a row without one
//	action_dist_inputs      fixed_size_list<float32>[dist width]   optional
//	action_logp, vf_preds   float32                                optional
//	state_in_K, state_out_K fixed_size_list<float32>[state width]  one pair per RNN state
//	seq_lens                int32: on the first row of each sequence its length, 0 on the
//	                        other rows (present with the state columns)
//	advantages, value_targets float32                              optional
//
// No column but infos has nulls. The rows of one MultiAgentBatch are its policies' rows one policy after
// the other, in sorted order of the policy ids; every policy must have the same Layout.
//
// # Usage
//
//	var b arrowbatch.Builder
//	rec, err := b.Build(m, meta) // valid until the next Build; Release it when done
//	...
//	back, err := arrowbatch.ToBatch(rec, m.EnvSteps)
package arrowbatch
