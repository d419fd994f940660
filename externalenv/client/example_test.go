package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"

	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/externalenv"
	"github.com/onnxrl/sampler/externalenv/client"
	"github.com/onnxrl/sampler/externalenv/server"
	"github.com/onnxrl/sampler/spaces"
)

// A simulator runs one episode through a policy server; the server here is in-process with
// a random policy (`sample serve` runs an ONNX one).
func ExampleClient() {
	obsSpace, actSpace := spaces.NewBox(-10, 10, 1), &spaces.Discrete{N: 2}
	e, _ := externalenv.New(externalenv.Options{ObservationSpace: obsSpace, ActionSpace: actSpace})
	srv, _ := server.New(server.Options{Env: e})
	r, _ := envrunner.New(envrunner.Config{Env: e, NumEnvs: e.NumEnvs(), NoSamples: true,
		Policies: map[envrunner.PolicyID]envrunner.PolicyConfig{envrunner.DefaultPolicyID: {
			Random: true, ObservationSpace: obsSpace, ActionSpace: actSpace}}})
	sampler := server.StartSampler(r, nil)
	hs := httptest.NewServer(srv)

	ctx := context.Background()
	c, _ := client.New(hs.URL, client.Options{})
	id, _ := c.StartEpisode(ctx, "demo", true)
	x := float32(0)
	for range 3 {
		act, err := c.GetAction(ctx, id, []float32{x})
		if err != nil {
			panic(err)
		}
		x += act[0] // 0 or 1
		_ = c.LogReturns(ctx, id, 1, nil)
	}
	_ = c.EndEpisode(ctx, id, []float32{x})
	_, err := c.GetAction(ctx, id, []float32{x})
	fmt.Println(id, errors.Is(err, externalenv.ErrEpisodeDone))

	hs.Close()
	srv.Close()
	fmt.Println(sampler.Wait())
	r.Close()
	// Output:
	// demo true
	// <nil>
}
