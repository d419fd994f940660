package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/onnxrl/sampler/scaleout"
)

const statusArgs = "[--server URL] [--run NAME] [--json]"

// runStatus prints a run's stream depth, consumer lag, policy versions and samplers.
func runStatus(args []string, stdout, stderr io.Writer) error {
	var n natsFlags
	fs := newFlags("status", statusArgs, stdout)
	n.register(fs)
	jsonOut := fs.Bool("json", false, "print one JSON object")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if err := n.check(); err != nil {
		return err
	}
	nc, js, err := n.connect("sample status")
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := scaleout.RunStatus(ctx, js, n.run)
	if err != nil {
		return err
	}
	if *jsonOut {
		return json.NewEncoder(stdout).Encode(st)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "run %s\tstream %s: %d messages, %d of %d bytes\n", st.Run, st.Stream, st.Messages, st.Bytes, st.MaxBytes)
	for _, c := range st.Consumers {
		fmt.Fprintf(tw, "consumer %s\t%d pending, %d unacknowledged, %d redelivered\n", c.Name, c.Pending, c.AckPending, c.Redelivered)
	}
	current := map[string]uint64{}
	for _, p := range st.Policies {
		current[p.Policy] = p.Version
		fmt.Fprintf(tw, "policy %s\tversion %d (%s, sha256 %.12s...)\n", p.Policy, p.Version, p.Object, p.SHA256)
	}
	for _, s := range st.Samplers {
		lag := ""
		if v, ok := current["default_policy"]; ok && v >= s.PolicyVersion {
			lag = fmt.Sprintf(", %d versions behind", v-s.PolicyVersion)
		}
		fmt.Fprintf(tw, "sampler %s\tpolicy version %d%s, %d batches, %d rows, %d refused by a full stream, updated %s\n",
			s.Sampler, s.PolicyVersion, lag, s.Stats.Batches, s.Stats.Rows, s.Stats.Full, s.Updated.Format(time.RFC3339))
	}
	return tw.Flush()
}
