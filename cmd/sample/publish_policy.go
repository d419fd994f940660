package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/onnxrl/sampler/scaleout"
)

const publishPolicyArgs = "[--server URL] [--run NAME] [--policy ID] [--env NAME] MODEL.onnx"

// runPublishPolicy uploads a model as the next version of a policy and makes it current,
// once it loads and binds as sample run would bind it (publishCheck).
func runPublishPolicy(args []string, stdout, stderr io.Writer) error {
	var n natsFlags
	var check publishCheck
	fs := newFlags("publish-policy", publishPolicyArgs, stdout)
	n.register(fs)
	check.register(fs)
	policy := fs.String("policy", "default_policy", "policy id")
	jsonOut := fs.Bool("json", false, "print the new version as JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want one model file, got %d arguments", len(pos))
	}
	if err := n.check(); err != nil {
		return err
	}
	if err := scaleout.CheckName("policy", *policy); err != nil {
		return usagef("--policy: %v", err)
	}
	model, note, err := check.model(pos[0])
	if err != nil {
		return err
	}
	if note != "" {
		fmt.Fprintf(stderr, "sample publish-policy: publishing %s with %s\n", pos[0], note)
	}
	nc, js, err := n.connect("sample publish-policy")
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := scaleout.EnsureRun(ctx, js, n.run, scaleout.RunConfig{}); err != nil {
		return err
	}
	pv, err := scaleout.PublishPolicy(ctx, js, n.run, *policy, model)
	if err != nil {
		return err
	}
	if *jsonOut {
		return json.NewEncoder(stdout).Encode(pv)
	}
	fmt.Fprintf(stdout, "policy %s version %d (%s, %d bytes, sha256 %s)\n", pv.Policy, pv.Version, pv.Object, pv.Size, pv.SHA256)
	return nil
}
