package output_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"

	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/output"
	"github.com/onnxrl/sampler/spaces"
)

// oneStep returns a batch of one CartPole-like transition of the default policy.
func oneStep() *envrunner.MultiAgentBatch {
	m := &envrunner.MultiAgentBatch{EnvSteps: 1, AgentSteps: 1}
	b := m.Policy(envrunner.DefaultPolicyID)
	*b = envrunner.SampleBatch{
		Count: 1, ObsWidth: 4, ActionWidth: 1, ActionSpace: &spaces.Discrete{N: 2},
		Obs:         []float32{0.1, -0.2, 0.03, 0},
		NewObs:      []float32{0.1, -0.4, 0.03, 0.3},
		Actions:     []float32{1},
		Rewards:     []float32{1},
		Terminateds: []bool{false},
		Truncateds:  []bool{false},
		EpsID:       []int64{7},
		EnvID:       []int32{0},
		AgentIndex:  []int32{0},
		AgentID:     []string{"agent0"},
		T:           []int32{0},
	}
	return m
}

func ExampleAppendJSON() {
	buf := make([]byte, 0, 4096) // reused from batch to batch: no allocation
	buf = output.AppendJSON(buf[:0], oneStep())
	fmt.Println(string(buf))
	// Output:
	// {"type":"SampleBatch","obs":[[0.1,-0.2,0.03,0.0]],"new_obs":[[0.1,-0.4,0.03,0.3]],"actions":[1],"rewards":[1.0],"terminateds":[false],"truncateds":[false],"eps_id":[7],"env_id":[0],"agent_index":[0],"agent_id":["agent0"],"t":[0],"infos":[{}]}
}

func ExampleDecode() {
	m, err := output.Decode([]byte(`{"type":"MultiAgentBatch","count":1,"policy_batches":{"p":{"obs":[[1,2]],"new_obs":[[2,3]],"actions":[[0,2]],"rewards":[0.5],"terminateds":[true],"truncateds":[false],"eps_id":[3],"env_id":[0],"agent_index":[1],"t":[9]}}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	b := m.PolicyBatches["p"]
	fmt.Println(b.Count, b.ObsWidth, b.ActionWidth, b.ActionSpace.Type(), b.Actions, b.Rewards)

	_, err = output.Decode([]byte(`{"type":"SampleBatch","obs":[[1,2],[3]]}`))
	fmt.Println(err)
	// Output:
	// 1 2 2 MultiDiscrete [0 2] [0.5]
	// output: column "obs": row 1 has 1 values, want 2 (the length of row 0) at byte 35
}

func ExampleWriter() {
	dir, err := os.MkdirTemp("", "output-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	free := make(chan *envrunner.MultiAgentBatch, 4)
	w, err := output.NewWriter(filepath.Join(dir, "x.jsonl"), output.Options{
		MaxFileSize: 300, // tiny, to show rotation; RLlib uses 64 MiB
		OnWritten:   func(m *envrunner.MultiAgentBatch) { free <- m },
	})
	if err != nil {
		panic(err)
	}
	free <- oneStep()
	for range 3 {
		m := <-free // a batch the writer is done with
		if err := w.Write(m); err != nil {
			panic(err)
		}
	}
	if err := w.Close(); err != nil {
		panic(err)
	}
	fmt.Printf("%+v\n", w.Stats())
	for _, name := range w.Files() {
		f, _ := os.Open(name)
		lines := 0
		for sc := bufio.NewScanner(f); sc.Scan(); {
			lines++
		}
		f.Close()
		fmt.Println(filepath.Base(name), lines)
	}
	// Output:
	// {Lines:3 Rows:3 Bytes:729 Files:2}
	// x.jsonl 2
	// x-000001.jsonl 1
}
