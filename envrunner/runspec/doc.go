// Package runspec builds a sampling run from plain values: the environment by its registered
// name and config, the number of sub-environments and workers, the policy or policies with
// their mapping, and the runner's settings. It is what `sample run` takes on its command line,
// and what the C API's onnxrl_sampler_open (and so Python's Sampler) takes as JSON: both build
// their runners here, so the same settings and seed give the same batches.
//
// # Usage
//
//	run, err := runspec.Build(runspec.Spec{Env: "CartPole-v1", NumEnvs: 8, Workers: 1,
//		Explore: true, NormalizeActions: true, FragmentLength: 200,
//		BatchMode: envrunner.TruncateEpisodes, CountStepsBy: envrunner.EnvSteps})
//	if err != nil { ... }
//	defer run.Close()
//	err = run.Group.Run(ctx, envrunner.GroupOptions{Sink: sink})
//
// A run that ends (MaxEnvSteps or MaxEpisodes) is done in one call by Sample, which returns
// its batches and metrics, as `sample run --steps N` makes them:
//
//	s := runspec.DefaultSpec() // sample run's defaults: CartPole-v1 with its bundled policy
//	s.NumEnvs, s.MaxEnvSteps = 8, 10_000
//	res, err := runspec.Sample(ctx, s)
//	if err != nil { ... }
//	fmt.Println(len(res.Batches), res.EpisodeStats().ReturnMean, res.StepsPerSec())
//
// The other commands build their pieces here too, so that each is built one way:
//
//   - OpenPolicy loads a model within a size limit (sample inspect, infer, publish-policy),
//     BindPolicy binds one to spaces, actions and a device as a runner's PolicyConfig;
//   - BuildExternal builds a served run (sample serve): an ExternalEnv, single- or
//     multi-agent, with the policy's spaces, and the runner that answers its episodes;
//   - Output is an output file's settings (sample run, serve, drain, convert's --out): Check
//     refuses a path whose extension names no format or whose directory is missing, Open
//     refuses an earlier run's files there (OutputSet), or replaces them, and opens the
//     writer; Run.Metadata and Metadata are the files' metadata.
//
// Errors in the spec itself (a bad config, an unknown device, policies that do not fit
// together, a bad --format) are *SpecError values; their messages name the flag of the field,
// and the command line reports them as usage errors (exit status 2).
package runspec
