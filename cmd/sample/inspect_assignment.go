package main

import (
	"fmt"
	"io"

	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
)

// assignmentJSON is one entry of the runtime's record of which provider runs which nodes.
type assignmentJSON struct {
	Provider string     `json:"provider"`
	Nodes    []nodeJSON `json:"nodes"`
}

type nodeJSON struct {
	Name string `json:"name"`
	Op   string `json:"op"`
}

// providerAssignment opens a session of p on device and returns the runtime's own assignment
// record (never a guess from the operator list). The providers' warnings (why a node is left
// to the CPU provider) go to stderr.
func providerAssignment(p *models.Policy, device string) ([]assignmentJSON, error) {
	sess, err := inference.NewSession(p.Model, inference.Options{Device: device, RecordAssignment: true,
		LogWarnings: true, IntraOpThreads: 1})
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	subs, err := sess.Assignment()
	if err != nil {
		return nil, err
	}
	out := make([]assignmentJSON, 0, len(subs))
	for _, s := range subs {
		a := assignmentJSON{Provider: s.Provider, Nodes: []nodeJSON{}}
		for _, n := range s.Nodes {
			a.Nodes = append(a.Nodes, nodeJSON{Name: n.Name, Op: n.OpType})
		}
		out = append(out, a)
	}
	return out, nil
}

func printAssignment(w io.Writer, device string, subs []assignmentJSON) {
	fmt.Fprintf(w, "\nexecution providers on device %s (the runtime's assignment record)\n", device)
	for i, s := range subs {
		fmt.Fprintf(w, "  partition %d: %s (%d nodes)\n", i, s.Provider, len(s.Nodes))
		for _, n := range s.Nodes {
			fmt.Fprintf(w, "    %-16s %s\n", n.Op, n.Name)
		}
	}
}
