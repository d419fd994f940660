// Package wire is the JSON codec of the policy server's HTTP API (package
// externalenv/server) and its Go client (package externalenv/client): a small decoder that
// walks a request body in place, and appenders for values of a space.
//
// # Values of a space
//
// A value of a space travels in the JSON form that AppendValue writes:
//
//	Discrete               1
//	MultiDiscrete(3,4)     [2,0]
//	MultiBinary(3)         [1,0,1]
//	Box shape [4]          [0.1,-0.2,0.03,0]
//	Box shape [2,2]        [[1,2],[3,4]]
//	Box shape []           0.5
//	Tuple(Discrete, Box)   [1,[0.5,0.25]]
//	Dict{a: Discrete, b}   {"a":1,"b":[0.5]}
//
// Decoder.Value reads that form and, for any space, the raw layout as a flat array of numbers
// (package spaces), so a client may always send flat arrays. Floats are float32 values in
// their shortest form; NaN, Infinity and -Infinity are written and read as Python's json
// module does.
//
// # Allocation
//
// Decoder and the appenders work on caller-owned buffers: a pooled Decoder reading a flat
// array of numbers into a reused []float32 allocates nothing, and the appenders only grow
// dst. Numbers are parsed with strconv on the body's bytes (correctly rounded to float32).
package wire
