package server_test

import (
	"math"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/externalenv/server/wire"
)

// TestRewardSumOverflow: issue 35's repro. /returns refused 1e39, but four posts of 3e38 to
// one step were summed to Infinity and written. The sum is refused (400 bad_request, the
// error the C API and Python give) and the step keeps the reward that fitted.
func TestRewardSumOverflow(t *testing.T) {
	for _, multi := range []bool{false, true} {
		name := map[bool]string{false: "single", true: "multi"}[multi]
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, harnessOptions{multi: multi})
			h.start("a")
			body, end := `{"reward": 3e38}`, map[string]any{"observation": obs(0)}
			if multi {
				body, end = `{"reward": {"x": 3e38}}`, map[string]any{"observation": map[string]any{"x": obs(0)}}
			}
			r := h.post("/v1/episodes/a/action", end)
			require.Equal(t, http.StatusOK, r.code, r.raw)
			r = h.post("/v1/episodes/a/returns", body)
			require.Equal(t, http.StatusNoContent, r.code, r.raw)
			for range 3 {
				r = h.post("/v1/episodes/a/returns", body)
				require.Equal(t, http.StatusBadRequest, r.code, r.raw)
				assert.Equal(t, wire.CodeBadRequest, r.body["code"])
				assert.Contains(t, r.body["error"], "makes the step's sum of rewards 6e+38, which does not fit the rewards column (float32: at most 3.4028235e+38 in magnitude)")
				assert.NotContains(t, r.body["error"], "externalenv:")
			}
			if multi { // one request's rewards of one agent are summed as well
				r = h.post("/v1/episodes/a/returns", `{"reward": {"y": 2e38, "y": 2e38}}`)
				require.Equal(t, http.StatusBadRequest, r.code, r.raw)
			}
			r = h.post("/v1/episodes/a/end", end)
			require.Equal(t, http.StatusNoContent, r.code, r.raw)
			require.NoError(t, h.stop())
			h.mu.Lock()
			defer h.mu.Unlock()
			n := 0
			for _, mb := range h.batches {
				for _, b := range mb.PolicyBatches {
					for _, v := range b.Rewards {
						n++
						assert.False(t, math.IsInf(float64(v), 0), "a reward written as %v", v)
						assert.InDelta(t, 3e38, v, 1e31)
					}
				}
			}
			assert.Equal(t, 1, n)
		})
	}
}
