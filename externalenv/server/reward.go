package server

import (
	"math"

	"github.com/onnxrl/sampler/externalenv"
)

// checkReward refuses a reward that the float32 rewards column cannot hold: NaN, an
// infinity, or a finite value beyond float32's range (1e39 was written as Infinity). The
// error is externalenv's *RewardError, as the C API and Python report it; a sum of rewards
// that overflows is refused by LogReturns with the same error.
func checkReward(v float64, agent []byte) error {
	if !math.IsNaN(v) && math.Abs(v) <= math.MaxFloat32 {
		return nil
	}
	return externalenv.CheckReward(v, string(agent))
}
