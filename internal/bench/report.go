package bench

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Meta describes a benchmark run for report.md's header.
type Meta struct {
	Date              time.Time
	Command           string // the command line as typed
	Machine           string // CPU model and count, OS/arch
	Versions          string // sampler and runtime versions
	Repeats           int
	Warmup, Duration  time.Duration
	VsCommand, VsName string
	// Plots are the PNG files (names relative to report.md) to show at the end.
	Plots []string
}

// WriteReport writes report.md: the header, a throughput table (median steps/s with the
// range over the repeats, and the other sampler's figures with the ratio pair by pair when
// there is one), and a table of where a runner step's time goes.
func WriteReport(w io.Writer, m Meta, sums []Summary) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# sample bench\n\n")
	fmt.Fprintf(&b, "- date: %s\n", m.Date.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "- command: `%s`\n", m.Command)
	fmt.Fprintf(&b, "- machine: %s\n", m.Machine)
	if m.Versions != "" {
		fmt.Fprintf(&b, "- versions: %s\n", m.Versions)
	}
	fmt.Fprintf(&b, "- protocol: %v warm-up, then %d repeats of %v each", m.Warmup, m.Repeats, m.Duration)
	if m.VsCommand != "" {
		fmt.Fprintf(&b, "; `%s` (%s) runs the same settings alternating with ours, repeat by repeat", m.VsCommand, m.VsName)
	}
	b.WriteString("\n\nSteps/s counts environment steps (one per sub-environment and step, whatever the number of agents). ")
	b.WriteString("Figures are medians over the repeats, with min-max.\n\n")

	b.WriteString("## Throughput\n\n")
	vs := m.VsCommand != ""
	if vs {
		fmt.Fprintf(&b, "| env | model | device | sub-envs | workers | steps/s (median) | min-max | %s steps/s | ratio ours/%s (median, min-max) |\n", m.VsName, m.VsName)
		b.WriteString("|---|---|---|---:|---:|---:|---|---:|---|\n")
	} else {
		b.WriteString("| env | model | device | sub-envs | workers | steps/s (median) | min-max |\n")
		b.WriteString("|---|---|---|---:|---:|---:|---|\n")
	}
	for _, s := range sums {
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | ", s.Env, s.Model, s.Device, s.NumEnvs, s.Workers)
		if s.Skipped != "" {
			fmt.Fprintf(&b, "skipped: %s | |", s.Skipped)
			if vs {
				b.WriteString(" | |")
			}
			b.WriteString("\n")
			continue
		}
		fmt.Fprintf(&b, "%s | %s-%s |", Rate(s.StepsPerSec), Rate(s.Min), Rate(s.Max))
		if vs {
			switch {
			case s.VsSkipped != "":
				fmt.Fprintf(&b, " n/a (%s) | |", s.VsSkipped)
			case s.VsRepeats == 0:
				b.WriteString(" n/a | |")
			default:
				fmt.Fprintf(&b, " %s (%s-%s) | %.2fx (%.2f-%.2f) |", Rate(s.VsStepsPerSec), Rate(s.VsMin), Rate(s.VsMax),
					s.Ratio, s.RatioMin, s.RatioMax)
			}
		}
		b.WriteString("\n")
	}

	b.WriteString("\n## Where a step goes\n\n")
	b.WriteString("Mean time of one runner step (poll every sub-environment, one batched inference, send the actions) by phase, in microseconds, with its share. ")
	b.WriteString("Env wait: stepping and resetting the environments; obs processing: agent connectors writing the model input rows; ")
	b.WriteString("inference: the ONNX Runtime run; action processing: action connectors (sampling, unsquashing, RNN state scatter); ")
	b.WriteString("output: moving transitions into sample batches; other: the rest of the step (episode bookkeeping), from the wall time.\n\n")
	b.WriteString("| configuration | step (µs) |")
	for _, n := range PhaseNames {
		fmt.Fprintf(&b, " %s |", n)
	}
	b.WriteString("\n|---|---:|" + strings.Repeat("---:|", len(PhaseNames)) + "\n")
	for _, s := range sums {
		if s.Skipped != "" {
			continue
		}
		total := s.Phases.Total()
		fmt.Fprintf(&b, "| %s | %.1f |", s.Config, total*1e6)
		for _, v := range s.Phases.Values() {
			share := 0.0
			if total > 0 {
				share = 100 * v / total
			}
			fmt.Fprintf(&b, " %.1f (%.0f%%) |", v*1e6, share)
		}
		b.WriteString("\n")
	}
	if len(m.Plots) > 0 {
		b.WriteString("\n## Plots\n\n")
		for _, p := range m.Plots {
			fmt.Fprintf(&b, "![%s](%s)\n\n", strings.TrimSuffix(p, ".png"), p)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Rate formats a rate with a k or M suffix (three significant digits).
func Rate(x float64) string {
	switch {
	case x >= 999.5e3:
		return fmt.Sprintf("%.3gM", x/1e6)
	case x >= 999.5:
		return fmt.Sprintf("%.3gk", x/1e3)
	default:
		return fmt.Sprintf("%.3g", x)
	}
}
