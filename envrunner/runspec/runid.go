package runspec

import (
	"encoding/binary"
	"hash/fnv"
	"sort"
	"strings"

	"github.com/onnxrl/sampler/envrunner"
)

// runID is the envrunner.Config.RunID of a spec's runners: a hash of what makes its
// episodes differ from another run's with the same seed (the environment and its config,
// each policy's model bytes, the mapping, exploration and action settings, the number of
// sub-environments and how steps are batched and counted), so that the episode ids of
// files made by different runs with the default seed do not collide, and the same run
// with the same seed numbers its episodes the same (byte-identical files). The seed
// itself, the fragment length, GAE, the worker count and the device are not in it: the
// runner mixes in the seed and the worker index itself, and the others do not change which
// episodes are played.
func runID(s *Spec, pols map[envrunner.PolicyID]envrunner.PolicyConfig) uint64 {
	h := fnv.New64a()
	str := func(v string) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(v)))
		h.Write(n[:])
		h.Write([]byte(v))
	}
	flag := func(b bool) {
		if b {
			str("1")
		} else {
			str("0")
		}
	}
	str("onnxrl run id v1")
	str(s.Env)
	str(s.EnvConfig)
	ids := make([]string, 0, len(pols))
	for id := range pols {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		str(id)
		pc := pols[id]
		switch {
		case pc.Random:
			str("random")
		case pc.Policy != nil && pc.Policy.Model != nil:
			str(string(pc.Policy.Model.Bytes())) // a copy: models are small, and this is once a run
		}
	}
	str(strings.Join(s.PolicyMap, "\x00"))
	flag(s.Explore)
	flag(s.NormalizeActions)
	flag(s.ClipActions)
	flag(s.Remote)
	str(s.BatchMode)
	str(s.CountStepsBy)
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(s.NumEnvs))
	h.Write(n[:])
	return h.Sum64()
}
