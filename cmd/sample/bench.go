package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/internal/bench"
)

// benchFlags are the flags of sample bench.
type benchFlags struct {
	envs, models, devices []string
	numEnvs, workers      []int
	repeats, threads      int
	fragment              int
	warmup, duration      time.Duration
	out, vs, vsName       string
	seed                  uint64
	explore, quick        bool
}

const benchArgs = "[--quick] [--out DIR] [--envs A,B] [--models M,N] [--num-envs 1,16,...] [--workers 1,2] [--device cpu,...] [--repeats N] [--duration D] [--vs 'COMMAND']"

// The default matrix, and the smaller one of --quick (under a minute on two cores).
var (
	benchEnvs     = "CartPole-v1,Pendulum-v1,MultiAgentCartPole,StatelessCartPole"
	benchNumEnvs  = "1,16,256,4096"
	quickNumEnvs  = "1,256"
	quickRepeats  = 3
	quickWarmup   = 200 * time.Millisecond
	quickDuration = 300 * time.Millisecond
)

func parseBenchFlags(args []string, stdout io.Writer) (*benchFlags, error) {
	f := &benchFlags{}
	fs := newFlags("bench", benchArgs, stdout)
	var l benchLists
	l.envs = fs.String("envs", benchEnvs, "environments, comma-separated")
	l.models = fs.String("models", "default", "policies, comma-separated: 'default' (each env's bundled policy: the MLPs, and the LSTM for StatelessCartPole), a bundled name, an .onnx path, or 'random'")
	l.numEnvs = fs.String("num-envs", benchNumEnvs, "sub-environments, comma-separated")
	l.workers = fs.String("workers", "1,2", "runners working in parallel, comma-separated")
	l.devices = fs.String("device", "cpu", "inference devices, comma-separated: cpu, cuda[:N], tensorrt[:N]")
	fs.IntVar(&f.repeats, "repeats", 5, "measured runs per configuration")
	fs.DurationVar(&f.warmup, "warmup", 500*time.Millisecond, "stepping before the measured runs of a configuration")
	fs.DurationVar(&f.duration, "duration", time.Second, "length of one measured run")
	fs.IntVar(&f.threads, "threads", 1, "ONNX Runtime intra-op threads per session")
	fs.IntVar(&f.fragment, "fragment-length", 200, "rollout_fragment_length of the sample batches built while measuring")
	fs.Uint64Var(&f.seed, "seed", 0, "seed")
	fs.BoolVar(&f.explore, "explore", true, "sample actions from the distribution (false: greedy)")
	fs.StringVar(&f.out, "out", "bench-out", "folder for report.md, results.csv and the plots (created if missing)")
	fs.StringVar(&f.vs, "vs", "", "another sampler to run on the same settings, alternating with ours (see docs/benchmarking.md for the protocol)")
	fs.StringVar(&f.vsName, "vs-name", "", "what to call the other sampler in the report (default: its command's first word)")
	fs.BoolVar(&f.quick, "quick", false, "a small matrix in under a minute: every env, --num-envs "+quickNumEnvs+", --workers 1, --repeats 3, short runs (flags given explicitly win)")
	if err := parseNoArgs(fs, args); err != nil {
		return nil, err
	}
	if f.quick {
		set := map[string]bool{}
		fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
		f.applyQuick(set, &l)
	}
	if err := f.parseLists(&l); err != nil {
		return nil, err
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	if f.vs != "" && f.vsName == "" {
		f.vsName = vsDefaultName(f.vs)
	}
	return f, nil
}

// benchLists are the comma-separated flags of the matrix.
type benchLists struct{ envs, models, numEnvs, workers, devices *string }

// applyQuick gives --quick's values to the flags not set explicitly.
func (f *benchFlags) applyQuick(set map[string]bool, l *benchLists) {
	if !set["num-envs"] {
		*l.numEnvs = quickNumEnvs
	}
	if !set["workers"] {
		*l.workers = "1"
	}
	if !set["repeats"] {
		f.repeats = quickRepeats
	}
	if !set["warmup"] {
		f.warmup = quickWarmup
	}
	if !set["duration"] {
		f.duration = quickDuration
	}
}

// parseLists reads the matrix's lists, refusing unknown environments and devices.
func (f *benchFlags) parseLists(l *benchLists) (err error) {
	f.envs, f.models, f.devices = splitList(*l.envs), splitList(*l.models), splitList(*l.devices)
	names := env.Names()
	for _, e := range f.envs {
		if !slices.Contains(names, e) {
			return usagef("--envs: unknown environment %q%s (registered: %s)", e, didYouMean(e, names), strings.Join(names, ", "))
		}
	}
	for _, d := range f.devices {
		if _, err := inference.ParseDevice(d); err != nil {
			return usagef("--device: %v", err)
		}
	}
	if f.numEnvs, err = parseInts("--num-envs", *l.numEnvs); err != nil {
		return err
	}
	f.workers, err = parseInts("--workers", *l.workers)
	return err
}

// check refuses the values bench cannot measure with.
func (f *benchFlags) check() error {
	switch {
	case len(f.envs) == 0 || len(f.models) == 0 || len(f.devices) == 0:
		return usagef("--envs, --models and --device need at least one value each")
	case f.repeats < 1:
		return usagef("--repeats %d: want >= 1", f.repeats)
	case f.duration <= 0:
		return usagef("--duration %v: want > 0", f.duration)
	case f.warmup < 0:
		return usagef("--warmup %v: want >= 0", f.warmup)
	case f.threads < 0:
		return usagef("--threads %d: want >= 0", f.threads)
	case f.fragment < 1:
		return usagef("--fragment-length %d: want >= 1", f.fragment)
	case f.out == "":
		return usagef("--out: want a folder")
	}
	return nil
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func parseInts(flagName, s string) ([]int, error) {
	var out []int
	for _, p := range splitList(s) {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			return nil, usagef("%s: %q is not a count >= 1", flagName, p)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, usagef("%s: want at least one count", flagName)
	}
	return out, nil
}

// benchModel is the model a configuration uses for env: the env's bundled policy for
// "default".
func benchModel(envName, model string) (string, error) {
	if model != "default" {
		return model, nil
	}
	m, ok := defaultModels[envName]
	if !ok {
		return "", usagef("no bundled policy for %s; pass --models PATH or --models random", envName)
	}
	return m, nil
}

// matrix expands the flags into configurations, in the order they run: by env, model,
// device, workers, then sub-environments. Configurations that cannot run (more workers than
// sub-environments) are returned with the reason.
func (f *benchFlags) matrix() ([]bench.Config, map[bench.Config]string, error) {
	var cfgs []bench.Config
	skipped := map[bench.Config]string{}
	for _, e := range f.envs {
		for _, m := range f.models {
			model, err := benchModel(e, m)
			if err != nil {
				return nil, nil, err
			}
			for _, d := range f.devices {
				for _, w := range f.workers {
					for _, n := range f.numEnvs {
						c := bench.Config{Env: e, Model: model, Device: d, NumEnvs: n, Workers: w}
						if slices.Contains(cfgs, c) {
							continue
						}
						cfgs = append(cfgs, c)
						if w > n {
							skipped[c] = fmt.Sprintf("%d workers need at least %d sub-environments", w, w)
						}
					}
				}
			}
		}
	}
	return cfgs, skipped, nil
}

// errInterrupted reports that SIGINT or SIGTERM stopped a command (exit status 130).
var errInterrupted = errors.New("interrupted")

func runBench(args []string, stdout, stderr io.Writer) error {
	f, err := parseBenchFlags(args, stdout)
	if err != nil {
		return err
	}
	cfgs, skipped, err := f.matrix()
	if err != nil {
		return err
	}
	if err := f.checkBuilds(cfgs, stderr); err != nil {
		return err
	}
	var vs *vsSampler
	if f.vs != "" {
		if vs, err = newVsSampler(f); err != nil {
			return err
		}
		defer vs.close()
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	start := time.Now()
	runnable := len(cfgs) - len(skipped)
	per := f.warmup + time.Duration(f.repeats)*f.duration
	if vs != nil {
		per *= 2
	}
	fmt.Fprintf(stderr, "bench: %d configurations to run (%d skipped), about %v\n", runnable, len(skipped),
		(time.Duration(runnable) * per).Round(100*time.Millisecond))
	runs, vsSkipped, runErr := f.measureAll(ctx, cfgs, skipped, vs, stderr)
	meta := bench.Meta{Date: start, Command: commandLine("bench", args), Machine: machine(), Versions: versions(),
		Repeats: f.repeats, Warmup: f.warmup, Duration: f.duration, VsCommand: f.vs, VsName: f.vsName}
	files, err := writeBenchOutputs(f.out, meta, runs, bench.Summarize(runs, skipped, vsSkipped, cfgs))
	for _, p := range files {
		fmt.Fprintln(stdout, p)
	}
	fmt.Fprintf(stderr, "bench: done in %v\n", time.Since(start).Round(100*time.Millisecond))
	return errors.Join(runErr, err)
}

// checkBuilds builds every env, model and device of cfgs once, so that bad settings fail
// before any run.
func (f *benchFlags) checkBuilds(cfgs []bench.Config, stderr io.Writer) error {
	fmt.Fprintf(stderr, "bench: checking %d configurations\n", len(cfgs))
	checked := map[bench.Config]bool{}
	for _, c := range cfgs {
		k := bench.Config{Env: c.Env, Model: c.Model, Device: c.Device, NumEnvs: 1, Workers: 1}
		if checked[k] {
			continue
		}
		checked[k] = true
		s, err := buildRun(f.runSpec(k), 0)
		if err != nil {
			return fmt.Errorf("%s with %s on %s: %w", c.Env, c.Model, c.Device, err)
		}
		s.Close()
	}
	return nil
}

// measureAll measures the configurations not skipped, one after the other, with a line on
// stderr for each, until one fails or ctx is done. It returns the runs, why the other
// sampler declined configurations, and what stopped it.
func (f *benchFlags) measureAll(ctx context.Context, cfgs []bench.Config, skipped map[bench.Config]string, vs *vsSampler, stderr io.Writer) ([]bench.Run, map[bench.Config]string, error) {
	var runs []bench.Run
	vsSkipped := map[bench.Config]string{}
	runnable := len(cfgs) - len(skipped)
	i := 0
	for _, c := range cfgs {
		if _, ok := skipped[c]; ok {
			continue
		}
		i++
		fmt.Fprintf(stderr, "[%d/%d] %s: ", i, runnable, c)
		rs, why, err := f.measure(ctx, c, vs)
		runs = append(runs, rs...)
		if why != "" {
			vsSkipped[c] = why
		}
		if err != nil {
			fmt.Fprintln(stderr)
			return runs, vsSkipped, fmt.Errorf("%s: %w", c, err)
		}
		sum := bench.Summarize(rs, nil, vsSkipped, []bench.Config{c})[0]
		fmt.Fprintf(stderr, "%s steps/s (%s-%s)", bench.Rate(sum.StepsPerSec), bench.Rate(sum.Min), bench.Rate(sum.Max))
		switch {
		case why != "":
			fmt.Fprintf(stderr, "; %s: %s", f.vsName, why)
		case sum.VsRepeats > 0:
			fmt.Fprintf(stderr, "; %s %s steps/s, ratio %.2fx", f.vsName, bench.Rate(sum.VsStepsPerSec), sum.Ratio)
		}
		fmt.Fprintln(stderr)
		if ctx.Err() != nil {
			return runs, vsSkipped, errInterrupted
		}
	}
	return runs, vsSkipped, nil
}

// writeBenchOutputs writes results.csv, the plots and report.md into dir and returns their
// paths.
func writeBenchOutputs(dir string, meta bench.Meta, runs []bench.Run, sums []bench.Summary) ([]string, error) {
	var files []string
	var plotErrs []error
	csvPath := filepath.Join(dir, "results.csv")
	if err := writeFile(csvPath, func(w io.Writer) error { return bench.WriteCSV(w, runs) }); err != nil {
		return files, err
	}
	files = append(files, csvPath)
	for _, p := range []struct {
		name string
		plot func(string, []bench.Summary) error
	}{{"throughput.png", bench.PlotThroughput}, {"breakdown.png", bench.PlotBreakdown}} {
		path := filepath.Join(dir, p.name)
		if len(runs) == 0 {
			break
		}
		// A plot that fails costs only itself: the report and the CSV are still written.
		if err := p.plot(path, sums); err != nil {
			plotErrs = append(plotErrs, fmt.Errorf("%s: %w", path, err))
			continue
		}
		meta.Plots = append(meta.Plots, p.name)
		files = append(files, path)
	}
	mdPath := filepath.Join(dir, "report.md")
	if err := writeFile(mdPath, func(w io.Writer) error { return bench.WriteReport(w, meta, sums) }); err != nil {
		return files, err
	}
	return append(files, mdPath), errors.Join(plotErrs...)
}

func writeFile(path string, write func(io.Writer) error) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(fh); err != nil {
		fh.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return fh.Close()
}

// commandLine quotes args as a shell would need them.
func commandLine(cmd string, args []string) string {
	parts := []string{"sample", cmd}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\"'$\\*?;&|<>()") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}
