// Package benchmarks holds the project's Go benchmarks that span packages, each beside a
// baseline measured in the same run (`make bench`, or go test -bench . ./benchmarks/).
//
// Inference: BenchmarkInference runs the bundled MLP and LSTM policies at batch 1, 16, 256
// and 4096 through an inference.Session ("session") and through a plain onnxruntime_go
// AdvancedSession bound to the same batch ("plain"), with one intra-op thread each, and
// reports ns/sample. Compare the two lines of one size: the session layer's overhead is their
// ratio.
package benchmarks
