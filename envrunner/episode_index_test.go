package envrunner

import (
	"fmt"
	"testing"

	"github.com/onnxrl/sampler/env"
)

// Episode.agent was a linear search: an external multi-agent step with 100,000 agents took
// 70 s on the sampler goroutine. Beyond indexAgents agents the look-up goes through a map,
// which must agree with the slice, and a reused episode starts without it.
func TestEpisodeAgentIndex(t *testing.T) {
	e := &Episode{}
	recs := make([]*agentRec, 1000)
	for i := range recs {
		recs[i] = &agentRec{id: env.AgentID(fmt.Sprint("agent-", i))}
		e.addAgent(recs[i])
		if (e.index != nil) != (i+1 > indexAgents) {
			t.Fatalf("%d agents: index %v", i+1, e.index != nil)
		}
	}
	for i, a := range recs {
		if got := e.agent(a.id); got != a {
			t.Fatalf("agent %d: got %p, want %p", i, got, a)
		}
	}
	if e.agent("nobody") != nil {
		t.Fatal("an unknown agent was found")
	}
	e.clearAgents()
	if e.index != nil || len(e.agents) != 0 || e.agent("agent-1") != nil {
		t.Fatal("a cleared episode still knows its agents")
	}
	e.addAgent(&agentRec{id: "x"})
	if e.agent("x") == nil {
		t.Fatal("small episode: agent not found")
	}
}
