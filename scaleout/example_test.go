package scaleout_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onnxrl/sampler/envrunner/runspec"
	"github.com/onnxrl/sampler/scaleout"
)

// A sampler publishes its batches to a run's stream on an embedded broker, and a learner
// fetches them back: what `sample worker` and `sample drain` do across processes.
func Example() {
	dir, err := os.MkdirTemp("", "scaleout-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	b, err := scaleout.StartBroker(scaleout.BrokerOptions{StoreDir: dir}) // 127.0.0.1, a free port
	if err != nil {
		panic(err)
	}
	defer b.Close()
	nc, err := b.Connect()
	if err != nil {
		panic(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if err := scaleout.EnsureRun(ctx, js, "demo", scaleout.RunConfig{}); err != nil {
		panic(err)
	}

	// The sampler's side: 400 steps of CartPole-v1 with a random policy, 2 batches of 200 rows.
	s := runspec.DefaultSpec()
	s.Model, s.MaxEnvSteps = "random", 400
	res, err := runspec.Sample(ctx, s)
	if err != nil {
		panic(err)
	}
	p, err := scaleout.NewPublisher(ctx, nc, js, scaleout.PublisherOptions{Run: "demo", Sampler: "w0"})
	if err != nil {
		panic(err)
	}
	for _, batch := range res.Batches {
		if err := p.Write(batch); err != nil {
			panic(err)
		}
	}
	if err := p.Close(); err != nil { // waits until the stream has acknowledged every message
		panic(err)
	}

	// The learner's side: fetch, decode, acknowledge once stored.
	c, err := scaleout.NewConsumer(ctx, js, scaleout.ConsumerOptions{Run: "demo"})
	if err != nil {
		panic(err)
	}
	msgs, err := c.Fetch(len(res.Batches), 5*time.Second) // returns once it has that many
	if err != nil {
		panic(err)
	}
	for _, m := range msgs {
		batch, _, err := scaleout.Decode(&nats.Msg{Subject: m.Subject(), Data: m.Data(), Header: m.Headers()})
		if err != nil {
			panic(err)
		}
		fmt.Println("rows:", batch.Rows(), "env steps:", batch.EnvSteps)
		m.Ack()
	}
	// Output:
	// rows: 200 env steps: 200
	// rows: 200 env steps: 200
}
