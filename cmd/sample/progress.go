package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/runspec"
)

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
func showProgress(w io.Writer, g *envrunner.Group, s *runspec.Spec, done chan struct{}) {
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
			fmt.Fprint(w, "\r\033[K"+progressLine(g.Progress(), time.Since(start), s))
		}
	}
}

// progressLine is the status line of a run of s after elapsed.
func progressLine(p envrunner.Progress, elapsed time.Duration, s *runspec.Spec) string {
	line := fmt.Sprintf("%d env steps  %.0f steps/s  %d episodes", p.EnvSteps, float64(p.EnvSteps)/elapsed.Seconds(), p.Episodes)
	if p.Episodes > 0 {
		line += fmt.Sprintf("  return mean %.2f", p.ReturnSum/float64(p.Episodes))
	}
	switch {
	case s.MaxEnvSteps > 0:
		line += fmt.Sprintf("  [%3.0f%%]", 100*float64(p.EnvSteps)/float64(s.MaxEnvSteps))
	case s.MaxEpisodes > 0:
		line += fmt.Sprintf("  [%3.0f%%]", 100*float64(min(p.Episodes, s.MaxEpisodes))/float64(s.MaxEpisodes))
	}
	return line
}
