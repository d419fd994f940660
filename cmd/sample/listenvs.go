package main

import (
	"flag"
	"fmt"
	"github.com/onnxrl/sampler/envrunner/runspec"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/onnxrl/sampler/env"
)

// listEnvs prints every registered environment with its spaces (from an instance made with
// the default config) and the bundled policy sample run uses for it.
func listEnvs(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "env\tkind\tobservation space\taction space\tdefault model")
	for _, name := range env.Names() {
		kind, obs, act := "", "", ""
		info, err := runspec.ProbeEnv(name, nil)
		switch {
		case err != nil:
			kind, obs = "?", "("+oneLine(err.Error())+")"
		case info.Agents != nil:
			kind = fmt.Sprintf("multi-agent (%d)", len(info.Agents))
		default:
			kind = "single"
		}
		if err == nil {
			obs, act = spaceText(info.Obs), spaceText(info.Act)
		}
		model := defaultModels[name]
		if model == "" {
			model = "none (--model PATH or random)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, kind, obs, act, model)
	}
	return tw.Flush()
}

// checkRunFlags catches what the flag values alone cannot say: an unknown environment (with
// the closest name), and --steps 0 or --episodes 0 given explicitly (0 would otherwise mean
// "not set").
func checkRunFlags(fs *flag.FlagSet, f *runFlags) error {
	if names := env.Names(); !slices.Contains(names, f.spec.Env) {
		return usagef("--env: unknown environment %q%s (registered: %s; see sample run --list-envs)",
			f.spec.Env, didYouMean(f.spec.Env, names), strings.Join(names, ", "))
	}
	var err error
	fs.Visit(func(fl *flag.Flag) {
		if (fl.Name == "steps" || fl.Name == "episodes") && fl.Value.String() == "0" && err == nil {
			err = usagef("--%s 0: want at least 1 (leave --steps and --episodes out for 10000 steps)", fl.Name)
		}
	})
	return err
}
