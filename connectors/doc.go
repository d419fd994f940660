// Package connectors turns environment observations into the rows of a policy's input batch
// (agent connectors) and the policy's outputs back into per-agent actions, log-probabilities
// and RNN states (action connectors), as RLlib's connectors do, working on batch rows in
// place: per-agent state lives in slices indexed by a compact slot per (env id, agent id)
// (Slots), and the steady state allocates nothing.
//
// # Agent side
//
// An AgentPipeline runs AgentConnectors in order on one agent's raw observation and writes the
// result straight into the agent's row of the observation input. Built-ins: Flatten
// (gymnasium's flatten: Discrete and MultiDiscrete one-hot, Dict in sorted key order),
// Clip, MeanStdFilter (Welford statistics; state get/set/merge with Chan's formula; Frozen for
// evaluation), FrameStack, PrevActions and PrevRewards. Connectors with state implement
// Stateful (JSON documents, merged across workers); the pipeline's State, SetState and
// MergeState address them by name. A StateBuffer keeps the RNN states per agent and
// gathers/scatters them along the model's batch axis.
//
// # Action side
//
// A Distribution (Categorical, MultiCategorical, DiagGaussian, Deterministic, chosen by the
// policy spec) samples when exploring, or takes the mode, and gives the log-probability. An
// ActionPipeline applies it to a batch and keeps, per row, the environment's action (after
// RLlib's normalize_actions unsquash and clip_actions), the policy's own action for training
// data, the log-probability and the distribution inputs.
//
// # Usage
//
// New builds the three parts for one policy and checks them against the model (a mismatch is
// a *ShapeError naming both shapes). One runner goroutine owns them, the session and a seeded
// *rand.Rand; per step:
//
//	c, err := connectors.New(connectors.Config{Policy: p, Capacity: 256,
//		Action: connectors.ActionConfig{Explore: true}})
//	err = c.Bind(sess)                     // once
//	obsT, _ := sess.Input(p.Spec.ObservationInput)
//	rng := rand.New(rand.NewPCG(seed, 0))
//	...
//	sess.SetBatch(len(batch.Agents))
//	c.Agent.WriteBatch(obsT.Float32(), slots, &batch) // rows, slots; resets on EnvStatus.Reset
//	if c.State != nil {
//		c.State.Gather(slots[:n])        // RNN states into the state inputs
//	}
//	sess.Run()
//	c.AfterRun(rng, sess, slots[:n])      // actions, logp; RNN states back per agent
//	actions = c.Action.Unbatch(actions[:0], keys) // keys[i]: the agent of row i
//	for i := range n {
//		c.Agent.RecordAction(slots[i], c.Action.Action(i)) // for PrevActions
//	}
//
// The sample batch takes c.Action.PolicyAction(i), LogP(i) and DistInputs(i). Agents whose
// episode is over give their slot back with c.Agent.Release. Data returned by the pipelines
// stays valid until their next call.
package connectors
