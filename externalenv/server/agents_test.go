package server_test

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/externalenv"
	"github.com/onnxrl/sampler/externalenv/server"
)

// agentsBody is an /action body with n agents.
func agentsBody(n int, prefix string) []byte {
	var b bytes.Buffer
	b.WriteString(`{"observation":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%s%d":[0.1,0.2,0.01,0.3]`, prefix, i)
	}
	b.WriteString(`}}`)
	return b.Bytes()
}

// The reproduction: one /action with 100,000 agents (1.9 MB) took 48 s on the
// sampler goroutine. With the bound raised to let it through, it must be answered in
// seconds (agent look-up is O(1)); with the default bound it is refused at once.
func TestManyAgents(t *testing.T) {
	n := 100_000
	if raceEnabled {
		n = 30_000 // before the fix: minutes under the race detector; after: seconds
	}
	body := agentsBody(n, "agent-")
	t.Run("allowed", func(t *testing.T) {
		h := newHarness(t, harnessOptions{multi: true, env: externalenv.Options{MaxBatch: n, Timeout: -1},
			server: server.Options{MaxAgents: n, MaxBodyBytes: 8 << 20}})
		id := h.start("")
		start := time.Now()
		r := h.post("/v1/episodes/"+id+"/action", body)
		took := time.Since(start)
		require.Equal(t, http.StatusOK, r.code, r.raw[:min(len(r.raw), 300)])
		require.Len(t, r.body["action"], n)
		t.Logf("100,000 agents answered in %v", took)
		require.Less(t, took, 20*time.Second)
	})
	t.Run("refused", func(t *testing.T) {
		h := newHarness(t, harnessOptions{multi: true, server: server.Options{MaxBodyBytes: 8 << 20}})
		id := h.start("")
		r := h.post("/v1/episodes/"+id+"/action", body)
		require.Equal(t, http.StatusBadRequest, r.code)
		require.Contains(t, r.body["error"], "more than 1024 agents")
		// The episode goes on.
		r = h.post("/v1/episodes/"+id+"/action", agentsBody(3, "a"))
		require.Equal(t, http.StatusOK, r.code, r.raw)
	})
}
