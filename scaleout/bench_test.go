package scaleout

import (
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/onnxrl/sampler/env"
	_ "github.com/onnxrl/sampler/env/classic" // registers CartPole-v1
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/spaces"
)

// BenchmarkDecode decodes the messages of one CartPole-v1 batch (51,200 rows of a random
// policy, every column but the model's; LZ4-compressed parts of at most NATS's default
// 1 MiB payload, as the publisher sends them): what a drain does per message before it
// writes the rows. It reports rows/s and the stream's bytes per row.
func BenchmarkDecode(b *testing.B) {
	be, err := env.ToBaseEnv(func(int) (any, error) { return env.Make("CartPole-v1", nil) },
		env.BaseEnvOptions{NumEnvs: 64, Seed: env.WithSeed(1)})
	if err != nil {
		b.Fatal(err)
	}
	r, err := envrunner.New(envrunner.Config{Env: be, NumEnvs: 64, FragmentLength: 800, Seed: 1,
		Policies: map[envrunner.PolicyID]envrunner.PolicyConfig{envrunner.DefaultPolicyID: {Random: true,
			ObservationSpace: spaces.NewBox(-1, 1, 4), ActionSpace: &spaces.Discrete{N: 2}}}})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	var m envrunner.MultiAgentBatch
	if err := r.Sample(&m); err != nil {
		b.Fatal(err)
	}
	rec := record(b, &m, nil)
	e := partEncoder{limit: 1<<20 - 1024}
	parts, err := e.encode(rec, m.EnvSteps)
	if err != nil {
		b.Fatal(err)
	}
	msgs := make([]*nats.Msg, len(parts))
	bytes := 0
	for i, p := range parts {
		msgs[i] = &nats.Msg{Subject: "s", Data: p.data, Header: nats.Header{HeaderEnvSteps: {itoa(p.envSteps)}}}
		bytes += len(p.data)
	}
	rows := m.Rows()
	b.SetBytes(int64(bytes))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		got := 0
		for _, msg := range msgs {
			d, _, err := Decode(msg)
			if err != nil {
				b.Fatal(err)
			}
			got += d.Rows()
		}
		if got != rows {
			b.Fatalf("%d rows decoded, want %d", got, rows)
		}
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(bytes)/float64(rows), "bytes/row")
}
