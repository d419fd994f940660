package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	_ "github.com/onnxrl/sampler/env/classic" // registers the classic environments
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/runspec"
	"github.com/onnxrl/sampler/models"
)

// defaultModels maps environments to their bundled default policy.
var defaultModels = runspec.DefaultModels

// buildRun builds the run of a spec with runspec.Build, which the C API's sampler shares,
// loading its models within limit (--max-model-size).
func buildRun(s runspec.Spec, limit int64) (*runspec.Run, error) {
	s.OpenModel = func(name string) (*models.Policy, error) { return runspec.OpenPolicy(name, limit) }
	return runspec.Build(s)
}

func runRun(args []string, stdout, stderr io.Writer) error {
	f, err := parseRunFlags(args, stdout)
	if errors.Is(err, errListEnvs) {
		return listEnvs(stdout)
	}
	if err != nil {
		return err
	}
	if f.out.MaxFileSize, err = parseSize(f.maxFileSize); err != nil {
		return usagef("--max-file-size: %v", err)
	}
	r, err := buildRun(f.spec, f.maxModel.limit())
	if err != nil {
		return err
	}
	defer r.Close()
	out, err := openRunSink(f, r, stderr)
	if err != nil {
		return err
	}
	defer out.shutdown()

	// A run of a number of steps (or without an end) takes the runners' episode metrics with
	// every batch into its totals: the runners keep a fragment's worth, however long the run.
	// A run of a number of episodes keeps them all (as many as it asked for, and the faulty
	// ones), to report exactly the first ones.
	var totals episodeTotals
	sink := out.sink
	if f.spec.MaxEpisodes == 0 {
		sink = takingMetrics(r.Group, totals.add, sink)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	elapsed, runErr := sampleWithProgress(ctx, f, r.Group, sink, stderr)
	files, closeErr := out.close(ctx, stderr)
	if err := errors.Join(runErr, closeErr); err != nil {
		return err
	}
	sum := summarize(f, r, elapsed, &totals)
	sum.Out, sum.Batches, sum.Rows = files, out.batches, out.rows
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

// sampleWithProgress runs the group into sink until it ends or ctx is done, with the
// progress line on stderr when asked for and stderr is a terminal, and returns how long the
// sampling took.
func sampleWithProgress(ctx context.Context, f *runFlags, g *envrunner.Group, sink func(*envrunner.MultiAgentBatch) error, stderr io.Writer) (time.Duration, error) {
	done := make(chan struct{})
	if f.progress && isTerminal(stderr) {
		go showProgress(stderr, g, &f.spec, done)
	} else {
		close(done)
		done = nil
	}
	start := time.Now()
	err := g.Run(ctx, envrunner.GroupOptions{Sink: sink})
	elapsed := time.Since(start)
	if done != nil {
		done <- struct{}{}
		<-done
	}
	return elapsed, err
}
