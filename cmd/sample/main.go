// Command sample is the sampler's command-line interface.
//
//	sample run [--env NAME] [--model M|random] ...  sample an environment with a policy (see sample run -h)
//	sample inspect MODEL                       inputs, outputs, metadata and the resolved policy spec
//	sample infer --model M --input FILE        run a model on JSON inputs, print JSON outputs
//	sample serve [--model M] [--addr A] ...    serve a policy over HTTP to external simulators (see sample serve -h)
//	sample bench [--quick] [--out DIR] ...     throughput over a matrix of settings (see sample bench -h)
//	sample runtime install [--from TGZ]        fetch the pinned ONNX Runtime (digest-checked) into the user cache
//	sample convert IN... OUT                   convert sample files between JSON lines and Parquet
//	sample broker [--listen A] [--store DIR]   run the embedded NATS server alone (scale-out; see sample broker -h)
//	sample drain --run NAME --out FILE         consume a run's sample stream into files (see sample drain -h)
//	sample publish-policy MODEL.onnx          upload a new policy version for a run's samplers
//	sample status [--run NAME]                 a run's stream depth, consumer lag, policies and samplers
//	sample worker [--run NAME] [--policy ID]     sample with the run's current policy version until stopped, publishing the batches
//	sample version                             versions of the sampler and the ONNX Runtime in use
//
// MODEL is a path to an .onnx file or the name of a bundled model (sample inspect --list).
// Errors are one line on stderr and a non-zero exit status.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/onnxrl/sampler/envrunner/runspec"
)

// usageError marks errors that come from bad command-line use (exit status 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

type command struct {
	name, summary string
	run           func(args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"run", "step environments with a policy, build sample batches, print a summary", runRun},
		{"inspect", "show a model's inputs, outputs, metadata and resolved policy spec", runInspect},
		{"infer", "run a model on inputs from a JSON file and print the outputs as JSON", runInfer},
		{"serve", "serve a policy over HTTP to external simulators, recording their episodes", runServe},
		{"runtime", "install the pinned ONNX Runtime into your cache directory (runtime install), or show where (runtime path)", runRuntime},
		{"bench", "measure throughput over a matrix of settings; write report.md, CSV and plots", runBench},
		{"convert", "convert sample files between JSON lines and Parquet", runConvert},
		{"broker", "run the embedded NATS JetStream server alone, for samplers on other machines", runBroker},
		{"drain", "consume a run's sample batches from NATS into Parquet or JSON lines files", runDrain},
		{"publish-policy", "upload an ONNX model as a run's next policy version", runPublishPolicy},
		{"status", "show a run's stream depth, consumer lag, policy versions and samplers", runStatus},
		{"worker", "sample with a run's current policy (swapped for new versions) until stopped, publishing to NATS", runWorker},
		{"version", "print the versions of the sampler and of the ONNX Runtime library", runVersion},
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: sample <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'sample <command> -h' for a command's flags.")
}

// run is main without os.Exit, for tests. It returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(args[1:], stdout, stderr)
		if err == nil {
			return 0
		}
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "sample %s: %v\n", c.name, oneLine(err.Error()))
		if errors.Is(err, errInterrupted) {
			return 130 // 128 + SIGINT, as shells report it
		}
		var ue *usageError
		var se *runspec.SpecError // settings the builder cannot build, named by their flags
		if errors.As(err, &ue) || errors.As(err, &se) {
			return 2
		}
		return 1
	}
	names := make([]string, 0, len(commands()))
	for _, c := range commands() {
		names = append(names, c.name)
	}
	fmt.Fprintf(stderr, "sample: unknown command %q%s; 'sample --help' lists the commands\n", args[0], didYouMean(args[0], names))
	return 2
}

// plural is "1 worker", "2 workers": n with the word's form for that count.
func plural[N int | int64 | uint64](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprint(n) + " " + many
}

// oneLine keeps an error message on one line (runtime messages may hold newlines).
func oneLine(s string) string {
	out := []rune{}
	for _, r := range s {
		if r == '\n' || r == '\r' {
			r = ' '
		}
		out = append(out, r)
	}
	return string(out)
}

// newFlags makes the flag set of sample NAME; args sums up its arguments in the usage line.
// Only -h/--help prints the usage (to stdout, see parseFlags): a flag error is one line.
func newFlags(name, args string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("sample "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the flag package's own error line and usage dump
	fs.Usage = func() {
		fmt.Fprintln(stdout, strings.TrimRight("usage: sample "+name+" "+args, " "))
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

// parseNoArgs parses args as parseFlags does, for a command that takes no positional
// argument: one is a usage error.
func parseNoArgs(fs *flag.FlagSet, args []string) error {
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	return nil
}

// parseFlags parses args, flags may follow positional arguments. -h or --help prints the
// usage and returns flag.ErrHelp (exit status 0); any other flag error becomes one usage
// error line (see flagError).
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	usage := fs.Usage
	fs.Usage = func() {} // the flag package calls it on errors too
	defer func() { fs.Usage = usage }()
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				usage()
				return nil, err
			}
			return nil, flagError(fs, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
