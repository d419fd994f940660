// Package envrunner is the sampling loop: RLlib's EnvRunner over any env.BaseEnv, with one
// batched ONNX Runtime run per policy per step, episodes, sample batches, postprocessing
// (GAE), metrics and perf stats.
package envrunner
