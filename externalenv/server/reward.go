package server

import (
	"math"
	"strconv"
)

// checkReward refuses a reward that the float32 rewards column cannot hold: NaN, an
// infinity, or a finite value beyond float32's range (1e39 was written as Infinity).
func checkReward(v float64, agent []byte) error {
	if !math.IsNaN(v) && math.Abs(v) <= math.MaxFloat32 {
		return nil
	}
	who := ""
	if agent != nil {
		who = " of agent " + strconv.Quote(string(agent))
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return badRequest("reward %v%s is not finite", v, who)
	}
	return badRequest("reward %v%s does not fit the rewards column (float32: at most %g in magnitude)", v, who, math.MaxFloat32)
}
