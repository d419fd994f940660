// Package spaces implements gymnasium-style spaces: Box, Discrete, MultiDiscrete,
// MultiBinary, Dict and Tuple, with their sizes, membership tests, seeded sampling,
// flattening and JSON form.
//
// # Raw layout
//
// A value of a space travels as a flat []float32 of length Size(), its raw layout:
//
//   - Box: its elements in row-major order;
//   - Discrete: one value, the actual value (Start..Start+N-1), not an index;
//   - MultiDiscrete: len(Nvec) values, each in 0..Nvec[i]-1;
//   - MultiBinary: N values, each 0 or 1;
//   - Tuple: the children's raw layouts concatenated in order;
//   - Dict: the children's raw layouts concatenated in sorted key order (gymnasium sorts the
//     keys of a Dict built from a plain dict, and so does NewDict).
//
// Flatten turns a raw value into gymnasium.spaces.flatten's vector of length FlatDim()
// (gymnasium.spaces.flatdim): Discrete and MultiDiscrete become (concatenated) one-hot
// vectors, everything else is copied, children in the same order as the raw layout. This is
// what a policy's observation input expects for a flattened observation space.
//
// # Allocation and ownership
//
// Contains, Sample and Flatten never allocate: the caller owns dst and x, and Sample and
// Flatten return dst. They assume a valid space (see Validate, which Unmarshal always runs)
// and panic when a buffer has the wrong length, a programmer error. Spaces are not changed
// by any method, so one space may be shared by many goroutines; a *rand.Rand may not.
//
// # Sampling
//
// Sample follows gymnasium's Space.sample: Discrete and MultiDiscrete uniformly, MultiBinary
// by fair coin flips, Box per element from N(0, 1) when unbounded, low + Exp(1) or
// high - Exp(1) when bounded on one side, uniformly in [low, high] when bounded on both
// (floored, with high+1 as the upper end, for integer dtypes). The same seed gives the same
// samples.
//
// # JSON
//
// The JSON form uses gymnasium's class and field names:
//
//	{"type":"Box","low":-1.0,"high":1.0,"shape":[3],"dtype":"float32"}
//	{"type":"Box","low":[0,"-inf"],"high":[1,"inf"]}
//	{"type":"Discrete","n":2,"start":0}
//	{"type":"MultiDiscrete","nvec":[3,4]}
//	{"type":"MultiBinary","n":5}
//	{"type":"Dict","spaces":{"a":{"type":"Discrete","n":3},"b":{"type":"MultiBinary","n":2}}}
//	{"type":"Tuple","spaces":[{"type":"Discrete","n":2},{"type":"MultiBinary","n":2}]}
//
// Unmarshal returns errors of type *FieldError that name the offending field, such as
// `spaces: Dict.spaces["pos"].shape[1]: must be positive, got -2`. Every space's
// MarshalJSON writes the same form, and Unmarshal(Marshal(s)) is Equal to s.
//
// # Usage
//
//	obs, err := spaces.Unmarshal([]byte(`{"type":"Dict","spaces":{
//		"pos": {"type":"Box","low":-1,"high":1,"shape":[2]},
//		"mode":{"type":"Discrete","n":3}}}`))
//	if err != nil {
//		return err // e.g. spaces: Dict.spaces["pos"].shape[0]: must be positive, got 0
//	}
//	rng := rand.New(rand.NewPCG(seed, 0))
//	raw := make([]float32, obs.Size())     // [mode, pos[0], pos[1]]
//	row := make([]float32, obs.FlatDim())  // [one-hot(mode) x3, pos[0], pos[1]]
//	obs.Sample(rng, raw)                   // no allocation
//	obs.Flatten(row, raw)                  // no allocation
//	fmt.Println(spaces.String(obs), obs.Contains(raw))
//
// Limits: Size and FlatDim are at most MaxElements (2^24, also the range in which float32
// holds every integer exactly), and Dict and Tuple nest at most MaxDepth (32) levels deep.
package spaces
