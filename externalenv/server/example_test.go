package server_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/externalenv"
	"github.com/onnxrl/sampler/externalenv/server"
	"github.com/onnxrl/sampler/spaces"
)

// A policy server over an ExternalEnv, driven by a runner with a random policy (`sample
// serve` runs an ONNX one), and a simulator talking to it in plain HTTP.
func ExampleServer() {
	obsSpace, actSpace := spaces.NewBox(-10, 10, 2), &spaces.Discrete{N: 2}
	e, _ := externalenv.New(externalenv.Options{ObservationSpace: obsSpace, ActionSpace: actSpace})
	srv, _ := server.New(server.Options{Env: e, Actor: server.NewRandomActor(actSpace, 1)})
	r, _ := envrunner.New(envrunner.Config{Env: e, NumEnvs: e.NumEnvs(), Seed: 1,
		Policies: map[envrunner.PolicyID]envrunner.PolicyConfig{envrunner.DefaultPolicyID: {
			Random: true, ObservationSpace: obsSpace, ActionSpace: actSpace}}})
	rows := 0
	sampler := server.StartSampler(r, func(b *envrunner.MultiAgentBatch) error {
		rows += b.Rows()
		return nil
	})
	hs := httptest.NewServer(srv)

	post := func(path, body string) {
		res, err := http.Post(hs.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		defer res.Body.Close()
		answer, _ := io.ReadAll(res.Body)
		fmt.Println(strings.TrimSpace(fmt.Sprint(res.StatusCode, " ", string(answer))))
	}
	post("/v1/episodes", `{"episode_id": "demo"}`)
	post("/v1/episodes/demo/action", `{"observation": [0.5, -1]}`)
	post("/v1/episodes/demo/returns", `{"reward": 1}`)
	post("/v1/episodes/demo/action", `{"observation": [0.6, -1.5]}`)
	post("/v1/episodes/demo/end", `{"observation": [0.7, -2]}`)
	post("/v1/episodes/demo/action", `{"observation": [0.7, -2]}`)
	post("/v1/episodes/demo/returns", `{"reward": "one"}`)
	post("/v1/episodes/other/action", `{"observation": [0.7, -20]}`)

	hs.Close()
	srv.Close()
	fmt.Println(sampler.Wait(), rows, "rows")
	r.Close()
	// Output:
	// 201 {"episode_id":"demo"}
	// 200 {"action":1}
	// 204
	// 200 {"action":1}
	// 204
	// 409 {"error":"episode already completed: \"demo\"","code":"episode_done"}
	// 400 {"error":"unexpected '\"', want a number at byte 11","code":"bad_request"}
	// 400 {"error":"observation not in the observation space: observation: value 1 = -20 is outside [-10, 10]","code":"bad_observation"}
	// <nil> 2 rows
}
