package envrunner

import (
	"encoding/binary"
	"hash/fnv"
	"sort"
)

// PoliciesRunID returns a Config.RunID for a run whose settings are its policies (a policy
// server, the C API's env, where the episodes come from outside): a hash of each policy's id,
// model bytes (or that it is random) and action settings. Runs of other models or action
// settings with the same Seed then number their episodes differently, and the same policies
// and Seed give the same ids (the Go and the C API's ExternalEnv record the same episodes
// under the same ids).
func PoliciesRunID(pols map[PolicyID]PolicyConfig) uint64 {
	h := fnv.New64a()
	str := func(v []byte) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(v)))
		h.Write(n[:])
		h.Write(v)
	}
	flags := func(bs ...bool) {
		b := make([]byte, len(bs))
		for i, v := range bs {
			if v {
				b[i] = 1
			}
		}
		str(b)
	}
	str([]byte("onnxrl policies run id v1"))
	ids := make([]PolicyID, 0, len(pols))
	for id := range pols {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		pc := pols[id]
		str([]byte(id))
		switch {
		case pc.Random:
			str([]byte("random"))
		case pc.Policy != nil && pc.Policy.Model != nil:
			str(pc.Policy.Model.Bytes())
		}
		flags(pc.Action.Explore, pc.Action.NormalizeActions, pc.Action.ClipActions)
	}
	return h.Sum64()
}
