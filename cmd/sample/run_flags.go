package main

import (
	"errors"
	"flag"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/runspec"
)

// runFlags are the flags of sample run: the run's runspec.Spec and runspec.Output field by
// field, and what only the command has.
type runFlags struct {
	spec        runspec.Spec
	out         runspec.Output
	maxFileSize string
	stateIn     string // --state-in: per-row or per-sequence
	remoteWait  string // --remote-wait: MS or "all"
	jsonOut     bool
	progress    bool
	publish     publishFlags
	maxModel    modelSizeFlag
}

const runArgs = "[--env NAME] [--model PATH|NAME|random] [--num-envs N] [--workers N] [--steps N | --episodes N] [--seed S] [--explore=BOOL] [--out FILE] [--json] ..."

var errListEnvs = errors.New("list envs")

func parseRunFlags(args []string, stdout io.Writer) (*runFlags, error) {
	f := &runFlags{}
	fs := newFlags("run", runArgs, stdout)
	listEnvsFlag := f.register(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return nil, err
	}
	if *listEnvsFlag {
		return nil, errListEnvs
	}
	if len(pos) > 0 {
		return nil, usagef("unexpected argument %q", pos[0])
	}
	if err := f.maxModel.parse(); err != nil {
		return nil, err
	}
	if err := checkRunFlags(fs, f); err != nil {
		return nil, err
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	if f.spec.BatchWait, err = parseRemoteWait(fs, f); err != nil {
		return nil, err
	}
	if err := f.checkDestination(); err != nil {
		return nil, err
	}
	f.spec.StatePerSequence = f.stateIn == "per-sequence"
	if f.spec.MaxEnvSteps == 0 && f.spec.MaxEpisodes == 0 {
		f.spec.MaxEnvSteps = 10000
	}
	return f, nil
}

// register registers the flags into f; it returns --list-envs.
func (f *runFlags) register(fs *flag.FlagSet) *bool {
	s := &f.spec
	fs.StringVar(&s.Env, "env", "CartPole-v1", "registered environment name (see 'sample run --list-envs')")
	fs.StringVar(&s.EnvConfig, "env-config", "", "environment config: a JSON object, or key=value,key=value (values may be JSON)")
	fs.StringVar(&s.Model, "model", "", "policy: an .onnx path, a bundled model name, or 'random' (default: the env's bundled policy)")
	fs.IntVar(&s.NumEnvs, "num-envs", 1, "sub-environments in all (split over the workers)")
	fs.IntVar(&s.Workers, "workers", 1, "runners working in parallel, each with its own sub-environments and session")
	fs.Int64Var(&s.MaxEnvSteps, "steps", 0, "stop after this many env steps (default 10000 when --episodes is not set)")
	fs.Int64Var(&s.MaxEpisodes, "episodes", 0, "stop after this many finished episodes")
	fs.Uint64Var(&s.Seed, "seed", 0, "seed: sub-environment i is seeded with seed+i, runner w's actions with (seed, w)")
	fs.BoolVar(&s.Explore, "explore", true, "sample actions from the distribution (false: greedy, the mode)")
	fs.BoolVar(&s.NormalizeActions, "normalize-actions", true, "map Box actions from [-1, 1] to the action space's bounds (RLlib's normalize_actions)")
	fs.BoolVar(&s.ClipActions, "clip-actions", false, "clip Box actions to the action space's bounds (RLlib's clip_actions)")
	fs.StringVar(&f.out.Path, "out", "", "write the sample batches to this file: Parquet for .parquet, JSON lines (RLlib's offline format) for .jsonl or .json (see --format); its directory must exist")
	registerOutputFlags(fs, &f.out)
	f.publish.register(fs)
	f.maxModel.register(fs)
	fs.StringVar(&f.maxFileSize, "max-file-size", "64MiB", "rotate the output file at this size (bytes, or with KiB/MiB/GiB; 0: never)")
	fs.BoolVar(&f.out.Overwrite, "overwrite", false, "replace an existing --out file and its rotated files (otherwise refused)")
	fs.DurationVar(&f.out.FlushInterval, "flush-interval", 5*time.Second, "close the --out file (Parquet footer, renamed from .partial) at least this often, so that a killed run loses at most this long's samples; the next batch starts the next rotated file (0: only when full and at the end)")
	fs.IntVar(&s.FragmentLength, "fragment-length", 200, "rollout_fragment_length: steps per sub-environment in a sample batch")
	fs.StringVar(&s.BatchMode, "batch-mode", envrunner.TruncateEpisodes, "truncate_episodes or complete_episodes")
	fs.StringVar(&s.CountStepsBy, "count-steps-by", envrunner.EnvSteps, "env_steps or agent_steps")
	fs.BoolVar(&s.GAE, "gae", false, "add advantages and value_targets (GAE) to the batches")
	fs.IntVar(&s.MaxSeqLen, "max-seq-len", 20, "recurrent policies: the longest sequence (seq_lens entry), RLlib's max_seq_len")
	fs.StringVar(&f.stateIn, "state-in", "per-row", "recurrent policies: state_in_N with a row per row (per-row, what Parquet holds) or RLlib's row per sequence (per-sequence, JSON lines only)")
	fs.Float64Var(&s.Gamma, "gamma", 0.99, "GAE discount")
	fs.Float64Var(&s.Lambda, "lambda", 0.95, "GAE lambda")
	fs.StringVar(&s.Device, "device", "cpu", "inference device: cpu, cuda[:N], tensorrt[:N], native (the project's provider) or native:cuda[:N]")
	fs.IntVar(&s.Threads, "threads", 1, "ONNX Runtime intra-op threads per session (0: the runtime's default)")
	fs.BoolVar(&s.Remote, "remote", false, "step the sub-environments concurrently (RemoteVectorEnv)")
	fs.StringVar(&f.remoteWait, "remote-wait", "0", "with --remote: remote_env_batch_wait_ms, the `MS` a poll waits for more sub-environments to finish (measured as RLlib does), or 'all' to wait for every one")
	fs.BoolVar(&s.RestartFailed, "restart-failed", false, "recreate sub-environments that fail, dropping their episode (restart_failed_sub_environments)")
	fs.BoolVar(&f.jsonOut, "json", false, "print one JSON summary object on stdout instead of the table")
	fs.BoolVar(&f.progress, "progress", true, "show progress on stderr while running (only when stderr is a terminal)")
	fs.Var((*repeated)(&s.Policies), "policy", "ID=MODEL: a policy by id (repeatable; with --policy-map for multi-agent envs; instead of --model)")
	fs.Var((*repeated)(&s.PolicyMap), "policy-map", "AGENT=ID: agents whose id matches the glob AGENT act with policy ID (repeatable; the first match wins)")
	return fs.Bool("list-envs", false, "list the registered environments with their spaces and default policy, and exit")
}

// check refuses the values sample run cannot run: its own first, then those runspec.Build
// refuses (the same messages, as usage errors before anything is built).
func (f *runFlags) check() error {
	s := &f.spec
	switch {
	case f.stateIn != "per-row" && f.stateIn != "per-sequence":
		return usagef("--state-in %q: want per-row or per-sequence", f.stateIn)
	case s.MaxSeqLen < 1:
		return usagef("--max-seq-len %d: want >= 1", s.MaxSeqLen)
	case s.MaxEnvSteps > 0 && s.MaxEpisodes > 0:
		return usagef("give --steps or --episodes, not both")
	case f.out.FlushInterval < 0:
		return usagef("--flush-interval %v: want >= 0", f.out.FlushInterval)
	case !(s.Gamma >= 0 && s.Gamma <= 1) || !(s.Lambda >= 0 && s.Lambda <= 1):
		return usagef("--gamma and --lambda must be in [0, 1]")
	}
	return s.Check()
}

// checkDestination refuses what --out and --publish cannot take together or at all.
func (f *runFlags) checkDestination() error {
	if f.stateIn == "per-sequence" && f.publish.target != "" {
		return usagef("--state-in per-sequence: --publish sends Arrow records, a row per transition, so state_in per row")
	}
	if f.out.Path != "" && f.publish.target != "" {
		return usagef("%v", errOutAndPublish)
	}
	if f.out.Path != "" {
		return f.out.Check("--out")
	}
	return nil
}

// parseRemoteWait reads --remote-wait: milliseconds >= 0, or "all" (env.WaitAll). It needs
// --remote, the only environment that waits.
func parseRemoteWait(fs *flag.FlagSet, f *runFlags) (time.Duration, error) {
	set := false
	fs.Visit(func(fl *flag.Flag) { set = set || fl.Name == "remote-wait" })
	if set && !f.spec.Remote {
		return 0, usagef("--remote-wait needs --remote (only a RemoteVectorEnv waits for its sub-environments)")
	}
	if f.remoteWait == "all" {
		return env.WaitAll, nil
	}
	ms, err := strconv.ParseInt(strings.TrimSpace(f.remoteWait), 10, 64)
	if err != nil || ms < 0 || ms > math.MaxInt64/int64(time.Millisecond) {
		return 0, usagef("--remote-wait %q: want a whole number of milliseconds >= 0 (remote_env_batch_wait_ms), or 'all'", f.remoteWait)
	}
	return time.Duration(ms) * time.Millisecond, nil
}
