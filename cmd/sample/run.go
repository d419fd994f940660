package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/onnxrl/sampler/env"
	_ "github.com/onnxrl/sampler/env/classic" // registers the classic environments
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/output"
	"github.com/onnxrl/sampler/envrunner/runspec"
	"github.com/onnxrl/sampler/models"
	"github.com/onnxrl/sampler/spaces"
)

// defaultModels maps environments to their bundled default policy.
var defaultModels = runspec.DefaultModels

// runFlags are the flags of sample run.
type runFlags struct {
	env, envConfig, model, out, device, batchMode, countBy, maxFileSize string
	stateIn                                                             string // --state-in: per-row or per-sequence
	maxSeqLen                                                           int
	remoteWait                                                          string // --remote-wait: MS or "all"
	batchWait, flushInterval                                            time.Duration
	numEnvs, workers, fragment, threads                                 int
	steps, episodes                                                     int64
	seed                                                                uint64
	explore, normalize, clip, gae, jsonOut, remote, restart, progress   bool
	gamma, lambda                                                       float64
	policies, policyMap                                                 repeated // --policy ID=MODEL, --policy-map AGENT=ID
	overwrite                                                           bool
	output                                                              outputFlags
	publish                                                             publishFlags
	maxModel                                                            modelSizeFlag
}

const runArgs = "[--env NAME] [--model PATH|NAME|random] [--num-envs N] [--workers N] [--steps N | --episodes N] [--seed S] [--explore=BOOL] [--out FILE] [--json] ..."

func parseRunFlags(args []string, stdout io.Writer) (*runFlags, error) {
	f := &runFlags{}
	fs := newFlags("run", runArgs, stdout)
	fs.StringVar(&f.env, "env", "CartPole-v1", "registered environment name (see 'sample run --list-envs')")
	fs.StringVar(&f.envConfig, "env-config", "", "environment config: a JSON object, or key=value,key=value (values may be JSON)")
	fs.StringVar(&f.model, "model", "", "policy: an .onnx path, a bundled model name, or 'random' (default: the env's bundled policy)")
	fs.IntVar(&f.numEnvs, "num-envs", 1, "sub-environments in all (split over the workers)")
	fs.IntVar(&f.workers, "workers", 1, "runners working in parallel, each with its own sub-environments and session")
	fs.Int64Var(&f.steps, "steps", 0, "stop after this many env steps (default 10000 when --episodes is not set)")
	fs.Int64Var(&f.episodes, "episodes", 0, "stop after this many finished episodes")
	fs.Uint64Var(&f.seed, "seed", 0, "seed: sub-environment i is seeded with seed+i, runner w's actions with (seed, w)")
	fs.BoolVar(&f.explore, "explore", true, "sample actions from the distribution (false: greedy, the mode)")
	fs.BoolVar(&f.normalize, "normalize-actions", true, "map Box actions from [-1, 1] to the action space's bounds (RLlib's normalize_actions)")
	fs.BoolVar(&f.clip, "clip-actions", false, "clip Box actions to the action space's bounds (RLlib's clip_actions)")
	fs.StringVar(&f.out, "out", "", "write the sample batches to this file: Parquet for .parquet, JSON lines (RLlib's offline format) for .jsonl or .json (see --format); its directory must exist")
	f.output.register(fs)
	f.publish.register(fs)
	f.maxModel.register(fs)
	fs.StringVar(&f.maxFileSize, "max-file-size", "64MiB", "rotate the output file at this size (bytes, or with KiB/MiB/GiB; 0: never)")
	fs.BoolVar(&f.overwrite, "overwrite", false, "replace an existing --out file and its rotated files (otherwise refused)")
	fs.DurationVar(&f.flushInterval, "flush-interval", 5*time.Second, "close the --out file (Parquet footer, renamed from .partial) at least this often, so that a killed run loses at most this long's samples; the next batch starts the next rotated file (0: only when full and at the end)")
	fs.IntVar(&f.fragment, "fragment-length", 200, "rollout_fragment_length: steps per sub-environment in a sample batch")
	fs.StringVar(&f.batchMode, "batch-mode", envrunner.TruncateEpisodes, "truncate_episodes or complete_episodes")
	fs.StringVar(&f.countBy, "count-steps-by", envrunner.EnvSteps, "env_steps or agent_steps")
	fs.BoolVar(&f.gae, "gae", false, "add advantages and value_targets (GAE) to the batches")
	fs.IntVar(&f.maxSeqLen, "max-seq-len", 20, "recurrent policies: the longest sequence (seq_lens entry), RLlib's max_seq_len")
	fs.StringVar(&f.stateIn, "state-in", "per-row", "recurrent policies: state_in_N with a row per row (per-row, what Parquet holds) or RLlib's row per sequence (per-sequence, JSON lines only)")
	fs.Float64Var(&f.gamma, "gamma", 0.99, "GAE discount")
	fs.Float64Var(&f.lambda, "lambda", 0.95, "GAE lambda")
	fs.StringVar(&f.device, "device", "cpu", "inference device: cpu, cuda[:N], tensorrt[:N], native (the project's provider) or native:cuda[:N]")
	fs.IntVar(&f.threads, "threads", 1, "ONNX Runtime intra-op threads per session (0: the runtime's default)")
	fs.BoolVar(&f.remote, "remote", false, "step the sub-environments concurrently (RemoteVectorEnv)")
	fs.StringVar(&f.remoteWait, "remote-wait", "0", "with --remote: remote_env_batch_wait_ms, the `MS` a poll waits for more sub-environments to finish (measured as RLlib does), or 'all' to wait for every one")
	fs.BoolVar(&f.restart, "restart-failed", false, "recreate sub-environments that fail, dropping their episode (restart_failed_sub_environments)")
	fs.BoolVar(&f.jsonOut, "json", false, "print one JSON summary object on stdout instead of the table")
	fs.BoolVar(&f.progress, "progress", true, "show progress on stderr while running (only when stderr is a terminal)")
	fs.Var(&f.policies, "policy", "ID=MODEL: a policy by id (repeatable; with --policy-map for multi-agent envs; instead of --model)")
	fs.Var(&f.policyMap, "policy-map", "AGENT=ID: agents whose id matches the glob AGENT act with policy ID (repeatable; the first match wins)")
	listEnvsFlag := fs.Bool("list-envs", false, "list the registered environments with their spaces and default policy, and exit")
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
	switch {
	case f.stateIn != "per-row" && f.stateIn != "per-sequence":
		return nil, usagef("--state-in %q: want per-row or per-sequence", f.stateIn)
	case f.maxSeqLen < 1:
		return nil, usagef("--max-seq-len %d: want >= 1", f.maxSeqLen)
	case f.numEnvs < 1:
		return nil, usagef("--num-envs %d: want >= 1", f.numEnvs)
	case f.workers < 1:
		return nil, usagef("--workers %d: want >= 1", f.workers)
	case f.workers > f.numEnvs:
		return nil, usagef("--workers %d is more than --num-envs %d: every worker needs a sub-environment", f.workers, f.numEnvs)
	case f.steps < 0 || f.episodes < 0:
		return nil, usagef("--steps and --episodes must not be negative")
	case f.steps > 0 && f.episodes > 0:
		return nil, usagef("give --steps or --episodes, not both")
	case f.fragment < 1:
		return nil, usagef("--fragment-length %d: want >= 1", f.fragment)
	case f.flushInterval < 0:
		return nil, usagef("--flush-interval %v: want >= 0", f.flushInterval)
	case f.threads < 0:
		return nil, usagef("--threads %d: want >= 0", f.threads)
	case f.batchMode != envrunner.TruncateEpisodes && f.batchMode != envrunner.CompleteEpisodes:
		return nil, usagef("--batch-mode %q: want truncate_episodes or complete_episodes", f.batchMode)
	case f.countBy != envrunner.EnvSteps && f.countBy != envrunner.AgentSteps:
		return nil, usagef("--count-steps-by %q: want env_steps or agent_steps", f.countBy)
	case !(f.gamma >= 0 && f.gamma <= 1) || !(f.lambda >= 0 && f.lambda <= 1):
		return nil, usagef("--gamma and --lambda must be in [0, 1]")
	}
	if f.batchWait, err = parseRemoteWait(fs, f); err != nil {
		return nil, err
	}
	if f.stateIn == "per-sequence" && f.publish.target != "" {
		return nil, usagef("--state-in per-sequence: --publish sends Arrow records, a row per transition, so state_in per row")
	}
	if f.out != "" && f.publish.target != "" {
		return nil, usagef("%v", errOutAndPublish)
	}
	if f.out != "" {
		if err := f.output.checkOut("--out", f.out); err != nil {
			return nil, err
		}
	}
	if f.steps == 0 && f.episodes == 0 {
		f.steps = 10000
	}
	return f, nil
}

var errListEnvs = errors.New("list envs")

// parseRemoteWait reads --remote-wait: milliseconds >= 0, or "all" (env.WaitAll). It needs
// --remote, the only environment that waits.
func parseRemoteWait(fs *flag.FlagSet, f *runFlags) (time.Duration, error) {
	set := false
	fs.Visit(func(fl *flag.Flag) { set = set || fl.Name == "remote-wait" })
	if set && !f.remote {
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

// parseSize reads a byte size: a number with an optional KiB/MiB/GiB (or K/M/G, KB/MB/GB as
// powers of 1000) suffix.
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9},
		{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is not a size (bytes, or a number with KiB, MiB or GiB)", s)
	}
	return n * mult, nil
}

// envInfo is what sample run learns from the environment's first instance.
type envInfo struct {
	agents   []env.AgentID // nil for single-agent kinds
	obs, act spaces.Space
	single   bool // an env.Env
}

// probeEnv makes the environment once and reads its spaces (runspec.ProbeEnv).
func probeEnv(name string, cfg env.Config) (*envInfo, error) {
	i, err := runspec.ProbeEnv(name, cfg)
	if err != nil {
		return nil, err
	}
	return &envInfo{agents: i.Agents, obs: i.Obs, act: i.Act, single: i.Single}, nil
}

// runSetup is everything sample run builds before it samples.
type runSetup struct {
	f       *runFlags
	info    *envInfo
	model   string         // what to call the model in the summary
	policy  *models.Policy // the one ONNX policy, for the output's metadata (nil: random, or several)
	group   *envrunner.Group
	cleanup []func()
}

func (s *runSetup) close() {
	for i := len(s.cleanup) - 1; i >= 0; i-- {
		s.cleanup[i]()
	}
}

// buildRun builds the runners of the flags with runspec.Build, which the C API's sampler
// shares; its spec errors are usage errors.
func buildRun(f *runFlags) (*runSetup, error) {
	limit := f.maxModel.limit()
	r, err := runspec.Build(runspec.Spec{Env: f.env, EnvConfig: f.envConfig, NumEnvs: f.numEnvs, Workers: f.workers,
		Model: f.model, Policies: f.policies, PolicyMap: f.policyMap,
		OpenModel: func(name string) (*models.Policy, error) { return loadPolicy(name, limit) },
		Explore:   f.explore, NormalizeActions: f.normalize, ClipActions: f.clip, Seed: f.seed,
		FragmentLength: f.fragment, BatchMode: f.batchMode, CountStepsBy: f.countBy,
		GAE: f.gae, Gamma: f.gamma, Lambda: f.lambda, Device: f.device, Threads: f.threads,
		MaxSeqLen: f.maxSeqLen, StatePerSequence: f.stateIn == "per-sequence",
		Remote: f.remote, BatchWait: f.batchWait, RestartFailed: f.restart,
		MaxEnvSteps: f.steps, MaxEpisodes: f.episodes})
	if err != nil {
		var se *runspec.SpecError
		if errors.As(err, &se) {
			return nil, usagef("%s", se.Msg)
		}
		return nil, err
	}
	i := r.Info
	return &runSetup{f: f, info: &envInfo{agents: i.Agents, obs: i.Obs, act: i.Act, single: i.Single},
		model: r.Model, policy: r.Policy, group: r.Group, cleanup: []func(){func() { r.Close() }}}, nil
}

// runSummary is the JSON summary of sample run (DESIGN.md's CLI contract), its counters and
// episode metrics under RLlib's new API stack names (envrunner.NewAPIStackMetrics; the
// table of every key is docs/metrics.md).
type runSummary struct {
	Env               string              `json:"env"`
	Model             string              `json:"model"`
	NumEnvs           int                 `json:"num_envs"`
	Workers           int                 `json:"workers"`
	Explore           bool                `json:"explore"`
	Seed              uint64              `json:"seed"`
	EnvSteps          int64               `json:"num_env_steps_sampled_lifetime"`
	AgentSteps        int64               `json:"num_agent_steps_sampled_lifetime"`
	Episodes          int64               `json:"num_episodes_lifetime"`
	FaultyEpisodes    int64               `json:"num_env_step_failures"`
	EpisodeReturnMean float64             `json:"episode_return_mean"`
	EpisodeReturnMin  float64             `json:"episode_return_min"`
	EpisodeReturnMax  float64             `json:"episode_return_max"`
	EpisodeLenMean    float64             `json:"episode_len_mean"`
	Seconds           float64             `json:"seconds"`
	StepsPerSec       float64             `json:"num_env_steps_sampled_lifetime_throughput"`
	Perf              envrunner.PerfStats `json:"perf"`
	Out               []string            `json:"out,omitempty"`
	Batches           int64               `json:"batches"`
	Rows              int64               `json:"rows"`
	Interrupted       bool                `json:"interrupted,omitempty"`
}

func runRun(args []string, stdout, stderr io.Writer) error {
	f, err := parseRunFlags(args, stdout)
	if errors.Is(err, errListEnvs) {
		return listEnvs(stdout)
	}
	if err != nil {
		return err
	}
	maxSize, err := parseSize(f.maxFileSize)
	if err != nil {
		return usagef("--max-file-size: %v", err)
	}
	s, err := buildRun(f)
	if err != nil {
		return err
	}
	defer s.close()

	var w *output.Writer
	var batches, rows int64
	sink := s.group.CountAndRelease(&batches, &rows) // BenchmarkSampleRun runs this sink
	if f.out != "" {
		if err := prepareOutput(f.out, f.overwrite); err != nil {
			return err
		}
		opts, err := f.output.options(maxSize, sampleMetadata(f.env, f.envConfig, f.seed, f.explore, s.info.obs, s.info.act, s.model, s.policy))
		if err != nil {
			return err
		}
		if f.stateIn == "per-sequence" && opts.Format.Resolve(f.out) == output.FormatParquet {
			return usagef("--state-in per-sequence: Parquet holds a row per transition, so state_in per row; write JSON lines (.jsonl) or leave --state-in out")
		}
		opts.OnWritten = s.group.Release
		opts.FlushInterval = f.flushInterval
		if w, err = output.NewWriter(f.out, opts); err != nil {
			return err
		}
		sink = func(b *envrunner.MultiAgentBatch) error {
			if b.Rows() == 0 {
				s.group.Release(b)
				return nil
			}
			batches++
			rows += int64(b.Rows())
			return w.Write(b)
		}
	}

	var pub *publishSession
	if f.publish.target != "" {
		meta := sampleMetadata(f.env, f.envConfig, f.seed, f.explore, s.info.obs, s.info.act, s.model, s.policy)
		if pub, err = startPublish(&f.publish, meta, s.group.Release, stderr); err != nil {
			return err
		}
		defer pub.shutdown()
		sink = func(b *envrunner.MultiAgentBatch) error {
			if b.Rows() == 0 {
				s.group.Release(b)
				return nil
			}
			batches++
			rows += int64(b.Rows())
			return pub.pub.Write(b)
		}
	}

	// A run of a number of steps (or without an end) takes the runners' episode metrics with
	// every batch into its totals: the runners keep a fragment's worth, however long the run.
	// A run of a number of episodes keeps them all (as many as it asked for, and the faulty
	// ones), to report exactly the first ones.
	var totals episodeTotals
	if f.episodes == 0 {
		sink = takingMetrics(s.group, totals.add, sink)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan struct{})
	if f.progress && isTerminal(stderr) {
		go showProgress(stderr, s.group, f, done)
	} else {
		close(done)
		done = nil
	}
	start := time.Now()
	runErr := s.group.Run(ctx, envrunner.GroupOptions{Sink: sink})
	elapsed := time.Since(start)
	if done != nil {
		done <- struct{}{}
		<-done
	}
	var closeErr error
	var files []string
	if w != nil {
		closeErr = w.Close()
		files = w.Files()
	}
	if pub != nil {
		closeErr = pub.close(ctx, stderr)
	}
	if err := errors.Join(runErr, closeErr); err != nil {
		return err
	}
	sum := summarize(s, elapsed, &totals)
	sum.Out, sum.Batches, sum.Rows = files, batches, rows
	sum.Interrupted = ctx.Err() != nil
	if f.jsonOut {
		if err := json.NewEncoder(stdout).Encode(sum); err != nil {
			return err
		}
	} else {
		printSummary(stdout, sum)
	}
	if sum.Interrupted {
		return errInterrupted // exit status 130, after the summary
	}
	return nil
}

// summarize reports the run. totals holds the episodes taken with the batches (a run of a
// number of steps); the runners' metrics not taken yet are added here.
func summarize(s *runSetup, elapsed time.Duration, totals *episodeTotals) runSummary {
	f := s.f
	c := s.group.Counters()
	sum := runSummary{Env: f.env, Model: s.model, NumEnvs: f.numEnvs, Workers: f.workers, Explore: f.explore, Seed: f.seed,
		EnvSteps: c.EnvSteps, AgentSteps: c.AgentSteps, FaultyEpisodes: c.FaultyEpisodes,
		Seconds: elapsed.Seconds(), Perf: s.group.PerfStats()}
	ms := s.group.Metrics(nil)
	if f.episodes > 0 {
		// Exactly that many count (the runners stop starting episodes that count once their
		// share started, so none is left out by its length).
		ms = slices.DeleteFunc(ms, func(m envrunner.RolloutMetrics) bool { return m.Faulty })
		ms = ms[:min(int64(len(ms)), f.episodes)]
	}
	totals.add(ms)
	totals.fill(&sum)
	if elapsed > 0 {
		sum.StepsPerSec = float64(c.EnvSteps) / elapsed.Seconds()
	}
	return sum
}

func printSummary(w io.Writer, s runSummary) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("env", fmt.Sprintf("%s (%s, %s)", s.Env, plural(s.NumEnvs, "sub-environment", "sub-environments"), plural(s.Workers, "worker", "workers")))
	row("model", fmt.Sprintf("%s (explore=%v)", s.Model, s.Explore))
	row("env steps", fmt.Sprint(s.EnvSteps))
	row("agent steps", fmt.Sprint(s.AgentSteps))
	row("episodes", fmt.Sprint(s.Episodes))
	if s.FaultyEpisodes > 0 {
		row("faulty episodes", fmt.Sprint(s.FaultyEpisodes))
	}
	if s.Episodes > 0 {
		row("episode return", fmt.Sprintf("mean %.2f  min %.2f  max %.2f", s.EpisodeReturnMean, s.EpisodeReturnMin, s.EpisodeReturnMax))
		row("episode length", fmt.Sprintf("mean %.1f", s.EpisodeLenMean))
	}
	row("time", fmt.Sprintf("%.2fs", s.Seconds))
	row("throughput", fmt.Sprintf("%.0f env steps/s", s.StepsPerSec))
	row("per step (ms)", fmt.Sprintf("env wait %.4f  obs processing %.4f  inference %.4f  action processing %.4f",
		s.Perf.MeanEnvWaitMs, s.Perf.MeanRawObsProcessingMs, s.Perf.MeanInferenceMs, s.Perf.MeanActionProcessingMs))
	if len(s.Out) > 0 {
		row("output", fmt.Sprintf("%s (%s, %s)", strings.Join(s.Out, ", "), plural(s.Batches, "batch", "batches"), plural(s.Rows, "row", "rows")))
	}
	if s.Interrupted {
		row("interrupted", "yes (everything sampled so far was written)")
	}
	tw.Flush()
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// showProgress redraws one status line a few times a second until done is signalled, then
// clears it and signals back.
func showProgress(w io.Writer, g *envrunner.Group, f *runFlags, done chan struct{}) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	for {
		select {
		case <-done:
			fmt.Fprint(w, "\r\033[K")
			done <- struct{}{}
			return
		case <-tick.C:
			p := g.Progress()
			line := fmt.Sprintf("%d env steps  %.0f steps/s  %d episodes", p.EnvSteps, float64(p.EnvSteps)/time.Since(start).Seconds(), p.Episodes)
			if p.Episodes > 0 {
				line += fmt.Sprintf("  return mean %.2f", p.ReturnSum/float64(p.Episodes))
			}
			switch {
			case f.steps > 0:
				line += fmt.Sprintf("  [%3.0f%%]", 100*float64(p.EnvSteps)/float64(f.steps))
			case f.episodes > 0:
				line += fmt.Sprintf("  [%3.0f%%]", 100*float64(min(p.Episodes, f.episodes))/float64(f.episodes))
			}
			fmt.Fprint(w, "\r\033[K"+line)
		}
	}
}
